//! The delete path of an OpenStackServer: the server, then its trunks, ports and volumes,
//! found by recorded ID or by deterministic name + ownership. Nothing needs resolving, so it
//! finishes after `clusterctl move` lost the status and after the image was deleted.

use capo_api::constants::condition_types::READY;
use capo_cloud::instance::{self, Outcome, Recorded, port_name};
use kube::runtime::controller::Action;

use super::Scope;
use crate::conditions::State;
use crate::credentials::session_for;
use crate::error::Result;

/// Delete everything of the server: `None` once done (the lifecycle removes the finalizer),
/// else the requeue while something is still going away.
pub(super) async fn cleanup(scope: &mut Scope<'_>) -> Result<Option<Action>> {
    let s = session_for(
        scope.ctx,
        &scope.object(),
        &scope.namespace,
        &scope.obj.spec.identity_ref,
    )
    .await?;
    let rec = Recorded {
        instance_id: scope.status.instance_id.clone(),
        port_ids: scope
            .status
            .resources
            .iter()
            .flat_map(|r| r.ports.iter().map(|p| p.id.clone()))
            .collect(),
        volume_ids: Vec::new(),
    };
    let (ports, volumes) = names(scope);
    match instance::delete_server_resources(&s, &scope.owner, &rec, &ports, &volumes).await? {
        Outcome::Ready(()) => {
            if scope.obj.spec.floating_ip_pool_ref.is_some() {
                super::pool_ip::release(scope).await?;
            }
            scope.ctx.forget_converged(&scope.key());
            Ok(None)
        }
        Outcome::NotReady { reason, .. } => {
            scope.status.ready = false;
            scope.set(READY, State::info("Deleting", reason));
            scope.flush().await?;
            // Nova can take minutes to delete (its network deallocation waits on Neutron):
            // back off instead of polling it at the pending pace all that time.
            let delay = scope.ctx.pending_delay(&scope.key(), "Deleting");
            Ok(Some(Action::requeue(delay)))
        }
    }
}

/// Deterministic port and volume names, from the resolved spec or else from the spec.
fn names(scope: &Scope<'_>) -> (Vec<String>, Vec<String>) {
    let spec = &scope.obj.spec;
    let name = &scope.owner.name;
    let mut ports: Vec<String> = scope
        .status
        .resolved
        .iter()
        .flat_map(|r| r.ports.iter().map(|p| p.name.clone()))
        .collect();
    if ports.is_empty() {
        ports = spec
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| port_name(name, p.name_suffix.as_deref(), i))
            .collect();
    }
    let volumes = instance::plan_volumes(
        name,
        spec.root_volume.as_ref(),
        None,
        &spec.additional_block_devices,
        None,
    )
    .into_iter()
    .map(|v| v.name)
    .collect();
    (ports, volumes)
}

//! The delete path of an OpenStackServer: the server, then its trunks, ports and volumes,
//! found by recorded ID or by deterministic name + ownership. Nothing needs resolving, so it
//! finishes after `clusterctl move` lost the status and after the image was deleted.

use capo_cloud::Progress;
use capo_cloud::instance::{self, Recorded, port_name};

use super::scope::Scope;
use crate::error::Result;
use crate::server_spec::{identity, v1beta1_spec};

/// Delete everything of the server (Done once nothing is left).
pub(super) async fn cleanup(scope: &mut Scope<'_>) -> Result<Progress> {
    let s = scope.session_for(&identity(&scope.obj.spec)).await?;
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
    let (ports, volumes) = names(scope)?;
    let progress =
        instance::delete_server_resources(&s, &scope.owner, &rec, &ports, &volumes).await?;
    if progress.is_done() && scope.obj.spec.floating_ip_pool_ref.is_some() {
        super::pool_ip::release(scope).await?;
    }
    if !progress.is_done() {
        scope.status.ready = false;
    }
    Ok(progress)
}

/// Deterministic port and volume names, from the resolved spec or else from the spec.
fn names(scope: &Scope<'_>) -> Result<(Vec<String>, Vec<String>)> {
    // Volumes are planned from v1beta1's shapes, as capo-cloud takes them.
    let spec = v1beta1_spec(&scope.obj.spec)?;
    let name = &scope.owner.name;
    let mut ports: Vec<String> = scope
        .status
        .resolved
        .iter()
        .flat_map(|r| r.ports.iter().map(|p| p.spec.name.clone()))
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
    Ok((ports, volumes))
}

//! The delete path of an OpenStackMachine: API traffic first (LB members; the API floating IP
//! moves to another live control-plane machine or is disassociated, never deleted), then the
//! OpenStackServer, waited for until it is gone, then a last look that the API floating IP
//! still has a home.

use capo_api::constants::{CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL};
use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::{OpenStackCluster, OpenStackMachine};
use capo_cloud::Progress;
use capo_cloud::networking::floating_ip::{self as fip, MoveFrom};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};

use super::ingress::{self, Mode};
use super::scope::Scope;
use crate::conditions::{self, State};
use crate::error::{KubeContext, Result};
use crate::stored::Stored;

/// Reason of APIServerIngressReady once the machine no longer receives API traffic.
const INGRESS_REMOVED: &str = "Removed";

/// Delete the machine's cloud side (Done once its server is gone).
pub(super) async fn cleanup(
    scope: &mut Scope<'_>,
    osc: Option<&OpenStackCluster>,
    cluster: &str,
    control_plane: bool,
) -> Result<Progress> {
    let servers: Api<OpenStackServer> =
        Api::namespaced(scope.ctx.shared.client.clone(), &scope.namespace);
    let cond = ingress::condition(control_plane);
    let removed = conditions::get(&scope.status.conditions, cond)
        .is_some_and(|c| c.reason.as_deref() == Some(INGRESS_REMOVED));
    let hands_over = control_plane
        && !removed
        && osc.is_some_and(|o| matches!(ingress::mode(o, true), Mode::FloatingIp(_)));
    let oss = if hands_over {
        // Read live: the API floating IP on the server's first port is handed on from it, and
        // a store one event behind would let the address go with the port.
        servers
            .get_opt(&scope.name)
            .await
            .kctx(|| format!("get OpenStackServer {}", scope.name))?
    } else {
        // The store: one event behind at worst means one more look (the server's deletion
        // wakes this machine), and a delete of a server already gone is not an error.
        scope
            .ctx
            .shared
            .informers
            .openstack_servers
            .get(&scope.namespace, &scope.name)
            .await?
    };
    if !removed && let Some(osc) = osc {
        scope.step = cond;
        let mode = ingress::mode(osc, control_plane);
        let progress = remove_ingress(scope, osc, &mode, oss.as_ref(), cluster).await?;
        if !progress.is_done() {
            return Ok(progress);
        }
    }
    if let Some(oss) = oss {
        if oss.metadata.deletion_timestamp.is_none() {
            match servers
                .delete(&scope.name, &DeleteParams::background())
                .await
            {
                Err(kube::Error::Api(ae)) if ae.code == 404 => {}
                other => {
                    other.kctx(|| format!("delete OpenStackServer {}", scope.name))?;
                }
            }
        }
        scope.status.ready = Some(false);
        // The server's deletion wakes this machine (owned object); the requeue is a safety net.
        return Ok(Progress::waiting(
            "server",
            "",
            "waiting for the server to be deleted",
        ));
    }
    if control_plane && let Some(osc) = osc {
        rehome_api_address(scope, osc, cluster).await?;
    }
    Ok(Progress::Done(()))
}

/// Give the API floating IP to a live control-plane machine when no port holds it any more.
///
/// Two control-plane machines deleted together race: the first can hand the address to the
/// second after the second has checked it holds nothing, and the address then goes with the
/// second's port. Each machine therefore looks once more after its own server (and so its
/// ports) is gone; a handoff that comes later fails on the deleted port and is retried by the
/// first machine towards another successor, so one of the two always sees the loose address.
async fn rehome_api_address(
    scope: &Scope<'_>,
    osc: &OpenStackCluster,
    cluster: &str,
) -> Result<()> {
    let Mode::FloatingIp(host) = ingress::mode(osc, true) else {
        return Ok(());
    };
    let Some(successor) = successor_port(scope, cluster).await? else {
        return Ok(());
    };
    let s = session(scope, osc, None).await?;
    fip::move_address(&s, &host, Some(&successor), MoveFrom::Nowhere).await?;
    Ok(())
}

async fn remove_ingress(
    scope: &mut Scope<'_>,
    osc: &OpenStackCluster,
    mode: &Mode,
    oss: Option<&OpenStackServer>,
    cluster: &str,
) -> Result<Progress> {
    if matches!(mode, Mode::None | Mode::LoadBalancerPending) {
        return Ok(Progress::Done(()));
    }
    let s = session(scope, osc, oss).await?;
    let port_id = first_port(oss);
    let successor = match mode {
        Mode::FloatingIp(_) if port_id.is_some() => successor_port(scope, cluster).await?,
        _ => None,
    };
    let progress = ingress::remove(
        &s,
        mode,
        &scope.name,
        port_id.as_deref(),
        successor.as_deref(),
    )
    .await?;
    if progress.is_done() {
        let cond = scope.step;
        scope.set(
            cond,
            State::info(INGRESS_REMOVED, "machine is being deleted"),
        );
        scope.flush().await?;
    }
    Ok(progress)
}

/// The session of the machine's server's identity, else the machine's, else the cluster's.
async fn session(
    scope: &Scope<'_>,
    osc: &OpenStackCluster,
    oss: Option<&OpenStackServer>,
) -> Result<capo_openstack::Session> {
    let identity = oss
        .map(|o| crate::server_spec::identity(&o.spec))
        .or_else(|| scope.obj.spec.identity_ref.as_deref().cloned())
        .unwrap_or_else(|| osc.spec.identity_ref.clone());
    scope.session_for(&identity).await
}

fn first_port(oss: Option<&OpenStackServer>) -> Option<String> {
    oss.and_then(|o| o.status.as_ref())
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.ports.first())
        .map(|p| p.id.clone())
        .filter(|i| !i.is_empty())
}

/// The first port of another ready control-plane machine of the cluster (where the API
/// floating IP moves to).
async fn successor_port(scope: &Scope<'_>, cluster: &str) -> Result<Option<String>> {
    let ns = &scope.namespace;
    let lp = ListParams::default().labels(&format!(
        "{CLUSTER_NAME_LABEL}={cluster},{CONTROL_PLANE_LABEL}"
    ));
    let machines = Api::<Stored<OpenStackMachine>>::namespaced(scope.ctx.shared.client.clone(), ns)
        .list(&lp)
        .await
        .kctx(|| format!("list control-plane OpenStackMachines of {cluster}"))?;
    let servers: Api<OpenStackServer> = Api::namespaced(scope.ctx.shared.client.clone(), ns);
    for m in machines.items {
        let live = m.metadata.deletion_timestamp.is_none()
            && m.status.as_ref().and_then(|s| s.ready) == Some(true);
        if !live || m.name_any() == scope.name {
            continue;
        }
        let oss = servers
            .get_opt(&m.name_any())
            .await
            .kctx(|| format!("get OpenStackServer {}", m.name_any()))?;
        if let Some(p) = first_port(oss.as_ref()) {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

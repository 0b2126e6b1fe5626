//! Steps of the network layer: external network, cluster network + subnets, router, managed
//! security groups. Each step records what it ensured in status; the three are written together
//! by the last (or by the failure write of the step that failed). What a crash keeps from being
//! recorded is found again by its name and ownership tag, so no step needs a write of its own.

use capo_api::constants::condition_types::{NETWORK_READY, ROUTER_READY, SECURITY_GROUPS_READY};
use capo_cloud::networking::{self, SecurityGroups};
use capo_openstack::Session;
use kube::ResourceExt;

use capo_api::constants::STRICT_RULES_ANNOTATION;

use super::scope::Scope;
use crate::conditions::State;
use crate::error::Result;

/// External network, network and subnets.
pub(super) async fn reconcile_network(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    scope.step = NETWORK_READY;
    let spec = &scope.obj.spec;
    let external = networking::ensure_external_network(s, spec).await?;
    scope.status.external_network = external;
    let net =
        networking::ensure_cluster_network(s, &scope.owner, spec, scope.status.network.as_ref())
            .await?;
    scope.status.network = Some(net);
    scope.set(NETWORK_READY, State::True);
    Ok(())
}

/// Router (managed, BYO, or none).
pub(super) async fn reconcile_router(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    scope.step = ROUTER_READY;
    let Some(net) = scope.status.network.clone() else {
        return Ok(());
    };
    let router = networking::ensure_router(
        s,
        &scope.owner,
        &scope.obj.spec,
        scope.status.external_network.as_ref(),
        &net,
        scope.status.router.as_ref(),
    )
    .await?;
    scope.status.router = router;
    scope.set(ROUTER_READY, State::True);
    Ok(())
}

/// Managed security groups and their rules.
pub(super) async fn reconcile_security_groups(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    scope.step = SECURITY_GROUPS_READY;
    let strict = scope
        .obj
        .annotations()
        .get(STRICT_RULES_ANNOTATION)
        .is_some_and(|v| v == "true");
    let ipv4_cidr = scope.status.network.as_ref().and_then(|n| {
        n.subnets
            .iter()
            .find(|sn| !sn.cidr.contains(':'))
            .map(|sn| sn.cidr.clone())
    });
    let recorded = SecurityGroups {
        control_plane: scope.status.control_plane_security_group.clone(),
        worker: scope.status.worker_security_group.clone(),
        bastion: scope.status.bastion_security_group.clone(),
    };
    let groups = networking::ensure_security_groups(
        s,
        &scope.owner,
        &scope.obj.spec,
        ipv4_cidr.as_deref(),
        &recorded,
        strict,
    )
    .await?
    .unwrap_or_default();
    scope.status.control_plane_security_group = groups.control_plane;
    scope.status.worker_security_group = groups.worker;
    scope.status.bastion_security_group = groups.bastion;
    scope.set(SECURITY_GROUPS_READY, State::True);
    scope.flush().await
}

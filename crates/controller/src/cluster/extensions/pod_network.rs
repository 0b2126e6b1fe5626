//! The Cilium pod network (`spec.extensions.networking.kubeNetworkPlugin: cilium`): made once
//! the cluster router exists, from the Cluster's first pod CIDR block, recorded at
//! `status.extensions.networking.podNetwork` and published as `cilium.defaultSubnetID` and the
//! first of `cilium.securityGroupIDs` (see [`capo_cloud::networking::pod_network`]).
//!
//! What the cloud cannot be asked to fix is not attempted, and `ExtensionsReady` says why: a
//! Cluster without pod CIDR, a cluster without router (pods could not reach the nodes), a pod
//! CIDR overlapping the cluster subnet (the router refuses the second interface). The cluster
//! itself still becomes Ready: only the Cilium variables wait.

use capo_api::extensions::PodNetworkStatus;
use capo_cloud::networking::pod_network::{self, PodNetwork, Recorded};
use capo_cloud::plan::cidr::Cidr;
use capo_openstack::Session;

use super::super::scope::Scope;
use super::shared::{EXTENSIONS_READY, spec};
use crate::conditions::{self, State};
use crate::error::Result;

/// Reason of `ExtensionsReady` while the pod network cannot be made.
pub const POD_NETWORK_BLOCKED: &str = "PodNetworkBlocked";

fn wanted(scope: &Scope<'_>) -> bool {
    spec(scope.obj).is_some_and(|e| e.cilium())
}

fn recorded<'s>(scope: &'s Scope<'_>) -> Option<&'s PodNetworkStatus> {
    scope
        .status
        .extensions
        .as_ref()?
        .networking
        .as_ref()?
        .pod_network
        .as_ref()
}

fn recorded_ids<'s>(status: Option<&'s PodNetworkStatus>) -> Recorded<'s> {
    Recorded {
        network: status.map(|p| p.network_id.as_str()),
        subnet: status.map(|p| p.subnet_id.as_str()),
        security_group: status.map(|p| p.security_group_id.as_str()),
    }
}

/// Cilium is asked for and the pod network is not recorded yet.
pub(in crate::cluster) fn pending(scope: &Scope<'_>) -> bool {
    wanted(scope) && recorded(scope).is_none()
}

/// Why the pod network cannot be made from what the Cluster and the cluster's status say,
/// or the CIDR and router to make it with.
fn inputs<'a>(
    scope: &'a Scope<'_>,
    pod_cidr: Option<&'a str>,
) -> Result<(&'a str, &'a str), String> {
    let Some(cidr) = pod_cidr else {
        return Err("the Cluster has no spec.clusterNetwork.pods.cidrBlocks, which gives the pod subnet its CIDR".to_owned());
    };
    let Some(parsed) = Cidr::parse(cidr) else {
        return Err(format!(
            "the Cluster's spec.clusterNetwork.pods.cidrBlocks[0] {cidr:?} is not a CIDR"
        ));
    };
    let Some(router) = scope.status.router.as_ref().map(|r| r.id.as_str()) else {
        return Err("the cluster has no router (it needs spec.externalNetwork, or spec.router with a pre-existing network) to route the pod subnet to the nodes".to_owned());
    };
    let subnets = scope.status.network.iter().flat_map(|n| &n.subnets);
    for sn in subnets {
        if Cidr::parse(&sn.cidr).is_some_and(|c| c.overlaps(&parsed)) {
            return Err(format!(
                "the Cluster's pod CIDR {cidr} overlaps the cluster subnet {} ({}); the router cannot route both",
                sn.cidr, sn.id
            ));
        }
    }
    Ok((cidr, router))
}

/// Ensure the pod network when the extension asks for Cilium and the inputs allow it.
pub(super) async fn reconcile(
    scope: &mut Scope<'_>,
    s: &Session,
    pod_cidr: Option<&str>,
) -> Result<()> {
    if !wanted(scope) {
        return Ok(());
    }
    let Ok((cidr, router)) = inputs(scope, pod_cidr) else {
        return Ok(());
    };
    let ids = recorded_ids(recorded(scope));
    let made = pod_network::ensure_pod_network(s, &scope.owner, cidr, router, ids).await?;
    let PodNetwork {
        network_id,
        subnet_id,
        cidr,
        security_group_id,
    } = made;
    scope
        .status
        .extensions
        .get_or_insert_with(Default::default)
        .networking
        .get_or_insert_with(Default::default)
        .pod_network = Some(PodNetworkStatus {
        network_id,
        subnet_id,
        cidr,
        security_group_id,
    });
    Ok(())
}

/// When Cilium is asked for and the pod network is not there, say why in `ExtensionsReady`
/// (ahead of the other unresolved variables, which usually only need time).
pub(super) fn report(scope: &mut Scope<'_>, pod_cidr: Option<&str>) {
    if !wanted(scope) || recorded(scope).is_some() {
        return;
    }
    let Err(why) = inputs(scope, pod_cidr) else {
        return;
    };
    let mut message = format!("pod network for Cilium: {why}");
    if let Some(other) = conditions::get(&scope.status.conditions, EXTENSIONS_READY)
        .filter(|c| c.status == "False")
        .and_then(|c| c.message.as_deref())
    {
        message = format!("{message}; {other}");
    }
    scope.set(
        EXTENSIONS_READY,
        State::warning(POD_NETWORK_BLOCKED, message),
    );
}

/// Delete the pod network and the pods' group when the cluster asks for Cilium or once made
/// one (recorded), so a cluster without Cilium costs no lookups here.
pub(super) async fn cleanup(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    let status = recorded(scope).cloned();
    if status.is_none() && !wanted(scope) {
        return Ok(());
    }
    pod_network::delete_pod_network(s, &scope.owner, recorded_ids(status.as_ref())).await?;
    Ok(())
}

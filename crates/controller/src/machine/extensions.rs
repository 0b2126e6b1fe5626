//! Machine side of the BA/ACP extension (only when the OpenStackCluster has
//! `spec.extensions`): keepalived VIPs accepted on the machine's cluster-network ports, the
//! cluster's generated key pair for machines naming none, and
//! `status.extensions.nodeResources.reserved` computed from the flavor (Kubespray's
//! reservation variables; see `capo_api::extensions::reserved_for_flavor`), with the spec's
//! values winning.

use capo_api::extensions::{
    LOAD_BALANCER_MODE_KEEPALIVED, NodeResources, OpenStackMachineStatusExtensions,
    reserved_for_flavor,
};
use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::OpenStackCluster;
use capo_openstack::Session;

use super::scope::Scope;
use crate::error::Result;

/// The VIPs a machine's ports must accept and the default key pair, from the cluster.
pub(super) fn derivation_extras(
    osc: &OpenStackCluster,
    control_plane: bool,
) -> (Vec<String>, Option<String>) {
    let Some(ext) = osc.spec.extensions.as_ref() else {
        return (Vec::new(), None);
    };
    let status = osc.status.as_ref().and_then(|s| s.extensions.as_ref());
    let lbs = ext.load_balancers.as_ref();
    let keepalived =
        |spec_mode: Option<&String>| spec_mode.is_some_and(|m| m == LOAD_BALANCER_MODE_KEEPALIVED);
    let vip = if control_plane {
        keepalived(lbs.and_then(|l| l.control_plane.as_ref()).map(|c| &c.mode))
            .then(|| {
                status
                    .and_then(|s| s.load_balancers.as_ref())
                    .and_then(|l| l.control_plane.as_ref())
            })
            .flatten()
    } else {
        keepalived(lbs.and_then(|l| l.ingress.as_ref()).map(|c| &c.mode))
            .then(|| {
                status
                    .and_then(|s| s.load_balancers.as_ref())
                    .and_then(|l| l.ingress.as_ref())
            })
            .flatten()
    };
    let pairs = vip.and_then(|v| v.vip.clone()).into_iter().collect();
    let key = status
        .and_then(|s| s.ssh.as_ref())
        .and_then(|s| s.key_pair_name.clone());
    (pairs, key)
}

/// True when the cluster's VIP for this role is a keepalived VIP that is not known yet (the
/// machine must wait: its ports cannot get the address pair after creation).
pub(super) fn vip_pending(osc: &OpenStackCluster, control_plane: bool) -> bool {
    let Some(lbs) = osc
        .spec
        .extensions
        .as_ref()
        .and_then(|e| e.load_balancers.as_ref())
    else {
        return false;
    };
    let wanted = if control_plane {
        lbs.control_plane.as_ref().map(|c| &c.mode)
    } else {
        lbs.ingress.as_ref().map(|c| &c.mode)
    }
    .is_some_and(|m| m == LOAD_BALANCER_MODE_KEEPALIVED);
    wanted && derivation_extras(osc, control_plane).0.is_empty()
}

/// Record the node resources reserved for system and Kubernetes daemons (one flavor lookup).
pub(super) async fn reconcile_node_resources(
    scope: &mut Scope<'_>,
    osc: &OpenStackCluster,
    s: &Session,
    oss: &OpenStackServer,
) -> Result<()> {
    if osc.spec.extensions.is_none() {
        return Ok(());
    }
    let overrides = scope
        .osm
        .spec
        .extensions
        .as_ref()
        .and_then(|e| e.node_resources.as_ref())
        .and_then(|n| n.reserved.clone())
        .unwrap_or_default();
    let flavor_id = oss
        .status
        .as_ref()
        .and_then(|st| st.resolved.as_ref())
        .and_then(|r| r.flavor_id.clone());
    let flavor = match flavor_id.or_else(|| oss.spec.flavor_id.clone()) {
        Some(id) => capo_cloud::instance::resolve_flavor(s, None, Some(&id)).await?,
        None => capo_cloud::instance::resolve_flavor(s, oss.spec.flavor.as_deref(), None).await?,
    };
    let computed = reserved_for_flavor(flavor.vcpus, flavor.ram);
    let reserved = overrides.merged_over(&computed);
    scope.status.extensions = Some(OpenStackMachineStatusExtensions {
        node_resources: Some(NodeResources {
            reserved: Some(reserved),
        }),
    });
    Ok(())
}

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
use capo_api::v1beta1::{OpenStackCluster, OpenStackMachine};
use capo_openstack::Session;

use super::scope::Scope;
use crate::error::Result;

/// Which keepalived VIPs a machine accepts: its `spec.extensions.loadBalancers` flags, else
/// the control-plane VIP on control-plane machines and the ingress VIP on the others.
fn wanted_vips(osm: &OpenStackMachine, control_plane: bool) -> (bool, bool) {
    let flags = osm
        .spec
        .extensions
        .as_ref()
        .and_then(|e| e.load_balancers.as_ref());
    (
        flags
            .and_then(|f| f.control_plane_vip)
            .unwrap_or(control_plane),
        flags.and_then(|f| f.ingress_vip).unwrap_or(!control_plane),
    )
}

/// The cluster's keepalived VIPs by role, each as (wanted in keepalived mode, address once
/// known).
fn keepalived_vips(osc: &OpenStackCluster) -> [(bool, Option<String>); 2] {
    let Some(ext) = osc.spec.extensions.as_ref() else {
        return [(false, None), (false, None)];
    };
    let lbs = ext.load_balancers.as_ref();
    let status = osc
        .status
        .as_ref()
        .and_then(|s| s.extensions.as_ref())
        .and_then(|s| s.load_balancers.as_ref());
    let keepalived =
        |mode: Option<&String>| mode.is_some_and(|m| m == LOAD_BALANCER_MODE_KEEPALIVED);
    let cp = keepalived(lbs.and_then(|l| l.control_plane.as_ref()).map(|c| &c.mode));
    let ingress = keepalived(lbs.and_then(|l| l.ingress.as_ref()).map(|c| &c.mode));
    [
        (
            cp,
            status
                .and_then(|l| l.control_plane.as_ref())
                .and_then(|v| v.vip.clone())
                .filter(|_| cp),
        ),
        (
            ingress,
            status
                .and_then(|l| l.ingress.as_ref())
                .and_then(|v| v.vip.clone())
                .filter(|_| ingress),
        ),
    ]
}

/// The VIPs a machine's ports must accept and the default key pair, from the cluster.
pub(super) fn derivation_extras(
    osc: &OpenStackCluster,
    osm: &OpenStackMachine,
    control_plane: bool,
) -> (Vec<String>, Option<String>) {
    if osc.spec.extensions.is_none() {
        return (Vec::new(), None);
    }
    let (want_cp, want_ingress) = wanted_vips(osm, control_plane);
    let [(_, cp), (_, ingress)] = keepalived_vips(osc);
    let pairs = [(want_cp, cp), (want_ingress, ingress)]
        .into_iter()
        .filter_map(|(wanted, vip)| vip.filter(|_| wanted))
        .collect();
    let key = osc
        .status
        .as_ref()
        .and_then(|s| s.extensions.as_ref())
        .and_then(|s| s.ssh.as_ref())
        .and_then(|s| s.key_pair_name.clone());
    (pairs, key)
}

/// True when a keepalived VIP this machine accepts is not known yet (the machine must wait:
/// its ports cannot get the address pair after creation).
pub(super) fn vip_pending(
    osc: &OpenStackCluster,
    osm: &OpenStackMachine,
    control_plane: bool,
) -> bool {
    let (want_cp, want_ingress) = wanted_vips(osm, control_plane);
    let [(cp_mode, cp), (ingress_mode, ingress)] = keepalived_vips(osc);
    (want_cp && cp_mode && cp.is_none()) || (want_ingress && ingress_mode && ingress.is_none())
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
        .obj
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
    scope.status.extensions = Some(Box::new(OpenStackMachineStatusExtensions {
        node_resources: Some(NodeResources {
            reserved: Some(reserved),
        }),
    }));
    Ok(())
}

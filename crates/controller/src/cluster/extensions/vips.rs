//! Keepalived VIPs: reserved ports on the cluster subnet and their floating IPs (the
//! control-plane endpoint on the VIP is one strategy of [`crate::cluster::endpoint`]).

use capo_api::extensions::{LOAD_BALANCER_MODE_KEEPALIVED, VipStatus};
use capo_cloud::networking::floating_ip::{self as fip, FipTarget, Purpose};
use capo_cloud::networking::vip_port::{self, VipPortRequest};
use capo_openstack::Session;

use super::super::scope::Scope;
use crate::error::{Error, Result};

/// Name part of the control-plane VIP port.
pub const CONTROL_PLANE: &str = "kubeapi";
/// Name part of the ingress VIP port.
pub const INGRESS: &str = "ingress";

/// The cluster network and the subnet a VIP is reserved on (the node subnet: the primary one).
fn vip_subnet(scope: &Scope<'_>) -> Result<(String, String)> {
    let net = scope
        .status
        .network
        .as_ref()
        .ok_or_else(|| Error::InvalidSpec("the cluster network is not ready".into()))?;
    let subnet = capo_cloud::networking::node_subnet(&scope.obj.spec, net)
        .ok_or_else(|| Error::InvalidSpec("the cluster network has no subnet for a VIP".into()))?;
    Ok((net.id.clone(), subnet.id.clone()))
}

pub(super) fn recorded(scope: &Scope<'_>, ingress: bool) -> VipStatus {
    scope
        .status
        .extensions
        .as_ref()
        .and_then(|e| e.load_balancers.as_ref())
        .and_then(|l| {
            if ingress {
                l.ingress.clone()
            } else {
                l.control_plane.clone()
            }
        })
        .unwrap_or_default()
}

pub(super) fn record(scope: &mut Scope<'_>, ingress: bool, v: VipStatus) {
    let ext = scope.status.extensions.get_or_insert_with(Default::default);
    let lbs = ext.load_balancers.get_or_insert_with(Default::default);
    if ingress {
        lbs.ingress = Some(v);
    } else {
        lbs.control_plane = Some(v);
    }
}

/// The VIP port (control plane, or ingress), recorded in status at once.
pub(in crate::cluster) async fn ensure_port(
    scope: &mut Scope<'_>,
    s: &Session,
    ingress: bool,
    address: Option<&str>,
) -> Result<VipStatus> {
    let (network_id, subnet_id) = vip_subnet(scope)?;
    let mut v = recorded(scope, ingress);
    let req = VipPortRequest {
        purpose: if ingress { INGRESS } else { CONTROL_PLANE },
        network_id: &network_id,
        subnet_id: &subnet_id,
        address,
        recorded_id: v.port_id.as_deref(),
    };
    let port = vip_port::ensure_vip_port(s, &scope.owner, req).await?;
    v.mode = Some(LOAD_BALANCER_MODE_KEEPALIVED.to_owned());
    v.vip = vip_port::vip_address(&port);
    v.port_id = Some(port.id);
    record(scope, ingress, v.clone());
    scope.flush().await?;
    Ok(v)
}

/// The ingress VIP's floating IP on `port_id` (keepalived port or Octavia VIP port).
pub(super) async fn ingress_floating_ip(
    scope: &mut Scope<'_>,
    s: &Session,
    v: VipStatus,
    port_id: &str,
) -> Result<()> {
    let Some(ext) = scope.status.external_network.clone() else {
        return Err(Error::InvalidSpec(
            "spec.extensions.loadBalancers.ingress.floatingIP needs an external network".into(),
        ));
    };
    let recorded_ip = v.floating_ip.clone();
    let target = FipTarget {
        purpose: Purpose::Ingress,
        requested: None,
        external_network_id: &ext.id,
        port_id,
        recorded_ip: recorded_ip.as_deref(),
        named_ip: None,
    };
    vip_floating_ip(scope, s, true, v, &target).await?;
    Ok(())
}

/// Find or allocate the floating IP of VIP `v`, record it, then associate it: recorded
/// first, so a crash in between finds it again.
pub(in crate::cluster) async fn vip_floating_ip(
    scope: &mut Scope<'_>,
    s: &Session,
    ingress: bool,
    mut v: VipStatus,
    target: &FipTarget<'_>,
) -> Result<VipStatus> {
    let found = fip::ensure_floating_ip(s, &scope.owner, target).await?;
    v.floating_ip = Some(found.ip.clone());
    v.floating_ip_id = Some(found.id.clone());
    record(scope, ingress, v.clone());
    scope.flush().await?;
    fip::associate_floating_ip(s, &found, target.port_id).await?;
    Ok(v)
}

/// Delete the ingress VIP's floating IP (the API floating IP is deleted with the cluster's
/// other API floating IPs).
pub(super) async fn delete_ingress_floating_ip(scope: &Scope<'_>, s: &Session) -> Result<()> {
    fip::delete_floating_ips(s, &scope.owner, Purpose::Ingress, None).await?;
    Ok(())
}

/// Delete the VIP ports (control plane, ingress).
pub(super) async fn delete_ports(scope: &Scope<'_>, s: &Session) -> Result<()> {
    for (purpose, ingress) in [(CONTROL_PLANE, false), (INGRESS, true)] {
        let rec = recorded(scope, ingress);
        vip_port::delete_vip_port(s, &scope.owner, purpose, rec.port_id.as_deref()).await?;
    }
    Ok(())
}

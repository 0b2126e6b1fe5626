//! Reserved VIP ports for the BA/ACP extension's keepalived mode: a Neutron port on the
//! cluster subnet that holds a virtual IP (control plane or ingress). Nothing is bound to it;
//! keepalived on the machines moves the address, which Neutron lets through because every
//! participating machine port carries it as an allowed address pair, and the floating IP sits
//! on this port so it never moves when machines come and go.
//!
//! Found by recorded ID, else by name `k8s-clusterapi-cluster-<ns>-<name>-<purpose>-vip` +
//! ownership tag (untagged = adopted, foreign = refused), else by the name the peer provider
//! gave it (`<ns>-<name>-{controlplane,ingress}-keepalived`, adopted the same way, so a cluster
//! switched from the peer keeps its VIPs), created with the address asked for.

use capo_openstack::Session;
use capo_openstack::network::{self as net, FixedIp, ListFilter, PORT, Port, PortCreate};

use crate::error::{Context, Result};
use crate::networking::lookup::{Origin, delete_opt, ensure_tags, find_owned};
use crate::ownership::Owner;

/// What VIP port to ensure.
#[derive(Debug, Clone, Copy)]
pub struct VipPortRequest<'a> {
    /// `kubeapi` or `ingress` (part of the name).
    pub purpose: &'a str,
    /// Cluster network.
    pub network_id: &'a str,
    /// Subnet the VIP is allocated from.
    pub subnet_id: &'a str,
    /// A fixed address the user asked for.
    pub address: Option<&'a str>,
    /// Port ID recorded in status.
    pub recorded_id: Option<&'a str>,
}

/// The VIP port's name.
pub fn vip_port_name(owner: &Owner, purpose: &str) -> String {
    capo_api::names::vip_port_name(&owner.namespace, &owner.name, purpose)
}

/// Our VIP port of `purpose`: the recorded one, else by our name, else by the peer's name.
async fn find_vip_port(
    s: &Session,
    owner: &Owner,
    purpose: &str,
    network_id: Option<&str>,
    recorded_id: Option<&str>,
) -> Result<Option<Port>> {
    let peer = capo_api::names::peer_vip_port_name(&owner.namespace, &owner.name, purpose);
    for (i, name) in [vip_port_name(owner, purpose), peer].iter().enumerate() {
        let mut filter = ListFilter::by_name(name);
        if let Some(network) = network_id {
            filter = filter.with("network_id", network);
        }
        let recorded = if i == 0 { recorded_id } else { None };
        if let Some(p) = find_owned(s, owner, PORT, recorded, filter).await? {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// Ensure the VIP port; returns it with its address (first fixed IP).
pub async fn ensure_vip_port(s: &Session, owner: &Owner, r: VipPortRequest<'_>) -> Result<Port> {
    let name = vip_port_name(owner, r.purpose);
    let found = find_vip_port(s, owner, r.purpose, Some(r.network_id), r.recorded_id).await?;
    let (mut port, origin) = match found {
        Some(p) => (p, Origin::Found),
        None => {
            let body = PortCreate {
                name: name.clone(),
                network_id: r.network_id.to_owned(),
                description: Some(format!(
                    "capo {} VIP of OpenStackCluster {}/{}",
                    r.purpose, owner.namespace, owner.name
                )),
                fixed_ips: vec![FixedIp {
                    subnet_id: Some(r.subnet_id.to_owned()),
                    ip_address: r.address.map(str::to_owned),
                }],
                ..Default::default()
            };
            let created = net::create(s, PORT, &body)
                .await
                .ctx(|| format!("create VIP port {name}"))?;
            (created, Origin::Created)
        }
    };
    port.tags = ensure_tags(s, owner, PORT, &port, origin).await?;
    Ok(port)
}

/// The VIP address of a port (its first fixed IP).
pub fn vip_address(p: &Port) -> Option<String> {
    p.fixed_ips.iter().find_map(|f| f.ip_address.clone())
}

/// Delete the VIP port of `purpose` (recorded ID or name + ownership). Absent is success;
/// another cluster's port is left alone.
pub async fn delete_vip_port(
    s: &Session,
    owner: &Owner,
    purpose: &str,
    recorded_id: Option<&str>,
) -> Result<()> {
    match find_vip_port(s, owner, purpose, None, recorded_id).await {
        Ok(Some(p)) => delete_opt(s, PORT, &p.id).await,
        Ok(None) => Ok(()),
        Err(crate::Error::ForeignResource { id, owner_tag, .. }) => {
            tracing::warn!(%id, %owner_tag, "VIP port with our name belongs to another cluster; left alone");
            Ok(())
        }
        Err(e) => Err(e),
    }
}

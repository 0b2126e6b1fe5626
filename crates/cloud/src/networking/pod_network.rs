//! The pod network of a cluster whose BA/ACP extension asks for `kubeNetworkPlugin: cilium`.
//!
//! Cilium's OpenStack IPAM gives pods addresses from Neutron ports on a subnet of their own.
//! As the peer Go provider does (and under its names, so a cluster switched from it adopts what
//! it made), capo makes:
//! - the network `<ns>-<name>-vpc-cni` and its subnet `<ns>-<name>-vpc-cni-subnet` with the
//!   Cluster's first pod CIDR block, DHCP off (Cilium assigns the addresses), attached to the
//!   cluster router so pods reach the nodes and the outside;
//! - the security group `<ns>-<name>-vpc-cni-secgroup`, which allows all traffic: pod policy is
//!   Cilium's job, and the consumer hands this group to the pods' ports.
//!
//! Everything is tagged and adopted like the cluster network. Deleting removes every port left
//! on the network (the ports Cilium made for pods of nodes already gone), the router interface,
//! the network and the group.

use capo_api::names::{pod_network_name, pod_security_group_name, pod_subnet_name};
use capo_openstack::Session;
use capo_openstack::network::{
    self as net, ListFilter, NETWORK, Network, NetworkCreate, SUBNET, Subnet, SubnetCreate,
};

use crate::error::{Context, Error, Result};
use crate::networking::lookup::{Origin, ensure_tags, find_owned};
use crate::networking::network::{delete_with_ports, description, ensure_named_network};
use crate::networking::router::attach_subnets;
use crate::networking::security_groups::{delete_named_groups, ensure_allow_all_group};
use crate::ownership::Owner;
use crate::plan::cidr::canonical;

/// What the pod network is made of (IDs recorded in status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodNetwork {
    /// Neutron network ID.
    pub network_id: String,
    /// Neutron subnet ID.
    pub subnet_id: String,
    /// The subnet's CIDR.
    pub cidr: String,
    /// The allow-all security group's ID.
    pub security_group_id: String,
}

/// IDs recorded by an earlier reconcile (each is checked, and looked up by name when gone).
#[derive(Debug, Clone, Copy, Default)]
pub struct Recorded<'a> {
    /// The network.
    pub network: Option<&'a str>,
    /// The subnet.
    pub subnet: Option<&'a str>,
    /// The security group.
    pub security_group: Option<&'a str>,
}

/// Ensure the pod network with `cidr` on `router_id`, and the pods' security group.
pub async fn ensure_pod_network(
    s: &Session,
    owner: &Owner,
    cidr: &str,
    router_id: &str,
    recorded: Recorded<'_>,
) -> Result<PodNetwork> {
    let name = pod_network_name(&owner.namespace, &owner.name);
    let (network, fresh) = ensure_named_network(s, owner, &name, recorded.network, || {
        Ok(NetworkCreate {
            name: name.clone(),
            description: Some(description(owner)),
            ..Default::default()
        })
    })
    .await?;
    let subnet = ensure_subnet(s, owner, &network.id, cidr, fresh, recorded.subnet).await?;
    // A subnet made just now cannot be on the router yet: skip the router's port list.
    attach_subnets(s, router_id, std::iter::once(subnet.id.as_str()), fresh).await?;
    let group_name = pod_security_group_name(&owner.namespace, &owner.name);
    let group = ensure_allow_all_group(s, owner, &group_name, recorded.security_group).await?;
    Ok(PodNetwork {
        network_id: network.id,
        subnet_id: subnet.id,
        cidr: subnet.cidr,
        security_group_id: group.id,
    })
}

/// The subnet with `cidr` on the network (found by the recorded ID, else by network + CIDR).
/// A subnet of the network with another CIDR means the Cluster's pod CIDR changed under a
/// running cluster: refused rather than renumbering its pods.
async fn ensure_subnet(
    s: &Session,
    owner: &Owner,
    network_id: &str,
    cidr: &str,
    fresh: bool,
    recorded: Option<&str>,
) -> Result<Subnet> {
    let (subnet, origin) = if fresh {
        (
            create_subnet(s, owner, network_id, cidr).await?,
            Origin::Created,
        )
    } else {
        let filter = ListFilter::default().with("network_id", network_id);
        let on_network: Vec<Subnet> = net::list(s, SUBNET, &filter)
            .await
            .ctx(|| format!("list subnets of network {network_id}"))?;
        let recorded_one = on_network
            .iter()
            .find(|sn| Some(sn.id.as_str()) == recorded)
            .or_else(|| on_network.iter().find(|sn| same_cidr(&sn.cidr, cidr)));
        match (recorded_one, on_network.first()) {
            (Some(sn), _) if same_cidr(&sn.cidr, cidr) => (sn.clone(), Origin::Found),
            (Some(sn), _) | (None, Some(sn)) => {
                return Err(Error::InvalidSpec(format!(
                    "the pod network {} already has subnet {} with CIDR {}, but the Cluster's spec.clusterNetwork.pods.cidrBlocks[0] is {cidr}; a running cluster's pod CIDR cannot change",
                    network_id, sn.id, sn.cidr
                )));
            }
            (None, None) => (
                create_subnet(s, owner, network_id, cidr).await?,
                Origin::Created,
            ),
        }
    };
    let mut subnet = subnet;
    subnet.tags = ensure_tags(s, owner, SUBNET, &subnet, origin).await?;
    Ok(subnet)
}

async fn create_subnet(s: &Session, owner: &Owner, network_id: &str, cidr: &str) -> Result<Subnet> {
    let name = pod_subnet_name(&owner.namespace, &owner.name);
    let body = SubnetCreate {
        name: name.clone(),
        network_id: network_id.to_owned(),
        cidr: cidr.to_owned(),
        ip_version: if cidr.contains(':') { 6 } else { 4 },
        description: Some(description(owner)),
        enable_dhcp: Some(false),
        ..Default::default()
    };
    net::create(s, SUBNET, &body)
        .await
        .ctx(|| format!("create subnet {name} ({cidr})"))
}

/// Neutron answers a CIDR in its canonical form; compare without host bits or case.
fn same_cidr(a: &str, b: &str) -> bool {
    canonical(a) == canonical(b)
}

/// Delete the pod network (after every port on it, and its router interface) and the pods'
/// security group. Absent is success; another cluster's resources are left alone; a group
/// still used by a port comes back as a retryable 409.
pub async fn delete_pod_network(s: &Session, owner: &Owner, recorded: Recorded<'_>) -> Result<()> {
    let name = pod_network_name(&owner.namespace, &owner.name);
    match find_owned::<Network>(
        s,
        owner,
        NETWORK,
        recorded.network,
        ListFilter::by_name(&name),
    )
    .await
    {
        Ok(Some(n)) => delete_with_ports(s, &n.id).await?,
        Ok(None) => {}
        Err(Error::ForeignResource { id, owner_tag, .. }) => {
            tracing::warn!(%id, %owner_tag, "pod network with our name belongs to another cluster; left alone");
        }
        Err(e) => return Err(e),
    }
    let group = pod_security_group_name(&owner.namespace, &owner.name);
    delete_named_groups(s, owner, &[group]).await
}

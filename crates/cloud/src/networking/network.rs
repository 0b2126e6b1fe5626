//! The cluster network and subnets: managed (created, tagged, kept in shape) or pre-existing
//! (resolved only).

use capo_api::v1beta1::{
    NetworkStatusWithSubnets, OpenStackClusterSpec, Subnet as SubnetStatus, SubnetSpec,
};
use capo_openstack::Session;
use capo_openstack::network::{
    self as net, AllocationPool, ListFilter, NETWORK, Network, NetworkCreate, PORT, Port, SUBNET,
    Subnet, SubnetCreate,
};
use serde_json::json;

use crate::error::{Context, Error, Result};
use crate::networking::lookup::{
    Origin, delete_opt, ensure_tags, find_owned, neutron_filter, resolve_one, subnet_filter,
};
use crate::ownership::Owner;

/// True when the provider creates the network: `spec.managedSubnets` is non-empty (as
/// upstream; with it empty, `spec.network` / `spec.subnets` name a pre-existing network).
pub fn is_managed_network(spec: &OpenStackClusterSpec) -> bool {
    !spec.managed_subnets.is_empty()
}

/// Ensure the cluster network and its subnets; returns what goes to `status.network`, the
/// primary subnet first (see [`node_subnet`]). `recorded` is the current `status.network` (IDs
/// are preferred over names).
pub async fn ensure_cluster_network(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    recorded: Option<&NetworkStatusWithSubnets>,
) -> Result<NetworkStatusWithSubnets> {
    let status = if is_managed_network(spec) {
        ensure_managed_network(s, owner, spec, recorded).await?
    } else {
        resolve_existing_network(s, spec).await?
    };
    primary_first(s, spec, status).await
}

/// The subnet of the cluster's own addresses (keepalived VIP, the subnet published to the
/// BA/ACP consumers): the primary subnet when `spec.primarySubnet` is set (the network step puts
/// it first in `status.network.subnets`), else the first IPv4 subnet, else the first.
pub fn node_subnet<'a>(
    spec: &OpenStackClusterSpec,
    network: &'a NetworkStatusWithSubnets,
) -> Option<&'a SubnetStatus> {
    if spec.primary_subnet.is_some() {
        return network.subnets.first();
    }
    (network.subnets.iter())
        .find(|sn| !sn.cidr.contains(':'))
        .or_else(|| network.subnets.first())
}

/// `spec.primarySubnet`, resolved among the cluster's subnets, moved to the front of
/// `subnets`: the first subnet is the one that carries the API load balancer's VIP, the
/// keepalived VIP and the addresses published to the BA/ACP consumers (upstream's "first of the
/// resolved subnets" when no primary subnet is given). Given by ID it costs no request.
async fn primary_first(
    s: &Session,
    spec: &OpenStackClusterSpec,
    mut status: NetworkStatusWithSubnets,
) -> Result<NetworkStatusWithSubnets> {
    let Some(param) = &spec.primary_subnet else {
        return Ok(status);
    };
    let id = match param.id.as_deref().filter(|i| !i.is_empty()) {
        Some(id) => id.to_owned(),
        None => {
            let filter = param
                .filter
                .as_ref()
                .map(|f| subnet_filter(f).with("network_id", status.id.as_str()));
            resolve_one::<Subnet>(s, SUBNET, None, filter).await?.id
        }
    };
    let Some(i) = status.subnets.iter().position(|sn| sn.id == id) else {
        let ours: Vec<&str> = status.subnets.iter().map(|sn| sn.id.as_str()).collect();
        return Err(Error::InvalidSpec(format!(
            "spec.primarySubnet: subnet {id} is not one of the cluster's subnets ({})",
            ours.join(", ")
        )));
    };
    let primary = status.subnets.remove(i);
    status.subnets.insert(0, primary);
    Ok(status)
}

/// The managed network `k8s-clusterapi-cluster-<ns>-<name>` and its one subnet.
async fn ensure_managed_network(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    recorded: Option<&NetworkStatusWithSubnets>,
) -> Result<NetworkStatusWithSubnets> {
    let [subnet_spec] = spec.managed_subnets.as_slice() else {
        return Err(Error::InvalidSpec(
            "managedSubnets supports only one element".to_owned(),
        ));
    };
    let (network, fresh) =
        network_with_origin(s, owner, spec, recorded.map(|r| r.id.as_str())).await?;
    let recorded_subnet = recorded
        .filter(|r| r.id == network.id)
        .and_then(|r| r.subnets.first())
        .map(|s| s.id.as_str());
    // A network created just now has no subnet: skip the lookup.
    let subnet = if fresh {
        let created = create_subnet(s, owner, subnet_spec, &network.id).await?;
        finish_subnet(s, owner, subnet_spec, created, Origin::Created).await?
    } else {
        ensure_subnet(s, owner, subnet_spec, &network.id, recorded_subnet).await?
    };
    Ok(NetworkStatusWithSubnets {
        name: super::status_name(network.name, &network.id),
        id: network.id,
        subnets: vec![subnet_status(subnet)],
        tags: network.tags,
    })
}

/// A subnet as the status records it.
pub(crate) fn subnet_status(s: Subnet) -> SubnetStatus {
    SubnetStatus {
        cidr: s.cidr,
        name: super::status_name(s.name, &s.id),
        id: s.id,
        tags: s.tags,
    }
}

/// Ensure the managed network `k8s-clusterapi-cluster-<ns>-<name>` (MTU, port security).
pub async fn ensure_network(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    recorded: Option<&str>,
) -> Result<Network> {
    Ok(network_with_origin(s, owner, spec, recorded).await?.0)
}

/// The managed network and whether it was created by this call.
async fn network_with_origin(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    recorded: Option<&str>,
) -> Result<(Network, bool)> {
    let name = owner.cluster_resource_name();
    ensure_named_network(s, owner, &name, recorded, || {
        let mtu = spec
            .network_mtu
            .map(|m| {
                u32::try_from(m)
                    .map_err(|_| Error::InvalidSpec(format!("networkMTU {m} is invalid")))
            })
            .transpose()?;
        Ok(NetworkCreate {
            name: name.clone(),
            description: Some(description(owner)),
            mtu,
            port_security_enabled: spec.disable_port_security.filter(|d| *d).map(|_| false),
            admin_state_up: None,
        })
    })
    .await
}

/// Our network `name` (recorded ID, else name + ownership; untagged is adopted), else one
/// created from `body` (built only when needed), tagged; and whether it was created now.
pub(crate) async fn ensure_named_network(
    s: &Session,
    owner: &Owner,
    name: &str,
    recorded: Option<&str>,
    body: impl FnOnce() -> Result<NetworkCreate>,
) -> Result<(Network, bool)> {
    if let Some(mut n) =
        find_owned::<Network>(s, owner, NETWORK, recorded, ListFilter::by_name(name)).await?
    {
        n.tags = ensure_tags(s, owner, NETWORK, &n, Origin::Found).await?;
        return Ok((n, false));
    }
    let mut n: Network = net::create(s, NETWORK, &body()?)
        .await
        .ctx(|| format!("create network {name}"))?;
    n.tags = ensure_tags(s, owner, NETWORK, &n, Origin::Created).await?;
    Ok((n, true))
}

/// Ensure the managed subnet: found by ID, else by network + CIDR (as upstream); DNS servers
/// are updated in place; allocation pools apply at creation.
pub async fn ensure_subnet(
    s: &Session,
    owner: &Owner,
    want: &SubnetSpec,
    network_id: &str,
    recorded: Option<&str>,
) -> Result<Subnet> {
    let filter = ListFilter::default()
        .with("network_id", network_id)
        .with("cidr", want.cidr.as_str());
    let found = find_owned::<Subnet>(s, owner, SUBNET, recorded, filter).await?;
    let (subnet, origin) = match found.filter(|f| f.network_id == network_id) {
        Some(sn) => (sn, Origin::Found),
        None => (
            create_subnet(s, owner, want, network_id).await?,
            Origin::Created,
        ),
    };
    finish_subnet(s, owner, want, subnet, origin).await
}

/// Tag the subnet and bring its DNS servers in line.
async fn finish_subnet(
    s: &Session,
    owner: &Owner,
    want: &SubnetSpec,
    mut subnet: Subnet,
    origin: Origin,
) -> Result<Subnet> {
    subnet.tags = ensure_tags(s, owner, SUBNET, &subnet, origin).await?;
    if subnet.dns_nameservers != want.dns_nameservers {
        let body = json!({"dns_nameservers": want.dns_nameservers});
        subnet = net::update(s, SUBNET, &subnet.id, body)
            .await
            .ctx(|| format!("update DNS servers of subnet {}", subnet.id))?;
    }
    Ok(subnet)
}

async fn create_subnet(
    s: &Session,
    owner: &Owner,
    want: &SubnetSpec,
    network_id: &str,
) -> Result<Subnet> {
    let name = owner.cluster_resource_name();
    let body = SubnetCreate {
        name: name.clone(),
        network_id: network_id.to_owned(),
        cidr: want.cidr.clone(),
        ip_version: if want.cidr.contains(':') { 6 } else { 4 },
        description: Some(description(owner)),
        dns_nameservers: want.dns_nameservers.clone(),
        allocation_pools: want
            .allocation_pools
            .iter()
            .map(|p| AllocationPool {
                start: p.start.clone(),
                end: p.end.clone(),
            })
            .collect(),
        gateway_ip: None,
        enable_dhcp: None,
    };
    net::create(s, SUBNET, &body)
        .await
        .ctx(|| format!("create subnet {name} ({})", want.cidr))
}

/// Resolve a pre-existing network and its subnets (those listed in the spec, else every subnet
/// of the network, at most two); ≤1 IPv4 + ≤1 IPv6; the network is inferred from the first
/// subnet when only subnets are given. Nothing is written.
pub async fn resolve_existing_network(
    s: &Session,
    spec: &OpenStackClusterSpec,
) -> Result<NetworkStatusWithSubnets> {
    let mut network: Option<Network> = match &spec.network {
        Some(p) => Some(
            resolve_one(
                s,
                NETWORK,
                p.id.as_deref(),
                p.filter.as_ref().map(neutron_filter),
            )
            .await?,
        ),
        None => None,
    };
    let mut subnets: Vec<Subnet> = Vec::new();
    for p in &spec.subnets {
        let filter = p.filter.as_ref().map(|f| {
            let l = subnet_filter(f);
            match &network {
                Some(n) => l.with("network_id", n.id.as_str()),
                None => l,
            }
        });
        let sn: Subnet = resolve_one(s, SUBNET, p.id.as_deref(), filter).await?;
        if network.is_none() {
            network = Some(resolve_one(s, NETWORK, Some(&sn.network_id), None).await?);
        }
        subnets.push(sn);
    }
    let Some(network) = network else {
        return Err(Error::InvalidSpec(
            "neither network nor subnets given".to_owned(),
        ));
    };
    if let Some(bad) = subnets.iter().find(|sn| sn.network_id != network.id) {
        return Err(Error::InvalidSpec(format!(
            "subnet {} is not on network {} ({})",
            bad.id, network.name, network.id
        )));
    }
    if spec.subnets.is_empty() {
        let filter = ListFilter::default().with("network_id", network.id.as_str());
        subnets = net::list(s, SUBNET, &filter)
            .await
            .ctx(|| format!("list subnets of network {}", network.id))?;
        // Without a primary subnet, which of several would carry the VIP is a guess.
        if subnets.len() > 2 && spec.primary_subnet.is_none() {
            return Err(Error::InvalidSpec(format!(
                "network {} has {} subnets; list the ones to use in spec.subnets",
                network.id,
                subnets.len()
            )));
        }
    }
    // Subnets the user listed are used in the order given, the first of each IP version
    // carrying the VIP, as upstream; several of one version found on the network are a guess.
    for v in [4, 6] {
        let several = subnets.iter().filter(|sn| sn.ip_version == v).count() > 1;
        if several && spec.primary_subnet.is_none() && spec.subnets.is_empty() {
            return Err(Error::InvalidSpec(format!(
                "more than one IPv{v} subnet given; set spec.primarySubnet to choose the one \
                 the API VIP uses"
            )));
        }
    }
    Ok(NetworkStatusWithSubnets {
        name: super::status_name(network.name, &network.id),
        id: network.id,
        subnets: subnets.into_iter().map(subnet_status).collect(),
        tags: network.tags,
    })
}

/// Delete the managed network after removing every port on it (router interfaces are
/// detached from their router, DHCP ports go with the network, anything else is deleted).
/// Pre-existing networks and another cluster's network are never touched; an absent
/// network is success. A 409 (port still in use) comes back retryable.
pub async fn delete_network(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    recorded: Option<&NetworkStatusWithSubnets>,
) -> Result<()> {
    if !is_managed_network(spec) {
        return Ok(());
    }
    let name = owner.cluster_resource_name();
    let found = find_owned::<Network>(
        s,
        owner,
        NETWORK,
        recorded.map(|r| r.id.as_str()),
        ListFilter::by_name(&name),
    );
    let network = match found.await {
        Ok(Some(n)) => n,
        Ok(None) => return Ok(()),
        Err(Error::ForeignResource { id, owner_tag, .. }) => {
            tracing::warn!(%id, %owner_tag, "network with our name belongs to another cluster; left alone");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    delete_with_ports(s, &network.id).await
}

/// Delete a network of ours after removing every port on it: router interfaces are detached
/// from their router, DHCP ports go with the network, anything else (ports left by a CNI or a
/// crashed create) is deleted.
pub(crate) async fn delete_with_ports(s: &Session, network_id: &str) -> Result<()> {
    let filter = ListFilter::default().with("network_id", network_id);
    let ports: Vec<Port> = net::list(s, PORT, &filter)
        .await
        .ctx(|| format!("list ports of network {network_id}"))?;
    for p in ports {
        if p.device_owner.starts_with("network:router_interface") {
            for ip in p.fixed_ips.iter().filter_map(|f| f.subnet_id.as_deref()) {
                detach(s, &p.device_id, ip).await?;
            }
        } else if p.device_owner != "network:dhcp" {
            delete_opt(s, PORT, &p.id).await?;
        }
    }
    delete_opt(s, NETWORK, network_id).await
}

/// The description of every network and subnet capo creates.
pub(crate) fn description(owner: &Owner) -> String {
    format!(
        "Created by capo for OpenStackCluster {}/{}",
        owner.namespace, owner.name
    )
}

/// Detach a subnet from a router; already detached or router gone is success.
pub(crate) async fn detach(s: &Session, router_id: &str, subnet_id: &str) -> Result<()> {
    net::remove_router_interface(s, router_id, subnet_id)
        .await
        .ctx_opt(|| format!("detach subnet {subnet_id} from router {router_id}"))?;
    Ok(())
}

//! The cluster router, as upstream:
//! - managed network with an external network: the managed router
//!   `k8s-clusterapi-cluster-<ns>-<name>` (gateway on the external network with optional fixed
//!   IPs, one interface per cluster subnet), or the bring-your-own `spec.router`, which only
//!   gets our subnets' interfaces (its gateway, tags and itself are never changed or deleted);
//! - managed network without an external network: no router;
//! - pre-existing network: `spec.router`, if given, is resolved and reported; nothing is written.

use capo_api::v1beta1::{
    NetworkParam, NetworkStatus, NetworkStatusWithSubnets, OpenStackClusterSpec,
    Router as RouterStatus,
};
use capo_openstack::Session;
use capo_openstack::network::{
    self as net, ExternalGateway, FixedIp, ListFilter, PORT, Port, ROUTER, Router, RouterCreate,
    SUBNET, Subnet,
};

use crate::error::{Context, Error, Result};
use crate::networking::lookup::{
    Origin, delete_opt, ensure_tags, find_owned, neutron_filter, resolve_one, subnet_filter,
};
use crate::networking::network::{detach, is_managed_network};
use crate::ownership::Owner;

/// Ensure the router and its interfaces; `Ok(None)` when the cluster gets no router.
pub async fn ensure_router(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    external: Option<&NetworkStatus>,
    network: &NetworkStatusWithSubnets,
    recorded: Option<&RouterStatus>,
) -> Result<Option<RouterStatus>> {
    if !is_managed_network(spec) {
        return match &spec.router {
            Some(p) => Ok(Some(router_status(resolve_byo(s, p).await?))),
            None => Ok(None),
        };
    }
    let Some(ext) = external else {
        return Ok(None);
    };
    let (router, fresh) = match &spec.router {
        Some(p) => (resolve_byo(s, p).await?, false),
        None => ensure_managed_router(s, owner, spec, ext, recorded.map(|r| r.id.as_str())).await?,
    };
    let subnets = network.subnets.iter().map(|sn| sn.id.as_str());
    attach_subnets(s, &router.id, subnets, fresh).await?;
    Ok(Some(router_status(router)))
}

/// The user's router (`spec.router`), by id or filter.
async fn resolve_byo(s: &Session, p: &NetworkParam) -> Result<Router> {
    resolve_one(
        s,
        ROUTER,
        p.id.as_deref(),
        p.filter.as_ref().map(neutron_filter),
    )
    .await
}

fn router_status(router: Router) -> RouterStatus {
    let ips = router
        .external_gateway_info
        .iter()
        .flat_map(|g| g.external_fixed_ips.iter())
        .filter_map(|ip| ip.ip_address.clone())
        .collect();
    RouterStatus {
        name: super::status_name(router.name, &router.id),
        id: router.id,
        ips,
        tags: router.tags,
    }
}

async fn ensure_managed_router(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    ext: &NetworkStatus,
    recorded: Option<&str>,
) -> Result<(Router, bool)> {
    let name = owner.cluster_resource_name();
    let found =
        find_owned::<Router>(s, owner, ROUTER, recorded, ListFilter::by_name(&name)).await?;
    let (mut router, fresh) = match found {
        Some(r) => (r, false),
        None => {
            let body = RouterCreate {
                name: name.clone(),
                description: Some(format!(
                    "Created by capo for OpenStackCluster {}/{}",
                    owner.namespace, owner.name
                )),
                external_gateway_info: Some(gateway(s, spec, ext).await?),
            };
            let r = net::create(s, ROUTER, &body)
                .await
                .ctx(|| format!("create router {name}"))?;
            (r, true)
        }
    };
    let origin = if fresh {
        Origin::Created
    } else {
        Origin::Found
    };
    router.tags = ensure_tags(s, owner, ROUTER, &router, origin).await?;
    // Only the gateway network is compared: Neutron fills in external IPs we did not ask for.
    if router
        .external_gateway_info
        .as_ref()
        .map(|g| g.network_id.as_str())
        != Some(ext.id.as_str())
    {
        let gw = gateway(s, spec, ext).await?;
        let req = net::set_router_gateway_request(&router.id, Some(&gw));
        router = s
            .fetch(&req, "router")
            .await
            .ctx(|| format!("set gateway of router {}", router.id))?;
    }
    Ok((router, fresh))
}

/// The gateway body: external network plus `spec.externalRouterIPs` (subnets resolved on it).
async fn gateway(
    s: &Session,
    spec: &OpenStackClusterSpec,
    ext: &NetworkStatus,
) -> Result<ExternalGateway> {
    let mut external_fixed_ips = Vec::new();
    for ip in &spec.external_router_ips {
        let subnet_id = match ip.subnet.id.as_deref().filter(|i| !i.is_empty()) {
            Some(id) => id.to_owned(),
            None => {
                let filter = ip
                    .subnet
                    .filter
                    .as_ref()
                    .map(|f| subnet_filter(f).with("network_id", ext.id.as_str()));
                resolve_one::<Subnet>(s, SUBNET, None, filter).await?.id
            }
        };
        external_fixed_ips.push(FixedIp {
            subnet_id: Some(subnet_id),
            ip_address: ip.fixed_ip.clone(),
        });
    }
    Ok(ExternalGateway {
        network_id: ext.id.clone(),
        external_fixed_ips,
    })
}

/// Ports of a router (one list; interfaces of every kind: plain, DVR, HA).
async fn router_ports(s: &Session, router_id: &str) -> Result<Vec<Port>> {
    let filter = ListFilter::default().with("device_id", router_id);
    net::list(s, PORT, &filter)
        .await
        .ctx(|| format!("list ports of router {router_id}"))
}

/// Give the router an interface on each of `subnets` it has none on yet. `fresh`: the router
/// was created just now and has no interfaces (the lookup is skipped).
pub(crate) async fn attach_subnets<'a>(
    s: &Session,
    router_id: &str,
    subnets: impl Iterator<Item = &'a str>,
    fresh: bool,
) -> Result<()> {
    let ports = if fresh {
        Vec::new()
    } else {
        router_ports(s, router_id).await?
    };
    let attached = |subnet: &str| {
        ports.iter().any(|p| {
            p.fixed_ips
                .iter()
                .any(|f| f.subnet_id.as_deref() == Some(subnet))
        })
    };
    for sn in subnets.filter(|sn| !attached(sn)) {
        match net::add_router_interface(s, router_id, sn).await {
            Ok(_) => {}
            // A PUT retried after a lost reply answers "already has a port on subnet".
            Err(e)
                if matches!(e.kind(), Some(capo_openstack::ErrorKind::BadRequest))
                    && e.to_string().contains("already") => {}
            Err(e) => {
                return Err(Error::api(
                    format!("attach subnet {sn} to router {router_id}"),
                    e,
                ));
            }
        }
    }
    Ok(())
}

/// Delete the router. A managed router loses every interface, then is deleted; a BYO router
/// only loses our managed subnets' interfaces. Absent is success; another cluster's router
/// is left alone.
pub async fn delete_router(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    network: Option<&NetworkStatusWithSubnets>,
    recorded: Option<&RouterStatus>,
) -> Result<()> {
    if !is_managed_network(spec) {
        return Ok(());
    }
    if let Some(p) = &spec.router {
        let byo = match resolve_one::<Router>(
            s,
            ROUTER,
            p.id.as_deref(),
            p.filter.as_ref().map(neutron_filter),
        )
        .await
        {
            Ok(r) => r,
            Err(Error::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        for sn in network.map(|n| n.subnets.as_slice()).unwrap_or_default() {
            detach(s, &byo.id, &sn.id).await?;
        }
        return Ok(());
    }
    let name = owner.cluster_resource_name();
    let router = match find_owned::<Router>(
        s,
        owner,
        ROUTER,
        recorded.map(|r| r.id.as_str()),
        ListFilter::by_name(&name),
    )
    .await
    {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(()),
        Err(Error::ForeignResource { id, owner_tag, .. }) => {
            tracing::warn!(%id, %owner_tag, "router with our name belongs to another cluster; left alone");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    for p in router_ports(s, &router.id).await? {
        if p.device_owner.starts_with("network:router_interface") {
            for sn in p.fixed_ips.iter().filter_map(|f| f.subnet_id.as_deref()) {
                detach(s, &router.id, sn).await?;
            }
        }
    }
    delete_opt(s, ROUTER, &router.id).await
}

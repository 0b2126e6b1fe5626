//! The API server load balancer itself: lookup, create, adoption, state, cascade delete.

use capo_api::v1beta1::{APIServerLoadBalancer, NetworkStatusWithSubnets, OpenStackClusterSpec};
use capo_openstack::ErrorKind;
use capo_openstack::Session;
use capo_openstack::loadbalancer::{
    self as lbaas, AZ_VERSION, FLAVORS_VERSION, LOAD_BALANCER, LoadBalancer, LoadBalancerCreate,
    TAGS_VERSION,
};
use capo_openstack::network::{ListFilter, NETWORK, Network, SUBNET, Subnet};

use crate::Progress;
use crate::error::{Context, Error, Result};
use crate::loadbalancer::children::{self, ChildInputs, PlanInputs};
use crate::loadbalancer::octavia::{LbWithRefs, progress_of};
use crate::networking::lookup::{neutron_filter, pick_owned, resolve_one, subnet_filter};
use crate::ownership::{Owner, Ownership};

/// What the cluster controller passes in.
#[derive(Debug, Clone, Copy)]
pub struct LbInputs<'a> {
    /// The OpenStackCluster spec (`apiServerLoadBalancer`, `apiServerPort`).
    pub spec: &'a OpenStackClusterSpec,
    /// Network the VIP lives on: [`resolve_lb_network`]'s answer (recorded in
    /// `status.apiServerLoadBalancer.loadBalancerNetwork`).
    pub lb_network: &'a NetworkStatusWithSubnets,
    /// CIDRs of the cluster subnets (for `allowed_cidrs`).
    pub subnet_cidrs: &'a [String],
    /// The bastion's addresses (for `allowed_cidrs`).
    pub bastion_ips: &'a [String],
    /// The router's external IPs (for `allowed_cidrs`).
    pub router_ips: &'a [String],
    /// `status.apiServerLoadBalancer.id`, when recorded.
    pub recorded_id: Option<&'a str>,
    /// The VIP to ask Octavia for when the load balancer is created (`None`: Octavia picks):
    /// the caller's choice, e.g. the VIP recorded before the load balancer was lost, so that a
    /// re-created one keeps the address the control-plane endpoint names.
    pub vip_address: Option<&'a str>,
    /// Name of the load balancer; `None` for the API load balancer's
    /// `k8s-clusterapi-cluster-<ns>-<name>-kubeapi` (the BA/ACP ingress load balancer passes its
    /// own).
    pub name: Option<&'a str>,
}

/// The load balancer as reported to status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiLoadBalancer {
    /// Octavia ID: record it in status at once.
    pub id: String,
    /// Name.
    pub name: String,
    /// Fixed VIP address (`status.apiServerLoadBalancer.internalIP`).
    pub vip_address: String,
    /// Neutron port of the VIP (where the API floating IP goes).
    pub vip_port_id: String,
    /// Octavia provider actually used (e.g. `amphora`, `ovn`).
    pub provider: String,
    /// Octavia tags (ownership tag included when Octavia supports tags).
    pub tags: Vec<String>,
    /// Whether the load balancer and all its listeners/pools/monitors have converged.
    pub progress: Progress,
}

fn lb_spec(spec: &OpenStackClusterSpec) -> APIServerLoadBalancer {
    spec.api_server_load_balancer.clone().unwrap_or_default()
}

/// The VIP network: `spec.apiServerLoadBalancer.network`/`subnets` resolved, else the cluster
/// network as given (no request in that case).
pub async fn resolve_lb_network(
    s: &Session,
    spec: &OpenStackClusterSpec,
    cluster: &NetworkStatusWithSubnets,
) -> Result<NetworkStatusWithSubnets> {
    let lbs = lb_spec(spec);
    let Some(param) = &lbs.network else {
        return Ok(cluster.clone());
    };
    let filter = param.filter.as_ref().map(neutron_filter);
    let net: Network = resolve_one(s, NETWORK, param.id.as_deref(), filter).await?;
    let mut subnets = Vec::new();
    if lbs.subnets.is_empty() {
        let f = ListFilter::default().with("network_id", net.id.as_str());
        let all: Vec<Subnet> = capo_openstack::network::list(s, SUBNET, &f)
            .await
            .ctx(|| format!("list subnets of network {}", net.id))?;
        subnets.extend(all.into_iter().take(1));
    }
    for p in &lbs.subnets {
        let f = p
            .filter
            .as_ref()
            .map(|f| subnet_filter(f).with("network_id", net.id.as_str()));
        subnets.push(resolve_one::<Subnet>(s, SUBNET, p.id.as_deref(), f).await?);
    }
    Ok(NetworkStatusWithSubnets {
        name: crate::networking::status_name(net.name, &net.id),
        id: net.id,
        subnets: subnets
            .into_iter()
            .map(crate::networking::network::subnet_status)
            .collect(),
        tags: net.tags,
    })
}

/// `k8s-clusterapi-cluster-<ns>-<name>-kubeapi`.
pub fn lb_name(owner: &Owner) -> String {
    capo_api::names::api_load_balancer_name(&owner.namespace, &owner.name)
}

/// Find our load balancer: recorded ID (404 → fall through), then name + ownership tag.
pub(crate) async fn find_lb(
    s: &Session,
    owner: &Owner,
    name: &str,
    recorded: Option<&str>,
) -> Result<Option<LbWithRefs>> {
    if let Some(id) = recorded.filter(|i| !i.is_empty()) {
        let got = lbaas::get::<LbWithRefs>(s, LOAD_BALANCER, id).await;
        let got = got.ctx_opt(|| format!("get loadbalancer {id}"))?;
        if let Some(lb) = got.filter(|lb| lb.lb.provisioning_status != "DELETED") {
            return pick_owned(owner, "loadbalancer", vec![lb]);
        }
    }
    let found: Vec<LbWithRefs> = lbaas::list(s, LOAD_BALANCER, &ListFilter::by_name(name))
        .await
        .ctx(|| format!("list loadbalancer {name:?}"))?;
    let alive = found
        .into_iter()
        .filter(|l| l.lb.provisioning_status != "DELETED")
        .collect();
    pick_owned(owner, "loadbalancer", alive)
}

/// Ensure the API load balancer and, once it is ACTIVE, its listeners, pools and monitors.
///
/// Returns the IDs as soon as the load balancer exists (also right after the create), with
/// [`Progress::Waiting`] while Octavia is busy; at most one Octavia write per call.
pub async fn ensure_api_load_balancer(
    s: &Session,
    owner: &Owner,
    inp: LbInputs<'_>,
) -> Result<ApiLoadBalancer> {
    let version = lbaas::api_version(s)
        .await
        .ctx(|| "discover Octavia".into())?;
    let name = inp.name.map_or_else(|| lb_name(owner), str::to_owned);
    let found = find_lb(s, owner, &name, inp.recorded_id).await?;
    let Some(found) = found else {
        let lb = create_lb(s, owner, inp, version >= TAGS_VERSION, version).await?;
        return Ok(report(
            &lb,
            Progress::waiting("load balancer", &lb.id, "load balancer created"),
        ));
    };
    let lb = &found.lb;
    let progress = progress_of("load balancer", &lb.id, &lb.provisioning_status);
    if !progress.is_done() {
        return Ok(report(lb, progress));
    }
    if version >= TAGS_VERSION
        && let Some(tags) = owner.missing_tags(&lb.tags)
    {
        if owner.classify(&lb.tags) == Ownership::Unowned {
            tracing::info!(id = %lb.id, name = %lb.name, "adopting untagged load balancer");
        }
        let _: LoadBalancer =
            lbaas::update(s, LOAD_BALANCER, &lb.id, serde_json::json!({"tags": tags}))
                .await
                .ctx(|| format!("tag loadbalancer {}", lb.id))?;
        let mut out = report(
            lb,
            Progress::waiting("load balancer", &lb.id, "load balancer tagged"),
        );
        out.tags = tags;
        return Ok(out);
    }
    let spec = lb_spec(inp.spec);
    let child = ChildInputs {
        lb: &found,
        plan: plan_inputs(&inp, &spec, version),
    };
    let progress = children::ensure_children(s, child).await?;
    Ok(report(lb, progress))
}

fn plan_inputs<'a>(
    inp: &LbInputs<'a>,
    spec: &'a APIServerLoadBalancer,
    version: capo_openstack::ApiVersion,
) -> PlanInputs<'a> {
    PlanInputs {
        lb_spec: spec,
        api_port: inp.spec.api_server_port(),
        sources: crate::loadbalancer::cidrs::CidrSources {
            bastion_ips: inp.bastion_ips,
            subnet_cidrs: inp.subnet_cidrs,
            router_ips: inp.router_ips,
        },
        vip_acl: version >= lbaas::VIP_ACL_VERSION,
    }
}

fn report(lb: &LoadBalancer, progress: Progress) -> ApiLoadBalancer {
    ApiLoadBalancer {
        id: lb.id.clone(),
        name: lb.name.clone(),
        vip_address: lb.vip_address.clone().unwrap_or_default(),
        vip_port_id: lb.vip_port_id.clone().unwrap_or_default(),
        provider: lb.provider.clone().unwrap_or_default(),
        tags: lb.tags.clone(),
        progress,
    }
}

async fn create_lb(
    s: &Session,
    owner: &Owner,
    inp: LbInputs<'_>,
    tags: bool,
    version: capo_openstack::ApiVersion,
) -> Result<LoadBalancer> {
    let lbs = lb_spec(inp.spec);
    let name = inp.name.map_or_else(|| lb_name(owner), str::to_owned);
    let provider = match lbs.provider.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => provider_if_exists(s, p).await?,
        None => None,
    };
    let flavor_id = match lbs.flavor.as_deref().filter(|f| !f.is_empty()) {
        Some(f) if version >= FLAVORS_VERSION => flavor_if_exists(s, f).await?,
        _ => None,
    };
    let listeners = children::graph(&children::port_plans(
        &name,
        provider.as_deref(),
        &plan_inputs(&inp, &lbs, version),
    )?);
    let body = LoadBalancerCreate {
        name: name.clone(),
        description: Some(format!(
            "Created by capo for OpenStackCluster {}/{}",
            owner.namespace, owner.name
        )),
        vip_subnet_id: inp.lb_network.subnets.first().map(|sn| sn.id.clone()),
        vip_network_id: Some(inp.lb_network.id.clone()).filter(|i| !i.is_empty()),
        vip_address: inp.vip_address.filter(|i| !i.is_empty()).map(str::to_owned),
        provider,
        flavor_id,
        availability_zone: lbs
            .availability_zone
            .clone()
            .filter(|z| !z.is_empty() && version >= AZ_VERSION),
        tags: if tags {
            owner.desired_tags()
        } else {
            Vec::new()
        },
        listeners,
    };
    let created = lbaas::create(s, LOAD_BALANCER, &body).await;
    match created {
        // A provider that refuses part of the tree (the cloud's default provider is not known
        // before the create: ovn takes no ROUND_ROBIN) created nothing: create the load
        // balancer alone, and its children one by one once it is ACTIVE.
        Err(e) if matches!(e.kind(), Some(ErrorKind::BadRequest)) => {
            tracing::info!(lb = %name, error = %e, "Octavia refused the fully populated create; creating the load balancer alone");
            let alone = LoadBalancerCreate {
                listeners: Vec::new(),
                ..body
            };
            lbaas::create(s, LOAD_BALANCER, &alone)
                .await
                .ctx(|| format!("create loadbalancer {name}"))
        }
        other => other.ctx(|| format!("create loadbalancer {name}")),
    }
}

/// The provider name when Octavia offers it (upstream ignores an unknown provider).
async fn provider_if_exists(s: &Session, wanted: &str) -> Result<Option<String>> {
    let all = lbaas::list_providers(s)
        .await
        .ctx(|| "list Octavia providers".into())?;
    let hit = all.iter().any(|p| p.name == wanted);
    if !hit {
        tracing::warn!(
            provider = wanted,
            "Octavia provider not available; using the default"
        );
    }
    Ok(hit.then(|| wanted.to_owned()))
}

/// The flavor ID of an enabled flavor with that name (or ID), when it exists.
async fn flavor_if_exists(s: &Session, wanted: &str) -> Result<Option<String>> {
    let all = lbaas::list_flavors(s)
        .await
        .ctx(|| "list Octavia flavors".into())?;
    let hit = all
        .into_iter()
        .find(|f| f.enabled && (f.name == wanted || f.id == wanted))
        .map(|f| f.id);
    if hit.is_none() {
        tracing::warn!(
            flavor = wanted,
            "Octavia flavor not available; using the default"
        );
    }
    Ok(hit)
}

/// Delete the API load balancer with everything in it (cascade). `Ready` once it is gone;
/// `Progress::Waiting` while Octavia is busy with it or deleting it. Another cluster's load balancer of
/// the same name is left alone.
pub async fn delete_api_load_balancer(
    s: &Session,
    owner: &Owner,
    recorded: Option<&str>,
) -> Result<Progress> {
    delete_load_balancer_named(s, owner, &lb_name(owner), recorded).await
}

/// [`delete_api_load_balancer`] for the load balancer called `name`.
pub async fn delete_load_balancer_named(
    s: &Session,
    owner: &Owner,
    name: &str,
    recorded: Option<&str>,
) -> Result<Progress> {
    let found = match find_lb(s, owner, name, recorded).await {
        Ok(Some(l)) => l.lb,
        Ok(None) => return Ok(Progress::Done(())),
        Err(Error::ForeignResource { id, owner_tag, .. }) => {
            tracing::warn!(%id, %owner_tag, "load balancer with our name belongs to another cluster; left alone");
            return Ok(Progress::Done(()));
        }
        Err(e) => return Err(e),
    };
    if found.provisioning_status.starts_with("PENDING_") {
        return Ok(Progress::waiting(
            "load balancer",
            &found.id,
            format!(
                "load balancer {} is {}",
                found.id, found.provisioning_status
            ),
        ));
    }
    let deleted = lbaas::delete_load_balancer(s, &found.id, true).await;
    Ok(
        match deleted.ctx_opt(|| format!("delete loadbalancer {}", found.id))? {
            Some(()) => Progress::waiting(
                "load balancer",
                &found.id,
                format!("load balancer {} is being deleted", found.id),
            ),
            None => Progress::Done(()),
        },
    )
}

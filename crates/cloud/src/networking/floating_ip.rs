//! Neutron floating IPs, every use of them: the cluster's own (API server, bastion, ingress
//! VIP; [`Purpose`]), and addresses allocated by someone else that only move between ports
//! ([`move_address`]: an OpenStackFloatingIPPool's, the API floating IP shared by
//! control-plane machines without a load balancer).
//!
//! Two steps, so a crash never allocates twice: [`ensure_floating_ip`] finds or allocates
//! the floating IP and returns it for the caller to record in status, then
//! [`associate_floating_ip`] points it at its port. Floating IPs this cluster allocated
//! carry a description naming the OpenStackCluster (UID included) plus the ownership tag; the
//! description is set in the create itself, so even an allocation whose reply was lost is found
//! again. Only those are ever deleted: a `spec.apiServerFloatingIP` is the user's.

use capo_api::v1beta1::OpenStackClusterSpec;
use capo_openstack::Session;
use capo_openstack::network::{self as net, FLOATING_IP, FloatingIp, FloatingIpCreate, ListFilter};

use crate::error::{Context, Result};
use crate::networking::lookup::delete_opt;
use crate::ownership::Owner;

/// The API floating IP as found or allocated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiFloatingIp {
    /// Neutron ID.
    pub id: String,
    /// Address (`status.apiServerLoadBalancer.ip`, the control-plane endpoint host).
    pub ip: String,
    /// Port it is associated with, if any.
    pub port_id: Option<String>,
    /// Allocated by this cluster (deleted with it); false for a user-provided address.
    pub ours: bool,
}

/// What a cluster-level floating IP is for; each purpose has its own description, so the API
/// server's and the bastion's are never mistaken for each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The control-plane endpoint.
    ApiServer,
    /// The bastion host.
    Bastion,
    /// The ingress VIP of the BA/ACP extension.
    Ingress,
}

impl Purpose {
    fn what(self) -> &'static str {
        match self {
            Purpose::ApiServer => "API server",
            Purpose::Bastion => "bastion",
            Purpose::Ingress => "ingress",
        }
    }
}

/// Description that marks a floating IP as allocated by this cluster for `purpose`.
pub fn description(owner: &Owner, purpose: Purpose) -> String {
    format!(
        "capo {} floating IP of OpenStackCluster {}/{} ({})",
        purpose.what(),
        owner.namespace,
        owner.name,
        owner.uid
    )
}

fn wrap(owner: &Owner, purpose: Purpose, requested: Option<&str>, f: FloatingIp) -> ApiFloatingIp {
    let user = requested == Some(f.floating_ip_address.as_str());
    ApiFloatingIp {
        ours: !user && f.description == description(owner, purpose),
        id: f.id,
        ip: f.floating_ip_address,
        port_id: f.port_id,
    }
}

async fn list_fips(s: &Session, filter: ListFilter) -> Result<Vec<FloatingIp>> {
    let what = format!("list floating IPs {filter:?}");
    net::list(s, FLOATING_IP, &filter).await.ctx(|| what)
}

/// Where a cluster-level floating IP goes and what is known of it.
#[derive(Debug, Clone, Copy)]
pub struct FipTarget<'a> {
    /// What it is for.
    pub purpose: Purpose,
    /// The address the user asked for (`spec.apiServerFloatingIP`, `spec.bastion.floatingIP`).
    pub requested: Option<&'a str>,
    /// Network to allocate from.
    pub external_network_id: &'a str,
    /// Port it goes to (empty: not known yet).
    pub port_id: &'a str,
    /// Address recorded in status.
    pub recorded_ip: Option<&'a str>,
    /// An address named elsewhere (a preset `spec.controlPlaneEndpoint`): used when nothing is
    /// requested or recorded, found by address or else allocated with it. Unlike `requested`
    /// it says nothing of ownership: a floating IP found with it is ours only by its
    /// description (so the one capo or upstream allocated for this cluster, named again by the
    /// endpoint after a move or a takeover, still goes with the cluster), and one allocated
    /// with it is ours.
    pub named_ip: Option<&'a str>,
}

impl<'a> FipTarget<'a> {
    /// The API server's floating IP: `spec.apiServerFloatingIP` when set.
    pub fn api_server(
        spec: &'a OpenStackClusterSpec,
        external_network_id: &'a str,
        port_id: &'a str,
        recorded_ip: Option<&'a str>,
    ) -> Self {
        FipTarget {
            purpose: Purpose::ApiServer,
            requested: spec.api_server_floating_ip.as_deref(),
            external_network_id,
            port_id,
            recorded_ip,
            named_ip: None,
        }
    }
}

/// Find or allocate a floating IP for `t.purpose` on `t.external_network_id`. Preference: the
/// requested address (allocated with that address when absent), the address recorded in
/// status, the named address ([`FipTarget::named_ip`]), a floating IP already on the port, one
/// this cluster allocated before, else a new one (with the named address when there is one).
pub async fn ensure_floating_ip(
    s: &Session,
    owner: &Owner,
    t: &FipTarget<'_>,
) -> Result<ApiFloatingIp> {
    let (purpose, external_network_id, vip_port_id, recorded_ip) =
        (t.purpose, t.external_network_id, t.port_id, t.recorded_ip);
    let wanted = t.requested.filter(|a| !a.is_empty());
    let named = t.named_ip.filter(|a| !a.is_empty());
    let known = wanted.or(recorded_ip.filter(|a| !a.is_empty())).or(named);
    if let Some(addr) = known {
        let f = ListFilter::default().with("floating_ip_address", addr);
        if let Some(fip) = list_fips(s, f).await?.into_iter().next() {
            let fip = adopt(s, owner, purpose, wanted, fip).await?;
            return Ok(wrap(owner, purpose, wanted, fip));
        }
    }
    if !vip_port_id.is_empty() {
        let f = ListFilter::default().with("port_id", vip_port_id);
        if let Some(fip) = list_fips(s, f).await?.into_iter().next() {
            let fip = adopt(s, owner, purpose, wanted, fip).await?;
            return Ok(wrap(owner, purpose, wanted, fip));
        }
    }
    let desc = description(owner, purpose);
    if wanted.is_none() {
        let f = ListFilter {
            description: Some(desc.clone()),
            ..Default::default()
        };
        if let Some(fip) = list_fips(s, f).await?.into_iter().next() {
            // Allocated before a crash (or a lost reply) that skipped the tag write.
            if let Some(tags) = owner.missing_tags(&fip.tags) {
                net::replace_tags(s, FLOATING_IP, &fip.id, &tags)
                    .await
                    .ctx(|| format!("tag floating IP {}", fip.id))?;
            }
            return Ok(wrap(owner, purpose, wanted, fip));
        }
    }
    let body = FloatingIpCreate {
        floating_network_id: external_network_id.to_owned(),
        floating_ip_address: wanted.or(named).map(str::to_owned),
        // A user-requested address is the user's: it is not marked as ours, never deleted.
        description: Some(if wanted.is_some() {
            format!(
                "{} floating IP requested by OpenStackCluster {}/{}",
                purpose.what(),
                owner.namespace,
                owner.name
            )
        } else {
            desc
        }),
        ..Default::default()
    };
    let fip: FloatingIp = net::create(s, FLOATING_IP, &body)
        .await
        .ctx(|| format!("allocate {} floating IP", purpose.what()))?;
    if wanted.is_none() && owner.missing_tags(&fip.tags).is_some() {
        net::replace_tags(s, FLOATING_IP, &fip.id, &owner.desired_tags())
            .await
            .ctx(|| format!("tag floating IP {}", fip.id))?;
    }
    Ok(wrap(owner, purpose, wanted, fip))
}

/// The description upstream CAPO v0.14 gives the floating IPs it allocates for a cluster, the
/// API server's and the bastion's alike.
fn upstream_description(owner: &Owner) -> String {
    format!(
        "Created by cluster-api-provider-openstack cluster {}-{}",
        owner.namespace, owner.name
    )
}

/// A floating IP upstream allocated for this cluster, found where `purpose`'s belongs (the
/// address in status, or on the port), becomes ours: capo's description for `purpose` and the
/// ownership tags, so that deleting the cluster deletes it, as upstream would have. Anything
/// else, a user-requested address above all, comes back unchanged.
async fn adopt(
    s: &Session,
    owner: &Owner,
    purpose: Purpose,
    wanted: Option<&str>,
    fip: FloatingIp,
) -> Result<FloatingIp> {
    if wanted.is_some() || fip.description != upstream_description(owner) {
        return Ok(fip);
    }
    tracing::info!(id = %fip.id, purpose = purpose.what(), "adopting the floating IP upstream allocated");
    let changes = serde_json::json!({"description": description(owner, purpose)});
    let adopted: FloatingIp = net::update(s, FLOATING_IP, &fip.id, changes)
        .await
        .ctx(|| format!("adopt floating IP {}", fip.id))?;
    if let Some(tags) = owner.missing_tags(&adopted.tags) {
        net::replace_tags(s, FLOATING_IP, &adopted.id, &tags)
            .await
            .ctx(|| format!("tag floating IP {}", adopted.id))?;
    }
    Ok(adopted)
}

/// Associate the floating IP with `port_id` (no request when it already is).
pub async fn associate_floating_ip(s: &Session, fip: &ApiFloatingIp, port_id: &str) -> Result<()> {
    if fip.port_id.as_deref() == Some(port_id) {
        return Ok(());
    }
    set_port(s, &fip.id, Some(port_id)).await
}

/// Point floating IP `id` at `port_id`, or at no port.
async fn set_port(s: &Session, id: &str, port_id: Option<&str>) -> Result<()> {
    let req = net::set_floating_ip_port_request(id, port_id, None);
    let _: FloatingIp = s.fetch(&req, "floatingip").await.ctx(|| match port_id {
        Some(p) => format!("associate floating IP {id} with port {p}"),
        None => format!("disassociate floating IP {id}"),
    })?;
    Ok(())
}

/// Which port may hold an address that [`move_address`] moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveFrom<'a> {
    /// Whatever port holds it (a pool's address belongs to the one server that claimed it).
    Anywhere,
    /// Only when no port holds it (the API floating IP shared by control-plane machines:
    /// the first one keeps it).
    Nowhere,
    /// Only from this port (a machine going away hands it over).
    Port(&'a str),
}

/// Move the floating IP with address `address` to port `to` (None: disassociate it) when its
/// current port matches `from`; false when no floating IP has that address. The floating IP
/// itself is never allocated or deleted here.
pub async fn move_address(
    s: &Session,
    address: &str,
    to: Option<&str>,
    from: MoveFrom<'_>,
) -> Result<bool> {
    let f = ListFilter::default().with("floating_ip_address", address);
    let Some(fip) = list_fips(s, f).await?.into_iter().next() else {
        return Ok(false);
    };
    let held_by = fip.port_id.as_deref();
    let go = match from {
        MoveFrom::Anywhere => held_by != to,
        MoveFrom::Nowhere => held_by.is_none() && to.is_some(),
        MoveFrom::Port(p) => held_by == Some(p),
    };
    if go {
        tracing::info!(fip = %address, from = ?held_by, ?to, "moving floating IP");
        set_port(s, &fip.id, to).await?;
    }
    Ok(true)
}

/// Disassociate and delete every floating IP this cluster allocated for `purpose`; the
/// `requested` (user's) address is never touched. Absent is success.
pub async fn delete_floating_ips(
    s: &Session,
    owner: &Owner,
    purpose: Purpose,
    requested: Option<&str>,
) -> Result<()> {
    let f = ListFilter {
        description: Some(description(owner, purpose)),
        ..Default::default()
    };
    for fip in list_fips(s, f).await? {
        let fip = wrap(owner, purpose, requested, fip);
        if !fip.ours {
            continue;
        }
        if fip.port_id.is_some() {
            match set_port(s, &fip.id, None).await {
                Err(e) if e.is_not_found() => continue,
                other => other?,
            }
        }
        delete_opt(s, FLOATING_IP, &fip.id).await?;
    }
    Ok(())
}

//! Pool members of the API load balancer: one per (API port, control-plane machine), named
//! `<lb>-<port>-<machine>`, for the machine controller. Pools are reached through the load
//! balancer's own listeners, never by a project-wide name lookup.

use capo_openstack::Session;
use capo_openstack::loadbalancer::{
    self as lbaas, LOAD_BALANCER, Listener, MemberCreate, POOL, Pool,
};

use capo_openstack::network::{self as net, PORT, Port};

use crate::Progress;
use crate::error::{Context, Error, Result};
use crate::loadbalancer::children::{get_opt, listeners_of};
use crate::loadbalancer::octavia::{LbWithRefs, progress_of};
use crate::networking::vip_port::vip_address;

/// Where a member goes: the load balancer and the API ports (see
/// [`crate::loadbalancer::children::api_ports`]).
#[derive(Debug, Clone, Copy)]
pub struct MemberTarget<'a> {
    /// Octavia ID of the API load balancer (from status).
    pub lb_id: &'a str,
    /// API ports.
    pub ports: &'a [i32],
    /// Machine name.
    pub machine: &'a str,
}

/// The load balancer when it is ACTIVE (members can only change then).
async fn active_lb(s: &Session, lb_id: &str) -> Result<Progress<LbWithRefs>> {
    let Some(lb) = get_opt::<LbWithRefs>(s, LOAD_BALANCER, lb_id).await? else {
        return Ok(Progress::waiting(
            "load balancer",
            lb_id,
            format!("load balancer {lb_id} not found"),
        ));
    };
    let progress = progress_of("load balancer", lb_id, &lb.lb.provisioning_status);
    Ok(progress.map(|()| lb))
}

/// After a failed member change: Waiting when Octavia refused it with 409 because the load
/// balancer is busy with another change (control-plane machines joining or leaving together
/// race for it; a progress state, not a failure), else the error.
async fn busy_or(s: &Session, lb_id: &str, err: Error) -> Result<Progress> {
    if !err.is_conflict() {
        return Err(err);
    }
    match active_lb(s, lb_id).await? {
        Progress::Done(_) => Err(err),
        busy => Ok(busy.map(|_| ())),
    }
}

/// The pool of one port (via the listener named `<lb>-<port>`).
async fn pool_of(
    s: &Session,
    lb: &LbWithRefs,
    listeners: &[Listener],
    port: i32,
) -> Result<Option<Pool>> {
    let name = capo_api::names::lb_listener_name(&lb.lb.name, port);
    let Some(pool_id) = listeners
        .iter()
        .find(|l| l.name == name)
        .and_then(|l| l.default_pool_id.as_deref())
    else {
        return Ok(None);
    };
    get_opt::<Pool>(s, POOL, pool_id).await
}

/// [`ensure_member`] with the first address of the machine's port `port_id` (NotReady while
/// the port has none). When that port is on another network than the load balancer's VIP,
/// the member names the address's subnet, so Octavia plugs into it (upstream's rule).
pub async fn ensure_port_member(
    s: &Session,
    t: MemberTarget<'_>,
    port_id: &str,
) -> Result<Progress> {
    let port: Port = net::get(s, PORT, port_id)
        .await
        .ctx(|| format!("get port {port_id}"))?;
    let Some(address) = vip_address(&port) else {
        return Ok(Progress::waiting(
            "port",
            port_id,
            format!("port {port_id} has no address yet"),
        ));
    };
    let subnet = port
        .fixed_ips
        .iter()
        .find(|f| f.ip_address.as_deref() == Some(address.as_str()))
        .and_then(|f| f.subnet_id.clone());
    let m = MemberAddress {
        address: &address,
        network_id: Some(port.network_id.as_str()).filter(|n| !n.is_empty()),
        subnet_id: subnet.as_deref(),
    };
    ensure_member_at(s, t, m).await
}

/// Where the member's traffic goes: the address, and the network and subnet it is on (when
/// known).
#[derive(Debug, Clone, Copy)]
struct MemberAddress<'a> {
    address: &'a str,
    network_id: Option<&'a str>,
    subnet_id: Option<&'a str>,
}

/// Ensure the machine is a member (with `address`) of every API port's pool; one write per call.
pub async fn ensure_member(s: &Session, t: MemberTarget<'_>, address: &str) -> Result<Progress> {
    let m = MemberAddress {
        address,
        network_id: None,
        subnet_id: None,
    };
    ensure_member_at(s, t, m).await
}

async fn ensure_member_at(
    s: &Session,
    t: MemberTarget<'_>,
    m: MemberAddress<'_>,
) -> Result<Progress> {
    let lb = match active_lb(s, t.lb_id).await? {
        Progress::Done(lb) => lb,
        not_yet => return Ok(not_yet.map(|_| ())),
    };
    let address = m.address;
    // Same network as the VIP: Octavia reaches the member there, no subnet needed.
    let vip_network = lb.lb.vip_network_id.as_deref();
    let subnet_id = match (m.network_id, vip_network) {
        (Some(n), Some(v)) if n != v => m.subnet_id.map(str::to_owned),
        _ => None,
    };
    let listeners = listeners_of(s, &lb).await?;
    for &port in t.ports {
        let Some(pool) = pool_of(s, &lb, &listeners, port).await? else {
            return Ok(Progress::waiting(
                "pool",
                format!("port {port}"),
                format!("no pool yet for port {port}"),
            ));
        };
        let name = capo_api::names::lb_member_name(&lb.lb.name, port, t.machine);
        let members = lbaas::list_members(s, &pool.id)
            .await
            .ctx(|| format!("list members of pool {}", pool.id))?;
        let proto_port = u16::try_from(port)
            .map_err(|_| Error::InvalidSpec(format!("API port {port} out of range")))?;
        match members.iter().find(|m| m.name == name) {
            Some(m) if m.address == address && m.protocol_port == proto_port => continue,
            Some(m) => {
                // The machine's address changed: replace the member.
                lbaas::delete_member(s, &pool.id, &m.id)
                    .await
                    .ctx(|| format!("delete member {}", m.id))?;
                return Ok(Progress::waiting(
                    "member",
                    &name,
                    format!("member {name} replaced"),
                ));
            }
            None => {
                let body = MemberCreate {
                    name: name.clone(),
                    address: address.to_owned(),
                    protocol_port: proto_port,
                    subnet_id: subnet_id.clone(),
                };
                let created = lbaas::create_member(s, &pool.id, &body)
                    .await
                    .ctx(|| format!("create member {name}"));
                return match created {
                    Ok(_) => Ok(Progress::waiting(
                        "member",
                        &name,
                        format!("member {name} created"),
                    )),
                    Err(e) => busy_or(s, t.lb_id, e).await,
                };
            }
        }
    }
    Ok(Progress::Done(()))
}

/// Remove the machine from every API port's pool; `Ready` when none is left (also when the
/// load balancer is gone).
pub async fn delete_member(s: &Session, t: MemberTarget<'_>) -> Result<Progress> {
    let Some(lb) = get_opt::<LbWithRefs>(s, LOAD_BALANCER, t.lb_id).await? else {
        return Ok(Progress::Done(()));
    };
    let p = progress_of("load balancer", t.lb_id, &lb.lb.provisioning_status);
    if !p.is_done() {
        return Ok(p);
    }
    let listeners = listeners_of(s, &lb).await?;
    for &port in t.ports {
        let Some(pool) = pool_of(s, &lb, &listeners, port).await? else {
            continue;
        };
        let name = capo_api::names::lb_member_name(&lb.lb.name, port, t.machine);
        let members = lbaas::list_members(s, &pool.id)
            .await
            .ctx(|| format!("list members of pool {}", pool.id))?;
        if let Some(m) = members.iter().find(|m| m.name == name) {
            let deleted = lbaas::delete_member(s, &pool.id, &m.id).await;
            match deleted.ctx_opt(|| format!("delete member {}", m.id)) {
                Ok(None) => continue,
                Ok(Some(_)) => {}
                Err(e) => return busy_or(s, t.lb_id, e).await,
            }
            return Ok(Progress::waiting(
                "member",
                &name,
                format!("member {name} deleted"),
            ));
        }
    }
    Ok(Progress::Done(()))
}

//! Listeners, pools and health monitors of the API load balancer, one of each per port.
//!
//! They are reached only through the load balancer's own references (listener IDs in the LB
//! body, the listener's `default_pool_id`, the pool's `healthmonitor_id`), so a listener of
//! another load balancer that happens to carry the same name is never picked up (upstream looks
//! listeners up project-wide by name). The API keeps no child IDs in status; this walk costs one
//! GET per object and makes a crash after any create harmless: the new child is found the
//! same way on the next call.

use capo_api::v1beta1::APIServerLoadBalancer;
use capo_openstack::Session;
use capo_openstack::loadbalancer::{
    self as lbaas, HEALTH_MONITOR, HealthMonitor, HealthMonitorBody, HealthMonitorCreate, LISTENER,
    Listener, ListenerBody, ListenerCreate, POOL, Pool, PoolBody, PoolCreate,
};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::Progress;
use crate::error::{Context, Error, Result};
use crate::loadbalancer::cidrs::{CidrSources, allowed_cidrs, same_set};
use crate::loadbalancer::octavia::{LbWithRefs, progress_of};

/// Monitor defaults when `spec.apiServerLoadBalancer.monitor` leaves a field out (upstream's).
const MONITOR_DEFAULTS: MonitorSettings = MonitorSettings {
    delay: 10,
    timeout: 5,
    max_retries: 5,
    max_retries_down: 3,
};

/// TCP health monitor settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonitorSettings {
    /// Seconds between probes.
    pub delay: u32,
    /// Seconds a probe may take.
    pub timeout: u32,
    /// Successes before a member is up.
    pub max_retries: u32,
    /// Failures before a member is down.
    pub max_retries_down: u32,
}

/// The monitor settings the spec asks for (defaults for missing or negative fields).
pub fn monitor_settings(spec: &APIServerLoadBalancer) -> MonitorSettings {
    let m = spec.monitor.clone().unwrap_or_default();
    let pick = |v: Option<i32>, d: u32| v.and_then(|v| u32::try_from(v).ok()).unwrap_or(d);
    MonitorSettings {
        delay: pick(m.delay, MONITOR_DEFAULTS.delay),
        timeout: pick(m.timeout, MONITOR_DEFAULTS.timeout),
        max_retries: pick(m.max_retries, MONITOR_DEFAULTS.max_retries),
        max_retries_down: pick(m.max_retries_down, MONITOR_DEFAULTS.max_retries_down),
    }
}

/// The API ports: `apiServerPort` (6443) first, then `additionalPorts`, without duplicates.
pub fn api_ports(api_port: i32, spec: &APIServerLoadBalancer) -> Vec<i32> {
    let mut out = vec![api_port];
    for p in &spec.additional_ports {
        if !out.contains(p) {
            out.push(*p);
        }
    }
    out
}

/// What the API ports' children are planned from.
pub(crate) struct PlanInputs<'a> {
    pub lb_spec: &'a APIServerLoadBalancer,
    pub api_port: i32,
    pub sources: CidrSources<'a>,
    /// Octavia ≥ 2.12 (listener `allowed_cidrs`).
    pub vip_acl: bool,
}

/// Inputs of [`ensure_children`].
pub(crate) struct ChildInputs<'a> {
    pub lb: &'a LbWithRefs,
    pub plan: PlanInputs<'a>,
}

/// GET by ID; 404 (or an object already DELETED) is `None`.
pub(crate) async fn get_opt<T: DeserializeOwned>(
    s: &Session,
    r: lbaas::Resource,
    id: &str,
) -> Result<Option<T>> {
    lbaas::get(s, r, id)
        .await
        .ctx_opt(|| format!("get {} {id}", r.singular))
}

/// The load balancer's listeners (one GET each).
pub(crate) async fn listeners_of(s: &Session, lb: &LbWithRefs) -> Result<Vec<Listener>> {
    let mut out = Vec::with_capacity(lb.listeners.len());
    for r in &lb.listeners {
        if let Some(l) = get_opt::<Listener>(s, LISTENER, &r.id).await? {
            out.push(l);
        }
    }
    Ok(out)
}

/// What one API port's listener, pool and monitor should look like.
pub(crate) struct PortPlan {
    name: String,
    port: u16,
    /// `None`: allowed_cidrs unsupported, leave them alone.
    cidrs: Option<Vec<String>>,
    algorithm: &'static str,
    monitor: MonitorSettings,
}

/// One [`PortPlan`] per API port of a load balancer named `lb_name` of `provider`.
pub(crate) fn port_plans(
    lb_name: &str,
    provider: Option<&str>,
    c: &PlanInputs<'_>,
) -> Result<Vec<PortPlan>> {
    let ovn = provider == Some("ovn");
    // allowed_cidrs needs Octavia 2.12 and is not implemented by the ovn provider.
    let acl = c.vip_acl && !ovn;
    let cidrs = acl.then(|| allowed_cidrs(&c.lb_spec.allowed_cidrs, &c.sources));
    let monitor = monitor_settings(c.lb_spec);
    api_ports(c.api_port, c.lb_spec)
        .into_iter()
        .map(|port| {
            let proto_port = u16::try_from(port)
                .map_err(|_| Error::InvalidSpec(format!("API port {port} out of range")))?;
            Ok(PortPlan {
                name: capo_api::names::lb_listener_name(lb_name, port),
                port: proto_port,
                cidrs: cidrs.clone(),
                algorithm: if ovn { "SOURCE_IP_PORT" } else { "ROUND_ROBIN" },
                monitor,
            })
        })
        .collect()
}

/// The listeners, pools and monitors to create with the load balancer itself (Octavia's
/// fully populated create): one wait for the whole tree instead of one per object, each of
/// which locks the load balancer for an update.
pub(crate) fn graph(plans: &[PortPlan]) -> Vec<ListenerBody> {
    plans
        .iter()
        .map(|p| ListenerBody {
            default_pool: Some(PoolBody {
                healthmonitor: Some(monitor_body(p)),
                ..pool_body(p)
            }),
            ..listener_body(p)
        })
        .collect()
}

fn listener_body(p: &PortPlan) -> ListenerBody {
    ListenerBody {
        name: p.name.clone(),
        protocol: "TCP".into(),
        protocol_port: p.port,
        allowed_cidrs: p.cidrs.clone().unwrap_or_default(),
        default_pool: None,
    }
}

fn pool_body(p: &PortPlan) -> PoolBody {
    PoolBody {
        name: p.name.clone(),
        protocol: "TCP".into(),
        lb_algorithm: p.algorithm.into(),
        healthmonitor: None,
    }
}

fn monitor_body(p: &PortPlan) -> HealthMonitorBody {
    HealthMonitorBody {
        name: p.name.clone(),
        monitor_type: "TCP".into(),
        delay: p.monitor.delay,
        timeout: p.monitor.timeout,
        max_retries: p.monitor.max_retries,
        max_retries_down: p.monitor.max_retries_down,
    }
}

/// Ensure one listener + pool + monitor per API port; stops at the first write (Octavia
/// locks the load balancer until it has applied it).
pub(crate) async fn ensure_children(s: &Session, c: ChildInputs<'_>) -> Result<Progress> {
    let listeners = listeners_of(s, c.lb).await?;
    let plans = port_plans(&c.lb.lb.name, c.lb.lb.provider.as_deref(), &c.plan)?;
    for plan in &plans {
        let want = Want {
            lb_id: &c.lb.lb.id,
            plan,
        };
        let found = listeners
            .iter()
            .find(|l| l.name == plan.name)
            .or_else(|| listeners.iter().find(|l| l.protocol_port == plan.port));
        let step = match found {
            None => create_listener(s, &want).await?,
            Some(l) => ensure_port(s, &want, l).await?,
        };
        if !step.is_done() {
            return Ok(step);
        }
    }
    Ok(Progress::Done(()))
}

/// What one port should look like, on load balancer `lb_id`.
struct Want<'a> {
    lb_id: &'a str,
    plan: &'a PortPlan,
}

async fn create_listener(s: &Session, w: &Want<'_>) -> Result<Progress> {
    let p = w.plan;
    let body = ListenerCreate {
        listener: listener_body(p),
        loadbalancer_id: w.lb_id.to_owned(),
    };
    let _: Listener = lbaas::create(s, LISTENER, &body)
        .await
        .ctx(|| format!("create listener {}", p.name))?;
    Ok(Progress::waiting(
        "listener",
        &p.name,
        format!("listener {} created", p.name),
    ))
}

async fn ensure_port(s: &Session, w: &Want<'_>, l: &Listener) -> Result<Progress> {
    let p = progress_of("listener", &l.id, &l.provisioning_status);
    if !p.is_done() {
        return Ok(p);
    }
    if let Some(cidrs) = w.plan.cidrs.as_deref()
        && !same_set(l.allowed_cidrs.as_deref().unwrap_or_default(), cidrs)
    {
        // null resets to "allow all"; an empty list is not accepted by every Octavia.
        let value = if cidrs.is_empty() {
            json!(null)
        } else {
            json!(cidrs)
        };
        let _: Listener = lbaas::update(s, LISTENER, &l.id, json!({"allowed_cidrs": value}))
            .await
            .ctx(|| format!("update allowed_cidrs of listener {}", l.id))?;
        return Ok(Progress::waiting(
            "listener",
            &l.id,
            format!("listener {} updated", l.id),
        ));
    }
    let pool = match l.default_pool_id.as_deref() {
        Some(id) => get_opt::<Pool>(s, POOL, id).await?,
        None => None,
    };
    let Some(pool) = pool else {
        let body = PoolCreate {
            pool: pool_body(w.plan),
            listener_id: l.id.clone(),
        };
        let _: Pool = lbaas::create(s, POOL, &body)
            .await
            .ctx(|| format!("create pool {}", w.plan.name))?;
        return Ok(Progress::waiting(
            "pool",
            &w.plan.name,
            format!("pool {} created", w.plan.name),
        ));
    };
    let p = progress_of("pool", &pool.id, &pool.provisioning_status);
    if !p.is_done() {
        return Ok(p);
    }
    ensure_monitor(s, w, &pool).await
}

async fn ensure_monitor(s: &Session, w: &Want<'_>, pool: &Pool) -> Result<Progress> {
    let hm = match pool.healthmonitor_id.as_deref() {
        Some(id) => get_opt::<HealthMonitor>(s, HEALTH_MONITOR, id).await?,
        None => None,
    };
    let m = w.plan.monitor;
    let Some(hm) = hm else {
        let body = HealthMonitorCreate {
            monitor: monitor_body(w.plan),
            pool_id: pool.id.clone(),
        };
        let _: HealthMonitor = lbaas::create(s, HEALTH_MONITOR, &body)
            .await
            .ctx(|| format!("create healthmonitor {}", w.plan.name))?;
        return Ok(Progress::waiting(
            "monitor",
            &w.plan.name,
            format!("monitor {} created", w.plan.name),
        ));
    };
    let current = MonitorSettings {
        delay: hm.delay,
        timeout: hm.timeout,
        max_retries: hm.max_retries,
        max_retries_down: hm.max_retries_down,
    };
    if current != m {
        let changes = json!({"delay": m.delay, "timeout": m.timeout,
            "max_retries": m.max_retries, "max_retries_down": m.max_retries_down});
        let _: HealthMonitor = lbaas::update(s, HEALTH_MONITOR, &hm.id, changes)
            .await
            .ctx(|| format!("update healthmonitor {}", hm.id))?;
        return Ok(Progress::waiting(
            "monitor",
            &hm.id,
            format!("monitor {} updated", hm.id),
        ));
    }
    Ok(progress_of("monitor", &hm.id, &hm.provisioning_status))
}

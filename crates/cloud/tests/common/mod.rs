//! Shared helpers for the tests against capo-sim (in-process).
#![allow(dead_code)]

use capo_api::v1beta1::{
    ManagedSecurityGroups, NetworkStatus, NetworkStatusWithSubnets, OpenStackClusterSpec, Router,
    SubnetSpec,
};
use capo_cloud::networking::{self, SecurityGroups};
use capo_cloud::{Owner, Result};
use capo_openstack::{ApiMetrics, ClientConfig, Credentials, Session, SessionCache};
use capo_sim::{Sim, SimConfig};
use serde_json::Value;

/// A running simulator and a session on its default project.
pub struct Env {
    pub sim: Sim,
    pub s: Session,
    pub project: String,
}

pub async fn env() -> Env {
    env_with(SimConfig::default()).await
}

/// [`env`] on a simulator started with `config` (another seed, say).
pub async fn env_with(config: SimConfig) -> Env {
    let sim = Sim::start(config).await.expect("sim starts");
    let mut cfg = ClientConfig::default();
    cfg.retry.base = std::time::Duration::from_millis(10);
    cfg.retry.max_backoff = std::time::Duration::from_millis(50);
    let cache = SessionCache::new(cfg, ApiMetrics::unregistered());
    let creds =
        Credentials::from_clouds_yaml(&sim.clouds_yaml(), "capo-sim", None, None).expect("creds");
    let s = cache.session(&creds).expect("session");
    // Authenticate, discover Neutron and create the project's default group now, so traces
    // hold only the calls under test.
    let project = s.project_id().await.expect("token");
    let _: Vec<capo_openstack::network::Network> =
        capo_openstack::network::list(&s, capo_openstack::network::NETWORK, &Default::default())
            .await
            .expect("list networks");
    sim.control().clear_requests();
    Env { sim, s, project }
}

pub fn owner(uid: &str) -> Owner {
    Owner {
        uid: uid.into(),
        namespace: "ns".into(),
        name: "c1".into(),
        spec_tags: vec!["team-a".into()],
    }
}

/// A managed network with one subnet and managed security groups.
pub fn managed_spec() -> OpenStackClusterSpec {
    OpenStackClusterSpec {
        managed_subnets: vec![SubnetSpec {
            cidr: "10.6.0.0/24".into(),
            dns_nameservers: vec!["8.8.8.8".into()],
            allocation_pools: vec![],
        }],
        managed_security_groups: Some(ManagedSecurityGroups::default()),
        ..Default::default()
    }
}

/// What a controller would record in status after the networking steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recorded {
    pub external: Option<NetworkStatus>,
    pub network: Option<NetworkStatusWithSubnets>,
    pub router: Option<Router>,
    pub groups: SecurityGroups,
}

/// The networking part of the cluster reconcile, in upstream's order.
pub async fn reconcile(
    env: &Env,
    o: &Owner,
    spec: &OpenStackClusterSpec,
    rec: &Recorded,
    strict: bool,
) -> Result<Recorded> {
    let s = &env.s;
    let external = networking::ensure_external_network(s, spec).await?;
    let network = networking::ensure_cluster_network(s, o, spec, rec.network.as_ref()).await?;
    let router =
        networking::ensure_router(s, o, spec, external.as_ref(), &network, rec.router.as_ref())
            .await?;
    let v4 = network
        .subnets
        .iter()
        .find(|sn| !sn.cidr.contains(':'))
        .map(|sn| sn.cidr.clone());
    let groups = networking::ensure_security_groups(s, o, spec, v4.as_deref(), &rec.groups, strict)
        .await?
        .unwrap_or_default();
    Ok(Recorded {
        external,
        network: Some(network),
        router,
        groups,
    })
}

/// [`reconcile`] with nothing recorded (a first reconcile, or one after the status was lost),
/// not strict.
pub async fn reconcile_fresh(
    env: &Env,
    o: &Owner,
    spec: &OpenStackClusterSpec,
) -> Result<Recorded> {
    reconcile(env, o, spec, &Recorded::default(), false).await
}

/// The networking part of the cluster delete, in upstream's order.
pub async fn delete(
    env: &Env,
    o: &Owner,
    spec: &OpenStackClusterSpec,
    rec: &Recorded,
) -> Result<()> {
    let s = &env.s;
    networking::delete_router(s, o, spec, rec.network.as_ref(), rec.router.as_ref()).await?;
    networking::delete_network(s, o, spec, rec.network.as_ref()).await?;
    networking::delete_security_groups(s, o).await
}

/// Compare with a checked-in trace; `UPDATE_GOLDEN=1` rewrites it.
pub fn golden(name: &str, got: &[String]) {
    let path = format!("{}/tests/golden/{name}.trace", env!("CARGO_MANIFEST_DIR"));
    let text = got.join("\n") + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        text, want,
        "trace {name} differs from {path} (UPDATE_GOLDEN=1 to accept)"
    );
}

/// The requests logged so far, asserting that none of them wrote (`what` wrote nothing);
/// clears the log.
pub fn steady_trace(env: &Env, what: &str) -> Vec<String> {
    let t = trace(env);
    assert!(writes(env).is_empty(), "{what} wrote: {:?}", writes(env));
    env.sim.control().clear_requests();
    t
}

/// Logged requests as `METHOD /route/{id}` lines.
pub fn trace(env: &Env) -> Vec<String> {
    env.sim
        .control()
        .requests()
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e.method,
                capo_sim::control::route_template(&e.path)
            )
        })
        .collect()
}

/// Logged requests that were not GETs.
pub fn writes(env: &Env) -> Vec<String> {
    trace(env)
        .into_iter()
        .filter(|l| !l.starts_with("GET "))
        .collect()
}

/// IDs per collection of the project's resources.
pub fn ids(env: &Env) -> std::collections::BTreeMap<String, Vec<String>> {
    let dump = env.sim.control().state(Some(&env.project));
    let mut out = std::collections::BTreeMap::new();
    for (col, items) in dump.as_object().into_iter().flatten() {
        let mut v: Vec<String> = items
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["id"].as_str().map(str::to_owned))
            .collect();
        v.sort();
        out.insert(col.clone(), v);
    }
    out
}

/// The project's resources of one collection.
pub fn items(env: &Env, col: &str) -> Vec<Value> {
    env.sim.control().state(Some(&env.project))[col]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

//! Shared helpers for the tests against capo-sim (in-process).
#![allow(dead_code)]
// Test helpers: a failed setup should abort the test with a message.
#![allow(clippy::expect_used)]

use capo_openstack::network::{
    self as net, NETWORK, Network, NetworkCreate, PORT, Port, PortCreate, SUBNET, Subnet,
    SubnetCreate,
};
use capo_openstack::{ApiMetrics, ClientConfig, Credentials, Session, SessionCache};
use capo_sim::{Sim, SimConfig};

/// A running simulator plus a session cache with metrics.
pub struct Env {
    pub sim: Sim,
    pub metrics: ApiMetrics,
    pub cache: SessionCache,
}

/// Fast retries so fault tests finish quickly.
pub fn fast_config() -> ClientConfig {
    let mut c = ClientConfig::default();
    c.retry.base = std::time::Duration::from_millis(20);
    c.retry.max_backoff = std::time::Duration::from_millis(200);
    c
}

pub async fn env() -> Env {
    env_with(SimConfig::default()).await
}

pub async fn env_with(cfg: SimConfig) -> Env {
    let sim = Sim::start(cfg).await.expect("sim starts");
    let metrics = ApiMetrics::unregistered();
    let cache = SessionCache::new(fast_config(), metrics.clone());
    Env {
        sim,
        metrics,
        cache,
    }
}

impl Env {
    pub fn creds(&self, cloud: &str) -> Credentials {
        Credentials::from_clouds_yaml(&self.sim.clouds_yaml(), cloud, None, None).expect("creds")
    }
    pub fn session(&self, cloud: &str) -> Session {
        self.cache.session(&self.creds(cloud)).expect("session")
    }
    /// Requests the simulator logged for `method` and a path matching `needle`.
    pub fn logged(&self, method: &str, needle: &str) -> usize {
        self.sim
            .control()
            .requests()
            .iter()
            .filter(|e| e.method == method && e.path.contains(needle))
            .count()
    }
}

/// Creates a network with one IPv4 subnet (`cidr`) and a port named `port_name` on it, the
/// minimum a server needs; returns the network and the port.
pub async fn network_with_port(s: &Session, cidr: &str, port_name: &str) -> (Network, Port) {
    let network = NetworkCreate {
        name: "n".into(),
        ..Default::default()
    };
    let n: Network = net::create(s, NETWORK, &network).await.expect("network");
    let subnet = SubnetCreate {
        name: "sn".into(),
        network_id: n.id.clone(),
        cidr: cidr.into(),
        ip_version: 4,
        ..Default::default()
    };
    let _: Subnet = net::create(s, SUBNET, &subnet).await.expect("subnet");
    let port = PortCreate {
        name: port_name.into(),
        network_id: n.id.clone(),
        ..Default::default()
    };
    let p: Port = net::create(s, PORT, &port).await.expect("port");
    (n, p)
}

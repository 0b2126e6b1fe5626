//! Shared helpers for the tests against capo-sim (in-process).
#![allow(dead_code)]
// Test helpers: a failed setup should abort the test with a message.
#![allow(clippy::expect_used)]

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

//! One scenario's cloud: a capo-sim of its own whose external network is a loopback range, so
//! the floating IP that becomes a cluster's control-plane endpoint is an address the
//! workload-cluster emulator can listen on (inside the tier's network namespace).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use capo_openstack::{
    ApiMetrics, ClientConfig, Credentials, Request, Service, Session, SessionCache, compute,
    network, resource,
};
use capo_sim::{Delays, Sim, SimConfig};
use capo_testkit::project;
use serde_json::Value;

/// The cloud name in the sim's clouds.yaml (`OPENSTACK_CLOUD`).
pub const CLOUD: &str = "capo-sim";
/// The project the scenario's user works in.
pub const PROJECT: &str = "capo";
/// The key pair every machine names (`OPENSTACK_SSH_KEY_NAME`).
pub const KEY_NAME: &str = "e2e";
/// A public key for [`KEY_NAME`] (public by nature; nobody holds its private half).
const PUBLIC_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFkT8yq5L3m5cbp3sHvd6Gq2A2Q9oJvX1Pq3rXn2Yw0k capo-e2e";

/// Each scenario gets its own 127.100.N.0/24, so two clusters never share an endpoint address:
/// N counts up from [`RANGE_BASE_VAR`] (default 1) in this process.
static NEXT_RANGE: AtomicU8 = AtomicU8::new(0);

/// Environment variable naming the first N of this process's ranges. Test processes that run
/// at the same time in one network namespace (hack/e2e.sh's lanes) are given bases far apart.
pub const RANGE_BASE_VAR: &str = "CAPO_E2E_RANGE_BASE";

/// The next 127.100.N.0/24 of this process.
fn next_range() -> Result<String, String> {
    let base: u8 = match std::env::var(RANGE_BASE_VAR) {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("{RANGE_BASE_VAR}={v:?}: not a number from 1 to 254"))?,
        Err(_) => 1,
    };
    let n = base
        .checked_add(NEXT_RANGE.fetch_add(1, Ordering::SeqCst))
        .filter(|n| (1..=254).contains(n))
        .ok_or_else(|| format!("no 127.100.N.0/24 left above {RANGE_BASE_VAR}={base}"))?;
    Ok(format!("127.100.{n}.0/24"))
}

/// Simulator transitions of the tier: quick, but every resource still goes through its states.
pub fn delays() -> Delays {
    Delays {
        server_build_ms: 300,
        volume_create_ms: 100,
        lb_provision_ms: 400,
        lb_update_ms: 100,
        lb_delete_ms: 100,
    }
}

/// A running simulator with the scenario's key pair.
pub struct Cloud {
    /// The simulator.
    pub sim: Sim,
    /// ID of the external network (`OPENSTACK_EXTERNAL_NETWORK_ID`).
    pub external_network_id: String,
    /// The external network's range (a loopback /24).
    pub external_cidr: String,
    project_id: String,
    /// Requests the scenario itself made (a token and a DELETE per out-of-band deletion), left
    /// out of capo's figures.
    operator_requests: AtomicUsize,
}

impl Cloud {
    /// Starts a simulator with the default seed but a loopback external network, and imports
    /// [`KEY_NAME`] into the scenario's project. The request log starts empty afterwards.
    pub async fn start() -> Result<Cloud, String> {
        Cloud::start_in(SimConfig::default().listen, next_range()?).await
    }

    /// [`Cloud::start`] with the simulator listening on `listen` and the external network on
    /// `external_cidr`: the installed tier (`crate::installed`) puts both in a range its
    /// network namespace routes to lo, where the management cluster's pods reach them.
    pub async fn start_in(listen: SocketAddr, external_cidr: String) -> Result<Cloud, String> {
        let mut config = SimConfig {
            listen,
            delays: delays(),
            ..SimConfig::default()
        };
        for net in &mut config.seed.external_networks {
            net.cidr = external_cidr.clone();
        }
        let sim = Sim::start(config)
            .await
            .map_err(|e| format!("starting capo-sim: {e}"))?;
        let project_id = sim
            .control()
            .project_id(PROJECT)
            .ok_or_else(|| format!("the seed has no project {PROJECT}"))?;
        let external_network_id = sim
            .control()
            .state(None)
            .get("networks")
            .and_then(Value::as_array)
            .and_then(|nets| {
                nets.iter()
                    .find(|n| n["router:external"] == Value::Bool(true))
                    .and_then(|n| n["id"].as_str())
                    .map(str::to_owned)
            })
            .ok_or("the seed has no external network")?;
        let cloud = Cloud {
            sim,
            external_network_id,
            external_cidr,
            project_id,
            operator_requests: Default::default(),
        };
        cloud
            .session()?
            .send(&compute::create_keypair_request(KEY_NAME, PUBLIC_KEY))
            .await
            .map_err(|e| format!("importing key pair {KEY_NAME}: {e}"))?;
        cloud.sim.control().clear_requests();
        Ok(cloud)
    }

    /// Sets a Neutron quota of the scenario's project as the cloud's admin (as an operator
    /// raising or lowering it); left out of [`Cloud::requests`] like any operator call.
    pub async fn set_network_quota(&self, key: &str, value: i64) -> Result<(), String> {
        let creds =
            Credentials::from_clouds_yaml(&self.clouds_yaml(), capo_sim::clouds::ADMIN, None, None)
                .map_err(|e| format!("reading the simulator's admin cloud: {e}"))?;
        let admin = SessionCache::new(ClientConfig::default(), ApiMetrics::unregistered())
            .session(&creds)
            .map_err(|e| format!("admin session: {e}"))?;
        let body = serde_json::json!({"quota": {key: value}});
        let put = Request::put(
            Service::Network,
            format!("quotas/{}", self.project_id),
            "quota_update",
            body,
        );
        self.as_operator(admin.send(&put), |r| {
            r.method == "PUT" && r.path.contains("quotas")
        })
        .await
        .map(|_| ())
        .map_err(|e| format!("setting the {key} quota: {e}"))
    }

    /// Runs an operator's call (not capo's) and leaves its requests out of [`Cloud::requests`]:
    /// the one request `call_request` recognises and the token its fresh session asked for.
    /// capo's requests may interleave, hence the recognition rather than a plain count.
    async fn as_operator<T>(
        &self,
        call: impl std::future::Future<Output = T>,
        call_request: impl Fn(&capo_sim::LogEntry) -> bool,
    ) -> T {
        let before = self.sim.control().requests().len();
        let out = call.await;
        let ours = self
            .sim
            .control()
            .requests()
            .iter()
            .skip(before)
            .filter(|r| call_request(r) || (r.method == "POST" && r.path.ends_with("/auth/tokens")))
            .count();
        self.operator_requests
            .fetch_add(ours.min(2), Ordering::SeqCst);
        out
    }

    /// A session of the scenario's user (its requests land in the simulator's log too).
    fn session(&self) -> Result<Session, String> {
        let creds = Credentials::from_clouds_yaml(&self.clouds_yaml(), CLOUD, None, None)
            .map_err(|e| format!("reading the simulator's clouds.yaml: {e}"))?;
        SessionCache::new(ClientConfig::default(), ApiMetrics::unregistered())
            .session(&creds)
            .map_err(|e| format!("session: {e}"))
    }

    /// Deletes a server through Nova, behind capo's back; its requests are left out of
    /// [`Cloud::requests`].
    pub async fn delete_server(&self, id: &str) -> Result<(), String> {
        let session = self.session()?;
        self.as_operator(session.send(&compute::delete_server_request(id)), |r| {
            r.method == "DELETE" && r.path.contains(id)
        })
        .await
        .map(|_| ())
        .map_err(|e| format!("deleting server {id}: {e}"))
    }

    /// Allocates a floating IP on the external network as the scenario's user (an operator
    /// reserving an address, e.g. for a pool's `preAllocatedFloatingIPs`); returns its address.
    /// Its requests are left out of [`Cloud::requests`].
    pub async fn allocate_floating_ip(&self) -> Result<String, String> {
        let session = self.session()?;
        let body = serde_json::json!({"floating_network_id": self.external_network_id});
        let create = resource::create_request(network::FLOATING_IP, &body);
        let fip: Value = self
            .as_operator(session.fetch(&create, "floatingip"), |r| {
                r.method == "POST" && r.path.ends_with("/floatingips")
            })
            .await
            .map_err(|e| format!("allocating a floating IP: {e}"))?;
        fip["floating_ip_address"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("floating IP without an address: {fip}"))
    }

    /// Releases the floating IP with `address` as the scenario's user; its requests are left
    /// out of [`Cloud::requests`].
    pub async fn release_floating_ip(&self, address: &str) -> Result<(), String> {
        let id = self
            .floating_ip(address)
            .and_then(|f| f["id"].as_str().map(str::to_owned))
            .ok_or_else(|| format!("no floating IP {address}"))?;
        let session = self.session()?;
        self.as_operator(
            session.send(&resource::delete_request(network::FLOATING_IP, &id)),
            |r| r.method == "DELETE" && r.path.contains(&id),
        )
        .await
        .map(|_| ())
        .map_err(|e| format!("releasing floating IP {address}: {e}"))
    }

    /// clouds.yaml of the scenario's user (cloud [`CLOUD`]).
    pub fn clouds_yaml(&self) -> String {
        self.sim.clouds_yaml()
    }

    /// The scenario project's resources, by collection.
    pub fn resources(&self) -> BTreeMap<String, Vec<Value>> {
        project::collections(&self.sim.control().state(Some(&self.project_id)))
    }

    /// What a deleted cluster left behind: every resource of the project but its default
    /// security group (and its rules) and the scenario's own key pair. Empty when nothing
    /// leaked.
    pub fn leftovers(&self) -> BTreeMap<String, Vec<String>> {
        let resources = self.resources();
        let default_sg = project::default_group_ids(&resources);
        let mut out = BTreeMap::new();
        for (collection, items) in resources {
            let left: Vec<String> = items
                .iter()
                .filter(|item| {
                    let own_key = collection == "keypairs"
                        && (item["name"] == KEY_NAME || item["keypair"]["name"] == KEY_NAME);
                    !own_key && !project::is_default_group(&collection, item, &default_sg)
                })
                .map(|item| {
                    let name = item["name"].as_str().unwrap_or_default();
                    let id = item["id"].as_str().unwrap_or_default();
                    format!("{name} ({id})")
                })
                .collect();
            if !left.is_empty() {
                out.insert(collection, left);
            }
        }
        out
    }

    /// OpenStack requests capo made so far: (all, writes). The scenario's own out-of-band
    /// calls (a token and a DELETE each) are subtracted.
    pub fn requests(&self) -> (usize, usize) {
        let log = self.sim.control().requests();
        let writes = log.iter().filter(|r| r.method != "GET").count();
        let ours = self.operator_requests.load(Ordering::SeqCst);
        (log.len().saturating_sub(ours), writes.saturating_sub(ours))
    }

    /// The floating IP with `address`, if any.
    pub fn floating_ip(&self, address: &str) -> Option<Value> {
        self.resources()
            .get("floatingips")
            .into_iter()
            .flatten()
            .find(|f| f["floating_ip_address"] == address)
            .cloned()
    }

    /// The server a port belongs to (its `device_id`), when the port exists.
    pub fn server_of_port(&self, port_id: &str) -> Option<Value> {
        let res = self.resources();
        let port = res
            .get("ports")
            .into_iter()
            .flatten()
            .find(|p| p["id"] == port_id)?;
        let device = port["device_id"].as_str()?;
        res.get("servers")
            .into_iter()
            .flatten()
            .find(|s| s["id"] == device)
            .cloned()
    }
}

//! The OpenStack a test runs against, chosen by one switch:
//!
//! - default: a fresh capo-sim per test (fault injection, request traces and state dumps
//!   available through [`TestCloud::sim`]);
//! - `CAPO_CLOUD=real`: the real services started by `hack/openstack-env.sh start`, read
//!   from the clouds.yaml at `CAPO_REAL_CLOUDS_YAML` (admin cloud `CAPO_REAL_ADMIN_CLOUD`,
//!   default `capo-real-admin`). Each test gets a Keystone project and user of its own, so
//!   its inventory is exactly what it created, and the cluster's identity Secret names only
//!   that project.
//!
//! Either way the identity Secret holds one cloud named [`CLOUD`], so test manifests are the
//! same for both. A test that needs the simulator's control API calls [`TestCloud::sim`],
//! which fails loudly on the real services rather than skipping.

use std::collections::BTreeMap;
use std::sync::Arc;

use capo_openstack::request::{Request, Service};
use capo_openstack::{ApiMetrics, ClientConfig, Credentials, Session, SessionCache};
use capo_sim::{Sim, SimConfig};
use serde_json::{Value, json};

/// Name of the cloud in every test's identity Secret (`identityRef.cloudName`).
pub const CLOUD: &str = "openstack";

/// Environment switch: `real` runs on the real services.
pub const SWITCH: &str = "CAPO_CLOUD";

/// The cloud of one test.
pub enum TestCloud {
    /// A capo-sim of its own.
    Sim(Sim),
    /// A project of its own on the real services.
    Real(RealProject),
}

/// A throwaway Keystone project and member user on the real services.
pub struct RealProject {
    /// Project ID.
    pub project_id: String,
    /// Project name.
    pub project_name: String,
    /// clouds.yaml with one cloud, [`CLOUD`], scoped to the project.
    pub clouds_yaml: String,
    /// clouds.yaml of the services' admin (cloud [`ADMIN`]).
    pub admin_yaml: String,
}

/// Cloud name of the admin in [`TestCloud::admin_clouds_yaml`].
pub const ADMIN: &str = "admin";

/// True when the tests run on the real services.
pub fn is_real() -> bool {
    std::env::var(SWITCH).is_ok_and(|v| v == "real")
}

impl TestCloud {
    /// Start a simulator with `config`, or make a project on the real services.
    pub async fn start(prefix: &str, config: SimConfig) -> TestCloud {
        if is_real() {
            TestCloud::Real(RealProject::create(prefix).await)
        } else {
            TestCloud::Sim(Sim::start(config).await.expect("capo-sim"))
        }
    }

    /// The simulator; panics on the real services (the test needs the control API).
    pub fn sim(&self) -> &Sim {
        match self {
            TestCloud::Sim(s) => s,
            TestCloud::Real(_) => panic!(
                "this test drives capo-sim's control API (faults, traces or state) and cannot run with {SWITCH}=real"
            ),
        }
    }

    /// True on the real services.
    pub fn is_real(&self) -> bool {
        matches!(self, TestCloud::Real(_))
    }

    /// clouds.yaml of the identity Secret: one cloud, [`CLOUD`], a member of the test project.
    pub fn clouds_yaml(&self) -> String {
        match self {
            TestCloud::Sim(s) => rename_cloud(&s.clouds_yaml(), "capo-sim", CLOUD),
            TestCloud::Real(p) => p.clouds_yaml.clone(),
        }
    }

    /// clouds.yaml with an admin cloud named [`ADMIN`].
    pub fn admin_clouds_yaml(&self) -> String {
        match self {
            TestCloud::Sim(s) => rename_cloud(&s.clouds_yaml(), capo_sim::clouds::ADMIN, ADMIN),
            TestCloud::Real(p) => p.admin_yaml.clone(),
        }
    }

    /// A region whose catalog reaches every service only through internal endpoints: its
    /// public endpoints point at a closed loopback port. capo-sim adds it to its catalog; on the
    /// real services the admin makes it beside the services' own region (remove it with
    /// [`TestCloud::remove_internal_only_region`]).
    pub async fn internal_only_region(&self) -> String {
        match self {
            TestCloud::Sim(s) => {
                s.control().set_internal_only_region(SIM_INTERNAL_ONLY);
                SIM_INTERNAL_ONLY.to_owned()
            }
            TestCloud::Real(p) => p.internal_only_region().await,
        }
    }

    /// Delete the region of [`TestCloud::internal_only_region`] and its endpoints (real only).
    pub async fn remove_internal_only_region(&self, region: &str) {
        if let TestCloud::Real(p) = self {
            p.remove_region(region).await;
        }
    }

    /// ID of the test project.
    pub fn project(&self) -> String {
        match self {
            TestCloud::Sim(s) => s.control().project_id("capo").expect("project"),
            TestCloud::Real(p) => p.project_id.clone(),
        }
    }

    /// Name of the test project.
    pub fn project_name(&self) -> String {
        match self {
            TestCloud::Sim(_) => "capo".to_owned(),
            TestCloud::Real(p) => p.project_name.clone(),
        }
    }

    /// A session of the test project's member.
    pub fn session(&self, cache: &SessionCache) -> Session {
        let creds =
            Credentials::from_clouds_yaml(&self.clouds_yaml(), CLOUD, None, None).expect("creds");
        cache.session(&creds).expect("session")
    }

    /// Resources of the test project, by collection (the simulator's collection names).
    pub async fn items(&self, cache: &SessionCache) -> BTreeMap<String, Vec<Value>> {
        match self {
            TestCloud::Sim(s) => {
                capo_testkit::project::collections(&s.control().state(Some(&self.project())))
            }
            TestCloud::Real(p) => {
                let admin = Credentials::from_clouds_yaml(&p.admin_yaml, ADMIN, None, None)
                    .expect("admin creds");
                let admin = cache.session(&admin).expect("admin session");
                p.items(&self.session(cache), &admin).await
            }
        }
    }
}

/// The simulator's internal-only region.
const SIM_INTERNAL_ONLY: &str = "internal-only";

/// `url` with its scheme, host and port replaced by a loopback port nothing listens on.
fn closed_url(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    format!("{}{path}", capo_sim::identity::CLOSED_ENDPOINT)
}

/// Replace the cloud key `from` of a clouds.yaml with `to` (the simulator's names are fixed).
fn rename_cloud(yaml: &str, from: &str, to: &str) -> String {
    let mut doc: yaml_serde::Value = yaml_serde::from_str(yaml).expect("clouds.yaml");
    let clouds = doc["clouds"].as_mapping_mut().expect("clouds");
    let entry = clouds.get(from).cloned().expect("cloud in clouds.yaml");
    let mut out = yaml_serde::Mapping::new();
    out.insert(to.into(), entry);
    yaml_serde::to_string(&json_clouds(out)).expect("yaml")
}

fn json_clouds(clouds: yaml_serde::Mapping) -> yaml_serde::Value {
    let mut root = yaml_serde::Mapping::new();
    root.insert("clouds".into(), yaml_serde::Value::Mapping(clouds));
    yaml_serde::Value::Mapping(root)
}

/// Collections listed on the real services: (name, service, path, reply key, filter by project).
const COLLECTIONS: &[(&str, Service, &str, &str, bool)] = &[
    ("networks", Service::Network, "networks", "networks", true),
    ("subnets", Service::Network, "subnets", "subnets", true),
    ("routers", Service::Network, "routers", "routers", true),
    ("ports", Service::Network, "ports", "ports", true),
    ("trunks", Service::Network, "trunks", "trunks", true),
    (
        "floatingips",
        Service::Network,
        "floatingips",
        "floatingips",
        true,
    ),
    (
        "security_groups",
        Service::Network,
        "security-groups",
        "security_groups",
        true,
    ),
    (
        "security_group_rules",
        Service::Network,
        "security-group-rules",
        "security_group_rules",
        true,
    ),
    (
        "servers",
        Service::Compute,
        "servers/detail",
        "servers",
        false,
    ),
    (
        "server_groups",
        Service::Compute,
        "os-server-groups",
        "server_groups",
        false,
    ),
    (
        "keypairs",
        Service::Compute,
        "os-keypairs",
        "keypairs",
        false,
    ),
    (
        "volumes",
        Service::BlockStorage,
        "volumes/detail",
        "volumes",
        false,
    ),
    (
        "loadbalancers",
        Service::LoadBalancer,
        "lbaas/loadbalancers",
        "loadbalancers",
        true,
    ),
    (
        "listeners",
        Service::LoadBalancer,
        "lbaas/listeners",
        "listeners",
        true,
    ),
    ("pools", Service::LoadBalancer, "lbaas/pools", "pools", true),
    (
        "healthmonitors",
        Service::LoadBalancer,
        "lbaas/healthmonitors",
        "healthmonitors",
        true,
    ),
];

impl RealProject {
    /// A project `capo-<prefix>-<random>` and a user of the same name with the member and
    /// load-balancer member roles on it.
    async fn create(prefix: &str) -> RealProject {
        let path = std::env::var("CAPO_REAL_CLOUDS_YAML").expect(
            "CAPO_REAL_CLOUDS_YAML: the clouds.yaml printed by hack/openstack-env.sh start",
        );
        let text = std::fs::read_to_string(&path).expect("read CAPO_REAL_CLOUDS_YAML");
        let admin_cloud =
            std::env::var("CAPO_REAL_ADMIN_CLOUD").unwrap_or_else(|_| "capo-real-admin".into());
        let doc: yaml_serde::Value = yaml_serde::from_str(&text).expect("clouds.yaml");
        let admin = doc["clouds"][admin_cloud.as_str()].clone();
        assert!(!admin.is_null(), "cloud {admin_cloud} not in {path}");
        let keystone = Keystone::login(&admin).await;
        FIXTURES
            .get_or_init(|| ensure_fixtures(&keystone, &admin))
            .await;
        let name = format!("capo-{prefix}-{:08x}", rand_u32());
        let password = format!(
            "pw-{:016x}",
            (u64::from(rand_u32()) << 32) | u64::from(rand_u32())
        );
        let project_id = keystone
            .create(
                "projects",
                "project",
                json!({"name": name, "domain_id": "default"}),
            )
            .await;
        let user_id = keystone
            .create(
                "users",
                "user",
                json!({"name": name, "password": password, "domain_id": "default", "default_project_id": project_id}),
            )
            .await;
        for role in ["member", "load-balancer_member"] {
            if let Some(role_id) = keystone.role_id(role).await {
                keystone
                    .put(&format!(
                        "projects/{project_id}/users/{user_id}/roles/{role_id}"
                    ))
                    .await;
            }
        }
        let auth = &admin["auth"];
        let mut cloud = yaml_serde::Mapping::new();
        cloud.insert(
            "auth".into(),
            yaml_serde::to_value(json!({
                "auth_url": auth["auth_url"].as_str().expect("auth_url"),
                "username": name,
                "password": password,
                "project_name": name,
                "user_domain_name": "Default",
                "project_domain_name": "Default",
            }))
            .expect("yaml"),
        );
        for key in ["region_name", "interface", "identity_api_version"] {
            if let Some(v) = admin.get(key) {
                cloud.insert(key.into(), v.clone());
            }
        }
        let mut clouds = yaml_serde::Mapping::new();
        clouds.insert(CLOUD.into(), yaml_serde::Value::Mapping(cloud));
        let clouds_yaml = yaml_serde::to_string(&json_clouds(clouds)).expect("yaml");
        let mut admins = yaml_serde::Mapping::new();
        admins.insert(ADMIN.into(), admin);
        let admin_yaml = yaml_serde::to_string(&json_clouds(admins)).expect("yaml");
        RealProject {
            project_id,
            project_name: name,
            clouds_yaml,
            admin_yaml,
        }
    }

    /// A region `<project>-internal` with, for every service of the services' own region, an
    /// internal endpoint at the service's URL and a public one at a closed loopback port.
    async fn internal_only_region(&self) -> String {
        let (keystone, home) = self.admin_keystone().await;
        let region = format!("{}-internal", self.project_name);
        keystone
            .create("regions", "region", json!({"id": region}))
            .await;
        let url = format!(
            "{}/endpoints?interface=public&region_id={home}",
            keystone.url
        );
        let listed = keystone.call(reqwest::Method::GET, &url, None).await;
        let endpoints = listed["endpoints"].as_array().cloned().unwrap_or_default();
        assert!(!endpoints.is_empty(), "no public endpoint in {home}");
        for e in endpoints {
            let service = e["service_id"].as_str().expect("service_id");
            let url = e["url"].as_str().expect("url");
            for (interface, url) in [("internal", url.to_owned()), ("public", closed_url(url))] {
                keystone
                    .create(
                        "endpoints",
                        "endpoint",
                        json!({"service_id": service, "interface": interface, "url": url,
                               "region_id": region}),
                    )
                    .await;
            }
        }
        region
    }

    async fn remove_region(&self, region: &str) {
        let (keystone, _) = self.admin_keystone().await;
        let url = format!("{}/endpoints?region_id={region}", keystone.url);
        let listed = keystone.call(reqwest::Method::GET, &url, None).await;
        for e in listed["endpoints"].as_array().into_iter().flatten() {
            let id = e["id"].as_str().expect("endpoint id");
            let url = format!("{}/endpoints/{id}", keystone.url);
            keystone.call(reqwest::Method::DELETE, &url, None).await;
        }
        let url = format!("{}/regions/{region}", keystone.url);
        keystone.call(reqwest::Method::DELETE, &url, None).await;
    }

    /// The admin's Keystone and the services' region.
    async fn admin_keystone(&self) -> (Keystone, String) {
        let doc: yaml_serde::Value = yaml_serde::from_str(&self.admin_yaml).expect("admin yaml");
        let admin = &doc["clouds"][ADMIN];
        let home = admin["region_name"]
            .as_str()
            .expect("admin region_name")
            .to_owned();
        (Keystone::login(admin).await, home)
    }

    /// Neutron and Octavia collections are listed by the admin with a `project_id` filter
    /// (Octavia shows a member its load balancers but not their listeners and pools); Nova's
    /// and Cinder's by the member (key pairs belong to the user, not the project).
    async fn items(&self, member: &Session, admin: &Session) -> BTreeMap<String, Vec<Value>> {
        let mut out = BTreeMap::new();
        for (name, service, path, key, by_project) in COLLECTIONS {
            let mut req = Request::get(*service, *path, "test_inventory");
            let s = if *by_project {
                req = req.with_query("project_id", self.project_id.clone());
                admin
            } else {
                member
            };
            let items: Vec<Value> = s
                .list(&req, key)
                .await
                .unwrap_or_else(|e| panic!("list {name}: {e}"));
            // Key pairs come wrapped: {"keypair": {...}}.
            let items = items
                .into_iter()
                .map(|i| i.get("keypair").cloned().unwrap_or(i))
                .collect();
            out.insert((*name).to_owned(), items);
        }
        // Octavia lists members per pool only.
        let pools: Vec<Value> = out.get("pools").cloned().unwrap_or_default();
        let mut members = Vec::new();
        for p in pools {
            let id = p["id"].as_str().expect("pool id");
            let path = format!("lbaas/pools/{id}/members");
            let of_pool: Vec<Value> = admin
                .list(
                    &Request::get(Service::LoadBalancer, path, "test_inventory"),
                    "members",
                )
                .await
                .expect("list members");
            members.extend(of_pool);
        }
        out.insert("members".to_owned(), members);
        out
    }
}

static FIXTURES: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// The simulator's seed flavors and images, made on the real services when missing (by
/// name), so the same manifests run on both: public images with the seed's properties and a
/// few bytes of data (Nova's fake driver boots anything active).
async fn ensure_fixtures(keystone: &Keystone, admin: &yaml_serde::Value) {
    let mut clouds = yaml_serde::Mapping::new();
    clouds.insert(ADMIN.into(), admin.clone());
    let yaml = yaml_serde::to_string(&json_clouds(clouds)).expect("yaml");
    let creds = Credentials::from_clouds_yaml(&yaml, ADMIN, None, None).expect("admin creds");
    let s = sessions().session(&creds).expect("admin session");
    let seed = capo_sim::seed::Seed::default();

    let flavors: Vec<Value> = s
        .list(
            &Request::get(Service::Compute, "flavors", "fixtures"),
            "flavors",
        )
        .await
        .expect("list flavors");
    for f in &seed.flavors {
        if flavors.iter().any(|x| x["name"] == f.name.as_str()) {
            continue;
        }
        let body = json!({"flavor": {
            "name": f.name, "vcpus": f.vcpus, "ram": f.ram, "disk": f.disk,
        }});
        s.send(&Request::post(
            Service::Compute,
            "flavors",
            "fixtures",
            body,
        ))
        .await
        .unwrap_or_else(|e| panic!("create flavor {}: {e}", f.name));
    }

    let glance = s.endpoint(Service::Image).await.expect("glance endpoint");
    let glance = glance.as_str().trim_end_matches('/');
    let glance = if glance.ends_with("/v2") {
        glance.to_owned()
    } else {
        format!("{glance}/v2")
    };
    for i in &seed.images {
        let found: Vec<Value> = s
            .list(
                &Request::get(Service::Image, "images", "fixtures")
                    .with_query("name", i.name.clone()),
                "images",
            )
            .await
            .expect("list images");
        if found.iter().any(|x| x["status"] == "active") {
            continue;
        }
        let mut body = json!({
            "name": i.name, "visibility": "public",
            "disk_format": "raw", "container_format": "bare",
        });
        for (k, v) in &i.properties {
            body[k.as_str()] = json!(v);
        }
        let id = keystone
            .call(
                reqwest::Method::POST,
                &format!("{glance}/images"),
                Some(body),
            )
            .await["id"]
            .as_str()
            .expect("image id")
            .to_owned();
        let reply = keystone
            .http
            .put(format!("{glance}/images/{id}/file"))
            .header("x-auth-token", &keystone.token)
            .header("content-type", "application/octet-stream")
            .body(vec![0u8; 4096])
            .send()
            .await
            .expect("upload image");
        assert!(
            reply.status().is_success(),
            "upload {}: {}",
            i.name,
            reply.status()
        );
    }
}

/// Just enough Keystone v3 admin to make a project and a user.
struct Keystone {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Keystone {
    async fn login(admin: &yaml_serde::Value) -> Keystone {
        let auth = &admin["auth"];
        let s = |k: &str| auth[k].as_str().map(str::to_owned);
        let url = s("auth_url").expect("auth_url");
        let url = format!("{}/v3", url.trim_end_matches('/').trim_end_matches("/v3"));
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": s("username").expect("username"),
                "password": s("password").expect("password"),
                "domain": {"name": s("user_domain_name").unwrap_or_else(|| "Default".into())},
            }}},
            "scope": {"project": {
                "name": s("project_name").expect("project_name"),
                "domain": {"name": s("project_domain_name").unwrap_or_else(|| "Default".into())},
            }},
        }});
        let http = reqwest::Client::new();
        let reply = http
            .post(format!("{url}/auth/tokens"))
            .json(&body)
            .send()
            .await
            .expect("keystone login");
        assert!(
            reply.status().is_success(),
            "admin login: {}",
            reply.status()
        );
        let token = reply
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .expect("token")
            .to_owned();
        Keystone { http, url, token }
    }

    async fn create(&self, collection: &str, key: &str, body: Value) -> String {
        let url = format!("{}/{collection}", self.url);
        let v = self
            .call(reqwest::Method::POST, &url, Some(json!({ key: body })))
            .await;
        v[key]["id"].as_str().expect("id").to_owned()
    }

    /// Any JSON call with the admin token (absolute URL); panics unless it succeeds.
    async fn call(&self, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
        let mut req = self
            .http
            .request(method.clone(), url)
            .header("x-auth-token", &self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let reply = req.send().await.expect("admin call");
        let status = reply.status();
        let v: Value = reply.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{method} {url}: {status} {v}");
        v
    }

    async fn put(&self, path: &str) {
        let url = format!("{}/{path}", self.url);
        self.call(reqwest::Method::PUT, &url, None).await;
    }

    async fn role_id(&self, name: &str) -> Option<String> {
        let url = format!("{}/roles?name={name}", self.url);
        let v = self.call(reqwest::Method::GET, &url, None).await;
        v["roles"][0]["id"].as_str().map(str::to_owned)
    }
}

/// Process-unique randomness without another dependency: the std hasher's random keys.
fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) as u32
}

/// Sessions for inventory and behind-the-back actions; shared with the harness.
pub fn sessions() -> Arc<SessionCache> {
    Arc::new(SessionCache::new(
        ClientConfig::default(),
        ApiMetrics::unregistered(),
    ))
}

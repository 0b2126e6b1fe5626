//! Test harness of the controller integration tests: a real kube-apiserver (one per test
//! binary, from capo-testkit), one cloud per test (a capo-sim, or a project on the real
//! services with `CAPO_CLOUD=real`: see [`cloud`]), a namespace per test with an identity
//! Secret for that cloud, and the controllers running in-process restricted to that
//! namespace, restartable at will.

#![allow(dead_code)]

pub mod cloud;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capo_api::v1beta1::{OpenStackCluster, OpenStackClusterStatus};
use capo_controller::{Context, Options};
use capo_openstack::{ApiMetrics, ClientConfig, SessionCache};
use capo_sim::{Delays, Sim, SimConfig};
use capo_testkit::project;
use cloud::TestCloud;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use serde_json::Value;

/// One test's world.
pub struct Harness {
    pub client: Client,
    pub ns: String,
    pub cloud: TestCloud,
    pub sessions: Arc<SessionCache>,
    pub options: Options,
    running: Option<Running>,
}

struct Running {
    /// The cluster controller's context (the others share its `Shared`).
    ctx: Arc<Context>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Fast options: the simulator's transitions take tens of milliseconds.
pub fn fast_options(ns: &str) -> Options {
    Options {
        requeue_pending: Duration::from_millis(150),
        requeue_pending_max: Duration::from_secs(1),
        sync_period: Duration::from_secs(600),
        verify_period: Duration::from_secs(3600),
        // Every steady reconcile probes, so the economy test measures the probe.
        probe_interval: Duration::ZERO,
        backoff_min: Duration::from_millis(100),
        backoff_max: Duration::from_secs(2),
        slow_retry: Duration::from_secs(2),
        namespace: Some(ns.to_owned()),
        concurrency: 4,
        ..Default::default()
    }
}

/// Fast simulator transitions.
pub fn fast_delays() -> Delays {
    Delays {
        server_build_ms: 100,
        volume_create_ms: 50,
        lb_provision_ms: 150,
        lb_update_ms: 50,
        lb_delete_ms: 50,
    }
}

impl Harness {
    /// A namespace, a simulator and an identity Secret `cloud-config` (cloud `openstack`).
    pub async fn new(prefix: &str) -> Harness {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        capo_openstack::tls::ensure_crypto_provider();
        let env = capo_testkit::shared_env().await.expect("test environment");
        let client = env.client();
        let ns = env.new_namespace(prefix).await.expect("namespace");
        let cloud = TestCloud::start(
            prefix,
            SimConfig {
                delays: fast_delays(),
                ..Default::default()
            },
        )
        .await;
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "cloud-config", "namespace": ns},
            "stringData": {"clouds.yaml": cloud.clouds_yaml()},
        }))
        .expect("secret");
        Api::<Secret>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &secret)
            .await
            .expect("create identity secret");
        let sessions = Arc::new(SessionCache::new(
            ClientConfig::default(),
            ApiMetrics::unregistered(),
        ));
        let mut options = fast_options(&ns);
        if cloud.is_real() {
            // Real Octavia and Nova take seconds, not tens of milliseconds.
            options.requeue_pending_max = Duration::from_secs(3);
        }
        Harness {
            client,
            ns,
            cloud,
            sessions,
            options,
            running: None,
        }
    }

    /// Start the cluster controller (a fresh context: nothing remembered from a previous
    /// run, as after a restart of the manager).
    pub fn start(&mut self) {
        self.spawn(false);
    }

    /// Start the cluster, machine and server controllers (bastion and machine tests).
    pub fn start_all(&mut self) {
        self.spawn(true);
    }

    fn spawn(&mut self, all: bool) {
        self.stop();
        let (ctx, stop, tasks) = spawn_controllers(self, true, all);
        self.running = Some(Running { ctx, stop, tasks });
    }

    /// The sizes of the running cluster controller's memo tables.
    pub fn memo_sizes(&self) -> capo_controller::memo::Sizes {
        let r = self.running.as_ref().expect("controllers started");
        r.ctx.memo.sizes()
    }

    /// Also run the identity Secrets' finalizer controller on the running context (after
    /// [`Self::start`] or [`Self::start_all`]; stopped with them).
    pub fn start_identity_finalizer(&mut self) {
        let r = self.running.as_mut().expect("controllers started");
        let mut stop = r.stop.subscribe();
        r.tasks
            .push(tokio::spawn(capo_controller::identity_secret::run(
                r.ctx.shared.context(),
                async move {
                    let _ = stop.wait_for(|v| *v).await;
                },
            )));
    }

    /// The simulator (panics with `CAPO_CLOUD=real`: the test needs its control API).
    pub fn sim(&self) -> &Sim {
        self.cloud.sim()
    }

    /// An OpenStack session on the test project (to make pre-existing resources or break
    /// things behind the controller's back).
    pub fn session(&self) -> capo_openstack::Session {
        self.cloud.session(&self.sessions)
    }

    /// Kill the controllers at once (no graceful shutdown: in-flight reconciles are dropped).
    pub fn stop(&mut self) {
        if let Some(r) = self.running.take() {
            let _ = r.stop.send(true);
            for t in r.tasks {
                t.abort();
            }
        }
    }

    /// The running cluster controller's context.
    pub fn ctx(&self) -> Option<Arc<Context>> {
        self.running.as_ref().map(|r| r.ctx.clone())
    }

    /// Apply YAML (server-side apply) in the test namespace; panics on rejection.
    pub async fn apply(&self, yaml: &str) {
        capo_testkit::apply_yaml(&self.client, &self.ns, yaml, false)
            .await
            .expect("apply")
            .unwrap_or_else(|r| panic!("rejected: {r:?}"));
    }

    /// A Cluster API Cluster `name` pointing at OpenStackCluster `name`, and that
    /// OpenStackCluster with `spec_yaml` (indented under `spec:`), owned by the Cluster.
    pub async fn create_cluster(&self, name: &str, spec_yaml: &str) {
        self.create_cluster_paused(name, spec_yaml, false).await;
    }

    /// [`Self::create_cluster`] with `Cluster.spec.paused` set as given.
    pub async fn create_cluster_paused(&self, name: &str, spec_yaml: &str, paused: bool) {
        self.set_cluster_paused(name, paused).await;
        let uid = self.uid("Cluster", name).await;
        self.apply_osc(name, &uid, spec_yaml).await;
    }

    /// The UID of Cluster API object `kind` `name` (cluster.x-k8s.io/v1beta2), to own another.
    pub async fn uid(&self, kind: &str, name: &str) -> String {
        let o = self
            .get_dynamic("cluster.x-k8s.io/v1beta2", kind, name)
            .await;
        o["metadata"]["uid"].as_str().expect("uid").to_owned()
    }

    /// Apply the Cluster API Cluster `name` with `spec.paused`.
    pub async fn set_cluster_paused(&self, name: &str, paused: bool) {
        self.apply_capi_cluster(name, &format!("  paused: {paused}\n"))
            .await;
    }

    /// Apply the Cluster API Cluster `name` pointing at OpenStackCluster `name`, with the
    /// `spec_lines` (indented by 2) in its spec, and the pod CIDR [`POD_CIDR`] unless they
    /// name a `clusterNetwork`.
    pub async fn apply_capi_cluster(&self, name: &str, spec_lines: &str) {
        let network = if spec_lines.contains("clusterNetwork:") {
            String::new()
        } else {
            format!("  clusterNetwork:\n    pods:\n      cidrBlocks: [{POD_CIDR}]\n")
        };
        self.apply(&format!(
            "apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: {name}
spec:
{spec_lines}{network}  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: OpenStackCluster
    name: {name}
"
        ))
        .await;
    }

    /// Apply OpenStackCluster `name` owned by the Cluster with `uid`.
    pub async fn apply_osc(&self, name: &str, uid: &str, spec_yaml: &str) {
        self.apply_infra(
            "OpenStackCluster",
            name,
            name,
            "",
            ("Cluster", uid),
            spec_yaml,
        )
        .await;
    }

    /// Apply infrastructure object `kind` `name` of `cluster` (labelled with it, plus the
    /// `extra_labels` lines), owned by the Cluster API `owner` (kind, UID) of the same name.
    pub async fn apply_infra(
        &self,
        kind: &str,
        name: &str,
        cluster: &str,
        extra_labels: &str,
        (owner_kind, uid): (&str, &str),
        spec_yaml: &str,
    ) {
        let spec = indent(spec_yaml, 2);
        self.apply(&format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: {kind}
metadata:
  name: {name}
  labels:
    cluster.x-k8s.io/cluster-name: {cluster}
{extra_labels}  ownerReferences:
  - apiVersion: cluster.x-k8s.io/v1beta2
    kind: {owner_kind}
    name: {name}
    uid: {uid}
spec:
{spec}"
        ))
        .await;
    }

    /// GET any object as JSON.
    pub async fn get_dynamic(&self, api_version: &str, kind: &str, name: &str) -> Value {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let (ar, _) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .expect("discover");
        let api: Api<kube::api::DynamicObject> =
            Api::namespaced_with(self.client.clone(), &self.ns, &ar);
        serde_json::to_value(api.get(name).await.expect("get")).expect("json")
    }

    /// OpenStackCluster API of the namespace.
    pub fn clusters(&self) -> Api<OpenStackCluster> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// The status of OpenStackCluster `name` (panics without one).
    pub async fn cluster_status(&self, name: &str) -> OpenStackClusterStatus {
        let o = self.clusters().get(name).await.expect("get");
        o.status.expect("status")
    }

    /// Wait until `pred` holds for OpenStackCluster `name` (panics after `secs`).
    pub async fn wait_cluster(
        &self,
        name: &str,
        secs: u64,
        what: &str,
        pred: impl Fn(&OpenStackCluster) -> bool,
    ) -> OpenStackCluster {
        poll(
            secs,
            || async {
                let o = self.clusters().get_opt(name).await.expect("get");
                o.filter(|o| pred(o))
            },
            || async {
                let o = self.clusters().get_opt(name).await.expect("get");
                format!("timed out waiting for {what}: {}", status_json(o))
            },
        )
        .await
    }

    /// Wait for OpenStackCluster `name` to be Ready.
    pub async fn wait_ready(&self, name: &str) -> OpenStackCluster {
        self.wait_cluster(name, 60, "cluster ready", |o| {
            o.status.as_ref().is_some_and(|s| s.ready) && o.spec.control_plane_endpoint.is_some()
        })
        .await
    }

    /// Wait until OpenStackCluster `name` is gone.
    pub async fn wait_gone(&self, name: &str, secs: u64) {
        poll(
            secs,
            || async {
                let o = self.clusters().get_opt(name).await.expect("get");
                o.is_none().then_some(())
            },
            || async {
                let o = self.clusters().get_opt(name).await.expect("get");
                format!("OpenStackCluster {name} not deleted: {}", status_json(o))
            },
        )
        .await
    }

    /// Delete the Cluster API Cluster and the OpenStackCluster (as Cluster API would).
    pub async fn delete_cluster(&self, name: &str) {
        let _ = self
            .clusters()
            .delete(name, &Default::default())
            .await
            .expect("delete OpenStackCluster");
    }

    /// Delete OpenStackCluster `name`, wait until it is gone and assert the project is empty
    /// (but for Neutron's `default` security group).
    pub async fn delete_cluster_leaving_nothing(&self, name: &str) {
        self.delete_clusters_leaving_nothing(&[name]).await;
    }

    /// Delete the OpenStackClusters `names` at once, wait until every one is gone and assert
    /// the project is empty (but for Neutron's `default` security group). The project is empty
    /// only once the slowest deletion has finished, whichever that is.
    pub async fn delete_clusters_leaving_nothing(&self, names: &[&str]) {
        for name in names {
            self.delete_cluster(name).await;
        }
        for name in names {
            self.wait_gone(name, 120).await;
        }
        let inv = self.inventory().await;
        assert!(inv.is_empty(), "left behind: {inv:?}");
    }

    /// Project ID of the test project.
    pub fn project(&self) -> String {
        self.cloud.project()
    }

    /// Resources of the test project, by collection.
    pub async fn items(&self) -> BTreeMap<String, Vec<Value>> {
        self.cloud.items(&self.sessions).await
    }

    /// The messages of the events `reason` about object `name` of the test namespace.
    pub async fn event_messages(&self, name: &str, reason: &str) -> Vec<String> {
        Api::<k8s_openapi::api::core::v1::Event>::namespaced(self.client.clone(), &self.ns)
            .list(&Default::default())
            .await
            .expect("list events")
            .items
            .into_iter()
            .filter(|e| {
                e.involved_object.name.as_deref() == Some(name)
                    && e.reason.as_deref() == Some(reason)
            })
            .map(|e| e.message.unwrap_or_default())
            .collect()
    }

    /// Point the identity Secret at a project that does not exist: Keystone then answers as for
    /// a deleted project (401), on capo-sim and on the real services.
    pub async fn remove_project(&self) {
        let yaml = self.cloud.clouds_yaml();
        let gone: String = yaml
            .lines()
            .map(|l| {
                let key = l.trim_start();
                if key.starts_with("project_name:") || key.starts_with("project_id:") {
                    format!("{l}-deleted")
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert_ne!(gone, yaml, "clouds.yaml names no project: {yaml}");
        let patch = serde_json::json!({"stringData": {"clouds.yaml": gone}});
        Api::<Secret>::namespaced(self.client.clone(), &self.ns)
            .patch(
                "cloud-config",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
            .expect("patch the identity Secret");
    }

    /// Resources of the project by collection, with counts (empty collections dropped, and
    /// Neutron's own `default` security group and its rules left out).
    pub async fn inventory(&self) -> BTreeMap<String, usize> {
        let items = self.items().await;
        let default_ids = project::default_group_ids(&items);
        let mut out = BTreeMap::new();
        for (k, v) in &items {
            let n = v
                .iter()
                .filter(|i| !project::is_default_group(k, i, &default_ids))
                .count();
            if n > 0 {
                out.insert(k.clone(), n);
            }
        }
        out
    }

    /// A session of the cloud's admin (to change what only an operator can: quotas, external
    /// networks).
    pub fn admin_session(&self) -> capo_openstack::Session {
        let yaml = self.cloud.admin_clouds_yaml();
        let creds = capo_openstack::Credentials::from_clouds_yaml(&yaml, cloud::ADMIN, None, None)
            .expect("admin creds");
        self.sessions.session(&creds).expect("admin session")
    }

    /// Set a Neutron quota of the test project as the cloud's admin.
    pub async fn set_neutron_quota(&self, key: &str, value: i64) {
        use capo_openstack::{Request, Service};
        let path = format!("quotas/{}", self.project());
        let body = serde_json::json!({"quota": {key: value}});
        self.admin_session()
            .send(&Request::put(Service::Network, path, "test_quota", body))
            .await
            .expect("set quota");
    }

    /// Write requests (non-GET) seen by the simulator so far, as `METHOD path`.
    pub fn writes(&self) -> Vec<String> {
        let mut reqs = self.requests();
        reqs.retain(|r| !r.starts_with("GET "));
        reqs
    }

    /// OpenStack requests seen so far (identity excluded), as `METHOD templated-path`.
    pub fn requests(&self) -> Vec<String> {
        self.sim()
            .control()
            .requests()
            .into_iter()
            .filter(|r| r.service != "identity")
            .map(|r| {
                format!(
                    "{} {}",
                    r.method,
                    capo_sim::control::route_template(&r.path)
                )
            })
            .collect()
    }
}

/// Spawn controllers on a fresh context (nothing remembered, as after a restart of the
/// manager): the cluster controller when `cluster`, the machine and server controllers when
/// `machines`. Sending `true` on the returned channel shuts them down.
pub fn spawn_controllers(
    h: &Harness,
    cluster: bool,
    machines: bool,
) -> (
    Arc<Context>,
    tokio::sync::watch::Sender<bool>,
    Vec<tokio::task::JoinHandle<()>>,
) {
    // One `Shared` and a context per controller, as the manager builds them.
    let shared = capo_controller::context::Shared::new(
        h.client.clone(),
        h.sessions.clone(),
        h.options.clone(),
        Default::default(),
    );
    let ctx = shared.context();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let shutdown = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|v| *v).await;
    };
    let mut tasks = Vec::new();
    if cluster {
        tasks.push(tokio::spawn(capo_controller::cluster::run(
            ctx.clone(),
            shutdown(rx.clone()),
        )));
    }
    if machines {
        tasks.push(tokio::spawn(capo_controller::machine::run(
            shared.context(),
            shutdown(rx.clone()),
        )));
        tasks.push(tokio::spawn(capo_controller::server::run(
            shared.context(),
            shutdown(rx.clone()),
        )));
    }
    (ctx, tx, tasks)
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How long a wait of `secs` (sized for capo-sim) may take: four times longer on the real
/// services, where an Octavia load balancer takes 6 to 70 s to become ACTIVE on a loaded
/// 2-core machine.
pub fn patience(secs: u64) -> Duration {
    Duration::from_secs(if cloud::is_real() { secs * 4 } else { secs })
}

/// Poll `probe` every 50 ms until it returns a value; after `secs` (times [`patience`]), panic
/// with what `timeout` says.
pub async fn poll<T, P, M>(
    secs: u64,
    mut probe: impl FnMut() -> P,
    timeout: impl FnOnce() -> M,
) -> T
where
    P: Future<Output = Option<T>>,
    M: Future<Output = String>,
{
    let deadline = Instant::now() + patience(secs);
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!("{}", timeout().await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The status of an object that may be absent, as pretty JSON (for timeout messages).
pub fn status_json<K: kube::Resource + serde::Serialize>(o: Option<K>) -> String {
    let v = o.map(|o| serde_json::to_value(o).unwrap_or_default()["status"].clone());
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// The pod CIDR of the test Clusters (Cilium's pod subnet; clear of every test's cluster
/// subnet and of the real services' external network).
pub const POD_CIDR: &str = "10.244.0.0/16";

/// A test cluster's spec: the identity of [`Harness::new`], a managed subnet `cidr` whose
/// machines may all talk to each other, then `rest`.
pub fn open_spec(cidr: &str, rest: &str) -> String {
    format!(
        "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: {cidr}
managedSecurityGroups:
  allowAllInClusterTraffic: true
{rest}"
    )
}

/// Whether the cluster is ready with its bastion's floating IP and the management address of
/// its extensions (what the Ansible tests wait for).
pub fn bastion_and_extensions_ready(o: &OpenStackCluster) -> bool {
    o.status.as_ref().is_some_and(|s| {
        s.ready
            && s.bastion.as_ref().is_some_and(|b| b.floating_ip.is_some())
            && s.extensions
                .as_ref()
                .and_then(|e| e.platform.as_ref())
                .is_some_and(|p| p.management.is_some())
    })
}

/// A bastion on the seeded flavor and image (a cluster spec fragment).
pub const BASTION: &str = "bastion:
  enabled: true
  spec:
    flavor: m1.small
    image:
      filter:
        name: ubuntu-2404-kube-v1.34
";

/// The BA/ACP extensions of the Ansible tests (a cluster spec fragment): cilium, keepalived
/// VIPs for the control plane and the ingress (with a floating IP), an NTP server, and a
/// generated SSH key pair for `ssh_user`.
pub fn keepalived_extensions(ssh_user: &str) -> String {
    format!(
        "extensions:
  networking:
    kubeNetworkPlugin: cilium
  loadBalancers:
    controlPlane:
      mode: Keepalived
    ingress:
      mode: Keepalived
      floatingIP: true
  platform:
    ntp:
      server: ntp.example.org
  ssh:
    generateKeyPair: true
    user: {ssh_user}
"
    )
}

/// A machine spec of `flavor` on the seeded image (by Glance name filter), then `rest`.
pub fn machine_spec(flavor: &str, rest: &str) -> String {
    format!(
        "flavor: {flavor}
image:
  filter:
    name: ubuntu-2404-kube-v1.34
{rest}"
    )
}

/// Indent every line of `text` by `n` spaces.
pub fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// Name of a resource for error messages.
pub fn name_of<K: kube::Resource>(o: &K) -> String {
    o.name_any()
}

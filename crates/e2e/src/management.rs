//! One management cluster: kube-apiserver + etcd with Cluster API v1.14's CRDs, the three
//! Cluster API managers, the workload-cluster emulator, and capo's manager in-process. Started on
//! a thread and runtime of its own (each test has its own runtime, and the manager must outlive
//! every one of them); the processes die with the test binary (the test kit's watchdog).
//!
//! [`ManagerMode::Child`] runs capo's manager as a child process instead (the fault soak kills
//! and restarts it: [`Management::kill_manager`], [`Management::ensure_manager`]).
//!
//! A test binary may run several (the `clusterctl move` scenario runs two); each one's capo
//! manager logs to its own file (`<env dir>/capo-controller-manager.log`), through a tracing
//! dispatcher that is the default on every thread of its runtime, and serves its own metrics.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use capo_testkit::capi::{self, CapiDir, CapiProcess, ClusterApi, ClusterApiOptions, Provider};
use capo_testkit::{TestEnv, TestEnvOptions};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use tracing::Dispatch;

/// Set by `hack/e2e.sh` inside the network namespace it makes.
pub const NETNS_VAR: &str = "CAPO_E2E_NETNS";

/// The label clusterctl puts on every object it installs; `clusterctl move` discovers the kinds
/// to move by listing the CRDs that carry it.
pub const CLUSTERCTL_LABEL: &str = "clusterctl.cluster.x-k8s.io";
/// The label naming the provider an installed object belongs to.
pub const PROVIDER_LABEL: &str = "cluster.x-k8s.io/provider";
/// capo's provider label value (`config/default`), as clusterctl names the provider.
pub const CAPO_PROVIDER: &str = "infrastructure-openstack";

/// How a management cluster runs capo's manager.
#[derive(Debug, Clone)]
pub enum ManagerMode {
    /// On the management cluster's own runtime, with the tier's short waits (`tune`).
    InProcess,
    /// The `capo-controller-manager` binary at this path, as a child process with the
    /// production defaults except `--sync-period=30s`; it can be killed and restarted.
    Child(PathBuf),
}

/// A management cluster with Cluster API and capo running.
pub struct Management {
    name: String,
    child: Option<crate::child_manager::ChildManager>,
    env: TestEnv,
    capi: ClusterApi,
    emulator: CapiProcess,
    capo_log: PathBuf,
    metrics_addr: String,
}

impl Management {
    /// Starts a management cluster named `name` (for messages); blocks the calling thread until
    /// it is ready. Refuses to run outside the tier's loopback-only network namespace.
    pub fn start(name: &str) -> Result<Management, String> {
        Management::start_with(name, ManagerMode::InProcess)
    }

    /// [`Management::start`] with capo's manager run as `mode` says.
    pub fn start_with(name: &str, mode: ManagerMode) -> Result<Management, String> {
        if std::env::var_os(NETNS_VAR).is_none() || !capi::loopback_only_network() {
            return Err(format!(
                "run the end-to-end tier with hack/e2e.sh: Cluster API's managers bind their \
                 webhook servers on every interface, so the tier runs in a network namespace \
                 with only loopback ({NETNS_VAR} unset or other interfaces present)"
            ));
        }
        let dir = CapiDir::from_env()
            .map_err(|e| e.to_string())?
            .ok_or("CAPO_CAPI_BUILD_DIR is unset: run hack/e2e.sh (it builds Cluster API)")?;
        let name = name.to_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(format!("e2e-{name}"))
            .spawn(move || run(name, dir, mode, tx))
            .map_err(|e| format!("starting the management cluster's thread: {e}"))?;
        rx.recv()
            .map_err(|_| "the management cluster's thread ended without a result".to_owned())?
    }

    /// SIGKILLs capo's manager when it runs as a child process; returns whether it was
    /// running.
    pub fn kill_manager(&self) -> Result<bool, String> {
        self.child_manager().map(|c| c.kill())
    }

    /// Starts capo's child-process manager again unless it runs; returns whether it had to be
    /// started. An error when it runs in-process.
    pub fn ensure_manager(&self) -> Result<bool, String> {
        self.child_manager()?.ensure_running()
    }

    /// How many times capo's child-process manager was killed while running.
    pub fn manager_kills(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.kills())
    }

    /// `Some(status)` when capo's child-process manager ended on its own.
    pub fn manager_exited(&self) -> Option<String> {
        self.child.as_ref().and_then(|c| c.exited())
    }

    fn child_manager(&self) -> Result<&crate::child_manager::ChildManager, String> {
        self.child.as_ref().ok_or_else(|| {
            format!(
                "[{}] capo's manager runs in-process: it cannot be killed",
                self.name
            )
        })
    }

    /// Its name (for messages and figures).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A kube client for the calling test's runtime.
    pub fn client(&self) -> Client {
        self.env.client()
    }

    /// The kubeconfig of its kube-apiserver (what `clusterctl --kubeconfig` takes).
    pub fn kubeconfig(&self) -> &Path {
        self.env.kubeconfig_path()
    }

    /// The process group of its servers: a process spawned into it ends with the management
    /// cluster, even when the test process is killed.
    pub fn process_group(&self) -> u32 {
        self.env.process_group()
    }

    /// The `clusterctl` binary of the Cluster API build.
    pub fn clusterctl(&self) -> PathBuf {
        self.capi.clusterctl()
    }

    /// A fresh namespace `<prefix>-<random>`.
    pub async fn new_namespace(&self, prefix: &str) -> Result<String, String> {
        self.env
            .new_namespace(prefix)
            .await
            .map_err(|e| e.to_string())
    }

    /// Kubernetes API requests made by its capo manager so far (its metrics).
    pub async fn kube_requests(&self) -> u64 {
        scrape_counter(&self.metrics_addr, "capo_kube_api_requests_total")
            .await
            .unwrap_or(0)
    }

    /// Kubernetes API requests made by its capo manager so far, by `verb resource` (its
    /// metrics).
    pub async fn kube_requests_by_resource(&self) -> std::collections::BTreeMap<String, u64> {
        scrape_family(
            &self.metrics_addr,
            "capo_kube_api_requests_by_resource_total",
        )
        .await
        .unwrap_or_default()
    }

    /// What its capo manager's conversion webhook answered so far: reviews, objects in them, and
    /// seconds spent converting (its metrics).
    pub async fn conversions(&self) -> Conversions {
        let Some(body) = scrape(&self.metrics_addr).await else {
            return Conversions::default();
        };
        Conversions {
            reviews: sample_sum(&body, "capo_conversion_reviews_total") as u64,
            objects: sample_sum(&body, "capo_conversion_objects_total") as u64,
            seconds: sample_sum(&body, "capo_conversion_seconds_total"),
        }
    }

    /// The path of its capo manager's log.
    pub fn capo_log(&self) -> &Path {
        &self.capo_log
    }

    /// The workload-cluster emulator's log.
    pub fn emulator_log(&self) -> &Path {
        self.emulator.log()
    }

    /// The last `lines` lines of every log: capo's manager, the Cluster API managers, the
    /// emulator, kube-apiserver.
    pub fn log_tails(&self, lines: usize) -> String {
        format!(
            "--- [{}] capo-controller-manager ({}) ---\n{}\n--- [{}] {} ({}) ---\n{}\n{}\n{}",
            self.name,
            self.capo_log.display(),
            tail(&self.capo_log, lines),
            self.name,
            self.emulator.name(),
            self.emulator.log().display(),
            self.emulator.tail(lines),
            self.capi.log_tails(lines),
            self.env.log_tails(lines / 2),
        )
    }

    /// Records what `clusterctl init --infrastructure openstack` leaves in a management cluster
    /// and `clusterctl move` relies on, for the providers this tier runs as local processes
    /// (nothing here is installed by clusterctl itself):
    ///
    /// - clusterctl's inventory CRD (`providers.clusterctl.cluster.x-k8s.io`): installed by
    ///   clusterctl itself, on its first contact with a management cluster, from the manifest
    ///   embedded in the binary, the same code path `clusterctl init` takes. A dry-run
    ///   `clusterctl move` of `namespace` (what an operator rehearses first) makes that contact;
    ///   it reads and changes nothing else.
    /// - the labels clusterctl puts on every component it installs, here on the CRDs: `clusterctl.cluster.x-k8s.io: ""`
    ///   (move discovers the kinds to move by listing the CRDs carrying it) and
    ///   `cluster.x-k8s.io/provider: <provider>`. Cluster API's CRDs already have the provider
    ///   label (the test kit adds it); capo's are labelled `infrastructure-openstack`, which
    ///   `config/default` adds to the released components. ORC's CRD is not labelled: ORC is
    ///   installed separately from clusterctl, as with upstream CAPO.
    /// - one inventory `Provider` per provider, in the namespace clusterctl would install it
    ///   into (`capi-system`, `capi-kubeadm-bootstrap-system`,
    ///   `capi-kubeadm-control-plane-system`, `capo-system`), with its name, type and version:
    ///   move checks that the target has every provider of the source at the same version or
    ///   newer, and lists Secrets in the infrastructure provider's namespace.
    pub async fn record_clusterctl_init(&self, namespace: &str) -> Result<(), String> {
        let (cmd, _home) = crate::cluster::clusterctl_command(&self.clusterctl())?;
        let out = tokio::process::Command::from(cmd)
            .args(["move", "--dry-run", "--kubeconfig"])
            .arg(self.kubeconfig())
            .args(["--namespace", namespace])
            .output()
            .await
            .map_err(|e| format!("running clusterctl: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "[{}] clusterctl move --dry-run failed ({}): {}",
                self.name,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }

        let client = self.client();
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for crd in crds
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing CRDs: {e}"))?
        {
            let provider = match crd.spec.group.as_str() {
                "infrastructure.cluster.x-k8s.io" => CAPO_PROVIDER,
                group => match Provider::for_group(group) {
                    Some(p) => p.provider_label(),
                    // ORC, and clusterctl's own inventory CRD (labelled by clusterctl).
                    None => continue,
                },
            };
            let patch = json!({"metadata": {"labels": {
                CLUSTERCTL_LABEL: "",
                PROVIDER_LABEL: provider,
            }}});
            crds.patch(
                &crd.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|e| format!("labelling CRD {}: {e}", crd.name_any()))?;
        }

        let version = self.capi.version().to_owned();
        let capo_version = format!("v{}", env!("CARGO_PKG_VERSION"));
        let providers = [
            ("capi-system", "cluster-api", "CoreProvider", &version),
            (
                "capi-kubeadm-bootstrap-system",
                "kubeadm",
                "BootstrapProvider",
                &version,
            ),
            (
                "capi-kubeadm-control-plane-system",
                "kubeadm",
                "ControlPlaneProvider",
                &version,
            ),
            (
                "capo-system",
                "openstack",
                "InfrastructureProvider",
                &capo_version,
            ),
        ];
        for (ns, provider_name, kind, version) in providers {
            let label = match kind {
                "BootstrapProvider" => format!("bootstrap-{provider_name}"),
                "ControlPlaneProvider" => format!("control-plane-{provider_name}"),
                "InfrastructureProvider" => format!("infrastructure-{provider_name}"),
                _ => provider_name.to_owned(),
            };
            ensure_namespace(&client, ns).await?;
            let api = crate::cluster::api(
                &client,
                ns,
                "clusterctl.cluster.x-k8s.io",
                "v1alpha3",
                "Provider",
            );
            let object = json!({
                "apiVersion": "clusterctl.cluster.x-k8s.io/v1alpha3",
                "kind": "Provider",
                "metadata": {
                    "name": label,
                    "namespace": ns,
                    "labels": {
                        CLUSTERCTL_LABEL: "",
                        "clusterctl.cluster.x-k8s.io/core": "inventory",
                        PROVIDER_LABEL: label,
                    },
                },
                "providerName": provider_name,
                "type": kind,
                "version": version,
            });
            let object = serde_json::from_value(object).map_err(|e| e.to_string())?;
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => return Err(format!("creating Provider {ns}/{label}: {e}")),
            }
        }
        Ok(())
    }
}

async fn ensure_namespace(client: &Client, name: &str) -> Result<(), String> {
    use k8s_openapi::api::core::v1::Namespace;
    let api: Api<Namespace> = Api::all(client.clone());
    let ns =
        serde_json::from_value(json!({"metadata": {"name": name}})).map_err(|e| e.to_string())?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(format!("creating namespace {name}: {e}")),
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

thread_local! {
    /// The management cluster's dispatcher, the default on each thread of its runtime.
    static THREAD_DISPATCH: RefCell<Option<tracing::dispatcher::DefaultGuard>> =
        const { RefCell::new(None) };
}

type ManagerTask = tokio::task::JoinHandle<capo_manager::Result<()>>;

/// The management cluster's thread: builds its runtime (every thread of which logs through the
/// cluster's own dispatcher), starts everything, reports, then keeps capo's manager running
/// until the test binary exits.
fn run(
    name: String,
    dir: CapiDir,
    mode: ManagerMode,
    tx: std::sync::mpsc::Sender<Result<Management, String>>,
) {
    // The log file lives in the environment's directory, which exists only once the
    // environment started; until then the dispatcher writes nothing.
    let sink = LogSink::default();
    let dispatch = dispatcher(&sink);
    // The first management cluster's log also takes events from threads of no runtime of
    // ours (the tests' own sessions), as the tier's single log did.
    let _ = tracing::dispatcher::set_global_default(dispatch.clone());
    let on_start = dispatch.clone();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            let guard = tracing::dispatcher::set_default(&on_start);
            THREAD_DISPATCH.with(|d| *d.borrow_mut() = Some(guard));
        })
        .on_thread_stop(|| {
            THREAD_DISPATCH.with(|d| d.borrow_mut().take());
        })
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send(Err(format!("[{name}] runtime: {e}")));
            return;
        }
    };
    tracing::dispatcher::with_default(&dispatch, || {
        rt.block_on(async move {
            match start_async(&name, dir, mode, &sink).await {
                Ok((management, manager)) => {
                    let _ = tx.send(Ok(management));
                    // The manager runs until the test binary exits.
                    if let Err(e) = manager.await {
                        eprintln!("capo-e2e: [{name}] capo's manager stopped: {e}");
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(format!("[{name}] {e}")));
                }
            }
        })
    });
}

/// Where a management cluster's dispatcher writes: nowhere until [`LogSink::open`].
#[derive(Clone, Default)]
struct LogSink(std::sync::Arc<std::sync::Mutex<Option<std::fs::File>>>);

impl LogSink {
    fn open(&self, path: &Path) -> Result<(), String> {
        let file =
            std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(file);
        Ok(())
    }
}

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut file = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match file.as_mut() {
            Some(f) => f.write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut file = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.as_mut().map_or(Ok(()), std::io::Write::flush)
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogSink {
    type Writer = LogSink;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

fn dispatcher(sink: &LogSink) -> Dispatch {
    let filter = tracing_subscriber::EnvFilter::new(capo_manager::logging::filter_for(1));
    Dispatch::new(
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(sink.clone())
            .finish(),
    )
}

async fn start_async(
    name: &str,
    dir: CapiDir,
    mode: ManagerMode,
    sink: &LogSink,
) -> Result<(Management, ManagerTask), String> {
    capo_openstack::tls::ensure_crypto_provider();
    let env = TestEnv::start_with(TestEnvOptions::default().cluster_api(dir.clone()))
        .await
        .map_err(|e| format!("kube-apiserver with Cluster API's CRDs: {e}"))?;
    let capi = ClusterApi::start(&env, &dir, ClusterApiOptions::default())
        .await
        .map_err(|e| format!("Cluster API managers: {e}"))?;
    let emulator = capi
        .spawn_emulator(None, &[])
        .map_err(|e| format!("workload-cluster emulator: {e}"))?;

    let capo_log = env.dir().join("capo-controller-manager.log");
    match mode {
        ManagerMode::InProcess => sink.open(&capo_log)?,
        // The child writes capo's log; the harness's own events go next to it.
        ManagerMode::Child(_) => sink.open(&env.dir().join("capo-e2e.log"))?,
    }
    let metrics_port = free_port()?;
    // capo's admission webhooks serve the certificate the environment made for Cluster API's.
    let (cert_dir, ca_pem) = env
        .webhook_certs()
        .ok_or("the environment has no webhook certificate")?;
    let webhook_port = free_port()?;
    let args = vec![
        format!("--kubeconfig={}", env.kubeconfig_path().display()),
        format!("--health-addr=127.0.0.1:{}", free_port()?),
        format!("--diagnostics-address=127.0.0.1:{metrics_port}"),
        "--insecure-diagnostics".to_owned(),
        format!("--webhook-port={webhook_port}"),
        format!("--webhook-cert-dir={}", cert_dir.display()),
    ];
    let (manager, child) = match mode {
        ManagerMode::InProcess => {
            let flags = capo_manager::Flags::parse_go_style(
                std::iter::once("capo-controller-manager".to_owned()).chain(args),
            )
            .map_err(|e| format!("manager flags: {e}"))?;
            let task = tokio::spawn(capo_manager::run_with(flags, tune, std::future::pending()));
            (task, None)
        }
        ManagerMode::Child(bin) => {
            let mut args = args;
            // A converged server is looked at again within a cycle, as in-process (`tune`).
            args.extend(["--sync-period=30s".to_owned(), "--v=1".to_owned()]);
            let child = crate::child_manager::ChildManager::start(
                &bin,
                args,
                &capo_log,
                env.process_group(),
            )?;
            // Nothing to await in-process: the child runs until it is killed.
            let task = tokio::spawn(std::future::pending::<capo_manager::Result<()>>());
            (task, Some(child))
        }
    };
    // From here the API server converts through the manager's own webhook, as in production.
    env.use_conversion_webhook(webhook_port, ca_pem)
        .await
        .map_err(|e| format!("capo's conversion webhook: {e}"))?;
    install_capo_webhooks(&env.client(), webhook_port, ca_pem).await?;
    eprintln!(
        "capo-e2e: management cluster {name} ready (Cluster API {}; capo's log {})",
        capi.version(),
        capo_log.display()
    );
    Ok((
        Management {
            name: name.to_owned(),
            child,
            env,
            capi,
            emulator,
            capo_log,
            metrics_addr: format!("127.0.0.1:{metrics_port}"),
        },
        manager,
    ))
}

/// Registers capo's shipped `config/webhook/manifests.yaml`, pointed at the in-process
/// manager's webhook server, and waits until the API server enforces it: a dry-run create of a
/// v1beta2 OpenStackMachineTemplate that sets a providerID (schema-valid, converted to v1beta1
/// by the manager's conversion webhook, then refused by its v1beta1 admission webhook) must come
/// back refused by the webhook.
async fn install_capo_webhooks(client: &Client, port: u16, ca_pem: &str) -> Result<(), String> {
    let manifests = capo_testkit::paths::repo_root().join("config/webhook/manifests.yaml");
    capi::install_webhook_manifests(client, &manifests, "capo", port, ca_pem)
        .await
        .map_err(|e| format!("capo's webhook configuration: {e}"))?;
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "infrastructure.cluster.x-k8s.io",
            "v1beta2",
            "OpenStackMachineTemplate",
        )),
    );
    let probe: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "OpenStackMachineTemplate",
        "metadata": {"name": "capo-e2e-webhook-probe", "namespace": "default"},
        "spec": {"template": {"spec": {
            "flavor": {"filter": {"name": "m1.small"}},
            "image": {"filter": {"name": "probe"}},
            "providerID": "openstack:///probe",
        }}},
    }))
    .map_err(|e| format!("webhook probe: {e}"))?;
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let last = match api.create(&dry_run, &probe).await {
            Err(kube::Error::Api(e))
                if e.message.contains("validation.openstackmachinetemplate") =>
            {
                return Ok(());
            }
            Err(e) => e.to_string(),
            Ok(_) => "the invalid probe was admitted".to_owned(),
        };
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "capo's admission webhooks not enforced after 30 s: {last}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// capo-sim's transitions take hundreds of milliseconds, so waits on progress start shorter
/// (the demo's pacing; production's start at 1 s and grow to 20 s). A converged server is
/// looked at again every 30 s instead of every 10 minutes (`--sync-period`), so a server
/// deleted behind capo's back is reported within a scenario's patience.
fn tune(o: &mut capo_manager::ControllerOptions) {
    o.sync_period = Duration::from_secs(30);
    o.requeue_pending = Duration::from_millis(250);
    o.requeue_pending_max = Duration::from_secs(2);
    o.backoff_min = Duration::from_millis(200);
    o.backoff_max = Duration::from_secs(5);
    o.slow_retry = Duration::from_secs(5);
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("picking a free port: {e}"))
}

/// The value of the unlabelled counter `name` on `http://<addr>/metrics`.
async fn scrape(addr: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).await.ok()?;
    Some(body)
}

/// The samples of counter family `name` whose labels are `verb` and `resource`, keyed
/// `"<verb> <resource>"`.
async fn scrape_family(addr: &str, name: &str) -> Option<std::collections::BTreeMap<String, u64>> {
    let body = scrape(addr).await?;
    let label = |labels: &str, key: &str| {
        labels
            .split(',')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix("=\""))
            .map(|v| v.trim_end_matches('"').to_owned())
            .unwrap_or_default()
    };
    Some(
        body.lines()
            .filter_map(|l| {
                let (labels, value) = l.strip_prefix(name)?.strip_prefix('{')?.split_once("} ")?;
                let n = value.trim().parse::<f64>().ok()? as u64;
                Some((
                    format!("{} {}", label(labels, "verb"), label(labels, "resource")),
                    n,
                ))
            })
            .collect(),
    )
}

/// Conversion reviews answered by a manager's webhook ([`Management::conversions`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Conversions {
    /// ConversionReviews answered.
    pub reviews: u64,
    /// Objects in them.
    pub objects: u64,
    /// Seconds spent converting.
    pub seconds: f64,
}

impl std::ops::Sub for Conversions {
    type Output = Conversions;

    fn sub(self, earlier: Conversions) -> Conversions {
        Conversions {
            reviews: self.reviews.saturating_sub(earlier.reviews),
            objects: self.objects.saturating_sub(earlier.objects),
            seconds: (self.seconds - earlier.seconds).max(0.0),
        }
    }
}

/// The sum of every sample of metric `name` (all label sets) in a metrics text.
fn sample_sum(body: &str, name: &str) -> f64 {
    body.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let value = match rest.strip_prefix('{') {
                Some(labelled) => labelled.split_once("} ")?.1,
                None => rest.strip_prefix(' ')?,
            };
            value.trim().parse::<f64>().ok()
        })
        .sum()
}

async fn scrape_counter(addr: &str, name: &str) -> Option<u64> {
    let body = scrape(addr).await?;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

#[cfg(test)]
mod conversion_figures_tests {
    use super::*;

    #[test]
    fn samples_of_every_label_set_are_summed() {
        let body = "# TYPE capo_conversion_reviews counter\n\
            capo_conversion_reviews_total{desired_version=\"v1beta2\",result=\"success\"} 7\n\
            capo_conversion_reviews_total{desired_version=\"v1beta1\",result=\"success\"} 2\n\
            capo_conversion_objects_total 12\n\
            capo_conversion_seconds_total 0.25\n";
        assert_eq!(sample_sum(body, "capo_conversion_reviews_total"), 9.0);
        assert_eq!(sample_sum(body, "capo_conversion_objects_total"), 12.0);
        assert_eq!(sample_sum(body, "capo_conversion_seconds_total"), 0.25);
        assert_eq!(sample_sum(body, "capo_conversion_missing_total"), 0.0);
        let later = Conversions {
            reviews: 9,
            objects: 12,
            seconds: 0.25,
        };
        let earlier = Conversions {
            reviews: 4,
            objects: 5,
            seconds: 0.05,
        };
        let delta = later - earlier;
        assert_eq!((delta.reviews, delta.objects), (5, 7));
        assert!((delta.seconds - 0.2).abs() < 1e-9);
    }
}

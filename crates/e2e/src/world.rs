//! The management side shared by every scenario of a test binary: kube-apiserver + etcd with
//! Cluster API v1.14's CRDs, the three Cluster API managers, the workload-cluster emulator, and
//! capo's manager in-process. Started once, on a thread and runtime of its own (each test has
//! its own runtime, and the manager must outlive every one of them); the processes die with
//! the test binary (the test kit's watchdog).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use capo_testkit::capi::{self, CapiDir, CapiProcess, ClusterApi, ClusterApiOptions};
use capo_testkit::{TestEnv, TestEnvOptions};
use kube::Client;

/// Set by `hack/e2e.sh` inside the network namespace it makes.
pub const NETNS_VAR: &str = "CAPO_E2E_NETNS";

/// Everything shared by the scenarios.
pub struct World {
    env: TestEnv,
    capi: ClusterApi,
    emulator: CapiProcess,
    capo_log: PathBuf,
    metrics_addr: String,
}

static WORLD: OnceLock<Result<World, String>> = OnceLock::new();

impl World {
    /// The shared world, started on first use; panics (with the reason) when it cannot start,
    /// so every scenario reports the same cause.
    pub fn get() -> &'static World {
        match WORLD.get_or_init(start) {
            Ok(w) => w,
            Err(e) => panic!("the end-to-end world did not start: {e}"),
        }
    }

    /// A kube client for the calling test's runtime.
    pub fn client(&self) -> Client {
        self.env.client()
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

    /// Kubernetes API requests made by capo's manager so far (its metrics).
    pub async fn kube_requests(&self) -> u64 {
        scrape_counter(&self.metrics_addr, "capo_kube_api_requests_total")
            .await
            .unwrap_or(0)
    }

    /// The last `lines` lines of every log: capo's manager, the Cluster API managers, the
    /// emulator, kube-apiserver.
    pub fn log_tails(&self, lines: usize) -> String {
        format!(
            "--- capo-controller-manager ({}) ---\n{}\n--- {} ({}) ---\n{}\n{}\n{}",
            self.capo_log.display(),
            tail(&self.capo_log, lines),
            self.emulator.name(),
            self.emulator.log().display(),
            self.emulator.tail(lines),
            self.capi.log_tails(lines),
            self.env.log_tails(lines / 2),
        )
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn start() -> Result<World, String> {
    if std::env::var_os(NETNS_VAR).is_none() || !capi::loopback_only_network() {
        return Err(format!(
            "run the end-to-end tier with hack/e2e.sh: Cluster API's managers bind their webhook \
             servers on every interface, so the tier runs in a network namespace with only \
             loopback ({NETNS_VAR} unset or other interfaces present)"
        ));
    }
    let dir = CapiDir::from_env()
        .map_err(|e| e.to_string())?
        .ok_or("CAPO_CAPI_BUILD_DIR is unset: run hack/e2e.sh (it builds Cluster API)")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("e2e-world".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(format!("runtime: {e}")));
                    return;
                }
            };
            rt.block_on(async move {
                match start_async(dir).await {
                    Ok((world, manager)) => {
                        let _ = tx.send(Ok(world));
                        // The manager runs until the test binary exits.
                        if let Err(e) = manager.await {
                            eprintln!("capo-e2e: capo's manager stopped: {e}");
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            });
        })
        .map_err(|e| format!("starting the world thread: {e}"))?;
    rx.recv()
        .map_err(|_| "the world thread ended without a result".to_owned())?
}

type ManagerTask = tokio::task::JoinHandle<capo_manager::Result<()>>;

async fn start_async(dir: CapiDir) -> Result<(World, ManagerTask), String> {
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
    init_logging(&capo_log)?;
    let metrics_port = free_port()?;
    let flags = capo_manager::Flags::parse_go_style([
        "capo-controller-manager".to_owned(),
        format!("--kubeconfig={}", env.kubeconfig_path().display()),
        format!("--health-addr=127.0.0.1:{}", free_port()?),
        format!("--diagnostics-address=127.0.0.1:{metrics_port}"),
        "--insecure-diagnostics".to_owned(),
        // capo's admission webhooks are not registered in this tier (docs/testing.md).
        "--webhook-port=0".to_owned(),
    ])
    .map_err(|e| format!("manager flags: {e}"))?;
    let manager = tokio::spawn(capo_manager::run_with(flags, tune, std::future::pending()));
    eprintln!(
        "capo-e2e: world ready (Cluster API {}; capo's log {})",
        capi.version(),
        capo_log.display()
    );
    Ok((
        World {
            env,
            capi,
            emulator,
            capo_log,
            metrics_addr: format!("127.0.0.1:{metrics_port}"),
        },
        manager,
    ))
}

/// capo-sim's transitions take hundreds of milliseconds, so waits on progress start short (the
/// demo's pacing; production defaults start at 5 s). A converged server is looked at again
/// every 30 s instead of every 10 minutes (`--sync-period`), so a server deleted behind capo's
/// back is reported within a scenario's patience.
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

fn init_logging(path: &Path) -> Result<(), String> {
    let file =
        std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    let filter = tracing_subscriber::EnvFilter::new(capo_manager::logging::filter_for(1));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
    Ok(())
}

/// The value of the unlabelled counter `name` on `http://<addr>/metrics`.
async fn scrape_counter(addr: &str, name: &str) -> Option<u64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).await.ok()?;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

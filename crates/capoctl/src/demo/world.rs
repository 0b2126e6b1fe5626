//! The demo's world: capo-sim (in-process), a kube-apiserver + etcd with the CRDs (the test
//! kit's environment), and capo-controller-manager (in-process), plus their teardown.

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use capo_sim::{Delays, Sim, SimConfig};
use capo_testkit::TestEnv;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::{Error, Result};

/// The manager's task (ends before it is stopped only on an error).
pub type ManagerTask = JoinHandle<capo_manager::Result<()>>;

/// Everything the demo started (the manager's task is handed out separately, so the caller
/// can watch it while borrowing the world).
pub struct World {
    /// The simulator.
    pub sim: Sim,
    /// kube-apiserver + etcd.
    pub env: TestEnv,
    /// Stops the manager.
    stop: watch::Sender<bool>,
    /// The manager's log file.
    pub log: PathBuf,
    /// `http://127.0.0.1:<port>/metrics` of the manager.
    pub metrics_url: String,
}

/// The CRD whose presence shows capo's CRDs were installed.
const CAPO_CRD: &str = "openstackclusters.infrastructure.cluster.x-k8s.io";

fn demo_err(what: &str) -> impl FnOnce(String) -> Error + '_ {
    move |e| Error::Demo(format!("{what}: {e}"))
}

fn free_port() -> Result<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::Demo(format!("picking a free port: {e}")))
}

/// Simulator transitions a little faster than the defaults, so the demo is brisk but servers
/// and load balancers still visibly go through their states.
fn delays() -> Delays {
    Delays {
        server_build_ms: 400,
        volume_create_ms: 200,
        lb_provision_ms: 600,
        lb_update_ms: 150,
        lb_delete_ms: 150,
    }
}

impl World {
    /// Start the simulator, the API server and the manager (logging to a file, at `verbosity`).
    pub async fn start(verbosity: u8, say: impl Fn(String)) -> Result<(Self, ManagerTask)> {
        let sim = Sim::start(SimConfig {
            delays: delays(),
            ..SimConfig::default()
        })
        .await
        .map_err(|e| demo_err("starting capo-sim")(e.to_string()))?;
        say(format!(
            "capo-sim (Keystone, Nova, Neutron, Octavia, Glance, Cinder) on {}",
            sim.base_url()
        ));
        let env = TestEnv::start()
            .await
            .map_err(|e| demo_err("starting kube-apiserver and etcd")(e.to_string()))?;
        if !env.crd_names().iter().any(|n| n == CAPO_CRD) {
            return Err(Error::Demo(format!(
                "capo's CRDs were not installed (no {CAPO_CRD}): run the demo from the source \
                 tree it was built from (hack/demo.sh), or set {}=<repository>/config/crd/bases",
                capo_testkit::paths::CRD_DIR_VAR
            )));
        }
        say(format!(
            "kube-apiserver + etcd ready with {} CRDs (capo, Cluster API, ORC)",
            env.crd_names().len()
        ));
        let log = env.dir().join("capo-controller-manager.log");
        init_logging(&log, verbosity)?;
        let metrics_port = free_port()?;
        let flags = capo_manager::Flags::parse_go_style([
            "capo-controller-manager".to_owned(),
            format!("--kubeconfig={}", env.kubeconfig_path().display()),
            format!("--health-addr=127.0.0.1:{}", free_port()?),
            format!("--diagnostics-address=127.0.0.1:{metrics_port}"),
            "--insecure-diagnostics".to_owned(),
            "--webhook-port=0".to_owned(),
            // The demo's single management cluster is private to it: no client-side limit.
            "--kube-api-qps=0".to_owned(),
        ])
        .map_err(|e| demo_err("manager flags")(e.to_string()))?;
        let (stop, rx) = watch::channel(false);
        let manager = tokio::spawn(capo_manager::run_with(flags, tune, until(rx)));
        say(format!(
            "capo-controller-manager running in-process (controllers: {}; log: {})",
            capo_manager::controllers::CONTROLLERS.join(", "),
            log.display()
        ));
        let world = World {
            sim,
            env,
            stop,
            log,
            metrics_url: format!("http://127.0.0.1:{metrics_port}/metrics"),
        };
        Ok((world, manager))
    }

    /// Stop the manager (gracefully), the API server and the simulator.
    pub async fn stop(self, manager: ManagerTask) -> Result<()> {
        let _ = self.stop.send(true);
        let outcome = tokio::time::timeout(Duration::from_secs(20), manager).await;
        drop(self.env);
        let _ = self.sim.shutdown().await;
        match outcome {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(e))) => Err(Error::Demo(format!(
                "the manager stopped with an error: {e}"
            ))),
            Ok(Err(e)) => Err(Error::Demo(format!("the manager task failed: {e}"))),
            Err(_) => Err(Error::Demo("the manager did not stop within 20 s".into())),
        }
    }

    /// Requests so far: OpenStack (as the simulator saw them: total, writes) and Kubernetes API
    /// (the manager's client, from its metrics; `None` when they could not be read).
    pub async fn request_counts(&self) -> (usize, usize, Option<u64>) {
        let os = self.sim.control().requests();
        let writes = os.iter().filter(|r| r.method != "GET").count();
        (
            os.len(),
            writes,
            scrape_counter(&self.metrics_url, "capo_kube_api_requests_total").await,
        )
    }

    /// The last `n` lines of the manager's log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// Requeue quickly: the simulator's transitions take hundreds of milliseconds, not minutes.
fn tune(o: &mut capo_manager::ControllerOptions) {
    o.requeue_pending = Duration::from_millis(250);
    o.requeue_pending_max = Duration::from_secs(2);
    o.backoff_min = Duration::from_millis(200);
    o.backoff_max = Duration::from_secs(5);
    o.slow_retry = Duration::from_secs(5);
}

async fn until(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// The manager logs into `path` (the demo's own output stays readable).
fn init_logging(path: &std::path::Path, verbosity: u8) -> Result<()> {
    let file = std::fs::File::create(path)
        .map_err(|e| Error::Demo(format!("creating {}: {e}", path.display())))?;
    let filter = tracing_subscriber::EnvFilter::new(capo_manager::logging::filter_for(verbosity));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
    Ok(())
}

/// The value of the unlabelled counter `name` on the metrics page at `url` (plain HTTP).
async fn scrape_counter(url: &str, name: &str) -> Option<u64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://")?;
    let (addr, path) = rest.split_once('/')?;
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    let req = format!("GET /{path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).await.ok()?;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

//! Running the three Cluster API managers (and the workload emulator) as child processes.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::Client;
use serde_json::json;

use super::setup::Endpoints;
use super::{CapiDir, EMULATOR, Provider};
use crate::TestEnv;
use crate::error::{Error, Result, server_message};
use crate::process::{Server, log_tail, stable_port};

/// The namespace of the dry-run probes; every API server creates it.
const PROBE_NAMESPACE: &str = "default";

/// How the managers are run. The defaults suit a test: `ClusterTopology=true`, a one-minute
/// sync period, all namespaces watched, the managers' own log verbosity (2), three minutes to
/// become ready.
#[derive(Debug, Clone)]
pub struct ClusterApiOptions {
    namespace: Option<String>,
    feature_gates: BTreeMap<String, bool>,
    sync_period: Duration,
    verbosity: Option<u8>,
    ready_timeout: Duration,
    extra_args: Vec<(Provider, String)>,
}

impl Default for ClusterApiOptions {
    fn default() -> Self {
        Self {
            namespace: None,
            feature_gates: BTreeMap::from([("ClusterTopology".to_owned(), true)]),
            sync_period: Duration::from_secs(60),
            verbosity: None,
            ready_timeout: Duration::from_secs(180),
            extra_args: Vec::new(),
        }
    }
}

impl ClusterApiOptions {
    /// Watch only this namespace (`--namespace`); webhooks still serve every namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Sets a Cluster API feature gate on all three managers (they share one gate set), for
    /// example `("RuntimeSDK", true)`.
    pub fn feature_gate(mut self, name: impl Into<String>, enabled: bool) -> Self {
        self.feature_gates.insert(name.into(), enabled);
        self
    }

    /// The managers' `--sync-period` (full resync of every watched object).
    pub fn sync_period(mut self, period: Duration) -> Self {
        self.sync_period = period;
        self
    }

    /// The managers' log verbosity (`--v`).
    pub fn verbosity(mut self, level: u8) -> Self {
        self.verbosity = Some(level);
        self
    }

    /// How long [`ClusterApi::start`] waits for all three managers (from spawning them).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// One more command-line argument for one manager, e.g. `--machine-concurrency=5`.
    pub fn arg(mut self, provider: Provider, arg: impl Into<String>) -> Self {
        self.extra_args.push((provider, arg.into()));
        self
    }
}

/// A Go duration for a flag: whole seconds, else milliseconds.
fn go_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Ports of one manager.
#[derive(Debug, Clone, Copy)]
struct Ports {
    webhook: u16,
    health: u16,
    diagnostics: u16,
}

/// The command line of one manager.
fn manager_args(
    provider: Provider,
    kubeconfig: &Path,
    cert_dir: &Path,
    ports: Ports,
    opts: &ClusterApiOptions,
) -> Vec<String> {
    let mut args = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        "--leader-elect=false".to_owned(),
        format!("--webhook-port={}", ports.webhook),
        format!("--webhook-cert-dir={}", cert_dir.display()),
        format!("--health-addr=127.0.0.1:{}", ports.health),
        format!("--diagnostics-address=127.0.0.1:{}", ports.diagnostics),
        "--insecure-diagnostics=true".to_owned(),
        format!("--sync-period={}", go_duration(opts.sync_period)),
    ];
    if !opts.feature_gates.is_empty() {
        let gates: Vec<String> = opts
            .feature_gates
            .iter()
            .map(|(name, on)| format!("{name}={on}"))
            .collect();
        args.push(format!("--feature-gates={}", gates.join(",")));
    }
    if let Some(ns) = &opts.namespace {
        args.push(format!("--namespace={ns}"));
    }
    if let Some(v) = opts.verbosity {
        args.push(format!("--v={v}"));
    }
    args.extend(
        opts.extra_args
            .iter()
            .filter(|(p, _)| *p == provider)
            .map(|(_, a)| a.clone()),
    );
    args
}

/// One running manager. The process sits behind a mutex so that [`ClusterApi::exited`] can
/// poll it through a shared reference (a failure-logs guard may hold one).
#[derive(Debug)]
struct Manager {
    provider: Provider,
    ports: Ports,
    log: PathBuf,
    server: Mutex<Server>,
}

impl Manager {
    fn server(&self) -> std::sync::MutexGuard<'_, Server> {
        self.server.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `Some(status)` once the process has exited.
    fn exited(&self) -> Option<String> {
        self.server().exited()
    }

    /// A "did not become ready" error with the log tail.
    fn not_ready(&self, reason: String) -> Error {
        self.server().not_ready(reason)
    }
}

/// Releases the environment's "a ClusterApi runs" flag when dropped.
#[derive(Debug)]
struct RunningGuard(Arc<AtomicBool>);

impl RunningGuard {
    fn acquire(flag: &Arc<AtomicBool>) -> Result<Self> {
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| {
                Error::Usage(
                    "a ClusterApi already runs on this TestEnv (its webhook ports are taken); \
                     drop it before starting another"
                        .into(),
                )
            })?;
        Ok(Self(flag.clone()))
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The three Cluster API managers running against a [`TestEnv`] (see the
/// [module documentation](super)). Dropping it kills them; if the test process dies instead,
/// the environment's watchdog does.
#[derive(Debug)]
pub struct ClusterApi {
    managers: Vec<Manager>,
    dir: CapiDir,
    version: String,
    kubeconfig: PathBuf,
    log_dir: PathBuf,
    group: u32,
    namespace: Option<String>,
    /// Logs of emulators spawned through this handle, for [`ClusterApi::log_tails`].
    extra_logs: Mutex<Vec<PathBuf>>,
    // Released after `Drop::drop` stopped the managers.
    _running: RunningGuard,
}

impl ClusterApi {
    /// Starts the core, CABPK and KCP managers of `dir` against `env`, installs their webhook
    /// configurations and waits until each is ready: `/readyz` answers 200 and a dry-run
    /// create of a `v1beta1` object it owns round-trips through its conversion and admission
    /// webhooks. `env` must have been started with the same build
    /// ([`TestEnvOptions::cluster_api`](crate::TestEnvOptions::cluster_api)).
    ///
    /// An error names the manager and carries the tail of its log.
    pub async fn start(env: &TestEnv, dir: &CapiDir, opts: ClusterApiOptions) -> Result<Self> {
        if !super::loopback_only_network() {
            return Err(Error::Usage(
                "refusing to start the Cluster API managers: they listen on every interface, and \
                 this network namespace has more than loopback (run inside `unshare --net`, as \
                 hack/e2e.sh does)"
                    .into(),
            ));
        }
        let started = Instant::now();
        let endpoints = env.capi_endpoints().ok_or_else(|| {
            Error::Usage(format!(
                "the test environment was started without Cluster API CRDs; start it with \
                 TestEnv::start_with(TestEnvOptions::default().cluster_api(<{}>))",
                dir.root.display()
            ))
        })?;
        if endpoints.dir != *dir {
            return Err(Error::Usage(format!(
                "the test environment installed the CRDs of {}, not of {}",
                endpoints.dir.root.display(),
                dir.root.display()
            )));
        }
        let running = RunningGuard::acquire(&endpoints.running)?;
        let version = dir.version()?;

        let mut capi = Self {
            managers: Vec::new(),
            dir: dir.clone(),
            version,
            kubeconfig: env.kubeconfig_path().to_path_buf(),
            log_dir: env.dir().to_path_buf(),
            group: env.process_group(),
            namespace: opts.namespace.clone(),
            extra_logs: Mutex::new(Vec::new()),
            _running: running,
        };
        // From here on, an early return drops `capi`, which kills what was started.
        for provider in Provider::ALL {
            capi.spawn_manager(provider, endpoints, &opts)?;
        }
        let client = env.client();
        endpoints.install_webhooks(&client).await?;

        let deadline = started + opts.ready_timeout;
        for manager in &capi.managers {
            wait_readyz(manager, deadline).await?;
        }
        let ready = started.elapsed();
        for manager in &capi.managers {
            wait_round_trip(manager, &client, deadline).await?;
        }
        let ports: Vec<String> = capi
            .managers
            .iter()
            .map(|m| format!("{} :{}", m.provider.config_name(), m.ports.webhook))
            .collect();
        eprintln!(
            "capo-testkit: Cluster API {} managers ready in {:.1} s (readyz after {:.1} s; webhooks {}; logs in {})",
            capi.version,
            started.elapsed().as_secs_f64(),
            ready.as_secs_f64(),
            ports.join(", "),
            capi.log_dir.display()
        );
        Ok(capi)
    }

    fn spawn_manager(
        &mut self,
        provider: Provider,
        endpoints: &Endpoints,
        opts: &ClusterApiOptions,
    ) -> Result<()> {
        let ports = Ports {
            webhook: endpoints.webhook_port(provider),
            health: stable_port()?,
            diagnostics: stable_port()?,
        };
        let args = manager_args(
            provider,
            &self.kubeconfig,
            &endpoints.certs.dir,
            ports,
            opts,
        );
        let log = self
            .log_dir
            .join(format!("capi-{}.log", provider.config_name()));
        let server = Server::spawn(
            provider.binary(),
            &self.dir.manager(provider),
            &args,
            log,
            self.group,
        )?;
        self.managers.push(Manager {
            provider,
            ports,
            log: server.log.clone(),
            server: Mutex::new(server),
        });
        Ok(())
    }

    fn manager(&self, provider: Provider) -> Option<&Manager> {
        self.managers.iter().find(|m| m.provider == provider)
    }

    /// The Cluster API version running (the build's `VERSION`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The build the managers come from.
    pub fn dir(&self) -> &CapiDir {
        &self.dir
    }

    /// Path of the build's `clusterctl`.
    pub fn clusterctl(&self) -> PathBuf {
        self.dir.clusterctl()
    }

    /// The webhook port of a manager (conversion and admission, on all interfaces).
    pub fn webhook_port(&self, provider: Provider) -> Option<u16> {
        self.manager(provider).map(|m| m.ports.webhook)
    }

    /// The `127.0.0.1` port of a manager's `/healthz` and `/readyz`.
    pub fn health_port(&self, provider: Provider) -> Option<u16> {
        self.manager(provider).map(|m| m.ports.health)
    }

    /// The `127.0.0.1` port of a manager's plain-HTTP `/metrics`.
    pub fn metrics_port(&self, provider: Provider) -> Option<u16> {
        self.manager(provider).map(|m| m.ports.diagnostics)
    }

    /// A manager's log file.
    pub fn log_path(&self, provider: Provider) -> Option<&Path> {
        self.manager(provider).map(|m| m.log.as_path())
    }

    /// The managers that have exited since they started, with their exit status; empty while
    /// all run. Useful when a test waits in vain for a controller.
    pub fn exited(&self) -> Vec<(Provider, String)> {
        self.managers
            .iter()
            .filter_map(|m| m.exited().map(|status| (m.provider, status)))
            .collect()
    }

    /// The last `lines` lines of each manager's log and of each emulator spawned through
    /// [`ClusterApi::spawn_emulator`].
    pub fn log_tails(&self, lines: usize) -> String {
        let mut logs: Vec<PathBuf> = self.managers.iter().map(|m| m.log.clone()).collect();
        logs.extend(
            self.extra_logs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned(),
        );
        logs.iter()
            .map(|log| format!("--- {} ---\n{}", log.display(), log_tail(log, lines)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A guard that prints the managers' log tails if the current test panics while it is
    /// alive.
    pub fn logs_on_failure(&self) -> ClusterApiFailureLogs<'_> {
        ClusterApiFailureLogs { capi: self }
    }

    /// Starts `bin/capo-workload-emulator --kubeconfig <env kubeconfig> [--namespace <ns>]
    /// [extra_args..]` with its output in `<env dir>/capo-workload-emulator[-<n>].log`.
    /// `namespace` defaults to the managers' [`ClusterApiOptions::namespace`].
    ///
    /// The process runs in the environment's process group: dropping the handle kills it, and
    /// so does the watchdog when the test process dies. Nothing waits for it to be ready.
    pub fn spawn_emulator(
        &self,
        namespace: Option<&str>,
        extra_args: &[&str],
    ) -> Result<CapiProcess> {
        let bin = self.dir.bin(EMULATOR);
        if !bin.is_file() {
            return Err(Error::Incomplete {
                dir: self.dir.root.clone(),
                missing: format!("bin/{EMULATOR}"),
            });
        }
        let mut args = vec![format!("--kubeconfig={}", self.kubeconfig.display())];
        if let Some(ns) = namespace.or(self.namespace.as_deref()) {
            args.push(format!("--namespace={ns}"));
        }
        args.extend(extra_args.iter().map(|a| (*a).to_owned()));
        let log = {
            let mut logs = self
                .extra_logs
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let log = match logs.len() {
                0 => self.log_dir.join(format!("{EMULATOR}.log")),
                n => self.log_dir.join(format!("{EMULATOR}-{}.log", n + 1)),
            };
            logs.push(log.clone());
            log
        };
        let server = Server::spawn(EMULATOR, &bin, &args, log, self.group)?;
        Ok(CapiProcess { server })
    }
}

impl Drop for ClusterApi {
    fn drop(&mut self) {
        for manager in self.managers.iter().rev() {
            manager.server().stop();
        }
    }
}

/// A helper process (the workload emulator) with its log file; killed when dropped.
#[derive(Debug)]
pub struct CapiProcess {
    server: Server,
}

impl CapiProcess {
    /// Short name for messages.
    pub fn name(&self) -> &str {
        self.server.name
    }

    /// Its combined stdout/stderr log.
    pub fn log(&self) -> &Path {
        &self.server.log
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        self.server.exited()
    }

    /// The last `lines` lines of its log.
    pub fn tail(&self, lines: usize) -> String {
        log_tail(&self.server.log, lines)
    }
}

impl Drop for CapiProcess {
    fn drop(&mut self) {
        self.server.stop();
    }
}

/// Prints the managers' log tails when dropped during a panic (see
/// [`ClusterApi::logs_on_failure`]).
#[derive(Debug)]
pub struct ClusterApiFailureLogs<'a> {
    capi: &'a ClusterApi,
}

impl Drop for ClusterApiFailureLogs<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "capo-testkit: test failed; Cluster API logs:\n{}",
                self.capi.log_tails(40)
            );
        }
    }
}

/// `GET http://127.0.0.1:<port><path>` over HTTP/1.0: the status line and body, or why not.
fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )?;
    let mut buf = Vec::new();
    stream.take(16 * 1024).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Whether an HTTP response starts with a 200 status line.
fn is_ok_response(response: &str) -> bool {
    response
        .lines()
        .next()
        .and_then(|status| status.split_whitespace().nth(1))
        == Some("200")
}

/// Waits until the manager's `/readyz` answers 200. Its `webhook` check dials the webhook
/// server over TLS, so this also means the webhook port serves.
async fn wait_readyz(manager: &Manager, deadline: Instant) -> Result<()> {
    let port = manager.ports.health;
    loop {
        let last = match tokio::task::spawn_blocking(move || http_get(port, "/readyz")).await {
            Ok(Ok(response)) if is_ok_response(&response) => return Ok(()),
            Ok(Ok(response)) => response.replace("\r\n", " ").trim().to_owned(),
            Ok(Err(err)) => err.to_string(),
            Err(err) => err.to_string(),
        };
        if let Some(status) = manager.exited() {
            return Err(manager.not_ready(format!("exited with {status}")));
        }
        if Instant::now() > deadline {
            return Err(manager.not_ready(format!(
                "http://127.0.0.1:{port}/readyz did not answer 200 in time; last: {last}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The dry-run probe of a provider: a minimal valid `v1beta1` object of a kind it owns (and
/// converts and admits), and the collection to POST it to.
fn probe(provider: Provider) -> (String, serde_json::Value) {
    let (group, plural, object) = match provider {
        Provider::Core => (
            "cluster.x-k8s.io",
            "clusters",
            json!({"kind": "Cluster", "spec": {
                "paused": true,
                "infrastructureRef": {
                    "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                    "kind": "OpenStackCluster",
                    "name": "capo-testkit-probe"
                }
            }}),
        ),
        Provider::Bootstrap => (
            "bootstrap.cluster.x-k8s.io",
            "kubeadmconfigtemplates",
            json!({"kind": "KubeadmConfigTemplate", "spec": {"template": {"spec": {}}}}),
        ),
        Provider::ControlPlane => (
            "controlplane.cluster.x-k8s.io",
            "kubeadmcontrolplanes",
            json!({"kind": "KubeadmControlPlane", "spec": {
                "replicas": 1,
                "version": "v1.34.0",
                "machineTemplate": {"infrastructureRef": {
                    "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                    "kind": "OpenStackMachineTemplate",
                    "name": "capo-testkit-probe"
                }},
                "kubeadmConfigSpec": {}
            }}),
        ),
    };
    let mut object = object;
    object["apiVersion"] = json!(format!("{group}/v1beta1"));
    object["metadata"] = json!({"name": "capo-testkit-probe", "namespace": PROBE_NAMESPACE});
    let uri = format!("/apis/{group}/v1beta1/namespaces/{PROBE_NAMESPACE}/{plural}?dryRun=All");
    (uri, object)
}

/// Waits until a dry-run create of the provider's `v1beta1` probe object succeeds and comes
/// back as `v1beta1`: the API server converted it to the stored `v1beta2` through the
/// manager's `/convert`, ran its admission webhooks, and converted the result back.
async fn wait_round_trip(manager: &Manager, client: &Client, deadline: Instant) -> Result<()> {
    let (uri, object) = probe(manager.provider);
    let body = serde_json::to_vec(&object).map_err(|e| Error::Client(e.to_string()))?;
    let want = object["apiVersion"].clone();
    loop {
        let request = http::Request::post(uri.as_str())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.clone())
            .map_err(|e| Error::Client(e.to_string()))?;
        let last = match client.request::<serde_json::Value>(request).await {
            Ok(created) if created["apiVersion"] == want => return Ok(()),
            Ok(created) => format!(
                "the server answered with apiVersion {} instead of {want}",
                created["apiVersion"]
            ),
            Err(err) => {
                let message = server_message(&err);
                // A webhook that answers "denied" is up; the probe object is at fault, and
                // asking again would not change the verdict.
                if message.contains("denied the request") {
                    return Err(manager.not_ready(format!(
                        "its webhook refused the dry-run probe object: {message}"
                    )));
                }
                message
            }
        };
        if let Some(status) = manager.exited() {
            return Err(manager.not_ready(format!("exited with {status}")));
        }
        if Instant::now() > deadline {
            return Err(manager.not_ready(format!(
                "a dry-run create of a {want} object did not round-trip in time; last: {last}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manager_flags() {
        let opts = ClusterApiOptions::default()
            .namespace("ns1")
            .feature_gate("RuntimeSDK", true)
            .sync_period(Duration::from_millis(1500))
            .verbosity(4)
            .arg(Provider::Bootstrap, "--bootstrap-token-ttl=1h");
        let ports = Ports {
            webhook: 1,
            health: 2,
            diagnostics: 3,
        };
        let args = manager_args(
            Provider::Core,
            Path::new("/k"),
            Path::new("/c"),
            ports,
            &opts,
        );
        assert_eq!(
            args,
            [
                "--kubeconfig=/k",
                "--leader-elect=false",
                "--webhook-port=1",
                "--webhook-cert-dir=/c",
                "--health-addr=127.0.0.1:2",
                "--diagnostics-address=127.0.0.1:3",
                "--insecure-diagnostics=true",
                "--sync-period=1500ms",
                "--feature-gates=ClusterTopology=true,RuntimeSDK=true",
                "--namespace=ns1",
                "--v=4",
            ]
        );
        let bootstrap = manager_args(
            Provider::Bootstrap,
            Path::new("/k"),
            Path::new("/c"),
            ports,
            &opts,
        );
        assert_eq!(
            bootstrap.last().map(String::as_str),
            Some("--bootstrap-token-ttl=1h")
        );
        assert_eq!(go_duration(Duration::from_secs(60)), "60s");
    }

    #[test]
    fn http_status_lines() {
        assert!(is_ok_response("HTTP/1.0 200 OK\r\n\r\nok"));
        assert!(!is_ok_response("HTTP/1.1 500 Internal Server Error\r\n"));
        assert!(!is_ok_response(""));
    }

    #[test]
    fn probes_are_v1beta1_dry_runs() {
        for provider in Provider::ALL {
            let (uri, object) = probe(provider);
            assert!(uri.ends_with("?dryRun=All"), "{uri}");
            let api_version = object["apiVersion"].as_str().unwrap_or_default();
            assert!(api_version.ends_with("/v1beta1"), "{api_version}");
            assert_eq!(
                Provider::for_group(api_version.trim_end_matches("/v1beta1")),
                Some(provider)
            );
        }
    }
}

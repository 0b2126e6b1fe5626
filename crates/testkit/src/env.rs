//! One running etcd + kube-apiserver pair with its CRDs installed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::{Client, Config};

use crate::certs::Credentials;
use crate::crds;
use crate::error::{Error, Result};
use crate::launch::{apiserver_args, etcd_args, wait_port, wait_ready, write_kubeconfig};
use crate::paths::{self, EnvDir};
use crate::process::{Server, Watchdog, free_port, log_tail};

/// Environment variable that keeps the temporary directory (logs, etcd data) after the run.
pub const KEEP_DIR_VAR: &str = "CAPO_TEST_KEEP_DIR";

/// A real Kubernetes API server backed by its own etcd, on random 127.0.0.1 ports.
///
/// Dropping it stops both processes and removes its temporary directory; if the test process
/// dies instead, a watchdog does the same (see [`crate::process`]).
#[derive(Debug)]
pub struct TestEnv {
    dir: PathBuf,
    kubeconfig: PathBuf,
    config: Config,
    crds: Vec<String>,
    etcd_log: PathBuf,
    apiserver_log: PathBuf,
    // Declared last so it fires after the fields above are no longer needed.
    _watchdog: Watchdog,
}

impl TestEnv {
    /// Starts etcd and kube-apiserver, installs our CRDs plus the Cluster API and ORC CRDs,
    /// and waits until the server is ready and every CRD is Established.
    ///
    /// Ports are picked free and then handed to the servers, so another process may grab one
    /// in between; a start whose server does not come up is therefore retried twice.
    pub async fn start() -> Result<Self> {
        let env_dir = EnvDir::locate()?;
        let mut attempt = 1;
        loop {
            match Self::start_in(&env_dir).await {
                Err(err @ Error::NotReady { .. }) if attempt < 3 => {
                    eprintln!("capo-testkit: start attempt {attempt} failed, retrying: {err}");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn start_in(env_dir: &EnvDir) -> Result<Self> {
        let started = Instant::now();
        let tmp = tempfile::Builder::new()
            .prefix("capo-testenv-")
            .tempdir()
            .map_err(Error::io("creating the environment directory"))?;
        // The watchdog, not TempDir, removes the directory: it also runs when the process dies.
        let dir = tmp.keep();
        let creds = Credentials::generate(&dir)?;

        let etcd_port = free_port()?;
        let etcd_args = etcd_args(&dir, etcd_port, free_port()?);
        let mut etcd = Server::spawn(
            "etcd",
            &env_dir.bin("etcd"),
            &etcd_args,
            dir.join("etcd.log"),
            0,
        )?;
        let group = etcd.pid();
        let keep = std::env::var_os(KEEP_DIR_VAR).is_some();
        let watchdog = Watchdog::start(group, if keep { Path::new("") } else { &dir })?;
        wait_port(&mut etcd, etcd_port).await?;

        let api_port = free_port()?;
        let api_args = apiserver_args(&creds, etcd_port, api_port);
        let log = dir.join("kube-apiserver.log");
        let mut apiserver = Server::spawn(
            "kube-apiserver",
            &env_dir.bin("kube-apiserver"),
            &api_args,
            log,
            group,
        )?;

        let kubeconfig = dir.join("kubeconfig");
        let config = write_kubeconfig(&kubeconfig, api_port, &creds).await?;
        let client = Client::try_from(config.clone()).map_err(|e| Error::Client(e.to_string()))?;
        wait_ready(&mut apiserver, &client).await?;

        let installed = install_crds(&client, env_dir).await?;
        eprintln!(
            "capo-testkit: kube-apiserver on https://127.0.0.1:{api_port} ready with {} CRDs in {:.1} s (logs in {})",
            installed.len(),
            started.elapsed().as_secs_f64(),
            dir.display()
        );
        Ok(Self {
            etcd_log: etcd.log.clone(),
            apiserver_log: apiserver.log.clone(),
            dir,
            kubeconfig,
            config,
            crds: installed,
            _watchdog: watchdog,
        })
    }

    /// A new client for the calling runtime. Clients are cheap; building one per test keeps
    /// each bound to its own test's tokio runtime (a client made in another, already finished
    /// runtime would fail).
    pub fn client(&self) -> Client {
        // `Client::try_from` fails only when it cannot build a TLS stack from the config; it is
        // deterministic and this very config already produced a client in `start`.
        #[allow(clippy::expect_used)]
        Client::try_from(self.config.clone()).expect("config already built a client in start")
    }

    /// The kubeconfig file (admin token, CA data) for tools such as kubectl.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The kube client configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Names of the installed CRDs.
    pub fn crd_names(&self) -> &[String] {
        &self.crds
    }

    /// The temporary directory holding logs, certificates and etcd data.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates a fresh namespace `<prefix>-<random>` and returns its name.
    pub async fn new_namespace(&self, prefix: &str) -> Result<String> {
        let api: Api<Namespace> = Api::all(self.client());
        let ns = Namespace {
            metadata: ObjectMeta {
                generate_name: Some(format!("{prefix}-")),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let created = api
            .create(&PostParams::default(), &ns)
            .await
            .map_err(Error::kube(format!("creating a namespace {prefix}-*")))?;
        created.metadata.name.ok_or_else(|| Error::Api {
            context: "creating a namespace".into(),
            message: "the server returned no name".into(),
        })
    }

    /// The last `lines` lines of the etcd and kube-apiserver logs.
    pub fn log_tails(&self, lines: usize) -> String {
        format!(
            "--- {} ---\n{}\n--- {} ---\n{}",
            self.etcd_log.display(),
            log_tail(&self.etcd_log, lines),
            self.apiserver_log.display(),
            log_tail(&self.apiserver_log, lines)
        )
    }

    /// A guard that prints the log tails if the current test panics while it is alive.
    pub fn logs_on_failure(&self) -> FailureLogs<'_> {
        FailureLogs { env: self }
    }
}

/// Installs our CRDs and the Cluster API and ORC ones; returns their names.
async fn install_crds(client: &Client, env_dir: &EnvDir) -> Result<Vec<String>> {
    let ours = paths::our_crd_dir();
    let mut files = crds::yaml_files(&ours)?;
    if files.is_empty() {
        eprintln!(
            "capo-testkit: WARNING: no CRDs in {}; only the Cluster API and ORC CRDs are installed",
            ours.display()
        );
    }
    files.extend(crds::yaml_files(&env_dir.crds())?);
    crds::install(client, &crds::load(&files)?).await
}

/// Prints the server logs when dropped during a panic (see [`TestEnv::logs_on_failure`]).
#[derive(Debug)]
pub struct FailureLogs<'a> {
    env: &'a TestEnv,
}

impl Drop for FailureLogs<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "capo-testkit: test failed; server logs:\n{}",
                self.env.log_tails(40)
            );
        }
    }
}

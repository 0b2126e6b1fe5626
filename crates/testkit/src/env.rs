//! One running etcd + kube-apiserver pair with its CRDs installed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use base64::Engine as _;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, Config};

use crate::capi::setup::{Endpoints, set_conversion};
use crate::capi::{CapiDir, Provider};
use crate::certs::Credentials;
use crate::conversion::{self, ConversionServer};
use crate::crds;
use crate::error::{Error, Result};
use crate::launch::{
    apiserver_args, audit_args, etcd_args, wait_port, wait_ready, write_kubeconfig,
};
use crate::paths::{self, EnvDir};
use crate::process::{Server, Watchdog, free_port, log_tail};

/// Environment variable that keeps the temporary directory (logs, etcd data) after the run.
pub const KEEP_DIR_VAR: &str = "CAPO_TEST_KEEP_DIR";

/// How to start a [`TestEnv`]; the default is what [`TestEnv::start`] does.
#[derive(Debug, Clone, Default)]
pub struct TestEnvOptions {
    cluster_api: Option<CapiDir>,
    audit: bool,
    infrastructure_crds: Option<PathBuf>,
    users: Vec<String>,
}

impl TestEnvOptions {
    /// Installs the Cluster API CRDs of this build instead of the test-env directory's (capo's
    /// own CRDs and the ORC CRD stay), converting through the managers that
    /// [`ClusterApi::start`](crate::capi::ClusterApi::start) runs later: see [`crate::capi`].
    pub fn cluster_api(mut self, dir: CapiDir) -> Self {
        self.cluster_api = Some(dir);
        self
    }

    /// Makes kube-apiserver write an audit log ([`TestEnv::audit_log_path`]): one JSON line per
    /// request stage at level Metadata (who, verb, resource, user agent; never a body), so a
    /// benchmark can count each client's requests.
    pub fn audit_log(mut self) -> Self {
        self.audit = true;
        self
    }

    /// Installs the infrastructure CRDs (`*.yaml`) of `dir` instead of capo's own, for example
    /// upstream CAPO's, to run another provider's manager against the environment.
    pub fn infrastructure_crds(mut self, dir: impl Into<PathBuf>) -> Self {
        self.infrastructure_crds = Some(dir.into());
        self
    }

    /// Adds an administrator `name` (in `system:masters`) with its own token, so that one
    /// client's requests stand apart in the audit log; see [`TestEnv::write_kubeconfig_as`].
    pub fn user(mut self, name: &str) -> Self {
        self.users.push(name.to_owned());
        self
    }
}

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
    /// Our CRDs that convert through a webhook (they serve several versions).
    conversion_crds: Vec<String>,
    /// capo's conversion webhook those CRDs call unless a test points them elsewhere.
    conversion: ConversionServer,
    etcd_log: PathBuf,
    /// etcd's client port on 127.0.0.1.
    etcd_port: u16,
    apiserver_log: PathBuf,
    /// The process group of the servers, which the watchdog kills.
    group: u32,
    /// Set when started with a Cluster API build.
    capi: Option<Endpoints>,
    /// Set when started with [`TestEnvOptions::audit_log`].
    audit_log: Option<PathBuf>,
    /// The extra users of [`TestEnvOptions::user`] and their tokens.
    users: UserTokens,
    /// The CA (PEM) of the API server's serving certificate.
    ca_pem: String,
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
        Self::start_with(TestEnvOptions::default()).await
    }

    /// Like [`TestEnv::start`], with options (for example the Cluster API CRDs of a build,
    /// [`TestEnvOptions::cluster_api`]).
    pub async fn start_with(options: TestEnvOptions) -> Result<Self> {
        let env_dir = EnvDir::locate()?;
        let mut attempt = 1;
        loop {
            match Self::start_in(&env_dir, &options).await {
                Err(err @ Error::NotReady { .. }) if attempt < 3 => {
                    eprintln!("capo-testkit: start attempt {attempt} failed, retrying: {err}");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn start_in(env_dir: &EnvDir, options: &TestEnvOptions) -> Result<Self> {
        let started = Instant::now();
        let tmp = tempfile::Builder::new()
            .prefix("capo-testenv-")
            .tempdir()
            .map_err(Error::io("creating the environment directory"))?;
        // The watchdog, not TempDir, removes the directory: it also runs when the process dies.
        let dir = tmp.keep();
        let creds = Credentials::generate(&dir, &options.users)?;

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
        let mut api_args = apiserver_args(&creds, etcd_port, api_port);
        let audit_log = if options.audit {
            let (args, log) = audit_args(&dir)?;
            api_args.extend(args);
            Some(log)
        } else {
            None
        };
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

        let capi = match &options.cluster_api {
            Some(capi_dir) => Some(Endpoints::prepare(&dir, capi_dir.clone())?),
            None => None,
        };
        let conversion = ConversionServer::start(&dir.join("capo-conversion-certs"))?;
        let (installed, conversion_crds) = install_crds(
            &client,
            env_dir,
            capi.as_ref(),
            options.infrastructure_crds.as_deref(),
            &conversion,
        )
        .await?;
        let with_capi = match &capi {
            Some(capi) => format!(
                " (Cluster API {} from {})",
                capi.dir.version()?,
                capi.dir.root.display()
            ),
            None => String::new(),
        };
        eprintln!(
            "capo-testkit: kube-apiserver on https://127.0.0.1:{api_port} ready with {} CRDs{with_capi} in {:.1} s (logs in {})",
            installed.len(),
            started.elapsed().as_secs_f64(),
            dir.display()
        );
        Ok(Self {
            etcd_log: etcd.log.clone(),
            etcd_port,
            apiserver_log: apiserver.log.clone(),
            dir,
            kubeconfig,
            config,
            crds: installed,
            conversion_crds,
            conversion,
            group,
            capi,
            audit_log,
            users: UserTokens(creds.users().to_vec()),
            ca_pem: creds.ca_pem.clone(),
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

    /// The audit log of an environment started with [`TestEnvOptions::audit_log`].
    pub fn audit_log_path(&self) -> Option<&Path> {
        self.audit_log.as_deref()
    }

    /// Writes a kubeconfig for user `name` of [`TestEnvOptions::user`] to `path`.
    pub fn write_kubeconfig_as(&self, name: &str, path: &Path) -> Result<()> {
        let (_, token) = self
            .users
            .0
            .iter()
            .find(|(user, _)| user == name)
            .ok_or_else(|| Error::Client(format!("no user {name} in this environment")))?;
        let server = &self.config.cluster_url;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: capo-testkit\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: capo-testkit\n  context:\n    cluster: capo-testkit\n    user: {name}\n    namespace: default\ncurrent-context: capo-testkit\n"
        );
        std::fs::write(path, yaml).map_err(Error::io(format!("writing {}", path.display())))
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

    /// Points our multi-version CRDs' conversion at `https://127.0.0.1:<port>/convert`, trusting
    /// `ca_pem` (a manager's own webhook server, instead of the environment's).
    pub async fn use_conversion_webhook(&self, port: u16, ca_pem: &str) -> Result<()> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        for name in &self.conversion_crds {
            let mut crd = api
                .get(name)
                .await
                .map_err(Error::kube(format!("reading CRD {name}")))?;
            set_conversion(&mut crd, port, ca_pem);
            let patch = serde_json::json!({"spec": {"conversion": crd.spec.conversion}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(Error::kube(format!("pointing CRD {name} at port {port}")))?;
        }
        Ok(())
    }

    /// Installs capo's own CRDs over whatever infrastructure CRDs the environment started with
    /// (for example upstream v0.14.7's, [`TestEnvOptions::infrastructure_crds`]), converting
    /// through the environment's webhook server, as an upgrade of the provider installs them.
    pub async fn install_our_crds(&self) -> Result<Vec<String>> {
        let mut ours = crds::load(&crds::yaml_files(&paths::our_crd_dir())?)?;
        for crd in ours.iter_mut().filter(|crd| conversion::converts(crd)) {
            set_conversion(crd, self.conversion.port, &self.conversion.ca_pem);
        }
        crds::install(&self.client(), &ours).await
    }

    /// What etcd holds for the object `<group>/<plural>/<namespace>/<name>` (the API server's
    /// key, under `/registry/`), as JSON; `None` when there is no such object. Shows the
    /// version an object is stored in, which no read through the API server does.
    pub async fn stored_object(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<serde_json::Value>> {
        let key = match namespace {
            Some(ns) => format!("/registry/{group}/{plural}/{ns}/{name}"),
            None => format!("/registry/{group}/{plural}/{name}"),
        };
        let Some(bytes) = crate::etcd::get(self.etcd_port, &key).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Api {
                context: format!("decoding {key} from etcd"),
                message: e.to_string(),
            })
    }

    /// The port of the environment's own conversion webhook server on `127.0.0.1`.
    pub fn conversion_port(&self) -> u16 {
        self.conversion.port
    }

    /// The Cluster API build whose CRDs this environment installed, if started with one.
    pub fn cluster_api_dir(&self) -> Option<&CapiDir> {
        self.capi.as_ref().map(|c| &c.dir)
    }

    /// The webhook serving certificate of an environment started with a Cluster API build:
    /// its directory (`tls.crt`, `tls.key`, valid for `127.0.0.1` and `localhost`) and the CA
    /// (PEM) a webhook configuration's `caBundle` needs. Other webhook servers of the test (capo's
    /// own) may serve it too.
    pub fn webhook_certs(&self) -> Option<(&Path, &str)> {
        self.capi
            .as_ref()
            .map(|c| (c.certs.dir.as_path(), c.certs.ca_pem.as_str()))
    }

    /// What the Cluster API managers need from this environment (ports, certificate).
    pub(crate) fn capi_endpoints(&self) -> Option<&Endpoints> {
        self.capi.as_ref()
    }

    /// The process group of the servers; children spawned into it end with the environment
    /// (its watchdog kills the group when the test process dies, however it dies).
    pub fn process_group(&self) -> u32 {
        self.group
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

/// Users and their bearer tokens; Debug shows the names only.
struct UserTokens(Vec<(String, String)>);

impl std::fmt::Debug for UserTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(user, _)| user))
            .finish()
    }
}

/// Installs our CRDs and the Cluster API and ORC ones; returns their names, and the names of
/// ours that convert through `conversion` (every one serving several versions). With a Cluster
/// API build, its CRDs replace the test-env directory's Cluster API CRDs.
async fn install_crds(
    client: &Client,
    env_dir: &EnvDir,
    capi: Option<&Endpoints>,
    infrastructure: Option<&Path>,
    conversion: &ConversionServer,
) -> Result<(Vec<String>, Vec<String>)> {
    let ours = infrastructure.map_or_else(paths::our_crd_dir, Path::to_path_buf);
    let files = crds::yaml_files(&ours)?;
    if files.is_empty() {
        eprintln!(
            "capo-testkit: WARNING: no CRDs in {}; only the Cluster API and ORC CRDs are installed",
            ours.display()
        );
    }
    let mut all = crds::load(&files)?;
    let mut converting = Vec::new();
    for crd in all.iter_mut().filter(|crd| conversion::converts(crd)) {
        set_conversion(crd, conversion.port, &conversion.ca_pem);
        converting.push(crd.metadata.name.clone().unwrap_or_default());
    }
    let env_crds = crds::load(&crds::yaml_files(&env_dir.crds())?)?;
    match capi {
        None => all.extend(env_crds),
        Some(capi) => {
            all.extend(
                env_crds
                    .into_iter()
                    .filter(|crd| Provider::for_group(&crd.spec.group).is_none()),
            );
            all.extend(capi.crds()?);
        }
    }
    Ok((crds::install(client, &all).await?, converting))
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

#[cfg(test)]
mod tests {
    use super::UserTokens;

    #[test]
    fn user_tokens_debug_shows_names_only() {
        let users = UserTokens(vec![("bench".into(), "not-a-real-token".into())]);
        let shown = format!("{users:?}");
        assert_eq!(shown, "[\"bench\"]");
    }
}

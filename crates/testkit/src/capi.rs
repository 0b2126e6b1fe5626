//! The real Cluster API controllers as local processes against a [`TestEnv`], the way envtest
//! runs a project's own webhooks: the core manager, the kubeadm bootstrap provider (CABPK) and
//! the KubeadmControlPlane provider (KCP), so that both `v1beta1` and `v1beta2` Cluster API
//! objects work (conversion webhooks) and Cluster API's admission webhooks are enforced.
//!
//! # The build
//!
//! `hack/capi.sh build` builds Cluster API (outside the repository, cached) and prints its
//! directory; tests find it through `$CAPO_CAPI_BUILD_DIR` ([`BUILD_DIR_VAR`]). An unset
//! variable does not trigger a build (it takes minutes): [`CapiDir::from_env`] returns `None` and
//! the test reports that it skipped. Layout:
//!
//! ```text
//! <dir>/bin/cluster-api-manager, kubeadm-bootstrap-manager, kubeadm-control-plane-manager,
//!          clusterctl, capo-workload-emulator
//! <dir>/config/{core,bootstrap,controlplane}/crds/*.yaml
//! <dir>/config/{core,bootstrap,controlplane}/webhook/manifests.yaml
//! <dir>/VERSION
//! ```
//!
//! # How it runs
//!
//! 1. [`TestEnv::start_with`] with [`TestEnvOptions::cluster_api`](crate::TestEnvOptions::cluster_api)
//!    installs capo's CRDs, the ORC CRD and the build's Cluster API CRDs instead of the
//!    (older) ones of the test-env directory. It also picks each manager's webhook port and
//!    generates one CA with a serving certificate for `localhost`/`127.0.0.1` (shared by the
//!    three managers, `tls.crt`/`tls.key` in `<env dir>/capi-webhook-certs`). Every CRD that
//!    has more than one version converts through its owner's `/convert` endpoint at
//!    `https://127.0.0.1:<webhook port>` with that CA as `caBundle`: the core groups
//!    (`cluster`, `addons`, `ipam`, `runtime`) through the core manager, `bootstrap` through
//!    CABPK, `controlplane` through KCP ([`Provider::for_group`]). The CRDs get the labels
//!    Cluster API's kustomizations would add: `cluster.x-k8s.io/provider`, and on the bootstrap
//!    and control plane CRDs the contract labels (`cluster.x-k8s.io/v1beta1: v1beta1`,
//!    `cluster.x-k8s.io/v1beta2: v1beta2`), without which a `v1beta1` Cluster referring to a
//!    KubeadmControlPlane cannot be converted.
//! 2. [`ClusterApi::start`] runs the three managers in the environment's process group (so its
//!    watchdog ends them when the test process dies; dropping the [`ClusterApi`] ends them
//!    sooner), installs their Mutating/ValidatingWebhookConfigurations with each
//!    `clientConfig.service` turned into a `clientConfig.url` on the same port, and waits until
//!    every manager is ready: `/readyz` answers 200 (its `webhook` check dials the webhook
//!    server over TLS) and a dry-run create of a `v1beta1` object of its own kind succeeds
//!    (conversion to the stored `v1beta2` and back, plus its admission webhooks).
//!
//! At most one [`ClusterApi`] runs per environment at a time (the webhook ports are the
//! environment's). After it is dropped the webhook configurations stay and point at stopped
//! managers, so Cluster API objects cannot be written until the next one starts, as in a real
//! cluster whose providers are down.
//!
//! # Networking
//!
//! The managers bind their webhook servers on all interfaces: they have no flag to pick a host.
//! The end-to-end tier therefore runs entirely inside a fresh network namespace (`unshare -n`
//! with only `lo` up), where "all interfaces" means loopback only. Everything else is named
//! `127.0.0.1` explicitly (health and diagnostics addresses, webhook URLs). Webhook ports are
//! taken below the kernel's ephemeral range, because they are chosen when the environment
//! starts and must stay free until the managers bind them.
//!
//! ```no_run
//! # async fn demo() -> capo_testkit::Result<()> {
//! use capo_testkit::capi::{CapiDir, ClusterApi, ClusterApiOptions};
//! use capo_testkit::{TestEnv, TestEnvOptions};
//! let Some(dir) = CapiDir::from_env()? else { return Ok(()) };
//! let env = TestEnv::start_with(TestEnvOptions::default().cluster_api(dir.clone())).await?;
//! let capi = ClusterApi::start(&env, &dir, ClusterApiOptions::default()).await?;
//! let _logs = capi.logs_on_failure();
//! # Ok(()) }
//! ```
//!
//! [`TestEnv`]: crate::TestEnv
//! [`TestEnv::start_with`]: crate::TestEnv::start_with

mod managers;
pub(crate) mod setup;

use std::path::PathBuf;

pub use managers::{CapiProcess, ClusterApi, ClusterApiFailureLogs, ClusterApiOptions};
pub use setup::install_webhook_manifests;

use crate::error::{Error, Result};

/// True when this process's network namespace has no interface but loopback, the only place
/// [`ClusterApi::start`] runs the managers: their webhook servers have no bind-address flag and
/// listen on every interface, which there means loopback only (`hack/e2e.sh` makes such a
/// namespace with `unshare --net`).
pub fn loopback_only_network() -> bool {
    // /proc/self/net/dev follows the caller's namespace (/sys/class/net follows sysfs's mount).
    let Ok(dev) = std::fs::read_to_string("/proc/self/net/dev") else {
        return false;
    };
    dev.lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .all(|name| name.trim() == "lo")
}

/// Environment variable naming the directory `hack/capi.sh build` printed.
pub const BUILD_DIR_VAR: &str = "CAPO_CAPI_BUILD_DIR";

/// The name of the emulator binary in `bin/` (it may be added to a build after the rest).
pub const EMULATOR: &str = "capo-workload-emulator";

/// One of the three Cluster API providers run as a manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Provider {
    /// The core manager (`cluster.x-k8s.io`, `addons`, `ipam`, `runtime` groups).
    Core,
    /// The kubeadm bootstrap provider, CABPK (`bootstrap.cluster.x-k8s.io`).
    Bootstrap,
    /// The kubeadm control plane provider, KCP (`controlplane.cluster.x-k8s.io`).
    ControlPlane,
}

impl Provider {
    /// All three, in start order.
    pub const ALL: [Self; 3] = [Self::Core, Self::Bootstrap, Self::ControlPlane];

    /// The provider's directory name under `config/`: `core`, `bootstrap`, `controlplane`.
    pub fn config_name(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::Bootstrap => "bootstrap",
            Self::ControlPlane => "controlplane",
        }
    }

    /// The manager binary's name under `bin/`.
    pub fn binary(self) -> &'static str {
        match self {
            Self::Core => "cluster-api-manager",
            Self::Bootstrap => "kubeadm-bootstrap-manager",
            Self::ControlPlane => "kubeadm-control-plane-manager",
        }
    }

    /// The value of the `cluster.x-k8s.io/provider` label on its objects (as clusterctl and
    /// Cluster API's kustomizations set it).
    pub fn provider_label(self) -> &'static str {
        match self {
            Self::Core => "cluster-api",
            Self::Bootstrap => "bootstrap-kubeadm",
            Self::ControlPlane => "control-plane-kubeadm",
        }
    }

    /// The provider serving an API group, `None` for a group that is not Cluster API's own
    /// (such as `infrastructure.cluster.x-k8s.io`).
    pub fn for_group(group: &str) -> Option<Self> {
        match group {
            "cluster.x-k8s.io"
            | "addons.cluster.x-k8s.io"
            | "ipam.cluster.x-k8s.io"
            | "runtime.cluster.x-k8s.io" => Some(Self::Core),
            "bootstrap.cluster.x-k8s.io" => Some(Self::Bootstrap),
            "controlplane.cluster.x-k8s.io" => Some(Self::ControlPlane),
            _ => None,
        }
    }

    /// Position in [`Provider::ALL`].
    pub(crate) fn index(self) -> usize {
        match self {
            Self::Core => 0,
            Self::Bootstrap => 1,
            Self::ControlPlane => 2,
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.binary())
    }
}

/// A Cluster API build (see the module documentation for its layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapiDir {
    /// The directory itself.
    pub root: PathBuf,
}

impl CapiDir {
    /// The build named by `$CAPO_CAPI_BUILD_DIR`: `Ok(None)` when the variable is unset or
    /// empty, an error when it names an incomplete directory.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var_os(BUILD_DIR_VAR) {
            Some(dir) if !dir.is_empty() => Self::new(dir).map(Some),
            _ => Ok(None),
        }
    }

    /// The build in `root`, checked for completeness (the emulator binary is not required:
    /// see [`CapiDir::has_emulator`]).
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let dir = Self { root: root.into() };
        dir.check()?;
        Ok(dir)
    }

    /// Path of one of the binaries.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.root.join("bin").join(name)
    }

    /// Path of `clusterctl`.
    pub fn clusterctl(&self) -> PathBuf {
        self.bin("clusterctl")
    }

    /// Path of a provider's manager binary.
    pub fn manager(&self, provider: Provider) -> PathBuf {
        self.bin(provider.binary())
    }

    /// Whether the build holds `bin/capo-workload-emulator` yet.
    pub fn has_emulator(&self) -> bool {
        self.bin(EMULATOR).is_file()
    }

    /// A provider's CRD directory, `config/<provider>/crds`.
    pub fn crd_dir(&self, provider: Provider) -> PathBuf {
        self.root
            .join("config")
            .join(provider.config_name())
            .join("crds")
    }

    /// A provider's webhook configurations, `config/<provider>/webhook/manifests.yaml`.
    pub fn webhook_manifests(&self, provider: Provider) -> PathBuf {
        self.root
            .join("config")
            .join(provider.config_name())
            .join("webhook/manifests.yaml")
    }

    /// The Cluster API version of the build (the `VERSION` file, trimmed).
    pub fn version(&self) -> Result<String> {
        let path = self.root.join("VERSION");
        std::fs::read_to_string(&path)
            .map(|v| v.trim().to_owned())
            .map_err(Error::io(format!("reading {}", path.display())))
    }

    fn check(&self) -> Result<()> {
        let mut wanted = vec![self.clusterctl(), self.root.join("VERSION")];
        for provider in Provider::ALL {
            wanted.push(self.manager(provider));
            wanted.push(self.crd_dir(provider));
            wanted.push(self.webhook_manifests(provider));
        }
        match wanted.iter().find(|p| !p.exists()) {
            None => Ok(()),
            Some(missing) => Err(Error::Incomplete {
                dir: self.root.clone(),
                missing: missing
                    .strip_prefix(&self.root)
                    .unwrap_or(missing)
                    .display()
                    .to_string(),
            }),
        }
    }
}

//! A real kube-apiserver + etcd for capo's integration tests, the way envtest provides one
//! for controller-runtime projects.
//!
//! The binaries and the Cluster API / ORC CRDs come from `hack/test-env.sh` (built once from
//! the Go module proxy and cached), or from `$CAPO_TEST_ENV_DIR` when set. Each test binary
//! shares one environment ([`shared_env`]); each test takes its own namespace
//! ([`TestEnv::new_namespace`]).
//!
//! For end-to-end tests, [`capi`] runs the real Cluster API managers (core, kubeadm bootstrap,
//! kubeadm control plane) against an environment started with their CRDs, and
//! [`cloud_provider`] runs the real cloud-provider-openstack (controller manager, Cinder CSI
//! controller and the CSI sidecars) against an environment playing a workload cluster.
//!
//! ```no_run
//! # async fn demo() -> capo_testkit::Result<()> {
//! let env = capo_testkit::shared_env().await?;
//! let ns = env.new_namespace("demo").await?;
//! let verdict = capo_testkit::apply_yaml(&env.client(), &ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", true).await?;
//! assert!(verdict.is_ok());
//! # Ok(()) }
//! ```

mod apply;
pub mod capi;
mod certs;
pub mod cloud_provider;
mod conversion;
mod crds;
mod env;
mod error;
mod etcd;
mod launch;
pub mod partners;
pub mod paths;
mod process;
pub mod project;
mod template;

pub use apply::{Rejected, apply_yaml, parse_objects};
pub use crds::is_established;
pub use env::{FailureLogs, KEEP_DIR_VAR, TestEnv, TestEnvOptions};
pub use error::{Error, Result, server_message};
pub use template::envsubst;

/// The field manager of every server-side apply made by the test kit.
pub const FIELD_MANAGER: &str = "capo-test";

static SHARED: tokio::sync::OnceCell<TestEnv> = tokio::sync::OnceCell::const_new();

/// The environment shared by all tests of this test binary, started on first use.
///
/// It is never dropped (statics are not); its watchdog stops the servers when the test
/// process exits. A failed start is not cached, so the next caller retries.
pub async fn shared_env() -> Result<&'static TestEnv> {
    SHARED.get_or_try_init(TestEnv::start).await
}

/// [`shared_env`], started with `options` if no test of this binary has started it yet (for a
/// test binary whose environment must differ from the default, for example with the Cluster API
/// CRDs of [`TestEnvOptions::cluster_api`]). An error when it is already running: its options
/// are then whatever its first caller chose, which need not be `options`.
pub async fn shared_env_with(options: TestEnvOptions) -> Result<&'static TestEnv> {
    if SHARED.initialized() {
        return Err(Error::Client(
            "the shared environment was already started (with other options)".to_owned(),
        ));
    }
    SHARED
        .get_or_try_init(|| TestEnv::start_with(options))
        .await
}

//! The manager's single error type.

use std::path::PathBuf;

/// Everything that stops the manager.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag value is not usable.
    #[error("--{flag}: {message}")]
    Flag {
        /// Flag name without dashes.
        flag: &'static str,
        /// What is wrong.
        message: String,
    },
    /// No Kubernetes client configuration could be loaded.
    #[error("loading the Kubernetes client configuration: {0}")]
    KubeConfig(String),
    /// The Kubernetes API server did not answer.
    #[error("{context}: {source}")]
    Kube {
        /// What was being done.
        context: String,
        /// The client error.
        source: kube::Error,
    },
    /// The `--ca-certs` bundle is unusable.
    #[error("--ca-certs {}: {message}", path.display())]
    CaCerts {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// `HTTPS_PROXY` / `HTTP_PROXY` (or lower-case) holds a value capo cannot use.
    #[error("proxy environment: {0}")]
    Proxy(String),
    /// The probe or metrics server could not start (address taken, certificate not made).
    #[error("probe or metrics server: {0}")]
    Diagnostics(#[from] capo_tls::Error),
    /// The admission webhook server could not start (address taken, certificate unusable).
    #[error("webhook server: {0}")]
    Webhook(capo_webhook::Error),
    /// This replica held the leader lease and could not renew it in time; another replica may
    /// take over, so this one stops (as every controller-runtime manager does).
    #[error("leader election lost: lease {lease} {reason}")]
    LeaderLost {
        /// `namespace/name` of the Lease.
        lease: String,
        /// What happened (taken by another replica, or not renewed in time).
        reason: String,
    },
    /// Installing the signal handlers failed.
    #[error("installing signal handlers: {0}")]
    Signal(std::io::Error),
}

impl Error {
    /// A kube error with context.
    pub fn kube(context: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let context = context.into();
        move |source| Self::Kube { context, source }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

//! The one error type of the controllers, and how each error decides the requeue.

use std::time::Duration;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed while doing `op`.
    #[error("{op}: {source}")]
    Kube {
        /// What was being done.
        op: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// An OpenStack call failed; every one goes through `capo_cloud`, which classifies it once
    /// (retryable, slow retry, not found, Retry-After). Its message names the operation and
    /// the cloud's text.
    #[error(transparent)]
    Cloud(#[from] capo_cloud::Error),
    /// The identityRef could not be turned into a session (Secret missing, bad clouds.yaml,
    /// namespace not allowed to use a ClusterIdentity, ...).
    #[error("credentials: {0}")]
    Credentials(String),
    /// The object cannot be reconciled as written; retried only when it changes.
    #[error("invalid spec: {0}")]
    InvalidSpec(String),
    /// An object could not be serialized (a bug, reported instead of panicking).
    #[error("serialize {what}: {source}")]
    Serialize {
        /// What was serialized.
        what: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The finalizer helper failed.
    #[error("finalizer: {0}")]
    Finalizer(String),
    /// The API server is not in the state a step needs yet (for example a CRD's new storage
    /// version not in effect); retried.
    #[error("not yet: {0}")]
    NotYet(String),
}

impl Error {
    /// Wrap a kube error with what was being done.
    pub fn kube(op: impl Into<String>, source: kube::Error) -> Self {
        Error::Kube {
            op: op.into(),
            source,
        }
    }

    /// Short stable category for metrics and condition reasons.
    pub fn category(&self) -> &'static str {
        match self {
            Error::Kube { .. } => "kube",
            Error::Cloud(e) => e.category(),
            Error::Credentials(_) => "credentials",
            Error::InvalidSpec(_) => "invalid_spec",
            Error::Serialize { .. } => "serialize",
            Error::Finalizer(_) => "finalizer",
            Error::NotYet(_) => "not_yet",
        }
    }

    /// True when only a change of the object (or of what it references) can fix it; such
    /// errors are still retried, but on the slowest backoff.
    pub fn is_terminal(&self) -> bool {
        match self {
            Error::Cloud(e) => !e.is_retryable(),
            Error::InvalidSpec(_) | Error::Credentials(_) => true,
            _ => false,
        }
    }

    /// True when the credentials are missing, malformed or refused by the cloud: what was read
    /// of the identity Secret must be read again (see [`crate::recent_reads::IdentityReads`]).
    pub fn is_credentials_problem(&self) -> bool {
        match self {
            Error::Credentials(_) => true,
            Error::Cloud(e) => e.is_unauthorized(),
            _ => false,
        }
    }

    /// True for capacity problems (server in ERROR, quota) that clear only slowly.
    pub fn is_slow_retry(&self) -> bool {
        matches!(self, Error::Cloud(e) if e.is_slow_retry())
    }

    /// The cloud's Retry-After hint.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Cloud(e) => e.retry_after(),
            _ => None,
        }
    }

    /// True when the Kubernetes object we patched changed under us (optimistic concurrency):
    /// the next reconcile sees the new version, so this is not worth an error event.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Kube { source: kube::Error::Api(ae), .. } if ae.code == 409)
    }
}

/// Attach context to kube results.
pub(crate) trait KubeContext<T> {
    /// Map a kube error into [`Error::Kube`] with `op` as context.
    fn kctx(self, op: impl FnOnce() -> String) -> Result<T>;
}

impl<T> KubeContext<T> for Result<T, kube::Error> {
    fn kctx(self, op: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::kube(op(), e))
    }
}

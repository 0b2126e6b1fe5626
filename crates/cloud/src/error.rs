//! The one error type of this crate.

use std::time::Duration;

use capo_openstack::ErrorKind;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of the cloud services.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An OpenStack call failed while doing `op` (e.g. `create network k8s-...`).
    #[error("{op}: {source}")]
    OpenStack {
        /// What was being done.
        op: String,
        /// The client layer's error (carries the cloud's message and a retry classification).
        #[source]
        source: capo_openstack::Error,
    },
    /// A resource carries our deterministic name but another cluster's ownership tag.
    #[error(
        "{kind} {name:?} ({id}) belongs to another cluster (tag {owner_tag:?}); refusing to touch it"
    )]
    ForeignResource {
        /// Resource kind (`network`, `router`, ...).
        kind: &'static str,
        /// Name.
        name: String,
        /// OpenStack ID.
        id: String,
        /// The other cluster's ownership tag.
        owner_tag: String,
    },
    /// A selector (id or filter) in the spec matched nothing.
    #[error("{kind} not found: {selector}")]
    NotFound {
        /// Resource kind.
        kind: &'static str,
        /// The selector, rendered for humans.
        selector: String,
    },
    /// The server an object recorded is gone and nothing with its name exists: deleted
    /// outside capo. Never re-created under the same object (its owner reports it so a
    /// MachineHealthCheck can remediate).
    #[error("server {id} was deleted outside capo")]
    ServerDeleted {
        /// The recorded server ID.
        id: String,
        /// Nova's status of it when Nova still shows it (`DELETED`, `SOFT_DELETED`); `None`
        /// when Nova no longer knows the ID (upstream's InstanceNotFound rather than
        /// InstanceDeleted).
        state: Option<String>,
    },
    /// A selector or a name matched more than one resource.
    #[error("{kind} selector {selector} matched {count} resources, expected one")]
    Ambiguous {
        /// Resource kind.
        kind: &'static str,
        /// The selector, rendered for humans.
        selector: String,
        /// How many matched.
        count: usize,
    },
    /// A Nova server went to ERROR (NoValidHost, quota, ...): retryable on a slow backoff once
    /// the caller has deleted it, never terminal.
    #[error("server {name:?} ({id}) is in ERROR: {fault}")]
    InstanceFailed {
        /// Server name.
        name: String,
        /// Server ID.
        id: String,
        /// Nova's fault message (empty fault → "no fault reported").
        fault: String,
    },
    /// The spec cannot be realised as written (a terminal error until the spec changes).
    #[error("invalid spec: {0}")]
    InvalidSpec(String),
}

impl Error {
    /// Wrap a client error with what was being done.
    pub fn api(op: impl Into<String>, source: capo_openstack::Error) -> Self {
        Error::OpenStack {
            op: op.into(),
            source,
        }
    }

    /// True when the same call may succeed later without a spec change: 5xx, timeouts, 429,
    /// 409 (in use / conflicting state), quota exhaustion (freed quota lets it proceed; the
    /// caller should back off longer) and POSTs whose outcome is unknown (the rerun adopts by
    /// name, so nothing is created twice). 400/403/401 and the spec errors are not.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::OpenStack { source, .. } => matches!(
                source.kind(),
                Some(
                    ErrorKind::Transient
                        | ErrorKind::RateLimited { .. }
                        | ErrorKind::Conflict
                        | ErrorKind::OverQuota
                        | ErrorKind::OutcomeUnknown
                )
            ),
            Error::InstanceFailed { .. } => true,
            _ => false,
        }
    }

    /// True when the cloud answered 409 (in use, or a conflicting state such as a load
    /// balancer busy with another change).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::OpenStack { source, .. } if matches!(source.kind(), Some(ErrorKind::Conflict)))
    }

    /// True when the cloud refused the credentials (Keystone's 401, or a 401 that survived a
    /// re-authentication).
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, Error::OpenStack { source, .. } if matches!(source.kind(), Some(ErrorKind::Unauthorized)))
    }

    /// True when the cloud answered 404 (the resource is gone).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::OpenStack { source, .. } if source.is_not_found())
    }

    /// True when a retry should wait long (minutes, not seconds): a server in ERROR or quota
    /// exhaustion only clears when capacity is freed.
    pub fn is_slow_retry(&self) -> bool {
        match self {
            Error::InstanceFailed { .. } => true,
            Error::OpenStack { source, .. } => matches!(source.kind(), Some(ErrorKind::OverQuota)),
            _ => false,
        }
    }

    /// The server's Retry-After hint, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::OpenStack { source, .. } => match source.kind() {
                Some(ErrorKind::RateLimited { retry_after }) => *retry_after,
                _ => None,
            },
            _ => None,
        }
    }

    /// Short stable category for metrics and condition reasons.
    pub fn category(&self) -> &'static str {
        match self {
            Error::OpenStack { source, .. } => source.kind().map_or("openstack", |k| k.as_str()),
            Error::ForeignResource { .. } => "foreign_resource",
            Error::NotFound { .. } => "not_found",
            Error::ServerDeleted { .. } => "server_deleted",
            Error::Ambiguous { .. } => "ambiguous",
            Error::InvalidSpec(_) => "invalid_spec",
            Error::InstanceFailed { .. } => "instance_failed",
        }
    }
}

/// Attach context to client results.
pub(crate) trait Context<T> {
    /// Map the client error into [`Error::OpenStack`] with `op` as context.
    fn ctx(self, op: impl FnOnce() -> String) -> Result<T>;
    /// Like [`Context::ctx`], but a 404 (the resource is gone) is `Ok(None)`.
    fn ctx_opt(self, op: impl FnOnce() -> String) -> Result<Option<T>>;
    /// The GET of a user's selector `id`: a 404 is [`Error::NotFound`] naming it.
    fn ctx_selected(self, kind: &'static str, id: &str) -> Result<T>;
}

impl<T> Context<T> for capo_openstack::Result<T> {
    fn ctx(self, op: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::api(op(), e))
    }

    fn ctx_opt(self, op: impl FnOnce() -> String) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(Error::api(op(), e)),
        }
    }

    fn ctx_selected(self, kind: &'static str, id: &str) -> Result<T> {
        let selector = format!("id {id}");
        self.ctx_opt(|| format!("get {kind} {id}"))?
            .ok_or(Error::NotFound { kind, selector })
    }
}

//! The test kit's single error type.

use std::path::PathBuf;

/// Result alias used throughout the test kit.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while preparing or using a test environment.
// Debug shows the Display text: a test returning `Result` prints its error with Debug, and
// the log tail of `NotReady` is only readable with real line breaks.
#[derive(thiserror::Error)]
pub enum Error {
    /// `hack/test-env.sh` failed or printed no directory.
    #[error("hack/test-env.sh failed: {0}")]
    Script(String),
    /// The environment directory lacks a binary or the CRD folder.
    #[error("test environment directory {dir} is incomplete: missing {missing}")]
    Incomplete {
        /// The directory that was checked.
        dir: PathBuf,
        /// What is missing in it.
        missing: String,
    },
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Certificate or key generation failed.
    #[error("test certificates: {0}")]
    Certs(#[from] capo_tls::Error),
    /// A child process (etcd or kube-apiserver) did not become ready; carries its log tail.
    #[error("{what} did not become ready: {reason}\n--- last lines of {log} ---\n{tail}")]
    NotReady {
        /// Which process.
        what: &'static str,
        /// Why we gave up.
        reason: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of the log.
        tail: String,
    },
    /// A YAML document could not be parsed.
    #[error("parsing YAML ({context}): {source}")]
    Yaml {
        /// Which document.
        context: String,
        /// The parser error.
        source: yaml_serde::Error,
    },
    /// Building the Kubernetes client failed.
    #[error("building the Kubernetes client: {0}")]
    Client(String),
    /// The API server rejected a request; the message is the server's.
    #[error("{context}: {message}")]
    Api {
        /// What was being done.
        context: String,
        /// The API server's message (for a rejected object: its validation message).
        message: String,
    },
    /// The test kit was used in a way it does not support (for example Cluster API managers on
    /// an environment started without their CRDs).
    #[error("{0}")]
    Usage(String),
    /// A CRD was not Established in time.
    #[error("CRD {name} was not Established within {seconds} s")]
    NotEstablished {
        /// The CRD name.
        name: String,
        /// How long we waited.
        seconds: u64,
    },
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }

    /// Wraps a kube error with what was being done, keeping the server's message.
    pub(crate) fn kube(context: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let context = context.into();
        move |err| Self::Api {
            context,
            message: server_message(&err),
        }
    }
}

/// The API server's own message for a failed request, else the client-side error text.
pub fn server_message(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

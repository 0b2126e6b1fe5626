//! The crate's single error type: what can stop the webhook server.

use std::path::PathBuf;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why the webhook server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading a certificate or key file failed.
    #[error("reading {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A certificate or key file holds no usable PEM data.
    #[error("{path}: {message}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it (never the key material).
        message: String,
    },
    /// rustls refused the certificate/key pair (e.g. the key does not match the certificate).
    #[error("loading the serving certificate from {dir}: {source}")]
    Tls {
        /// The certificate directory.
        dir: PathBuf,
        /// The rustls error.
        source: rustls::Error,
    },
    /// Binding the listen address failed.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bound socket has no local address (should not happen once bound).
    #[error("reading the listen address: {0}")]
    LocalAddr(std::io::Error),
}

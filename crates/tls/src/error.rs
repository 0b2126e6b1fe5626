//! The crate's single error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a server could not start, or a certificate could not be made or loaded.
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
    /// rustls refused the certificate/key pair of a directory (e.g. the key does not match).
    #[error("loading the serving certificate from {dir}: {source}")]
    Tls {
        /// The certificate directory.
        dir: PathBuf,
        /// The rustls error.
        source: rustls::Error,
    },
    /// rustls refused a generated certificate or the server configuration.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// Generating a key or certificate failed.
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// Binding the listen address failed.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bound socket has no local address (should not happen once bound).
    #[error("reading the listen address: {0}")]
    LocalAddr(std::io::Error),
}

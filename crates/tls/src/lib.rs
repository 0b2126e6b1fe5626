//! TLS for capo's servers (webhook, manager diagnostics, capo-sim, the test kit's API servers):
//! one accept loop ([`serve`]), a serving certificate reloaded from its directory ([`CertDir`]),
//! throw-away CAs and the certificates they sign ([`Ca`], [`Leaf`]), the versions and cipher
//! suites a server offers ([`ServerTls`]); ring everywhere.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod cert_dir;
mod certs;
mod error;
mod policy;
mod serve;

use std::sync::Arc;

pub use cert_dir::{CERT_FILE, CertDir, KEY_FILE};
pub use certs::{Ca, LOOPBACK, Leaf, parse_pem, signing_key_pem};
pub use error::{Error, Result};
pub use policy::{GoCipherSuite, MinVersion, ServerTls, go_cipher_suite};
/// The TLS library, re-exported so clients in tests use the same version and features.
pub use rustls;
pub use serve::{ALPN_H2_HTTP1, ALPN_HTTP1, ServeOptions, acceptor, acceptor_with, bind, serve};
/// The tokio adapter of [`rustls`], re-exported for the same reason.
pub use tokio_rustls;

/// The ring crypto provider.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Installs ring as the process-wide rustls provider, once (later calls do nothing).
///
/// capo uses ring everywhere (kube's client does too): with a single provider, TLS behaves the
/// same in every binary and test, and no second crypto library (aws-lc, a C build) is compiled.
/// reqwest is built without a provider of its own, so it takes the process default installed here.
pub fn ensure_crypto_provider() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // An error only means another provider was installed first; that one is then used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

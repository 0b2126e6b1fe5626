//! TLS trust and the shared HTTP connection pools.
//!
//! Trust precedence: the Secret's `cacert` PEM, else the manager's `--ca-certs` file, else the
//! system roots. A CA that is given is used *exclusively* (no silent fallback to system roots),
//! and a PEM that does not parse is an error, never ignored (upstream falls back silently).
//! `verify: false` is honoured with a warning. TLS 1.2 is the minimum.
//!
//! HTTP clients (each one a connection pool) are shared by every session with the same trust
//! settings, see [`crate::cache::SessionCache`]. No environment variable is read here: reqwest
//! is built without its `system-proxy` feature and every client is built with an explicit proxy
//! setting, [`HttpOptions::proxy`], which the manager reads once at start from `HTTPS_PROXY`,
//! `HTTP_PROXY` and `NO_PROXY` (Go's rules, see [`crate::proxy`]) and passes down. The proxy
//! setting is the same for every pool of a [`crate::cache::SessionCache`] (one process, one
//! environment), so it is not part of the pool key. An `https` proxy is reached with the same
//! trust settings as the cloud, as in Go.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::proxy::ProxySettings;

/// Parse a PEM bundle: at least one certificate, every certificate block well-formed.
pub use capo_tls::parse_pem;

/// Trust settings of one session (part of the session-cache key).
#[derive(Clone, Default)]
pub struct TlsSettings {
    /// CA bundle from the Secret (highest precedence).
    pub secret_ca: Option<Vec<u8>>,
    /// CA bundle read once from the manager's `--ca-certs` file.
    pub manager_ca: Option<Arc<Vec<u8>>>,
    /// False when clouds.yaml says `verify: false`.
    pub verify: bool,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("secret_ca", &self.secret_ca.is_some())
            .field("manager_ca", &self.manager_ca.is_some())
            .field("verify", &self.verify)
            .finish()
    }
}

impl TlsSettings {
    /// The CA bundle in effect, by precedence.
    pub fn effective_ca(&self) -> Option<&[u8]> {
        self.secret_ca
            .as_deref()
            .or(self.manager_ca.as_deref().map(Vec::as_slice))
    }

    /// SHA-256 over (effective CA, verify): identifies a connection pool.
    pub fn pool_key(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        match self.effective_ca() {
            Some(ca) => {
                h.update([1u8]);
                h.update((ca.len() as u64).to_be_bytes());
                h.update(ca);
            }
            None => h.update([0u8]),
        }
        h.update([u8::from(self.verify)]);
        h.finalize().into()
    }
}

/// Read the manager's `--ca-certs` file and check it parses.
pub fn load_manager_ca(path: &std::path::Path) -> Result<Arc<Vec<u8>>> {
    let pem = std::fs::read(path)
        .map_err(|e| Error::Tls(format!("--ca-certs {}: {e}", path.display())))?;
    parse_pem(&pem).map_err(|e| Error::Tls(format!("--ca-certs {}: {e}", path.display())))?;
    Ok(Arc::new(pem))
}

/// HTTP behaviour shared by all sessions.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Whole-request timeout.
    pub timeout: Duration,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Idle connections kept per host and pool.
    pub max_idle_per_host: usize,
    /// Idle connections are closed after this.
    pub idle_timeout: Duration,
    /// Proxies for the OpenStack APIs (none by default); the manager's come from the
    /// environment it read at start.
    pub proxy: ProxySettings,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            max_idle_per_host: 8,
            idle_timeout: Duration::from_secs(90),
            proxy: ProxySettings::default(),
        }
    }
}

/// Counts connection attempts of the HTTP clients it is installed in (a tower layer around
/// reqwest's connector), so benchmarks and metrics can show how many TCP/TLS connections a
/// workload opened.
#[derive(Debug, Clone, Default)]
pub struct ConnectionCounter(Arc<AtomicU64>);

impl ConnectionCounter {
    /// Connections opened (attempted) so far.
    pub fn opened(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl<S> tower_layer::Layer<S> for ConnectionCounter {
    type Service = Counted<S>;
    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counter: self.0.clone(),
        }
    }
}

/// The connector wrapped by [`ConnectionCounter`].
#[derive(Debug, Clone)]
pub struct Counted<S> {
    inner: S,
    counter: Arc<AtomicU64>,
}

impl<S, R> tower_service::Service<R> for Counted<S>
where
    S: tower_service::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::result::Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        self.counter.fetch_add(1, Ordering::Relaxed);
        self.inner.call(req)
    }
}

/// Makes ring the process-wide rustls crypto provider (reqwest is built without one of its own).
pub use capo_tls::ensure_crypto_provider;

/// Build an HTTP client (one connection pool) for these trust settings.
pub fn build_client(
    tls: &TlsSettings,
    opts: &HttpOptions,
    counter: &ConnectionCounter,
) -> Result<reqwest::Client> {
    ensure_crypto_provider();
    let mut b = reqwest::Client::builder()
        .connector_layer(counter.clone())
        .timeout(opts.timeout)
        .connect_timeout(opts.connect_timeout)
        .pool_max_idle_per_host(opts.max_idle_per_host)
        .pool_idle_timeout(opts.idle_timeout)
        .tls_version_min(reqwest::tls::Version::TLS_1_2);
    b = if opts.proxy.is_empty() {
        b.no_proxy()
    } else {
        // A custom matcher, not reqwest's NoProxy: Go's rules (loopback, ports, IPv4-mapped
        // addresses) are applied exactly; see `crate::proxy`.
        let proxy = opts.proxy.clone();
        b.proxy(reqwest::Proxy::custom(move |url| {
            proxy.proxy_for(url).cloned()
        }))
    };
    if let Some(ca) = tls.effective_ca() {
        let source = if tls.secret_ca.is_some() {
            "Secret key \"cacert\""
        } else {
            "--ca-certs"
        };
        let ders = parse_pem(ca).map_err(|e| Error::Tls(format!("{source}: {e}")))?;
        let mut certs = Vec::with_capacity(ders.len());
        for der in ders {
            certs.push(
                reqwest::Certificate::from_der(der.as_ref())
                    .map_err(|e| Error::Tls(format!("{source}: {e}")))?,
            );
        }
        b = b.tls_certs_only(certs);
    }
    if !tls.verify {
        tracing::warn!(
            "TLS certificate verification is disabled for an OpenStack cloud (clouds.yaml verify: false)"
        );
        b = b.tls_danger_accept_invalid_certs(true);
    }
    b.build()
        .map_err(|e| Error::Tls(format!("building HTTP client: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pem_is_an_error() {
        assert!(parse_pem(b"garbage").is_err());
        assert!(
            parse_pem(b"-----BEGIN CERTIFICATE-----\n!!!notbase64\n-----END CERTIFICATE-----\n")
                .is_err()
        );
        let tls = TlsSettings {
            secret_ca: Some(b"garbage".to_vec()),
            verify: true,
            ..Default::default()
        };
        let e = build_client(&tls, &HttpOptions::default(), &ConnectionCounter::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cacert"), "{e}");
    }

    #[test]
    fn precedence_and_pool_key() {
        let a = TlsSettings {
            secret_ca: Some(b"A".to_vec()),
            manager_ca: Some(Arc::new(b"B".to_vec())),
            verify: true,
        };
        assert_eq!(a.effective_ca(), Some(&b"A"[..]));
        let b = TlsSettings {
            secret_ca: None,
            ..a.clone()
        };
        assert_eq!(b.effective_ca(), Some(&b"B"[..]));
        assert_ne!(a.pool_key(), b.pool_key());
        let c = TlsSettings {
            verify: false,
            ..b.clone()
        };
        assert_ne!(b.pool_key(), c.pool_key());
    }
}

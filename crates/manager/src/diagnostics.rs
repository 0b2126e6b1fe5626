//! The probe server (`/healthz`, `/readyz` on `--health-addr`) and the metrics server
//! (`/metrics` on `--diagnostics-address`, HTTPS with a self-signed certificate unless
//! `--insecure-diagnostics`).
//!
//! Upstream's diagnostics endpoint authenticates scrapers with TokenReview/SubjectAccessReview;
//! capo only encrypts (see docs/manager.md), so keep the port off the network or use
//! `--insecure-diagnostics` behind a NetworkPolicy.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use capo_tls::rustls::pki_types::CertificateDer;
use capo_tls::tokio_rustls::TlsAcceptor;
use capo_tls::{Ca, ServeOptions, ServerTls};
use prometheus_client::registry::Registry;

use crate::error::Result;

/// Content type of the OpenMetrics text format `prometheus_client` writes.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// How the probe and metrics servers serve: shutdown waits up to 5 s for a probe or scrape in
/// flight (both are short).
pub const SERVE: ServeOptions = ServeOptions {
    drain: Duration::from_secs(5),
    ..ServeOptions::new("diagnostics")
};

/// Readiness shared between the manager and the probe server.
#[derive(Debug, Default, Clone)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// Mark ready (or not).
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }

    /// Whether ready.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// `/healthz` (always ok while the process serves) and `/readyz`.
pub fn probe_router(ready: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/healthz/ping", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready)
}

async fn readyz(State(ready): State<Readiness>) -> impl IntoResponse {
    if ready.get() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    }
}

/// `/metrics` in the OpenMetrics text format.
pub fn metrics_router(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(registry)
}

async fn metrics(State(registry): State<Arc<Registry>>) -> impl IntoResponse {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &registry) {
        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS)], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// A TLS acceptor with a fresh certificate (ECDSA P-256) for `localhost` and the bound IP,
/// signed by a fresh CA, offering the versions and suites of `tls`; and that CA's certificate
/// (so a client, e.g. a test, can trust it).
pub fn self_signed_acceptor(
    addr: SocketAddr,
    tls: &ServerTls,
) -> Result<(TlsAcceptor, CertificateDer<'static>)> {
    let ca = Ca::new("capo-controller-manager diagnostics CA")?;
    let ip = addr.ip().to_string();
    let leaf = ca.issue("capo-controller-manager", &["localhost", &ip])?;
    Ok((leaf.acceptor_with(capo_tls::ALPN_H2_HTTP1, tls)?, ca.der()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use capo_tls::rustls;
    use capo_tls::rustls::pki_types::ServerName;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn metrics_over_https_with_the_self_signed_certificate() {
        let mut registry = Registry::default();
        crate::process_metrics::register(&mut registry);
        let listener = capo_tls::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let (acceptor, cert) = self_signed_acceptor(addr, &ServerTls::default()).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = metrics_router(Arc::new(registry));
        let stopped = async move {
            let _ = rx.await;
        };
        let server = tokio::spawn(capo_tls::serve(
            listener,
            Some(acceptor),
            app,
            stopped,
            SERVE,
        ));

        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = capo_tls::tokio_rustls::TlsConnector::from(Arc::new(client));
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let mut tls = connector.connect(name, tcp).await.unwrap();
        tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut body = String::new();
        let _ = tls.read_to_string(&mut body).await;
        assert!(body.starts_with("HTTP/1.1 200"), "{body}");
        assert!(body.contains("process_start_time_seconds"), "{body}");
        assert!(body.contains(OPENMETRICS), "{body}");

        let _ = tx.send(());
        server.await.unwrap();
    }

    /// Whether a client offering `versions` and `suites` completes a handshake with a metrics
    /// server started with `policy`.
    async fn handshake(
        policy: &ServerTls,
        versions: &[&'static rustls::SupportedProtocolVersion],
        suites: &[rustls::CipherSuite],
    ) -> std::result::Result<(), String> {
        let listener = capo_tls::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let (acceptor, cert) = self_signed_acceptor(addr, policy).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = metrics_router(Arc::new(Registry::default()));
        let stopped = async move {
            let _ = rx.await;
        };
        let server = tokio::spawn(capo_tls::serve(
            listener,
            Some(acceptor),
            app,
            stopped,
            SERVE,
        ));
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let mut provider = rustls::crypto::ring::default_provider();
        provider
            .cipher_suites
            .retain(|s| suites.is_empty() || suites.contains(&s.suite()));
        let client = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = capo_tls::tokio_rustls::TlsConnector::from(Arc::new(client));
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let outcome = connector
            .connect(name, tcp)
            .await
            .map(drop)
            .map_err(|e| e.to_string());
        let _ = tx.send(());
        server.await.unwrap();
        outcome
    }

    fn policy(args: &[&str]) -> ServerTls {
        let mut all = vec!["capo-controller-manager"];
        all.extend_from_slice(args);
        crate::Flags::parse_go_style(all)
            .unwrap()
            .server_tls()
            .unwrap()
    }

    #[tokio::test]
    async fn tls_min_version_13_refuses_a_tls12_client() {
        use rustls::version::{TLS12, TLS13};
        let default = policy(&[]);
        assert_eq!(handshake(&default, &[&TLS12], &[]).await, Ok(()));
        assert_eq!(handshake(&default, &[&TLS13], &[]).await, Ok(()));
        let min13 = policy(&["--tls-min-version=VersionTLS13"]);
        let refused = handshake(&min13, &[&TLS12], &[]).await.unwrap_err();
        assert!(
            refused.contains("Protocol") || refused.contains("alert"),
            "{refused}"
        );
        assert_eq!(handshake(&min13, &[&TLS13], &[]).await, Ok(()));
        // VersionTLS10 means TLS 1.2 here: a TLS 1.2 client is served.
        let min10 = policy(&["--tls-min-version=VersionTLS10"]);
        assert_eq!(handshake(&min10, &[&TLS12], &[]).await, Ok(()));
    }

    #[tokio::test]
    async fn tls_cipher_suites_narrow_tls12_only() {
        use rustls::CipherSuite as S;
        use rustls::version::{TLS12, TLS13};
        // The generated certificate is ECDSA: ECDHE_ECDSA suites are the ones that matter.
        let only = policy(&["--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]);
        let listed = [S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256];
        let other = [S::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384];
        assert_eq!(handshake(&only, &[&TLS12], &listed).await, Ok(()));
        assert!(handshake(&only, &[&TLS12], &other).await.is_err());
        // TLS 1.3 suites are not narrowed, as in Go.
        let tls13 = [S::TLS13_CHACHA20_POLY1305_SHA256];
        assert_eq!(handshake(&only, &[&TLS13], &tls13).await, Ok(()));
    }
}

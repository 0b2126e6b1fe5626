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
use capo_tls::{Ca, ServeOptions};
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

/// A TLS acceptor with a fresh certificate for `localhost` and the bound IP, signed by a fresh
/// CA, and that CA's certificate (so a client, e.g. a test, can trust it).
pub fn self_signed_acceptor(addr: SocketAddr) -> Result<(TlsAcceptor, CertificateDer<'static>)> {
    let ca = Ca::new("capo-controller-manager diagnostics CA")?;
    let ip = addr.ip().to_string();
    let leaf = ca.issue("capo-controller-manager", &["localhost", &ip])?;
    Ok((leaf.acceptor(capo_tls::ALPN_H2_HTTP1)?, ca.der()))
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
        let (acceptor, cert) = self_signed_acceptor(addr).unwrap();
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
}

//! The probe server (`/healthz`, `/readyz` on `--health-addr`) and the metrics server
//! (`/metrics` on `--diagnostics-address`, HTTPS with a self-signed certificate unless
//! `--insecure-diagnostics`).
//!
//! Upstream's diagnostics endpoint authenticates scrapers with TokenReview/SubjectAccessReview;
//! capo only encrypts (see docs/manager.md), so keep the port off the network or use
//! `--insecure-diagnostics` behind a NetworkPolicy.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};

/// Content type of the OpenMetrics text format `prometheus_client` writes.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// A scraper that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// Bind `addr` (so a port conflict fails the start, not a background task).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })
}

/// Serve `app` over plain HTTP until `shutdown`.
pub async fn serve_http(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        tracing::error!(error = %e, "diagnostics server failed");
    }
}

/// A TLS acceptor with a fresh self-signed certificate for `localhost` and the bound IP, and
/// that certificate (so a client, e.g. a test, can trust it).
pub fn self_signed_acceptor(
    addr: SocketAddr,
) -> Result<(TlsAcceptor, rustls_pki_types::CertificateDer<'static>)> {
    let names = vec!["localhost".to_owned(), addr.ip().to_string()];
    let cert = rcgen::generate_simple_self_signed(names).map_err(|e| Error::Tls(e.to_string()))?;
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let der = cert.cert.der().clone();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(vec![der.clone()], key)
        .map_err(|e| Error::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), der))
}

/// Serve `app` over HTTPS until `shutdown` (open scrapes are dropped at shutdown: a scrape
/// is short and Prometheus retries).
pub async fn serve_https(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a diagnostics connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                _ => {
                    tracing::debug!(%peer, "diagnostics TLS handshake failed");
                    return;
                }
            };
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(e) = builder
                .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app))
                .await
            {
                tracing::debug!(%peer, error = %e, "diagnostics connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn metrics_over_https_with_the_self_signed_certificate() {
        let mut registry = Registry::default();
        crate::process_metrics::register(&mut registry);
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (acceptor, cert) = self_signed_acceptor(addr).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = metrics_router(Arc::new(registry));
        let server = tokio::spawn(serve_https(listener, acceptor, app, async move {
            let _ = rx.await;
        }));

        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
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

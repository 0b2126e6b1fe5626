//! The HTTPS server: [`capo_tls::serve`] with the [`router`] and the reloading certificate of
//! the cert directory; shutdown lets in-flight reviews finish.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::post;
use capo_tls::tokio_rustls::TlsAcceptor;
use capo_tls::{CertDir, Error, Result, ServeOptions, ServerTls};
use tokio::net::TcpListener;

use crate::conversion::{
    self, CONVERSION_PATH, CONVERSION_V1, CONVERSION_V1BETA1, ConversionReview,
};
use crate::kinds::{WEBHOOKS, Webhook};
use crate::metrics::ConversionMetrics;
use crate::review::{ADMISSION_V1, ADMISSION_V1BETA1, AdmissionReview};

/// Default webhook port (controller-runtime's and upstream's `--webhook-port`).
pub const DEFAULT_PORT: u16 = 9443;
/// Default certificate directory (controller-runtime's and upstream's `--webhook-cert-dir`).
pub const DEFAULT_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

/// Largest review accepted: an update carries two objects of up to ~1.5 MiB each (etcd's
/// request limit), plus the review's own fields.
const MAX_REVIEW_BYTES: usize = 8 << 20;
/// A client that has not sent a request's headers within 10 s is dropped; shutdown waits up to
/// 10 s for in-flight reviews.
const SERVE: ServeOptions = ServeOptions {
    header_timeout: Some(Duration::from_secs(10)),
    drain: Duration::from_secs(10),
    ..ServeOptions::new("webhook")
};

/// Where the webhook server listens and where it finds its certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookServerConfig {
    /// Listen address (tests: `127.0.0.1:0`).
    pub addr: SocketAddr,
    /// Directory holding `tls.crt` and `tls.key`.
    pub cert_dir: PathBuf,
    /// How often the certificate files are checked for changes.
    pub reload_interval: Duration,
}

impl Default for WebhookServerConfig {
    /// `0.0.0.0:9443`, `/tmp/k8s-webhook-server/serving-certs`, checked every 10 s.
    fn default() -> Self {
        Self {
            addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, DEFAULT_PORT)),
            cert_dir: PathBuf::from(DEFAULT_CERT_DIR),
            reload_interval: Duration::from_secs(10),
        }
    }
}

/// The webhooks' HTTP application: `POST <path>` with an `AdmissionReview` per [`WEBHOOKS`],
/// and `POST /convert` with a `ConversionReview`; conversions are counted nowhere.
pub fn router() -> Router {
    router_with(ConversionMetrics::default())
}

/// [`router`], counting conversions in `metrics`.
pub fn router_with(metrics: ConversionMetrics) -> Router {
    let mut router = Router::new().route(
        CONVERSION_PATH,
        post(move |body: Bytes| async move { handle_conversion(&body, &metrics) }),
    );
    for hook in &WEBHOOKS {
        router = router.route(
            hook.path,
            post(move |body: Bytes| async move { handle(hook, &body) }),
        );
    }
    router.layer(DefaultBodyLimit::max(MAX_REVIEW_BYTES))
}

fn handle(hook: &'static Webhook, body: &[u8]) -> Response {
    let review: AdmissionReview = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(e) => {
            let message = format!("{}: body is not an AdmissionReview: {e}", hook.path);
            return (StatusCode::BAD_REQUEST, message).into_response();
        }
    };
    if review.api_version != ADMISSION_V1 && review.api_version != ADMISSION_V1BETA1 {
        let message = format!(
            "unsupported AdmissionReview version {:?}; expected {ADMISSION_V1} or {ADMISSION_V1BETA1}",
            review.api_version
        );
        return (StatusCode::BAD_REQUEST, message).into_response();
    }
    let Some(request) = review.request else {
        return (StatusCode::BAD_REQUEST, "AdmissionReview without a request").into_response();
    };
    let response = hook.review(&request);
    tracing::debug!(
        webhook = hook.name,
        operation = %request.operation,
        namespace = %request.namespace,
        name = %request.name,
        allowed = response.allowed,
        "admission review"
    );
    Json(AdmissionReview {
        api_version: review.api_version,
        kind: "AdmissionReview".to_owned(),
        request: None,
        response: Some(response),
    })
    .into_response()
}

fn handle_conversion(body: &[u8], metrics: &ConversionMetrics) -> Response {
    let started = Instant::now();
    let review: ConversionReview = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(e) => {
            let message = format!("{CONVERSION_PATH}: body is not a ConversionReview: {e}");
            return (StatusCode::BAD_REQUEST, message).into_response();
        }
    };
    if review.api_version != CONVERSION_V1 && review.api_version != CONVERSION_V1BETA1 {
        let message = format!(
            "unsupported ConversionReview version {:?}; expected {CONVERSION_V1} or {CONVERSION_V1BETA1}",
            review.api_version
        );
        return (StatusCode::BAD_REQUEST, message).into_response();
    }
    let Some(request) = review.request else {
        return (
            StatusCode::BAD_REQUEST,
            "ConversionReview without a request",
        )
            .into_response();
    };
    let objects = request.objects.len();
    let desired = request.desired_api_version.clone();
    let response = conversion::review(request);
    let success = response.result.status == "Success";
    metrics.record(&desired, success, objects, started.elapsed());
    if success {
        tracing::debug!(objects, desired = %desired, "conversion review");
    } else {
        // The message names the object and the field; these four kinds hold no secrets
        // (credentials and user data live in Secrets they only name).
        tracing::info!(objects, desired = %desired, reason = %response.result.message,
            "conversion refused");
    }
    Json(ConversionReview {
        api_version: review.api_version,
        kind: "ConversionReview".to_owned(),
        request: None,
        response: Some(response),
    })
    .into_response()
}

/// A bound webhook server, not yet serving; [`WebhookServer::local_addr`] tells the port.
pub struct WebhookServer {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    cert: Arc<CertDir>,
    reload_interval: Duration,
    metrics: ConversionMetrics,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("listener", &self.listener)
            .field("reload_interval", &self.reload_interval)
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// Loads the certificate and binds the listen address (TLS 1.2 and 1.3, every suite).
    pub async fn bind(config: &WebhookServerConfig) -> Result<Self> {
        Self::bind_with(config, &ServerTls::default()).await
    }

    /// [`WebhookServer::bind`], offering the TLS versions and TLS 1.2 suites of `tls` (the
    /// manager's `--tls-min-version` and `--tls-cipher-suites`).
    pub async fn bind_with(config: &WebhookServerConfig, tls: &ServerTls) -> Result<Self> {
        let cert = Arc::new(CertDir::load(&config.cert_dir).await?);
        Ok(Self {
            acceptor: capo_tls::acceptor_with(cert.clone(), capo_tls::ALPN_H2_HTTP1, tls)?,
            listener: capo_tls::bind(config.addr).await?,
            cert,
            reload_interval: config.reload_interval,
            metrics: ConversionMetrics::default(),
        })
    }

    /// Counts the conversions this server answers in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: ConversionMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The address actually bound (the port chosen for `:0`).
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener.local_addr().map_err(Error::LocalAddr)
    }

    /// Serves until `shutdown` completes, then waits (up to 10 s) for in-flight reviews.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<()> {
        let reload = tokio::spawn(self.cert.clone().watch(self.reload_interval));
        let tls = Some(self.acceptor);
        let app = router_with(self.metrics);
        capo_tls::serve(self.listener, tls, app, shutdown, SERVE).await;
        reload.abort();
        Ok(())
    }
}

/// Loads the certificate, listens on `config.addr` and serves the webhooks until `shutdown`
/// completes.
pub async fn serve(config: WebhookServerConfig, shutdown: impl Future<Output = ()>) -> Result<()> {
    WebhookServer::bind(&config).await?.run(shutdown).await
}

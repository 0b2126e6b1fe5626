//! The one accept loop: plain HTTP or HTTPS, HTTP/1.1 and HTTP/2, one task per connection.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use rustls::server::ResolvesServerCert;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};
use crate::policy::ServerTls;

/// ALPN offering HTTP/2 and HTTP/1.1 (what the API server and Prometheus speak).
pub const ALPN_H2_HTTP1: &[&[u8]] = &[b"h2", b"http/1.1"];
/// ALPN offering HTTP/1.1 only.
pub const ALPN_HTTP1: &[&[u8]] = &[b"http/1.1"];

/// How a server treats its connections.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// The server's name in log messages.
    pub name: &'static str,
    /// A client that has not finished its TLS handshake by then is dropped.
    pub handshake_timeout: Duration,
    /// An HTTP/1 client must send a request's headers within this, idle keep-alive connections
    /// included; `None` where clients pool connections and must not see them closed under them.
    pub header_timeout: Option<Duration>,
    /// How long shutdown waits for in-flight requests; connections still open then are dropped.
    /// Zero drops them at once.
    pub drain: Duration,
}

impl ServeOptions {
    /// A 10 s handshake timeout, no header timeout, no drain.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            handshake_timeout: Duration::from_secs(10),
            header_timeout: None,
            drain: Duration::ZERO,
        }
    }
}

/// A TLS acceptor for TLS 1.2 and 1.3 on ring, presenting what `certs` resolves and offering
/// `alpn`.
pub fn acceptor(certs: Arc<dyn ResolvesServerCert>, alpn: &[&[u8]]) -> Result<TlsAcceptor> {
    acceptor_with(certs, alpn, &ServerTls::default())
}

/// [`acceptor`], offering the versions and TLS 1.2 suites of `policy`.
pub fn acceptor_with(
    certs: Arc<dyn ResolvesServerCert>,
    alpn: &[&[u8]],
    policy: &ServerTls,
) -> Result<TlsAcceptor> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(policy.provider()))
        .with_protocol_versions(policy.versions())?
        .with_no_client_auth()
        .with_cert_resolver(certs);
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Binds `addr`, so a port conflict fails the caller's start rather than a background task.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })
}

/// Serves `app` on `listener` (over TLS when `tls` is given) until `shutdown` completes, then
/// lets in-flight requests finish for up to `options.drain`.
///
/// A failed handshake or connection is logged at debug level and ends only that connection;
/// a failed accept (out of file descriptors, say) is logged and retried after a pause.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    shutdown: impl Future,
    options: ServeOptions,
) {
    let name = options.name;
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(server = name, %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (tls, app, watcher) = (tls.clone(), app.clone(), graceful.watcher());
        connections.spawn(async move {
            if let Err(err) = connection(stream, tls, app, watcher, options).await {
                tracing::debug!(server = name, %peer, %err, "connection ended with an error");
            }
        });
        // Reap finished connections, so the set does not grow over the server's life.
        while connections.try_join_next().is_some() {}
    }
    let drain = tokio::time::timeout(options.drain, graceful.shutdown());
    if !options.drain.is_zero() && drain.await.is_err() {
        tracing::warn!(server = name, "drain timed out; dropping connections");
    }
    connections.abort_all();
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Handshake (with TLS), then HTTP/1.1 or HTTP/2 on one connection, tracked by the shutdown
/// watcher.
async fn connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    app: Router,
    watcher: Watcher,
    options: ServeOptions,
) -> Result<(), BoxError> {
    // Requests and replies are small; waiting to coalesce them only adds latency.
    let _ = stream.set_nodelay(true);
    let mut builder = Builder::new(TokioExecutor::new());
    // Without a timer hyper enforces no timeouts; with it, a client that opens a request and
    // never finishes its headers is dropped instead of holding the connection forever.
    if let Some(limit) = options.header_timeout {
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limit);
        builder.http2().timer(TokioTimer::new());
    }
    let service = TowerToHyperService::new(app);
    let Some(acceptor) = tls else {
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        return watcher.watch(conn.into_owned()).await;
    };
    let stream = tokio::time::timeout(options.handshake_timeout, acceptor.accept(stream))
        .await
        .map_err(|_| "TLS handshake timed out")??;
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    watcher.watch(conn.into_owned()).await
}

//! The accept loop end to end on 127.0.0.1: HTTPS with a certificate from a fresh CA, the
//! handshake timeout, draining at shutdown and dropping without a drain.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use capo_tls::rustls::pki_types::ServerName;
use capo_tls::rustls::{self, RootCertStore};
use capo_tls::tokio_rustls::TlsConnector;
use capo_tls::{ALPN_H2_HTTP1, Ca, LOOPBACK, ServeOptions};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

fn app() -> Router {
    Router::new()
        .route("/", get(|| async { "ok" }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                "slow"
            }),
        )
        .route("/never", get(std::future::pending::<&'static str>))
}

/// Serves [`app`] on a free port; the sender stops it.
async fn start(
    tls: Option<capo_tls::tokio_rustls::TlsAcceptor>,
    options: ServeOptions,
) -> (SocketAddr, oneshot::Sender<()>, JoinHandle<()>) {
    let listener = capo_tls::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(capo_tls::serve(listener, tls, app(), stopped, options));
    (addr, stop, task)
}

/// Sends `GET path` and returns everything the server answers until it closes.
async fn get_path(mut stream: impl AsyncRead + AsyncWrite + Unpin, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response
}

async fn within<T>(limit: Duration, what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, f)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {limit:?}"))
}

#[tokio::test]
async fn https_for_the_loopback_names_with_the_offered_alpn() {
    capo_tls::ensure_crypto_provider();
    let ca = Ca::new("test CA").unwrap();
    let leaf = ca.issue("test", LOOPBACK).unwrap();
    let acceptor = leaf.acceptor(ALPN_H2_HTTP1).unwrap();
    let (addr, stop, task) = start(Some(acceptor), ServeOptions::new("test")).await;

    let mut roots = RootCertStore::empty();
    roots.add(ca.der()).unwrap();
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = TlsConnector::from(Arc::new(config));
    for name in ["localhost", "127.0.0.1"] {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let server_name = ServerName::try_from(name).unwrap();
        let tls = connector.connect(server_name, tcp).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        let chain = tls.get_ref().1.peer_certificates().unwrap();
        assert_eq!(chain[0].as_ref(), leaf.cert_der(), "{name}");
        let response = get_path(tls, "/").await;
        assert!(response.starts_with("HTTP/1.1 200"), "{name}: {response}");
    }

    stop.send(()).unwrap();
    within(Duration::from_secs(5), "shutdown", task)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_client_that_never_completes_the_handshake_is_dropped() {
    let leaf = Ca::new("test CA").unwrap().issue("test", LOOPBACK).unwrap();
    let options = ServeOptions {
        handshake_timeout: Duration::from_millis(200),
        ..ServeOptions::new("test")
    };
    let (addr, _stop, _task) = start(Some(leaf.acceptor(ALPN_H2_HTTP1).unwrap()), options).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut buf = Vec::new();
    let read = within(
        Duration::from_secs(5),
        "the drop",
        tcp.read_to_end(&mut buf),
    )
    .await;
    assert!(read.is_err() || buf.is_empty(), "{read:?} {buf:?}");
}

#[tokio::test]
async fn shutdown_lets_a_request_in_flight_finish() {
    let options = ServeOptions {
        drain: Duration::from_secs(5),
        ..ServeOptions::new("test")
    };
    let (addr, stop, task) = start(None, options).await;
    let tcp = TcpStream::connect(addr).await.unwrap();
    let request = tokio::spawn(get_path(tcp, "/slow"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    let response = within(Duration::from_secs(5), "the slow request", request)
        .await
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("slow"), "{response}");
    within(Duration::from_secs(5), "shutdown", task)
        .await
        .unwrap();
}

#[tokio::test]
async fn without_a_drain_shutdown_drops_open_connections() {
    let (addr, stop, task) = start(None, ServeOptions::new("test")).await;
    let tcp = TcpStream::connect(addr).await.unwrap();
    let request = tokio::spawn(get_path(tcp, "/never"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let begin = Instant::now();
    stop.send(()).unwrap();
    within(Duration::from_secs(2), "shutdown", task)
        .await
        .unwrap();
    let response = within(Duration::from_secs(2), "the drop", request)
        .await
        .unwrap();
    assert!(response.is_empty(), "{response}");
    assert!(begin.elapsed() < Duration::from_secs(2));
}

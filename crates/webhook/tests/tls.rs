//! The HTTPS server's certificate handling: serving, rotation, refusing a missing pair,
//! graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capo_tls::rustls::pki_types::pem::PemObject;
use capo_tls::rustls::pki_types::{CertificateDer, ServerName};
use capo_tls::rustls::{self, RootCertStore};
use capo_tls::tokio_rustls::{self, TlsConnector};
use capo_webhook::{Error, KEY_FILE, WebhookServer, WebhookServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::Pki;

/// A TLS connection to `addr` trusting only the test CA.
async fn connect(addr: SocketAddr, ca_pem: &str) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::IpAddress(Ipv4Addr::LOCALHOST.into());
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap()
}

/// The DER of the certificate the server at `addr` presents, verified against the CA.
async fn peer_cert(addr: SocketAddr, ca_pem: &str) -> Vec<u8> {
    let tls = connect(addr, ca_pem).await;
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

fn config(dir: &std::path::Path) -> WebhookServerConfig {
    WebhookServerConfig {
        addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        cert_dir: dir.to_path_buf(),
        reload_interval: Duration::from_millis(50),
    }
}

#[tokio::test]
async fn serves_a_rotated_certificate_and_ignores_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let first = pki.write_serving(dir.path(), "first");
    let server = WebhookServer::bind(&config(dir.path())).await.unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    assert_eq!(peer_cert(addr, &pki.ca_pem).await, first);

    let second = pki.write_serving(dir.path(), "second");
    let deadline = Instant::now() + Duration::from_secs(10);
    while peer_cert(addr, &pki.ca_pem).await != second {
        assert!(Instant::now() < deadline, "rotated certificate not served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A key that does not parse (a half-written rotation) keeps the last good pair in use.
    std::fs::write(dir.path().join(KEY_FILE), "not a key").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(peer_cert(addr, &pki.ca_pem).await, second);

    stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(15), task).await;
    assert!(matches!(result, Ok(Ok(Ok(())))), "{result:?}");
}

#[tokio::test]
async fn missing_certificate_fails_at_start_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = WebhookServer::bind(&config(dir.path())).await.err();
    match err {
        Some(Error::ReadFile { path, .. }) => assert!(path.ends_with("tls.crt"), "{path:?}"),
        other => panic!("expected a ReadFile error, got {other:?}"),
    }
}

#[tokio::test]
async fn key_not_matching_the_certificate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    pki.write_serving(dir.path(), "a");
    let (_, other_key, _) = pki.serving("b");
    std::fs::write(dir.path().join(KEY_FILE), other_key).unwrap();
    let err = WebhookServer::bind(&config(dir.path())).await.err();
    assert!(matches!(err, Some(Error::Tls { .. })), "{err:?}");
}

#[tokio::test]
async fn answers_an_admission_review_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    pki.write_serving(dir.path(), "webhook");
    let addr = common::spawn_server(dir.path(), Duration::from_secs(10));
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1beta1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "infrastructure.cluster.x-k8s.io", "version": "v1beta1", "kind": "OpenStackMachine"},
            "operation": "CREATE",
            "name": "m",
            "object": {
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "OpenStackMachine",
                "metadata": {"name": "m"},
                "spec": {"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}}}
            }
        }
    })
    .to_string();
    let hook = capo_webhook::WEBHOOKS
        .iter()
        .find(|h| h.kind == "OpenStackMachine");
    let path = hook.unwrap().path;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{review}",
        review.len()
    );
    let mut tls = connect(addr, &pki.ca_pem).await;
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let answer: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(answer["response"]["uid"], "u-1");
    assert_eq!(answer["response"]["allowed"], true);
}

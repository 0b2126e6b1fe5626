//! The HTTPS server's certificate handling: serving, rotation, refusing a missing pair,
//! graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capo_webhook::{Error, KEY_FILE, WebhookServer, WebhookServerConfig};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use common::Pki;

/// The DER of the certificate the server at `addr` presents, verified against the CA.
async fn peer_cert(addr: SocketAddr, ca_pem: &str) -> Vec<u8> {
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
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
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

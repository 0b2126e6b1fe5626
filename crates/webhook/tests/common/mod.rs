//! Test helpers: a throw-away CA with serving certificates for 127.0.0.1, and a webhook server
//! running on its own thread for the whole test binary.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod apiserver;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use capo_tls::{Ca, LOOPBACK};
use capo_webhook::{CERT_FILE, KEY_FILE, WebhookServer, WebhookServerConfig};

/// A CA that signs serving certificates.
pub struct Pki {
    /// The CA certificate (PEM), for clients' trust (the webhook configuration's caBundle).
    pub ca_pem: String,
    ca: Ca,
}

impl Pki {
    /// A new CA.
    pub fn new() -> Self {
        let ca = Ca::new("capo-webhook-test-ca").unwrap();
        Self {
            ca_pem: ca.pem(),
            ca,
        }
    }

    /// A serving certificate for 127.0.0.1 and `localhost`: `(cert PEM, key PEM, cert DER)`.
    pub fn serving(&self, common_name: &str) -> (String, String, Vec<u8>) {
        let leaf = self.ca.issue(common_name, LOOPBACK).unwrap();
        (leaf.cert_pem(), leaf.key_pem(), leaf.cert_der().to_vec())
    }

    /// Writes a fresh serving pair into `dir`; returns the certificate's DER.
    pub fn write_serving(&self, dir: &Path, common_name: &str) -> Vec<u8> {
        let (cert, key, der) = self.serving(common_name);
        std::fs::write(dir.join(CERT_FILE), cert).unwrap();
        std::fs::write(dir.join(KEY_FILE), key).unwrap();
        der
    }
}

/// Starts a webhook server on 127.0.0.1 on a thread of its own (so it outlives each test's
/// runtime) and returns its address; it stops when the test process exits.
pub fn spawn_server(cert_dir: &Path, reload_interval: Duration) -> SocketAddr {
    let config = WebhookServerConfig {
        addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        cert_dir: cert_dir.to_path_buf(),
        reload_interval,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let server = WebhookServer::bind(&config).await.unwrap();
            tx.send(server.local_addr().unwrap()).unwrap();
            server.run(std::future::pending()).await.unwrap();
        });
    });
    rx.recv_timeout(Duration::from_secs(30)).unwrap()
}

//! Self-signed CA and server certificate generated at start, for the optional HTTPS listener.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::{Error, Result};

/// TLS material: the acceptor and the CA certificate clients must trust.
pub struct Tls {
    /// Acceptor for incoming connections.
    pub acceptor: tokio_rustls::TlsAcceptor,
    /// PEM of the generated CA.
    pub ca_pem: String,
}

fn tls_err(e: impl std::fmt::Display) -> Error {
    Error::Tls(e.to_string())
}

/// Generate a CA and a certificate for `localhost` and `127.0.0.1` signed by it.
pub fn generate() -> Result<Tls> {
    let ca_key = KeyPair::generate().map_err(tls_err)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "capo-sim CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).map_err(tls_err)?;
    let leaf_key = KeyPair::generate().map_err(tls_err)?;
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).map_err(tls_err)?;
    leaf.subject_alt_names
        .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    leaf.distinguished_name.push(DnType::CommonName, "capo-sim");
    let leaf_cert = leaf
        .signed_by(&leaf_key, &ca_cert, &ca_key)
        .map_err(tls_err)?;
    let chain = vec![
        CertificateDer::from(leaf_cert.der().to_vec()),
        CertificateDer::from(ca_cert.der().to_vec()),
    ];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_err)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(tls_err)?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(cfg)),
        ca_pem: ca_cert.pem(),
    })
}

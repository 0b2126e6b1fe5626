//! Throw-away certificates: a CA made at start and the serving certificates it signs, for
//! servers whose clients are given the CA (tests, capo-sim, the manager's metrics endpoint).

use std::sync::Arc;

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use tokio_rustls::TlsAcceptor;

use crate::error::Result;
use crate::policy::ServerTls;

/// The names a server on the loopback interface is reached by.
pub const LOOPBACK: &[&str] = &["localhost", "127.0.0.1"];

/// A self-signed certificate authority and its key, kept in memory (deliberately not `Debug`).
pub struct Ca {
    cert: Certificate,
    key: KeyPair,
}

impl Ca {
    /// A new CA named `common_name`.
    pub fn new(common_name: &str) -> Result<Self> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key)?;
        Ok(Self { cert, key })
    }

    /// The CA certificate (PEM): what clients trust, e.g. a webhook configuration's `caBundle`.
    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// The CA certificate (DER).
    pub fn der(&self) -> CertificateDer<'static> {
        self.cert.der().clone()
    }

    /// A serving certificate for `names` (DNS names, or IP addresses such as `127.0.0.1`, which
    /// become IP subject alternative names) signed by this CA.
    pub fn issue(&self, common_name: &str, names: &[&str]) -> Result<Leaf> {
        let key = KeyPair::generate()?;
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        Ok(Leaf {
            cert,
            key,
            ca: self.der(),
        })
    }
}

/// A serving certificate, its private key and the CA that signed it (not `Debug` either).
pub struct Leaf {
    cert: Certificate,
    key: KeyPair,
    ca: CertificateDer<'static>,
}

impl Leaf {
    /// The certificate (PEM), e.g. for a `tls.crt` file.
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// The certificate (DER), as a client sees it in the handshake.
    pub fn cert_der(&self) -> &[u8] {
        self.cert.der()
    }

    /// The private key (PKCS#8 PEM), e.g. for a `tls.key` file. A secret: write it to a file,
    /// never to a log.
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// A TLS acceptor serving this certificate followed by its CA's, offering `alpn`.
    pub fn acceptor(&self, alpn: &[&[u8]]) -> Result<TlsAcceptor> {
        self.acceptor_with(alpn, &ServerTls::default())
    }

    /// [`Leaf::acceptor`], offering the versions and TLS 1.2 suites of `policy`.
    pub fn acceptor_with(&self, alpn: &[&[u8]], policy: &ServerTls) -> Result<TlsAcceptor> {
        let chain = vec![self.cert.der().clone(), self.ca.clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.serialize_der()));
        let key = CertifiedKey::from_der(chain, key, &crate::provider())?;
        crate::acceptor_with(Arc::new(SingleCertAndKey::from(key)), alpn, policy)
    }
}

/// A fresh ECDSA P-256 signing key: `(private key PKCS#8 PEM, public key PEM)`, e.g. an API
/// server's service-account token key.
pub fn signing_key_pem() -> Result<(String, String)> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

/// Parse a PEM bundle: at least one certificate, every certificate block well-formed.
pub fn parse_pem(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("PEM does not parse: {e}"))?;
    if certs.is_empty() {
        return Err("no PEM certificate found".into());
    }
    Ok(certs)
}

//! Which TLS versions and TLS 1.2 cipher suites a server offers: the manager's
//! `--tls-min-version` and `--tls-cipher-suites`, with Go's cipher-suite names.
//!
//! rustls implements TLS 1.2 and 1.3 only, and for TLS 1.2 only ECDHE key exchange with
//! AES-GCM or ChaCha20-Poly1305. As Go's `tls.Config.CipherSuites`, a suite list restricts
//! TLS 1.2 only: TLS 1.3's suites are not configurable and all of them stay offered.

use rustls::crypto::CryptoProvider;
use rustls::{CipherSuite, SupportedCipherSuite, SupportedProtocolVersion};

/// The lowest TLS version a server accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MinVersion {
    /// TLS 1.2 and 1.3 (the default).
    #[default]
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

/// A server's TLS policy; the default offers TLS 1.2 and 1.3 with every suite rustls (ring)
/// implements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerTls {
    /// The lowest version accepted.
    pub min_version: MinVersion,
    /// The TLS 1.2 suites offered; `None`: all of them. TLS 1.3 suites are always all offered.
    pub tls12_cipher_suites: Option<Vec<CipherSuite>>,
}

impl ServerTls {
    /// The protocol versions offered.
    pub fn versions(&self) -> &'static [&'static SupportedProtocolVersion] {
        static TLS12_AND_13: [&SupportedProtocolVersion; 2] =
            [&rustls::version::TLS13, &rustls::version::TLS12];
        static TLS13_ONLY: [&SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
        match self.min_version {
            MinVersion::Tls12 => &TLS12_AND_13,
            MinVersion::Tls13 => &TLS13_ONLY,
        }
    }

    /// The ring provider with the TLS 1.2 suites narrowed to [`Self::tls12_cipher_suites`]
    /// (kept in rustls's preference order: as in Go, the list's order does not matter).
    pub fn provider(&self) -> CryptoProvider {
        let mut provider = rustls::crypto::ring::default_provider();
        if let Some(allowed) = &self.tls12_cipher_suites {
            provider.cipher_suites.retain(|s| match s {
                SupportedCipherSuite::Tls13(_) => true,
                SupportedCipherSuite::Tls12(_) => allowed.contains(&s.suite()),
            });
        }
        provider
    }
}

/// What a Go cipher-suite name (`crypto/tls`, as Kubernetes' `--tls-cipher-suites` takes
/// them) means here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoCipherSuite {
    /// A TLS 1.2 suite rustls implements.
    Tls12(CipherSuite),
    /// A TLS 1.3 suite: accepted, and without effect (Go ignores them in the list too).
    Tls13,
}

/// TLS 1.2 suites rustls implements, by Go's names (Kubernetes also accepts the two ChaCha20
/// names without `_SHA256`).
const TLS12: [(&str, CipherSuite); 8] = [
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// TLS 1.3 suites by Go's names.
const TLS13: [&str; 3] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// Suites Go implements and rustls does not (CBC, RC4 and 3DES ciphers, RSA key exchange).
const GO_ONLY: [&str; 16] = [
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
];

/// The suite Go calls `name`; the error says whether the name is one Go knows but rustls does
/// not implement, or no suite at all.
pub fn go_cipher_suite(name: &str) -> Result<GoCipherSuite, String> {
    if let Some((_, suite)) = TLS12.iter().find(|(n, _)| *n == name) {
        return Ok(GoCipherSuite::Tls12(*suite));
    }
    if TLS13.contains(&name) {
        return Ok(GoCipherSuite::Tls13);
    }
    let supported = || {
        TLS12
            .iter()
            .map(|(n, _)| *n)
            .chain(TLS13)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if GO_ONLY.contains(&name) {
        return Err(format!(
            "cipher suite {name} is not implemented by capo's TLS library (rustls offers only \
             ECDHE key exchange with AES-GCM or ChaCha20-Poly1305); supported: {}",
            supported()
        ));
    }
    Err(format!(
        "cipher suite {name} not supported or doesn't exist; supported: {}",
        supported()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tls12_name_maps_to_a_suite_ring_implements() {
        let ring = rustls::crypto::ring::default_provider();
        for (name, suite) in TLS12 {
            assert!(
                ring.cipher_suites.iter().any(|s| s.suite() == suite),
                "{name}"
            );
            assert_eq!(go_cipher_suite(name), Ok(GoCipherSuite::Tls12(suite)));
        }
        for name in TLS13 {
            assert_eq!(go_cipher_suite(name), Ok(GoCipherSuite::Tls13));
        }
        for name in GO_ONLY {
            let e = go_cipher_suite(name).unwrap_err();
            assert!(e.contains(name) && e.contains("not implemented"), "{e}");
        }
        assert!(go_cipher_suite("TLS_NOPE").is_err());
    }

    #[test]
    fn a_suite_list_narrows_tls12_only() {
        let policy = ServerTls {
            tls12_cipher_suites: Some(vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]),
            ..ServerTls::default()
        };
        let suites: Vec<_> = policy.provider().cipher_suites;
        let tls12: Vec<_> = suites
            .iter()
            .filter(|s| matches!(s, SupportedCipherSuite::Tls12(_)))
            .map(SupportedCipherSuite::suite)
            .collect();
        assert_eq!(
            tls12,
            vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
        );
        let tls13 = suites
            .iter()
            .filter(|s| matches!(s, SupportedCipherSuite::Tls13(_)))
            .count();
        assert_eq!(tls13, 3, "TLS 1.3 suites are not configurable");
        assert_eq!(ServerTls::default().versions().len(), 2);
        let only13 = ServerTls {
            min_version: MinVersion::Tls13,
            ..ServerTls::default()
        };
        assert_eq!(only13.versions(), [&rustls::version::TLS13]);
    }
}

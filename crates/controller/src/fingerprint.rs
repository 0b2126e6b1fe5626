//! Fingerprints of what a converged reconcile depended on (SHA-256 over bytes and JSON), kept
//! in the context's memo so a later reconcile can tell "nothing changed" without the cloud.

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::error::{Error, Result};

/// An incremental fingerprint.
#[derive(Default)]
pub struct Fingerprint(Sha256);

/// A finished fingerprint: the 32 bytes of the digest, kept as bytes (a hex string would be
/// twice the size plus a heap allocation, for every converged object in the memo).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest([u8; 32]);

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Fingerprint {
    /// An empty fingerprint.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add raw bytes.
    pub fn bytes(&mut self, b: impl AsRef<[u8]>) -> &mut Self {
        self.0.update(b);
        self
    }

    /// Add the JSON form of `v` (serialization failures are errors, never panics).
    pub fn json(&mut self, v: &impl Serialize) -> Result<&mut Self> {
        let bytes = serde_json::to_vec(v).map_err(|source| Error::Serialize {
            what: "fingerprint",
            source,
        })?;
        self.0.update(bytes);
        Ok(self)
    }

    /// The digest.
    pub fn finish(self) -> Digest {
        Digest(self.0.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_input_same_digest_and_order_matters() {
        let fp = |a: &str, b: u32| {
            let mut f = Fingerprint::new();
            f.bytes(a);
            f.json(&b).unwrap();
            f.finish()
        };
        assert_eq!(fp("x", 1), fp("x", 1));
        assert_ne!(fp("x", 1), fp("x", 2));
        assert_eq!(format!("{:?}", fp("x", 1)).len(), 64);
    }
}

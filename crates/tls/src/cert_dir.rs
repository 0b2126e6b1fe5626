//! A serving certificate read from `tls.crt`/`tls.key` in a directory and re-read when the files
//! change, so a certificate rotated by cert-manager is served without a restart.
//!
//! Kubelet updates a mounted Secret by swapping a symlink, which file watchers see unreliably;
//! comparing the files' bytes on a short interval is simple and always right. A pair that does
//! not load (half-written, key not matching) is ignored with a warning and the previous
//! certificate stays in use until a good pair appears.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::error::{Error, Result};

/// File name of the serving certificate chain (PEM) in the cert directory.
pub const CERT_FILE: &str = "tls.crt";
/// File name of the serving key (PEM) in the cert directory.
pub const KEY_FILE: &str = "tls.key";

/// The raw bytes of the two files, to notice changes.
#[derive(Clone, PartialEq, Eq)]
struct Pair {
    cert: Vec<u8>,
    key: Vec<u8>,
}

/// Serves the most recently loaded certificate of a directory (a rustls certificate resolver)
/// and reloads it from there ([`CertDir::watch`]).
#[derive(Debug)]
pub struct CertDir {
    dir: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    /// The files as loaded by [`CertDir::load`]: the watcher compares against them, so a
    /// rotation between loading and the watcher's start is not missed.
    loaded: Pair,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pair(<certificate and private key>)")
    }
}

impl CertDir {
    /// Loads the pair from `dir`; fails if it is missing or unusable.
    pub async fn load(dir: &Path) -> Result<Self> {
        let provider = crate::provider();
        let pair = read_pair(dir).await?;
        let key = certified_key(dir, &pair, &provider)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            provider,
            current: RwLock::new(Arc::new(key)),
            loaded: pair,
        })
    }

    /// Re-reads the files every `interval` and swaps in a changed, valid pair. Runs until the
    /// task is dropped.
    pub async fn watch(self: Arc<Self>, interval: Duration) {
        let mut last = self.loaded.clone();
        loop {
            tokio::time::sleep(interval).await;
            let pair = match read_pair(&self.dir).await {
                Ok(pair) => pair,
                Err(err) => {
                    tracing::warn!(%err, "serving certificate unreadable; keeping the previous one");
                    continue;
                }
            };
            if pair == last {
                continue;
            }
            match certified_key(&self.dir, &pair, &self.provider) {
                Ok(key) => {
                    *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(key);
                    tracing::info!(dir = %self.dir.display(), "serving certificate reloaded");
                    last = pair;
                }
                // Typically caught between writing the certificate and the key; the next
                // round sees the complete pair (`last` is not updated, so it is retried).
                Err(err) => {
                    tracing::warn!(%err, "new serving certificate not usable yet; keeping the previous one");
                }
            }
        }
    }
}

impl ResolvesServerCert for CertDir {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // A poisoned lock still holds a complete Arc (the writer only assigns it).
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }
}

async fn read_pair(dir: &Path) -> Result<Pair> {
    let read = |name: &str| {
        let path = dir.join(name);
        async move {
            tokio::fs::read(&path)
                .await
                .map_err(|source| Error::ReadFile { path, source })
        }
    };
    Ok(Pair {
        cert: read(CERT_FILE).await?,
        key: read(KEY_FILE).await?,
    })
}

fn certified_key(dir: &Path, pair: &Pair, provider: &CryptoProvider) -> Result<CertifiedKey> {
    let pem_error = |name: &str, message: String| Error::Pem {
        path: dir.join(name),
        message,
    };
    let chain = crate::parse_pem(&pair.cert).map_err(|message| pem_error(CERT_FILE, message))?;
    // The parse error is reported without the file's contents: they are a private key.
    let key = PrivateKeyDer::from_pem_slice(&pair.key)
        .map_err(|_| pem_error(KEY_FILE, "no usable private key found".to_owned()))?;
    CertifiedKey::from_der(chain, key, provider).map_err(|source| Error::Tls {
        dir: dir.to_path_buf(),
        source,
    })
}

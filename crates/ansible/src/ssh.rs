//! SSH key pairs for the `kubernetes.io/ssh-auth` Secret `<cluster>-ssh`.

use crate::Result;
use ssh_key::rand_core::OsRng;
use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey};
use std::fmt;
use zeroize::Zeroizing;

/// Key of the private key in a `kubernetes.io/ssh-auth` Secret (required by that type).
pub const SSH_AUTH_PRIVATE_KEY: &str = "ssh-privatekey";
/// Key of the public key (`authorized_keys` line) stored beside it.
pub const SSH_PUBLIC_KEY: &str = "ssh-publickey";

/// A generated key pair.
///
/// `Debug` never shows the private key; the private text is zeroed when dropped.
pub struct SshKeyPair {
    /// Unencrypted private key in OpenSSH format (`-----BEGIN OPENSSH PRIVATE KEY-----`),
    /// usable with `ssh -i`.
    pub private_openssh: Zeroizing<String>,
    /// Public key as one `authorized_keys` line: `ssh-ed25519 AAAA... <comment>`; this is what
    /// Nova's key pair import takes.
    pub public_openssh: String,
    /// `SHA256:<base64>`, as `ssh-keygen -l` prints it.
    pub fingerprint_sha256: String,
}

impl fmt::Debug for SshKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshKeyPair")
            .field("private_openssh", &"<redacted>")
            .field("public_openssh", &self.public_openssh)
            .field("fingerprint_sha256", &self.fingerprint_sha256)
            .finish()
    }
}

/// Generates an ed25519 key pair from the operating system's random source; `comment` ends
/// the public key line (for instance the cluster's namespace/name).
pub fn generate_ed25519(comment: &str) -> Result<SshKeyPair> {
    let mut key = PrivateKey::random(&mut OsRng, Algorithm::Ed25519)?;
    key.set_comment(comment);
    SshKeyPair::from_private_key(&key)
}

impl SshKeyPair {
    /// Reads back a private key stored earlier (for example from the Secret, to re-register
    /// its public key when the Nova key pair disappeared).
    pub fn from_private_openssh(text: &str) -> Result<SshKeyPair> {
        let key = PrivateKey::from_openssh(text)?;
        SshKeyPair::from_private_key(&key)
    }

    /// Reads a private key in OpenSSH format or as a PKCS#1 PEM `RSA PRIVATE KEY` (what the
    /// Ansible bootstrap provider writes into `<cluster>-ssh-auth`); the pair comes back in
    /// OpenSSH format either way.
    pub fn from_private_any(text: &str) -> Result<SshKeyPair> {
        if !text.contains("-----BEGIN RSA PRIVATE KEY-----") {
            return SshKeyPair::from_private_openssh(text);
        }
        use rsa::pkcs1::DecodeRsaPrivateKey;
        let rsa = rsa::RsaPrivateKey::from_pkcs1_pem(text)?;
        let pair = ssh_key::private::RsaKeypair::try_from(&rsa)?;
        let key = PrivateKey::new(ssh_key::private::KeypairData::Rsa(pair), "")?;
        SshKeyPair::from_private_key(&key)
    }

    fn from_private_key(key: &PrivateKey) -> Result<SshKeyPair> {
        let public = key.public_key();
        Ok(SshKeyPair {
            private_openssh: key.to_openssh(LineEnding::LF)?,
            public_openssh: public.to_openssh()?,
            fingerprint_sha256: public.fingerprint(HashAlg::Sha256).to_string(),
        })
    }
}

#[cfg(test)]
#[path = "ssh_tests.rs"]
mod tests;

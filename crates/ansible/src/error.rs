//! The crate's error type.

/// Why rendering or key generation failed.
///
/// Messages never contain key material: `ssh_key` errors describe formats, not contents.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Serializing a document to YAML failed.
    #[error("rendering {document}: {source}")]
    Render {
        /// `vars.yaml` or `inventory.yaml`.
        document: &'static str,
        /// The serializer's error.
        source: yaml_serde::Error,
    },
    /// Two hosts of the inventory would share one name (Ansible would merge them silently).
    #[error("inventory host name {0:?} is used twice")]
    DuplicateHost(String),
    /// A machine is named like the host Kubespray reserves for the bastion.
    #[error("machine name {0:?} is reserved for the bastion host of the inventory")]
    ReservedHostName(String),
    /// A value would be executed by Ansible's templating or by the jump command; the value
    /// itself is not repeated.
    #[error("{variable} {reason}")]
    UnsafeValue {
        /// Variable (or inventory field) holding the value.
        variable: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Generating, encoding or parsing an SSH key failed.
    #[error("SSH key: {0}")]
    SshKey(#[from] ssh_key::Error),
    /// A PKCS#1 PEM key that does not parse (the message never contains key material).
    #[error("SSH key: RSA PRIVATE KEY: {0}")]
    Pkcs1(#[from] rsa::pkcs1::Error),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

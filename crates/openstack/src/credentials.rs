//! Credentials from an `identityRef`, without any Kubernetes API call and without ever reading
//! environment variables (no `OS_*`, no `clouds.yaml` search path).
//!
//! The controller layer fetches the objects and hands their data in:
//! 1. [`secret_location`] says which Secret to read for an identityRef, checking an
//!    OpenStackClusterIdentity's `namespaceSelector` against the requesting namespace's labels
//!    (call it on every reconcile: labels change).
//! 2. [`Credentials::from_secret`] parses that Secret's `clouds.yaml` (required) and `cacert`
//!    (optional) keys and selects `cloudName`, applying the `region` override.
//!
//! ## namespaceSelector semantics (deliberately stricter than upstream)
//! Upstream CAPO lets every namespace use an identity whose `namespaceSelector` is nil. That turns
//! a cluster-scoped credential into one any tenant namespace can borrow, so here a nil selector is
//! **denied** by default ([`NilSelectorPolicy::Deny`]). An explicitly empty selector
//! (`namespaceSelector: {}`) matches every namespace, exactly as Kubernetes label selectors do,
//! so "allow all" stays one line of YAML away and is always a visible, deliberate choice. A manager
//! that must behave exactly like upstream can pass [`NilSelectorPolicy::AllowAll`].

pub mod clouds_yaml;
mod selector;

use std::collections::BTreeMap;
use std::fmt;

pub use clouds_yaml::{AuthMethod, AuthSection, CloudEntry, CloudsYaml, Interface, Secret};
pub use selector::{LabelSelector, LabelSelectorRequirement};

use crate::error::{Error, Result};

/// Secret key holding the clouds.yaml document (required).
pub const CLOUDS_YAML_KEY: &str = "clouds.yaml";
/// Secret key holding a PEM CA bundle (optional).
pub const CACERT_KEY: &str = "cacert";

/// An `identityRef` as found in OpenStackCluster/Machine/Server/FloatingIPPool specs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityRef {
    /// `Secret` (in the object's namespace) or `ClusterIdentity` (cluster-scoped).
    pub kind: IdentityKind,
    /// Name of the Secret or OpenStackClusterIdentity.
    pub name: String,
    /// Entry of clouds.yaml to use.
    pub cloud_name: String,
    /// Region override (wins over the entry's `region_name`).
    pub region: Option<String>,
}

/// Where an identityRef points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityKind {
    /// A Secret in the requesting object's namespace.
    Secret,
    /// A cluster-scoped OpenStackClusterIdentity.
    ClusterIdentity,
}

/// The fields of an OpenStackClusterIdentity this layer needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIdentitySpec {
    /// Namespace of the referenced Secret.
    pub secret_namespace: String,
    /// Name of the referenced Secret.
    pub secret_name: String,
    /// Which namespaces may use the identity; see [`NilSelectorPolicy`] for `None`.
    pub namespace_selector: Option<LabelSelector>,
}

/// What a nil `namespaceSelector` means (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NilSelectorPolicy {
    /// Nil selector: no namespace may use the identity (safe default).
    #[default]
    Deny,
    /// Nil selector: every namespace may (upstream CAPO behaviour).
    AllowAll,
}

/// Which Secret to read for `identity_ref`, requested from `namespace` (whose labels are
/// `namespace_labels`). `cluster_identity` must be the fetched OpenStackClusterIdentity when the
/// ref is of kind ClusterIdentity (None if it does not exist).
pub fn secret_location(
    namespace: &str,
    identity_ref: &IdentityRef,
    cluster_identity: Option<&ClusterIdentitySpec>,
    namespace_labels: &BTreeMap<String, String>,
    nil_policy: NilSelectorPolicy,
) -> Result<(String, String)> {
    match identity_ref.kind {
        IdentityKind::Secret => Ok((namespace.to_owned(), identity_ref.name.clone())),
        IdentityKind::ClusterIdentity => {
            let ci = cluster_identity.ok_or_else(|| {
                Error::Credentials(format!(
                    "OpenStackClusterIdentity {:?} not found",
                    identity_ref.name
                ))
            })?;
            let allowed = match &ci.namespace_selector {
                None => nil_policy == NilSelectorPolicy::AllowAll,
                Some(sel) => sel.matches(namespace_labels).map_err(|e| {
                    Error::Credentials(format!(
                        "OpenStackClusterIdentity {:?}: invalid namespaceSelector: {e}",
                        identity_ref.name
                    ))
                })?,
            };
            if !allowed {
                return Err(Error::IdentityNotAllowed(format!(
                    "namespace {namespace:?} is not allowed to use OpenStackClusterIdentity {:?}{}",
                    identity_ref.name,
                    if ci.namespace_selector.is_none() {
                        " (its namespaceSelector is unset; set one, or `{}` to allow all namespaces)"
                    } else {
                        ""
                    }
                )));
            }
            Ok((ci.secret_namespace.clone(), ci.secret_name.clone()))
        }
    }
}

/// Resolved credentials for one cloud entry: everything a session needs, nothing read from the
/// environment. Debug output is redacted (only names and URLs are shown).
#[derive(Clone)]
pub struct Credentials {
    /// Selected clouds.yaml entry name.
    pub cloud_name: String,
    /// The entry (secrets inside are [`Secret`]s).
    pub entry: CloudEntry,
    /// Effective region: identityRef.region, else the entry's region_name.
    pub region: Option<String>,
    /// PEM CA bundle from the Secret's `cacert` key.
    pub ca_pem: Option<Vec<u8>>,
    /// Authentication method, validated.
    pub method: AuthMethod,
    /// Endpoint interface, validated: `endpoint_type`, else `interface`, else public.
    pub interface: Interface,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("cloud_name", &self.cloud_name)
            .field("auth_url", &self.entry.auth.auth_url)
            .field("method", &self.method)
            .field("interface", &self.interface)
            .field("region", &self.region)
            .field("ca_pem", &self.ca_pem.as_ref().map(|_| "<present>"))
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Parse the Secret `secret_ns/secret_name` (keys → bytes) for the object `object`
    /// (e.g. `OpenStackCluster ns/name`, used only in error messages).
    pub fn from_secret(
        object: &str,
        secret_ns: &str,
        secret_name: &str,
        data: &BTreeMap<String, Vec<u8>>,
        cloud_name: &str,
        region_override: Option<&str>,
    ) -> Result<Self> {
        let ctx = |what: String| {
            Error::Credentials(format!(
                "{object}: Secret {secret_ns}/{secret_name}: {what}"
            ))
        };
        let raw = data
            .get(CLOUDS_YAML_KEY)
            .ok_or_else(|| ctx(format!("key {CLOUDS_YAML_KEY:?} is missing")))?;
        let text = std::str::from_utf8(raw)
            .map_err(|_| ctx(format!("key {CLOUDS_YAML_KEY:?} is not UTF-8")))?;
        // yaml_serde errors quote the offending scalar; report only the position.
        let doc: CloudsYaml = yaml_serde::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!(" at line {} column {}", l.line(), l.column()))
                .unwrap_or_default();
            ctx(format!(
                "key {CLOUDS_YAML_KEY:?} is not a valid clouds.yaml{at}"
            ))
        })?;
        let entry = doc.clouds.get(cloud_name).cloned().ok_or_else(|| {
            ctx(format!(
                "key {CLOUDS_YAML_KEY:?} has no cloud {cloud_name:?} (has: {})",
                doc.clouds.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })?;
        let method = entry.validate().map_err(|e| {
            ctx(format!(
                "key {CLOUDS_YAML_KEY:?}, cloud {cloud_name:?}: {e}"
            ))
        })?;
        let interface = entry.endpoint_interface().map_err(|e| {
            ctx(format!(
                "key {CLOUDS_YAML_KEY:?}, cloud {cloud_name:?}: {e}"
            ))
        })?;
        let ca_pem = match data.get(CACERT_KEY) {
            Some(pem) if !pem.is_empty() => {
                crate::tls::parse_pem(pem).map_err(|e| ctx(format!("key {CACERT_KEY:?}: {e}")))?;
                Some(pem.clone())
            }
            _ => None,
        };
        let region = region_override
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .or_else(|| entry.region_name.clone());
        Ok(Self {
            cloud_name: cloud_name.to_owned(),
            entry,
            region,
            ca_pem,
            method,
            interface,
        })
    }

    /// Parse a clouds.yaml text directly (tools and tests); no Secret context.
    pub fn from_clouds_yaml(
        clouds_yaml: &str,
        cloud_name: &str,
        region_override: Option<&str>,
        ca_pem: Option<&[u8]>,
    ) -> Result<Self> {
        let mut data = BTreeMap::new();
        data.insert(CLOUDS_YAML_KEY.to_owned(), clouds_yaml.as_bytes().to_vec());
        if let Some(pem) = ca_pem {
            data.insert(CACERT_KEY.to_owned(), pem.to_vec());
        }
        Self::from_secret("input", "-", "-", &data, cloud_name, region_override)
    }

    /// SHA-256 over the cloud name, the whole entry (secrets included, length-prefixed) and the
    /// effective region: equal digests mean the same credentials. It reveals no secret, and is
    /// how a caller notices that an identity Secret now holds other credentials.
    pub fn digest(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(self.cloud_name.len().to_be_bytes());
        h.update(self.cloud_name.as_bytes());
        self.entry.hash_into(&mut h);
        match &self.region {
            Some(r) => {
                h.update([1u8]);
                h.update(r.len().to_be_bytes());
                h.update(r.as_bytes());
            }
            None => h.update([0u8]),
        }
        h.finalize().into()
    }

    /// Keystone auth URL.
    pub fn auth_url(&self) -> &str {
        self.entry.auth.auth_url.as_deref().unwrap_or_default()
    }

    /// The catalog interface of every endpoint this session uses: `endpoint_type`, else
    /// `interface`, else `public` ([`CloudEntry::endpoint_interface`], checked when parsed).
    pub fn interface(&self) -> &'static str {
        self.interface.as_str()
    }
}

#[cfg(test)]
mod tests;

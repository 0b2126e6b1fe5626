//! The subset of `clouds.yaml` a controller needs, parsed without ever touching the environment
//! or the file system (the `cacert` path of an entry is parsed but never opened: in a controller
//! pod the CA comes from the Secret's `cacert` key or the manager's `--ca-certs`).

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// A secret string: Debug and Display print `<redacted>`; the value is reachable only through
/// [`Secret::expose`], so it cannot end up in a log line or error by accident.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wrap a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The secret value. Call only where it is sent to Keystone.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Top level of a clouds.yaml document.
#[derive(Debug, Clone, Deserialize)]
pub struct CloudsYaml {
    /// Cloud entries by name.
    pub clouds: BTreeMap<String, CloudEntry>,
}

/// One entry under `clouds:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CloudEntry {
    /// The `auth:` section.
    pub auth: AuthSection,
    /// `auth_type`: password, v3password, v3applicationcredential, token, v3token.
    #[serde(default)]
    pub auth_type: Option<String>,
    /// Region (overridden by identityRef.region).
    #[serde(default)]
    pub region_name: Option<String>,
    /// Endpoint interface (`public` by default); [`CloudEntry::endpoint_interface`].
    #[serde(default)]
    pub interface: Option<String>,
    /// The older name of `interface`, which upstream CAPO reads; wins when both are set.
    #[serde(default)]
    pub endpoint_type: Option<String>,
    /// `verify: false` disables certificate verification (honoured with a warning).
    #[serde(default)]
    pub verify: Option<bool>,
    /// A CA file path; parsed for compatibility but never read (see module doc).
    #[serde(default)]
    pub cacert: Option<String>,
    /// Must be 3 when set (Keystone v3 only).
    #[serde(default)]
    pub identity_api_version: Option<yaml_serde::Value>,
}

/// The `auth:` section of a cloud entry.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[allow(missing_docs)] // field names are the clouds.yaml keys
pub struct AuthSection {
    pub auth_url: Option<String>,
    pub username: Option<String>,
    pub user_id: Option<String>,
    pub password: Option<Secret>,
    pub project_name: Option<String>,
    pub project_id: Option<String>,
    pub user_domain_name: Option<String>,
    pub user_domain_id: Option<String>,
    pub project_domain_name: Option<String>,
    pub project_domain_id: Option<String>,
    pub domain_name: Option<String>,
    pub domain_id: Option<String>,
    pub application_credential_id: Option<String>,
    pub application_credential_name: Option<String>,
    pub application_credential_secret: Option<Secret>,
    pub token: Option<Secret>,
}

/// Which of the catalog's endpoints a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interface {
    /// `public` (the default).
    Public,
    /// `internal`: clouds whose API is reachable from the management cluster only inside.
    Internal,
    /// `admin`.
    Admin,
}

impl Interface {
    /// The catalog's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Interface::Public => "public",
            Interface::Internal => "internal",
            Interface::Admin => "admin",
        }
    }

    /// Parse a clouds.yaml value: the catalog names and the `...URL` forms of Keystone v2, in
    /// any case (openstacksdk's spelling and gophercloud's both).
    fn parse(value: &str) -> Option<Interface> {
        let v = value.to_ascii_lowercase();
        match v.strip_suffix("url").unwrap_or(&v) {
            "public" => Some(Interface::Public),
            "internal" => Some(Interface::Internal),
            "admin" => Some(Interface::Admin),
            _ => None,
        }
    }
}

/// Keystone v3 authentication method of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// User + password, scoped to a project.
    Password,
    /// Application credential (scope fixed by Keystone).
    ApplicationCredential,
    /// An existing token, rescoped to the project.
    Token,
}

impl CloudEntry {
    /// The authentication method: explicit `auth_type`, else inferred from the keys present.
    pub fn auth_method(&self) -> Result<AuthMethod, String> {
        match self.auth_type.as_deref() {
            Some("password" | "v3password") => Ok(AuthMethod::Password),
            Some("v3applicationcredential" | "applicationcredential") => {
                Ok(AuthMethod::ApplicationCredential)
            }
            Some("token" | "v3token") => Ok(AuthMethod::Token),
            Some(other) => Err(format!("auth_type {other:?} is not supported")),
            None if self.auth.application_credential_secret.is_some() => {
                Ok(AuthMethod::ApplicationCredential)
            }
            None if self.auth.token.is_some() => Ok(AuthMethod::Token),
            None => Ok(AuthMethod::Password),
        }
    }

    /// The endpoint interface: `endpoint_type` when set (as gophercloud's clientconfig, which
    /// upstream CAPO uses), else `interface`, else public. A value that names no interface is
    /// refused rather than read as public (upstream's silent fallback would send every request
    /// to endpoints the operator chose not to use).
    pub fn endpoint_interface(&self) -> Result<Interface, String> {
        let (key, value) = match (&self.endpoint_type, &self.interface) {
            (Some(v), _) => ("endpoint_type", v),
            (None, Some(v)) => ("interface", v),
            (None, None) => return Ok(Interface::Public),
        };
        Interface::parse(value).ok_or_else(|| {
            format!("{key} {value:?} is not an endpoint interface: use public, internal or admin")
        })
    }

    /// Check the keys the chosen method needs; the message names keys, never values.
    pub fn validate(&self) -> Result<AuthMethod, String> {
        if self.auth.auth_url.as_deref().is_none_or(str::is_empty) {
            return Err("auth.auth_url is missing".into());
        }
        if let Some(v) = &self.identity_api_version {
            let ok = match v {
                yaml_serde::Value::Number(n) => n.as_f64() == Some(3.0),
                yaml_serde::Value::String(s) => s == "3" || s == "3.0",
                _ => false,
            };
            if !ok {
                return Err("identity_api_version must be 3".into());
            }
        }
        self.endpoint_interface()?;
        let a = &self.auth;
        let method = self.auth_method()?;
        match method {
            AuthMethod::Password => {
                if a.password.is_none() {
                    return Err("auth.password is missing".into());
                }
                if a.username.is_none() && a.user_id.is_none() {
                    return Err("auth.username or auth.user_id is missing".into());
                }
                if a.user_id.is_none() && a.user_domain_name.is_none() && a.user_domain_id.is_none()
                {
                    return Err("auth.user_domain_name or auth.user_domain_id is missing".into());
                }
            }
            AuthMethod::ApplicationCredential => {
                if a.application_credential_secret.is_none() {
                    return Err("auth.application_credential_secret is missing".into());
                }
                if a.application_credential_id.is_none() && a.application_credential_name.is_none()
                {
                    return Err("auth.application_credential_id is missing".into());
                }
            }
            AuthMethod::Token => {
                if a.token.is_none() {
                    return Err("auth.token is missing".into());
                }
            }
        }
        Ok(method)
    }

    /// Feed every field, secrets included, into a hasher with length prefixes so that no two
    /// different entries produce the same byte stream ([`super::Credentials::digest`]).
    pub(crate) fn hash_into(&self, h: &mut Sha256) {
        let a = &self.auth;
        let fields: [Option<&str>; 22] = [
            a.auth_url.as_deref(),
            a.username.as_deref(),
            a.user_id.as_deref(),
            a.password.as_ref().map(Secret::expose),
            a.project_name.as_deref(),
            a.project_id.as_deref(),
            a.user_domain_name.as_deref(),
            a.user_domain_id.as_deref(),
            a.project_domain_name.as_deref(),
            a.project_domain_id.as_deref(),
            a.domain_name.as_deref(),
            a.domain_id.as_deref(),
            a.application_credential_id.as_deref(),
            a.application_credential_name.as_deref(),
            a.application_credential_secret.as_ref().map(Secret::expose),
            a.token.as_ref().map(Secret::expose),
            self.auth_type.as_deref(),
            self.region_name.as_deref(),
            self.interface.as_deref(),
            self.verify.map(|v| if v { "true" } else { "false" }),
            self.cacert.as_deref(),
            self.endpoint_type.as_deref(),
        ];
        for f in fields {
            match f {
                None => h.update([0u8]),
                Some(s) => {
                    h.update([1u8]);
                    h.update((s.len() as u64).to_be_bytes());
                    h.update(s.as_bytes());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_is_redacted() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?} {s}"), "<redacted> <redacted>");
    }

    #[test]
    fn debug_of_entry_hides_secrets() {
        let yaml = "clouds:\n  c:\n    auth:\n      auth_url: https://k/v3\n      username: u\n      password: hunter2\n      user_domain_name: Default\n";
        let c: CloudsYaml = yaml_serde::from_str(yaml).unwrap();
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("hunter2"));
        assert_eq!(c.clouds["c"].validate(), Ok(AuthMethod::Password));
    }
}

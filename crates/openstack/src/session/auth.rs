//! Keystone v3 authentication through the openstack_sdk auth plugins (password, application
//! credential, token), using the session's own HTTP client so the token request shares the
//! connection pool and is counted in the metrics.

use std::collections::HashMap;
use std::time::Instant;

use chrono::{DateTime, Utc};
use openstack_sdk_auth_core::types::{Domain, Project, ServiceEndpoints};
use openstack_sdk_auth_core::{Auth, AuthError, AuthTokenScope, OpenStackAuthType};
use secrecy::{ExposeSecret, SecretString};

use crate::credentials::{AuthMethod, Credentials};
use crate::error::{Error, ErrorKind, Result, classify};
use crate::metrics::ApiMetrics;

/// Metric label of Keystone token requests.
pub const TOKEN_LABEL: &str = "token_create";

/// A Keystone token and what came with it. Debug never prints the token.
#[derive(Clone)]
pub(crate) struct TokenState {
    pub token: SecretString,
    pub expires_at: DateTime<Utc>,
    pub issued_at: DateTime<Utc>,
    pub project_id: Option<String>,
    pub project_name: Option<String>,
    /// Name of the project's domain, from the token (clouds.yaml may not name it, e.g. with
    /// an application credential).
    pub project_domain_name: Option<String>,
    /// Keystone ID of the token's user (owner of the application credentials it creates).
    pub user_id: String,
    pub catalog: Vec<ServiceEndpoints>,
    /// Increments with every new token; lets concurrent 401s re-authenticate only once.
    pub generation: u64,
}

impl std::fmt::Debug for TokenState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenState")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .field("project_id", &self.project_id)
            .field("generation", &self.generation)
            .finish()
    }
}

impl TokenState {
    /// Still usable: renewed when less than a tenth of its life (at most 5 minutes) remains.
    pub fn is_fresh(&self, now: DateTime<Utc>) -> bool {
        let life = self.expires_at - self.issued_at;
        let margin = (life / 10).min(chrono::TimeDelta::minutes(5));
        now + margin < self.expires_at
    }
}

/// The Keystone identity URL ending in `/v3/` (the plugins join `auth/tokens` onto it).
pub(crate) fn identity_url(auth_url: &str) -> Result<url::Url> {
    let trimmed = auth_url.trim_end_matches('/');
    let with_v3 = if trimmed.ends_with("/v3") {
        format!("{trimmed}/")
    } else {
        format!("{trimmed}/v3/")
    };
    url::Url::parse(&with_v3)
        .map_err(|e| Error::Credentials(format!("auth.auth_url is not a URL: {e}")))
}

fn scope(creds: &Credentials) -> Option<AuthTokenScope> {
    let a = &creds.entry.auth;
    if a.project_id.is_some() || a.project_name.is_some() {
        let domain =
            (a.project_domain_id.is_some() || a.project_domain_name.is_some()).then(|| Domain {
                id: a.project_domain_id.clone(),
                name: a.project_domain_name.clone(),
            });
        return Some(AuthTokenScope::Project(Project {
            id: a.project_id.clone(),
            name: a.project_name.clone(),
            domain,
        }));
    }
    if a.domain_id.is_some() || a.domain_name.is_some() {
        return Some(AuthTokenScope::Domain(Domain {
            id: a.domain_id.clone(),
            name: a.domain_name.clone(),
        }));
    }
    None
}

fn values(creds: &Credentials) -> HashMap<String, SecretString> {
    let a = &creds.entry.auth;
    let mut v = HashMap::new();
    let mut put = |k: &str, val: Option<&str>| {
        if let Some(val) = val {
            v.insert(k.to_owned(), SecretString::from(val.to_owned()));
        }
    };
    put("username", a.username.as_deref());
    put("user_id", a.user_id.as_deref());
    put("user_domain_name", a.user_domain_name.as_deref());
    put("user_domain_id", a.user_domain_id.as_deref());
    put("password", a.password.as_ref().map(|s| s.expose()));
    put(
        "application_credential_id",
        a.application_credential_id.as_deref(),
    );
    put(
        "application_credential_name",
        a.application_credential_name.as_deref(),
    );
    put(
        "application_credential_secret",
        a.application_credential_secret.as_ref().map(|s| s.expose()),
    );
    put("token", a.token.as_ref().map(|s| s.expose()));
    v
}

fn plugin(method: AuthMethod) -> &'static dyn OpenStackAuthType {
    match method {
        AuthMethod::Password => &openstack_sdk_auth_password::ANCHOR,
        AuthMethod::ApplicationCredential => &openstack_sdk_auth_applicationcredential::ANCHOR,
        AuthMethod::Token => &openstack_sdk_auth_token::ANCHOR,
    }
}

/// Request one token (a single HTTP request, counted as `token_create`).
pub(crate) async fn authenticate(
    http: &reqwest::Client,
    creds: &Credentials,
    metrics: &ApiMetrics,
    generation: u64,
) -> Result<TokenState> {
    let url = identity_url(creds.auth_url())?;
    // Application credentials carry their own scope; Keystone rejects an explicit one.
    let scope = match creds.method {
        AuthMethod::ApplicationCredential => None,
        _ => scope(creds),
    };
    let started = Instant::now();
    let res = plugin(creds.method)
        .auth(http, &url, &values(creds), scope.as_ref(), None)
        .await;
    let elapsed = started.elapsed().as_secs_f64();
    metrics.observe(TOKEN_LABEL, elapsed, res.is_err());
    let auth = res.map_err(auth_error)?;
    let Auth::AuthToken(token) = auth else {
        return Err(api_error(
            ErrorKind::Unauthorized,
            0,
            "Keystone returned no token".into(),
        ));
    };
    let info = token.auth_info.as_ref().ok_or_else(|| {
        api_error(
            ErrorKind::Unauthorized,
            0,
            "Keystone token reply has no token body".into(),
        )
    })?;
    let project = info.token.project.as_ref();
    tracing::debug!(
        cloud = creds.cloud_name.as_str(),
        expires_at = %info.token.expires_at,
        "obtained Keystone token"
    );
    Ok(TokenState {
        token: SecretString::from(token.token.expose_secret().to_owned()),
        expires_at: info.token.expires_at,
        issued_at: info.token.issued_at.unwrap_or_else(Utc::now),
        project_id: project.and_then(|p| p.id.clone()),
        project_name: project.and_then(|p| p.name.clone()),
        project_domain_name: project
            .and_then(|p| p.domain.as_ref())
            .and_then(|d| d.name.clone()),
        user_id: info.token.user.id.clone(),
        catalog: info.token.catalog.clone().unwrap_or_default(),
        generation,
    })
}

fn api_error(kind: ErrorKind, status: u16, message: String) -> Error {
    Error::Api {
        kind,
        request: TOKEN_LABEL.into(),
        status,
        message,
    }
}

/// Map plugin errors onto our kinds. Keystone's messages are safe to keep; plugin errors about
/// missing values name keys only.
fn auth_error(e: AuthError) -> Error {
    match e {
        AuthError::Identity(ie) => {
            let code = u16::try_from(ie.code).unwrap_or(500);
            let body = serde_json::json!({"error": {"code": ie.code, "message": ie.message}});
            let (kind, message) = classify(code, body.to_string().as_bytes(), None, true);
            api_error(kind, code, message)
        }
        AuthError::UnknownAuth { code, message } => {
            let code: u16 = code;
            let body = message.unwrap_or_default();
            let (kind, message) = classify(code, body.as_bytes(), None, true);
            api_error(kind, code, message)
        }
        AuthError::Reqwest { source } => transport_error(TOKEN_LABEL, &source, true),
        other => api_error(ErrorKind::BadRequest, 0, other.to_string()),
    }
}

/// Classify a transport error (no HTTP reply). `idempotent` requests become `Transient`, others
/// `OutcomeUnknown` unless the connection was never established.
pub(crate) fn transport_error(label: &str, e: &reqwest::Error, idempotent: bool) -> Error {
    let kind = if idempotent || e.is_connect() {
        ErrorKind::Transient
    } else {
        ErrorKind::OutcomeUnknown
    };
    Error::Api {
        kind,
        request: label.to_owned(),
        status: 0,
        message: describe_transport(e),
    }
}

/// A readable transport error: the chain of sources (TLS failures are only visible there), the
/// URL stripped of its query (queries carry no secrets here, but keep it short).
fn describe_transport(e: &reqwest::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        src = s.source();
    }
    let kind = if e.is_timeout() {
        "timeout: "
    } else if e.is_connect() {
        "connect: "
    } else {
        ""
    };
    format!("{kind}{}", parts.join(": "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_url_normalised() {
        assert_eq!(
            identity_url("https://k:5000").unwrap().as_str(),
            "https://k:5000/v3/"
        );
        assert_eq!(
            identity_url("https://k/identity/v3").unwrap().as_str(),
            "https://k/identity/v3/"
        );
        assert_eq!(
            identity_url("https://k/identity/v3/").unwrap().as_str(),
            "https://k/identity/v3/"
        );
    }

    #[test]
    fn freshness_margin() {
        let now = Utc::now();
        let t = TokenState {
            token: SecretString::from("x".to_owned()),
            issued_at: now,
            expires_at: now + chrono::TimeDelta::hours(1),
            project_id: None,
            project_name: None,
            project_domain_name: None,
            user_id: String::new(),
            catalog: vec![],
            generation: 1,
        };
        assert!(t.is_fresh(now));
        assert!(t.is_fresh(now + chrono::TimeDelta::minutes(54)));
        assert!(!t.is_fresh(now + chrono::TimeDelta::minutes(56)));
        assert!(!format!("{t:?}").contains("\"x\""));
    }
}

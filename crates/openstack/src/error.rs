//! One error type for the whole client layer, with the classification the controllers act on.
//!
//! Every failed HTTP exchange becomes an [`Error::Api`] whose [`ErrorKind`] says what the caller
//! should do: retry later (`Transient`, `RateLimited`), adopt by name/tag (`OutcomeUnknown`),
//! surface the cloud's message (`BadRequest`, `OverQuota`, ...). Messages come from the service's
//! error body; request bodies are never echoed, so user_data and passwords cannot leak here.

use std::time::Duration;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure an OpenStack API call ended in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// 404: the resource does not exist.
    NotFound,
    /// 409: conflicting state (in use, immutable while PENDING_*, duplicate).
    Conflict,
    /// Quota exceeded (Nova 403/413 with a quota message, Neutron `OverQuota`, Cinder 413).
    OverQuota,
    /// 401 that survived one re-authentication, or credentials rejected by Keystone.
    Unauthorized,
    /// 403 by policy.
    Forbidden,
    /// 429 (or 413 with Retry-After): slow down; `retry_after` is the server's hint.
    RateLimited {
        /// The server's Retry-After, if it sent one.
        retry_after: Option<Duration>,
    },
    /// 5xx, timeout or connection reset on a request that may safely be repeated.
    Transient,
    /// A non-idempotent request (POST) whose reply was lost (5xx, timeout, reset after sending):
    /// the cloud may or may not have acted. Never repeat blindly; adopt by name/tag instead.
    OutcomeUnknown,
    /// 400 (and other 4xx not listed above) with the service's message.
    BadRequest,
}

impl ErrorKind {
    /// Short stable name, used in logs and error metrics.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::OverQuota => "over_quota",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::RateLimited { .. } => "rate_limited",
            ErrorKind::Transient => "transient",
            ErrorKind::OutcomeUnknown => "outcome_unknown",
            ErrorKind::BadRequest => "bad_request",
        }
    }

    /// True when repeating the same idempotent request later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, ErrorKind::Transient | ErrorKind::RateLimited { .. })
    }
}

/// Errors of the OpenStack client layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed; `request` is the metric label (`<resource>_<op>`).
    #[error("OpenStack {request} failed ({}, HTTP {status}): {message}", kind.as_str())]
    Api {
        /// Classification.
        kind: ErrorKind,
        /// Metric label of the request, e.g. `server_create`.
        request: String,
        /// HTTP status, 0 when no reply arrived.
        status: u16,
        /// Message from the service's error body (or the transport error), never a request body.
        message: String,
    },
    /// The credentials input (identityRef, Secret, clouds.yaml) is unusable.
    #[error("{0}")]
    Credentials(String),
    /// The namespace may not use this OpenStackClusterIdentity.
    #[error("{0}")]
    IdentityNotAllowed(String),
    /// TLS configuration problem (CA PEM that does not parse, unreadable --ca-certs file).
    #[error("TLS configuration: {0}")]
    Tls(String),
    /// Proxy configuration problem (a proxy URL that does not parse or is not http/https).
    #[error("proxy configuration: {0}")]
    Proxy(String),
    /// The service catalog has no usable endpoint for a service.
    #[error("no {service} endpoint in the catalog (region {region:?}, interface {interface})")]
    NoEndpoint {
        /// Catalog service type.
        service: String,
        /// Region asked for.
        region: Option<String>,
        /// Interface asked for.
        interface: String,
    },
    /// The microversion a call requires is outside the endpoint's announced range.
    #[error("{service} supports microversions {min} to {max}, call needs {needed}")]
    MicroversionUnsupported {
        /// Service type.
        service: String,
        /// Server minimum.
        min: String,
        /// Server maximum.
        max: String,
        /// Needed by the call.
        needed: String,
    },
    /// The service lacks an API extension capo cannot work without (Neutron's
    /// `standard-attr-tag`: capo marks what it makes with an ownership tag, and never adopts or
    /// deletes what it cannot prove is its own).
    #[error(
        "the {service} service of this cloud has no {extension} extension, which capo needs to mark the resources it makes as its own"
    )]
    ExtensionMissing {
        /// Service type.
        service: String,
        /// Extension alias.
        extension: String,
    },
    /// A reply could not be decoded into the expected shape.
    #[error("OpenStack {request}: unexpected reply: {message}")]
    Decode {
        /// Metric label.
        request: String,
        /// Decoder message (never contains request bodies).
        message: String,
    },
}

impl Error {
    /// The classification, if this is an API error.
    pub fn kind(&self) -> Option<&ErrorKind> {
        match self {
            Error::Api { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// True for a 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self.kind(), Some(ErrorKind::NotFound))
    }

    /// Short category for metrics and conditions.
    pub fn category(&self) -> &'static str {
        match self {
            Error::Api { kind, .. } => kind.as_str(),
            Error::Credentials(_) | Error::IdentityNotAllowed(_) => "credentials",
            Error::Tls(_) => "tls",
            Error::Proxy(_) => "proxy",
            Error::NoEndpoint { .. } => "no_endpoint",
            Error::MicroversionUnsupported { .. } => "microversion",
            Error::ExtensionMissing { .. } => "extension",
            Error::Decode { .. } => "decode",
        }
    }
}

/// Classify an HTTP error reply. `idempotent` decides whether a 5xx is `Transient` (safe to
/// repeat) or `OutcomeUnknown` (a POST the cloud may have executed).
pub fn classify(
    status: u16,
    body: &[u8],
    retry_after: Option<Duration>,
    idempotent: bool,
) -> (ErrorKind, String) {
    let message = service_message(body).unwrap_or_else(|| format!("HTTP {status}"));
    let quota = looks_like_quota(&message, body);
    let kind = match status {
        404 => ErrorKind::NotFound,
        409 if quota => ErrorKind::OverQuota,
        409 => ErrorKind::Conflict,
        401 => ErrorKind::Unauthorized,
        403 | 413 if quota => ErrorKind::OverQuota,
        413 if retry_after.is_some() => ErrorKind::RateLimited { retry_after },
        403 => ErrorKind::Forbidden,
        429 => ErrorKind::RateLimited { retry_after },
        500..=599 if idempotent => ErrorKind::Transient,
        500..=599 => ErrorKind::OutcomeUnknown,
        _ => ErrorKind::BadRequest,
    };
    (kind, message)
}

fn looks_like_quota(message: &str, body: &[u8]) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("quota") || std::str::from_utf8(body).is_ok_and(|b| b.contains("\"OverQuota\""))
}

/// Extract the human message from the error body shapes of Nova, Neutron, Octavia, Glance,
/// Cinder and Keystone. Truncated so a pathological body cannot bloat conditions.
pub fn service_message(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        // Glance and some proxies answer with text/html or plain text.
        Err(_) => return plain_text_message(body),
    };
    let msg = find_message(&value)?;
    Some(truncate(msg.trim(), 512))
}

fn find_message(value: &serde_json::Value) -> Option<String> {
    let obj = value.as_object()?;
    // Neutron: {"NeutronError": {"type", "message", "detail"}}
    if let Some(ne) = obj.get("NeutronError") {
        return ne
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_owned);
    }
    // Octavia: {"faultcode", "faultstring", "debuginfo"}
    if let Some(fs) = obj.get("faultstring").and_then(|m| m.as_str()) {
        return Some(fs.to_owned());
    }
    // Keystone: {"error": {"code", "title", "message"}}
    if let Some(m) = obj
        .get("error")
        .and_then(|e| e.get("message"))
        .and_then(|m| m.as_str())
    {
        return Some(m.to_owned());
    }
    // Nova / Cinder: {"itemNotFound": {"code", "message"}}, {"badRequest": {...}}, ...
    if obj.len() == 1
        && let Some((_, inner)) = obj.iter().next()
        && let Some(m) = inner.get("message").and_then(|m| m.as_str())
    {
        return Some(m.to_owned());
    }
    // Generic {"message": ...}, or {"title", "description"} (Glance JSON errors).
    obj.get("message")
        .or_else(|| obj.get("description"))
        .and_then(|m| m.as_str())
        .map(str::to_owned)
}

fn plain_text_message(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    // Glance wraps text in HTML: keep the text lines only.
    let stripped: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('<'))
        .collect::<Vec<_>>()
        .join(" ");
    (!stripped.is_empty()).then(|| truncate(&stripped, 512))
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(status: u16, body: &str) -> (ErrorKind, String) {
        classify(status, body.as_bytes(), None, true)
    }

    #[test]
    fn nova_not_found_and_quota() {
        let (k, m) = kind(
            404,
            r#"{"itemNotFound": {"code": 404, "message": "Instance abc could not be found."}}"#,
        );
        assert_eq!(k, ErrorKind::NotFound);
        assert_eq!(m, "Instance abc could not be found.");
        let (k, m) = kind(
            403,
            r#"{"forbidden": {"code": 403, "message": "Quota exceeded for cores: Requested 4, but already used 20 of 20 cores"}}"#,
        );
        assert_eq!(k, ErrorKind::OverQuota);
        assert!(m.starts_with("Quota exceeded for cores"));
        let (k, _) = kind(
            403,
            r#"{"forbidden": {"code": 403, "message": "Policy doesn't allow os_compute_api:servers:create"}}"#,
        );
        assert_eq!(k, ErrorKind::Forbidden);
    }

    #[test]
    fn neutron_shapes() {
        let (k, m) = kind(
            409,
            r#"{"NeutronError": {"type": "OverQuota", "message": "Quota exceeded for resources: ['port'].", "detail": ""}}"#,
        );
        assert_eq!(k, ErrorKind::OverQuota);
        assert_eq!(m, "Quota exceeded for resources: ['port'].");
        let (k, m) = kind(
            409,
            r#"{"NeutronError": {"type": "SecurityGroupInUse", "message": "Security Group x in use.", "detail": ""}}"#,
        );
        assert_eq!(k, ErrorKind::Conflict);
        assert_eq!(m, "Security Group x in use.");
        let (k, _) = kind(
            400,
            r#"{"NeutronError": {"type": "HTTPBadRequest", "message": "Invalid input for cidr.", "detail": ""}}"#,
        );
        assert_eq!(k, ErrorKind::BadRequest);
    }

    #[test]
    fn octavia_glance_cinder_keystone_shapes() {
        let (k, m) = kind(
            409,
            r#"{"faultcode": "Client", "faultstring": "Load Balancer x is immutable and cannot be updated.", "debuginfo": null}"#,
        );
        assert_eq!(k, ErrorKind::Conflict);
        assert_eq!(m, "Load Balancer x is immutable and cannot be updated.");
        let (k, m) = kind(
            404,
            "<html>\n <head>\n  <title>404 Not Found</title>\n </head>\n <body>\n  <h1>404 Not Found</h1>\n  No image found with ID x\n </body>\n</html>",
        );
        assert_eq!(k, ErrorKind::NotFound);
        assert_eq!(m, "No image found with ID x");
        let (k, m) = classify(
            413,
            br#"{"overLimit": {"code": 413, "message": "VolumeLimitExceeded: Maximum number of volumes allowed (10) exceeded for quota 'volumes'."}}"#,
            None,
            false,
        );
        assert_eq!(k, ErrorKind::OverQuota);
        assert!(m.starts_with("VolumeLimitExceeded"));
        let (k, m) = kind(
            401,
            r#"{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}"#,
        );
        assert_eq!(k, ErrorKind::Unauthorized);
        assert_eq!(m, "The request you have made requires authentication.");
    }

    #[test]
    fn rate_limit_and_server_errors() {
        let ra = Some(Duration::from_secs(3));
        let (k, _) = classify(429, b"", ra, true);
        assert_eq!(k, ErrorKind::RateLimited { retry_after: ra });
        let (k, m) = classify(503, b"", None, true);
        assert_eq!(k, ErrorKind::Transient);
        assert_eq!(m, "HTTP 503");
        // A POST that failed with a 5xx may have been executed: never Transient.
        let (k, _) = classify(500, b"{}", None, false);
        assert_eq!(k, ErrorKind::OutcomeUnknown);
    }

    #[test]
    fn long_messages_are_truncated() {
        let long = format!(
            r#"{{"badRequest": {{"code": 400, "message": "{}"}}}}"#,
            "x".repeat(2000)
        );
        let (_, m) = kind(400, &long);
        assert!(m.len() < 600);
    }
}

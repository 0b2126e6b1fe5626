//! Errors: the crate's own error enum, and `ApiError`, an OpenStack error reply rendered in the
//! body shape of the service that produced it (clients parse these shapes, so they must be exact).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Errors from starting, running or configuring the simulator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding or serving the listening socket failed.
    #[error("network I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A seed or state document could not be parsed.
    #[error("invalid seed or state document: {0}")]
    Parse(String),
    /// Generating the TLS certificate failed.
    #[error("TLS setup: {0}")]
    Tls(#[from] capo_tls::Error),
}

/// Result alias for the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which OpenStack service answers a request; selects error shapes, latency and counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Svc {
    /// Keystone.
    Identity,
    /// Nova.
    Compute,
    /// Neutron.
    Network,
    /// Octavia.
    LoadBalancer,
    /// Glance.
    Image,
    /// Cinder.
    Volume,
    /// The simulator's control API.
    Control,
}

impl Svc {
    /// Service name as used in the control API (latency keys, request log, counters).
    pub fn name(self) -> &'static str {
        match self {
            Svc::Identity => "identity",
            Svc::Compute => "compute",
            Svc::Network => "network",
            Svc::LoadBalancer => "load-balancer",
            Svc::Image => "image",
            Svc::Volume => "volume",
            Svc::Control => "control",
        }
    }

    /// The service a request path belongs to.
    pub fn from_path(path: &str) -> Svc {
        let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
        match first {
            "identity" => Svc::Identity,
            "compute" => Svc::Compute,
            "network" => Svc::Network,
            "load-balancer" => Svc::LoadBalancer,
            "image" => Svc::Image,
            "volume" => Svc::Volume,
            _ => Svc::Control,
        }
    }
}

/// An error reply from a simulated service.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Service whose body shape is used.
    pub svc: Svc,
    /// Neutron error type (e.g. `NetworkNotFound`); ignored by other services.
    pub kind: &'static str,
    /// Human readable message.
    pub message: String,
}

/// Result alias for handlers.
pub type ApiResult<T = Response> = std::result::Result<T, ApiError>;

impl ApiError {
    /// A new error reply.
    pub fn new(
        svc: Svc,
        status: StatusCode,
        kind: &'static str,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            svc,
            kind,
            message: message.into(),
        }
    }
    /// 404 for a resource of this service.
    pub fn not_found(svc: Svc, kind: &'static str, message: impl Into<String>) -> Self {
        Self::new(svc, StatusCode::NOT_FOUND, kind, message)
    }
    /// 400 for a malformed or invalid request.
    pub fn bad_request(svc: Svc, message: impl Into<String>) -> Self {
        Self::new(svc, StatusCode::BAD_REQUEST, "BadRequest", message)
    }
    /// 409 conflict.
    pub fn conflict(svc: Svc, kind: &'static str, message: impl Into<String>) -> Self {
        Self::new(svc, StatusCode::CONFLICT, kind, message)
    }
    /// 401 as keystonemiddleware answers it in front of every service.
    pub fn unauthorized(svc: Svc) -> Self {
        Self::new(
            svc,
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "The request you have made requires authentication.",
        )
    }

    /// The same error with another Neutron type name.
    pub fn kind(mut self, kind: &'static str) -> Self {
        self.kind = kind;
        self
    }

    fn title(&self) -> &'static str {
        self.status.canonical_reason().unwrap_or("Error")
    }

    fn nova_name(&self) -> &'static str {
        match self.status.as_u16() {
            400 => "badRequest",
            403 => "forbidden",
            404 => "itemNotFound",
            405 => "badMethod",
            415 => "badMediaType",
            409 => "conflictingRequest",
            413 => "overLimit",
            429 => "overLimit",
            _ => "computeFault",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = self.status.as_u16();
        // keystonemiddleware rejects unauthenticated requests before any service sees them.
        let svc = if code == 401 { Svc::Identity } else { self.svc };
        let mut resp = match svc {
            Svc::Identity | Svc::Control => {
                let body = json!({"error": {"code": code, "message": self.message, "title": self.title()}});
                (self.status, axum::Json(body)).into_response()
            }
            Svc::Compute | Svc::Volume => {
                let body = json!({self.nova_name(): {"code": code, "message": self.message}});
                (self.status, axum::Json(body)).into_response()
            }
            Svc::Network => {
                let body = json!({"NeutronError": {"type": self.kind, "message": self.message, "detail": ""}});
                (self.status, axum::Json(body)).into_response()
            }
            Svc::LoadBalancer => {
                let fault = if code >= 500 { "Server" } else { "Client" };
                let body =
                    json!({"faultcode": fault, "faultstring": self.message, "debuginfo": null});
                (self.status, axum::Json(body)).into_response()
            }
            Svc::Image => {
                // Glance answers errors through webob as a small HTML page.
                let line = format!("{code} {}", self.title());
                let body = format!(
                    "<html>\n <head>\n  <title>{line}</title>\n </head>\n <body>\n  <h1>{line}</h1>\n  {}<br /><br />\n\n\n\n </body>\n</html>",
                    self.message
                );
                let mut r = (self.status, body).into_response();
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=UTF-8"),
                );
                r
            }
        };
        if code == 401 {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Keystone uri=\"/identity\""),
            );
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_from_path() {
        assert_eq!(Svc::from_path("/network/v2.0/ports"), Svc::Network);
        assert_eq!(Svc::from_path("/load-balancer/v2/lbaas"), Svc::LoadBalancer);
        assert_eq!(Svc::from_path("/_sim/reset"), Svc::Control);
    }

    #[test]
    fn nova_shape_names() {
        let e = ApiError::not_found(Svc::Compute, "", "x");
        assert_eq!(e.nova_name(), "itemNotFound");
        let e = ApiError::conflict(Svc::Compute, "", "x");
        assert_eq!(e.nova_name(), "conflictingRequest");
    }
}

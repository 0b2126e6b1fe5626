//! Microversion negotiation for Nova (`compute 2.1..2.96`) and Cinder (`volume 3.0..3.70`), from
//! `OpenStack-API-Version` or the legacy per-service header, echoed back on every reply.

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, Svc};
use crate::http::header_str;

/// A negotiated microversion (major, minor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mv(pub u32, pub u32);

impl Mv {
    /// Whether this version is at least `major.minor`.
    pub fn at_least(self, major: u32, minor: u32) -> bool {
        self >= Mv(major, minor)
    }
}

/// Parameters of one service's negotiation.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Service name in `OpenStack-API-Version`.
    pub service: &'static str,
    /// Legacy header name.
    pub legacy: &'static str,
    /// Minimum supported version.
    pub min: Mv,
    /// Maximum supported version.
    pub max: Mv,
    /// Service for error shapes.
    pub svc: Svc,
}

/// Nova's policy.
pub const NOVA: Policy = Policy {
    service: "compute",
    legacy: "x-openstack-nova-api-version",
    min: Mv(2, 1),
    max: Mv(2, 96),
    svc: Svc::Compute,
};
/// Cinder's policy.
pub const CINDER: Policy = Policy {
    service: "volume",
    legacy: "",
    min: Mv(3, 0),
    max: Mv(3, 71),
    svc: Svc::Volume,
};

fn parse(text: &str, p: &Policy) -> Option<Mv> {
    if text.trim().eq_ignore_ascii_case("latest") {
        return Some(p.max);
    }
    let (a, b) = text.trim().split_once('.')?;
    Some(Mv(a.parse().ok()?, b.parse().ok()?))
}

/// The version requested by headers (`None` = not asked: the minimum applies).
pub fn requested(headers: &axum::http::HeaderMap, p: &Policy) -> Result<Option<Mv>, String> {
    if let Some(h) = header_str(headers, "openstack-api-version") {
        for part in h.split(',') {
            let mut it = part.split_whitespace();
            if it.next().is_some_and(|s| s.eq_ignore_ascii_case(p.service)) {
                let v = it.next().unwrap_or("");
                return parse(v, p)
                    .map(Some)
                    .ok_or_else(|| format!("Invalid format for API version '{v}'"));
            }
        }
    }
    if !p.legacy.is_empty()
        && let Some(v) = header_str(headers, p.legacy)
    {
        return parse(v, p)
            .map(Some)
            .ok_or_else(|| format!("Invalid format for API version '{v}'"));
    }
    Ok(None)
}

/// Middleware body: negotiate, store [`Mv`] in the request extensions and echo the headers.
pub async fn negotiate(p: Policy, mut req: Request, next: Next) -> Response {
    let v = match requested(req.headers(), &p) {
        Ok(v) => v.unwrap_or(p.min),
        Err(msg) => return ApiError::bad_request(p.svc, msg).into_response(),
    };
    if v < p.min || v > p.max {
        let msg = format!(
            "Version {}.{} is not supported by the API. Minimum is {}.{} and maximum is {}.{}.",
            v.0, v.1, p.min.0, p.min.1, p.max.0, p.max.1
        );
        return ApiError::new(p.svc, StatusCode::NOT_ACCEPTABLE, "", msg).into_response();
    }
    req.extensions_mut().insert(v);
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    if let Ok(val) = HeaderValue::from_str(&format!("{} {}.{}", p.service, v.0, v.1)) {
        h.insert("openstack-api-version", val);
    }
    if !p.legacy.is_empty()
        && let Ok(val) = HeaderValue::from_str(&format!("{}.{}", v.0, v.1))
    {
        h.insert(p.legacy, val);
    }
    let vary = if p.legacy.is_empty() {
        "OpenStack-API-Version".to_string()
    } else {
        "OpenStack-API-Version, X-OpenStack-Nova-API-Version".to_string()
    };
    if let Ok(val) = HeaderValue::from_str(&vary) {
        h.insert("vary", val);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

    #[test]
    fn header_parsing() {
        let mut h = HeaderMap::new();
        assert_eq!(requested(&h, &NOVA), Ok(None));
        h.insert(
            "openstack-api-version",
            HeaderValue::from_static("compute 2.60"),
        );
        assert_eq!(requested(&h, &NOVA), Ok(Some(Mv(2, 60))));
        h.insert(
            "openstack-api-version",
            HeaderValue::from_static("compute latest"),
        );
        assert_eq!(requested(&h, &NOVA), Ok(Some(Mv(2, 96))));
        let mut h = HeaderMap::new();
        h.insert(
            "x-openstack-nova-api-version",
            HeaderValue::from_static("2.53"),
        );
        assert_eq!(requested(&h, &NOVA), Ok(Some(Mv(2, 53))));
        assert!(Mv(2, 53).at_least(2, 47));
    }
}

//! Shared HTTP plumbing: application state, the authenticated request context, query parsing,
//! body parsing and JSON replies.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;

use crate::control::Runtime;
use crate::error::{ApiError, ApiResult, Svc};
use crate::world::World;

/// State shared by every handler.
pub struct Shared {
    /// The simulated cloud.
    pub world: Mutex<World>,
    /// Control knobs: latency, faults, request log and counters.
    pub rt: Mutex<Runtime>,
    /// Externally visible base URL (`http://127.0.0.1:PORT`).
    pub base_url: String,
}

/// Handle to the shared state as used by axum.
pub type AppState = Arc<Shared>;

impl Shared {
    /// Lock the world after applying due state transitions.
    pub fn world(&self) -> MutexGuard<'_, World> {
        let mut w = self.world.lock();
        w.advance();
        w
    }
}

/// Who is calling: resolved from `X-Auth-Token`.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// Project the token is scoped to.
    pub project: String,
    /// User id.
    pub user: String,
    /// Admin role: sees every project's resources.
    pub admin: bool,
    /// The token comes from a restricted application credential (Keystone refuses it for
    /// managing application credentials).
    pub restricted_app_cred: bool,
}

impl Ctx {
    /// A context acting as a project without a token (seeding).
    pub fn system(project: &str) -> Ctx {
        Ctx {
            project: project.to_string(),
            user: String::new(),
            admin: true,
            restricted_app_cred: false,
        }
    }

    /// Whether this caller may see a resource owned by `owner`.
    pub fn owns(&self, owner: &str) -> bool {
        self.admin || owner == self.project
    }
}

impl FromRequestParts<AppState> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let svc = Svc::from_path(parts.uri.path());
        let token = header_str(&parts.headers, "x-auth-token")
            .ok_or_else(|| ApiError::unauthorized(svc))?;
        let w = state.world();
        let t = w
            .tokens
            .get(token)
            .filter(|t| t.expires_at > Utc::now())
            .ok_or_else(|| ApiError::unauthorized(svc))?;
        let project = t
            .project_id
            .clone()
            .ok_or_else(|| ApiError::unauthorized(svc))?;
        let admin = w
            .identity
            .users
            .iter()
            .any(|u| u.id == t.user_id && u.admin);
        let restricted_app_cred = t.app_cred.as_ref().is_some_and(|id| {
            w.identity
                .app_creds
                .iter()
                .find(|a| &a.id == id)
                .is_none_or(|a| !a.unrestricted)
        });
        Ok(Ctx {
            project,
            user: t.user_id.clone(),
            admin,
            restricted_app_cred,
        })
    }
}

/// A header as a string, if present and valid.
pub fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Decoded query string pairs, in order, keeping repeated keys.
#[derive(Debug, Clone, Default)]
pub struct Query(pub Vec<(String, String)>);

impl Query {
    /// Parse a raw query string.
    pub fn parse(raw: Option<&str>) -> Query {
        let pairs = raw
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect();
        Query(pairs)
    }

    /// The first value of a key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a key.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Values grouped by key.
    pub fn grouped(&self) -> HashMap<&str, Vec<&str>> {
        let mut m: HashMap<&str, Vec<&str>> = HashMap::new();
        for (k, v) in &self.0 {
            m.entry(k.as_str()).or_default().push(v.as_str());
        }
        m
    }

    /// Re-encode, replacing `marker`.
    pub fn with_marker(&self, marker: &str) -> String {
        let mut parts: Vec<String> = self
            .0
            .iter()
            .filter(|(k, _)| k != "marker")
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        parts.push(format!("marker={}", encode(marker)));
        parts.join("&")
    }

    /// Re-encode without `drop` keys, then append `add` (Neutron's next/previous links).
    pub fn replacing(&self, drop: &[&str], add: &[(&str, &str)]) -> String {
        let mut parts: Vec<String> = self
            .0
            .iter()
            .filter(|(k, _)| !drop.contains(&k.as_str()))
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        parts.extend(
            add.iter()
                .map(|(k, v)| format!("{}={}", encode(k), encode(v))),
        );
        parts.join("&")
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Query {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Query::parse(parts.uri.query()))
    }
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parse a JSON request body, answering a service-shaped 400 when it is malformed.
pub fn body(svc: Svc, bytes: &[u8]) -> ApiResult<Value> {
    if bytes.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(svc, format!("Malformed request body: {e}")))
}

/// Take the object under `key` out of a request body (`{"network": {...}}`).
pub fn member(svc: Svc, mut v: Value, key: &str) -> ApiResult<Value> {
    match v.get_mut(key).map(Value::take) {
        Some(inner @ Value::Object(_)) => Ok(inner),
        _ => Err(ApiError::bad_request(
            svc,
            format!("Unable to find '{key}' in request body"),
        )),
    }
}

/// A JSON reply with a status.
pub fn reply(status: StatusCode, v: Value) -> Response {
    (status, axum::Json(v)).into_response()
}

/// 200 with a JSON body.
pub fn ok(v: Value) -> ApiResult {
    Ok(reply(StatusCode::OK, v))
}

/// An empty reply with a status (204, 202).
pub fn empty(status: StatusCode) -> ApiResult {
    Ok(status.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_decodes_and_repeats() {
        let q = Query::parse(Some("name=a%20b&tags=x,y&tags=z&flag"));
        assert_eq!(q.get("name"), Some("a b"));
        assert_eq!(q.all("tags"), vec!["x,y", "z"]);
        assert_eq!(q.get("flag"), Some(""));
    }

    #[test]
    fn marker_is_replaced() {
        let q = Query::parse(Some("limit=2&marker=old"));
        assert_eq!(q.with_marker("new"), "limit=2&marker=new");
    }

    #[test]
    fn truncated_percent_is_literal() {
        assert_eq!(decode("a%2"), "a%2");
        assert_eq!(decode("%41"), "A");
    }
}

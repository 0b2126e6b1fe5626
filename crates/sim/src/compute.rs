//! Nova v2.1: version documents, microversions, shared helpers and routes.

pub mod attach;
pub mod flavors;
pub mod keypairs;
pub mod server_actions;
pub mod server_view;
pub mod servers;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use crate::error::{ApiError, Svc};
use crate::http::{AppState, reply};
use crate::microversion::{NOVA, negotiate};

/// Service tag for Nova errors.
pub const SVC: Svc = Svc::Compute;
/// Path prefix.
pub const P: &str = "/compute/v2.1";

/// Nova 400.
pub fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(SVC, msg)
}

/// Nova 404.
pub fn nf(msg: impl Into<String>) -> ApiError {
    ApiError::not_found(SVC, "", msg)
}

/// Nova 409.
pub fn conflict(msg: impl Into<String>) -> ApiError {
    ApiError::conflict(SVC, "", msg)
}

/// `self` and `bookmark` links.
pub fn links(base: &str, what: &str, id: &str) -> Value {
    json!([{"rel": "self", "href": format!("{base}{P}/{what}/{id}")},
           {"rel": "bookmark", "href": format!("{base}/compute/{what}/{id}")}])
}

fn version_v21(base: &str) -> Value {
    json!({"id": "v2.1", "status": "CURRENT", "version": "2.96", "min_version": "2.1", "updated": "2013-07-23T11:33:21Z",
           "links": [{"rel": "self", "href": format!("{base}{P}/")}, {"rel": "describedby", "type": "text/html", "href": "http://docs.openstack.org/"}],
           "media-types": [{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2.1"}]})
}

async fn versions(State(st): State<AppState>) -> Response {
    let v2 = json!({"id": "v2.0", "status": "DEPRECATED", "version": "", "min_version": "", "updated": "2025-07-04T12:00:00Z",
                    "links": [{"rel": "self", "href": format!("{}/compute/v2/", st.base_url)}]});
    let mut v21 = version_v21(&st.base_url);
    if let Some(o) = v21.as_object_mut() {
        o.remove("media-types");
    }
    reply(StatusCode::OK, json!({"versions": [v2, v21]}))
}

async fn version(State(st): State<AppState>) -> Response {
    reply(
        StatusCode::OK,
        json!({"version": version_v21(&st.base_url)}),
    )
}

/// Nova routes (microversion negotiation applies to all but the root document).
pub fn routes() -> Router<AppState> {
    let api = Router::new()
        .route(P, get(version))
        .merge(servers::routes())
        .merge(flavors::routes())
        .merge(keypairs::routes())
        .layer(axum::middleware::from_fn(|req, next| {
            negotiate(NOVA, req, next)
        }));
    Router::new().route("/compute", get(versions)).merge(api)
}

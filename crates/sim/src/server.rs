//! The application router.

use axum::Router;
use axum::extract::Request;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;

use crate::control::{Control, observe};
use crate::error::{ApiError, Svc};
use crate::http::AppState;

async fn fallback(req: Request) -> Response {
    let svc = Svc::from_path(req.uri().path());
    let kind = if svc == Svc::Network {
        "HTTPNotFound"
    } else {
        ""
    };
    ApiError::not_found(svc, kind, "The resource could not be found.").into_response()
}

/// Every service's routes, the control API and the observing middleware, behind the trailing
/// slash [`normalize`]r (which must see requests before routing does).
pub fn app(shared: AppState, ctl: Control) -> Router {
    let routes = Router::new()
        .merge(crate::identity::routes())
        .merge(crate::compute::routes())
        .merge(crate::network::routes())
        .merge(crate::loadbalancer::routes())
        .merge(crate::image::routes())
        .merge(crate::volume::routes())
        .merge(crate::control::routes(ctl))
        .fallback(fallback)
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            observe,
        ))
        .with_state(shared);
    Router::new().fallback_service(routes.map_request(normalize))
}

/// Drop a trailing slash (clients use `/compute/v2.1/` and `/compute/v2.1` interchangeably).
fn normalize<B>(mut req: axum::http::Request<B>) -> axum::http::Request<B> {
    let path = req.uri().path();
    if path.len() > 1 && path.ends_with('/') {
        let trimmed = path.trim_end_matches('/');
        let pq = match req.uri().query() {
            Some(q) => format!("{trimmed}?{q}"),
            None => trimmed.to_string(),
        };
        if let Ok(uri) = pq.parse::<Uri>() {
            *req.uri_mut() = uri;
        }
    }
    req
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_slash_is_dropped() {
        let r = normalize(
            axum::http::Request::builder()
                .uri("/compute/v2.1/?a=1")
                .body(())
                .unwrap_or_default(),
        );
        assert_eq!(r.uri().to_string(), "/compute/v2.1?a=1");
        let r = normalize(
            axum::http::Request::builder()
                .uri("/")
                .body(())
                .unwrap_or_default(),
        );
        assert_eq!(r.uri().path(), "/");
    }
}

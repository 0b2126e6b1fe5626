//! The HTTP(S) accept loop and the application router.

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
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

/// Every service's routes, the control API and the observing middleware.
pub fn app(shared: AppState, ctl: Control) -> Router {
    Router::new()
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
        .with_state(shared)
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

/// Serve until `stop` flips; open connections are dropped at shutdown.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.changed() => break,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else { continue };
        let _ = stream.set_nodelay(true);
        let svc = app
            .clone()
            .map_request(|r: axum::http::Request<hyper::body::Incoming>| {
                normalize(r.map(Body::new))
            });
        let hyper_svc = TowerToHyperService::new(svc);
        let tls = tls.clone();
        conns.spawn(async move {
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            match tls {
                Some(acceptor) => {
                    if let Ok(s) = acceptor.accept(stream).await {
                        let _ = builder.serve_connection(TokioIo::new(s), hyper_svc).await;
                    }
                }
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), hyper_svc)
                        .await;
                }
            }
        });
        while conns.try_join_next().is_some() {}
    }
    conns.abort_all();
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

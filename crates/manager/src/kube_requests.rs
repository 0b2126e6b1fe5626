//! Requests of the manager's Kubernetes client by verb and resource
//! (`capo_kube_api_requests_by_resource_total{verb, resource}`), so an operator can see what
//! the manager spends its API budget on (client-go's `rest_client_requests_total` counts by
//! method and code only, which does not say which reads a controller makes).

use std::task::{Context, Poll};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tower_layer::Layer;
use tower_service::Service;

/// Labels of one request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: String,
    /// Resource, with its subresource after a slash (`openstackmachines/status`).
    pub resource: String,
}

/// The counter family. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    family: Family<RequestLabels, Counter>,
}

impl RequestCounter {
    /// Create and register `capo_kube_api_requests_by_resource_total`.
    pub fn register(registry: &mut Registry) -> Self {
        let c = Self::default();
        registry.register(
            "capo_kube_api_requests_by_resource",
            "Requests of the manager's Kubernetes client by verb and resource",
            c.family.clone(),
        );
        c
    }
}

impl<S> Layer<S> for RequestCounter {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Counted {
            inner,
            family: self.family.clone(),
        }
    }
}

/// A service counting each request by verb and resource.
#[derive(Debug, Clone)]
pub struct Counted<S> {
    inner: S,
    family: Family<RequestLabels, Counter>,
}

impl<S, B> Service<http::Request<B>> for Counted<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.family
            .get_or_create(&labels(req.method(), req.uri()))
            .inc();
        self.inner.call(req)
    }
}

/// Verb and resource of a request to the Kubernetes API.
pub fn labels(method: &http::Method, uri: &http::Uri) -> RequestLabels {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    // /api/v1/... or /apis/<group>/<version>/...; anything else (/version, /healthz) is
    // labelled by its path.
    let rest: &[&str] = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => {
            return RequestLabels {
                verb: method.as_str().to_ascii_lowercase(),
                resource: uri.path().to_owned(),
            };
        }
    };
    // `namespaces/<ns>/<resource>...` is namespaced; `namespaces[/<name>]` is the
    // Namespace resource itself.
    let rest = match rest {
        ["namespaces", _ns, inner @ ..] if !inner.is_empty() => inner,
        other => other,
    };
    let (resource, named) = match rest {
        [resource] => ((*resource).to_owned(), false),
        [resource, _name] => ((*resource).to_owned(), true),
        [resource, _name, sub, ..] => (format!("{resource}/{sub}"), true),
        [] => (String::new(), false),
    };
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if named => "get",
        http::Method::GET => "list",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if named => "delete",
        http::Method::DELETE => "deletecollection",
        _ => method.as_str(),
    };
    RequestLabels {
        verb: verb.to_ascii_lowercase(),
        resource,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(method: &str, uri: &str) -> (String, String) {
        let m = http::Method::from_bytes(method.as_bytes()).unwrap();
        let r = labels(&m, &uri.parse().unwrap());
        (r.verb, r.resource)
    }

    #[test]
    fn verbs_and_resources() {
        let s = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            l("GET", "/api/v1/namespaces/ns/secrets/cloud"),
            s("get", "secrets")
        );
        assert_eq!(
            l(
                "GET",
                "/apis/infrastructure.cluster.x-k8s.io/v1beta1/openstackmachines?watch=true&resourceVersion=5"
            ),
            s("watch", "openstackmachines")
        );
        assert_eq!(
            l(
                "GET",
                "/apis/cluster.x-k8s.io/v1beta2/namespaces/a/clusters?labelSelector=x"
            ),
            s("list", "clusters")
        );
        assert_eq!(
            l(
                "PATCH",
                "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/a/openstackclusters/c/status?fieldManager=m"
            ),
            s("patch", "openstackclusters/status")
        );
        assert_eq!(
            l("POST", "/apis/events.k8s.io/v1/namespaces/a/events"),
            s("create", "events")
        );
        assert_eq!(l("GET", "/api/v1/namespaces/a"), s("get", "namespaces"));
        assert_eq!(
            l("DELETE", "/api/v1/namespaces/a/pods"),
            s("deletecollection", "pods")
        );
        assert_eq!(l("GET", "/version"), s("get", "/version"));
    }
}

//! A request's shape as plain data (service, method, path, query, body, microversion, metric
//! label), so every typed call can be unit-tested without IO.

use std::fmt;

use http::Method;
use serde_json::Value;

/// OpenStack services this layer talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// Nova.
    Compute,
    /// Neutron.
    Network,
    /// Octavia.
    LoadBalancer,
    /// Glance.
    Image,
    /// Cinder.
    BlockStorage,
    /// Keystone (application credentials), reached at the credentials' auth URL.
    Identity,
}

impl Service {
    /// Catalog `type` values accepted for the service, in order of preference.
    pub fn catalog_types(self) -> &'static [&'static str] {
        match self {
            Service::Compute => &["compute"],
            Service::Network => &["network"],
            Service::LoadBalancer => &["load-balancer"],
            Service::Image => &["image"],
            Service::BlockStorage => &["block-storage", "volumev3", "volume"],
            Service::Identity => &["identity"],
        }
    }

    /// Version path segment appended when the catalog URL is unversioned.
    pub fn version_segment(self) -> Option<&'static str> {
        match self {
            Service::Network => Some("v2.0"),
            Service::LoadBalancer | Service::Image => Some("v2"),
            Service::Identity => Some("v3"),
            Service::Compute | Service::BlockStorage => None,
        }
    }

    /// Name used in the `OpenStack-API-Version` header, for microversioned services.
    pub fn microversion_name(self) -> Option<&'static str> {
        match self {
            Service::Compute => Some("compute"),
            Service::BlockStorage => Some("volume"),
            _ => None,
        }
    }

    /// Short name for metric labels of discovery requests.
    pub fn short(self) -> &'static str {
        match self {
            Service::Compute => "compute",
            Service::Network => "network",
            Service::LoadBalancer => "loadbalancer",
            Service::Image => "image",
            Service::BlockStorage => "volume",
            Service::Identity => "identity",
        }
    }
}

/// An API (micro)version `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion(pub u16, pub u16);

impl ApiVersion {
    /// Parse `2.60`, `v2.27`, `3.0`.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().trim_start_matches('v');
        let (a, b) = s.split_once('.').unwrap_or((s, "0"));
        Some(Self(a.parse().ok()?, b.parse().ok()?))
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// One HTTP request against a service endpoint.
#[derive(Clone, PartialEq)]
pub struct Request {
    /// Target service.
    pub service: Service,
    /// HTTP method.
    pub method: Method,
    /// Path relative to the versioned endpoint, without leading slash (`servers/detail`).
    pub path: String,
    /// Query parameters, in order.
    pub query: Vec<(String, String)>,
    /// JSON body.
    pub body: Option<Value>,
    /// Microversion the call needs (Nova, Cinder).
    pub microversion: Option<ApiVersion>,
    /// Metric label `<resource>_<op>`.
    pub label: &'static str,
}

impl fmt::Debug for Request {
    // Bodies may carry user_data or keys: never print them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("service", &self.service)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("body", &self.body.as_ref().map(|_| "<omitted>"))
            .field("microversion", &self.microversion)
            .field("label", &self.label)
            .finish()
    }
}

impl Request {
    /// A request without query or body.
    pub fn new(
        service: Service,
        method: Method,
        path: impl Into<String>,
        label: &'static str,
    ) -> Self {
        Self {
            service,
            method,
            path: path.into(),
            query: Vec::new(),
            body: None,
            microversion: None,
            label,
        }
    }
    /// GET.
    pub fn get(service: Service, path: impl Into<String>, label: &'static str) -> Self {
        Self::new(service, Method::GET, path, label)
    }
    /// POST with a JSON body.
    pub fn post(
        service: Service,
        path: impl Into<String>,
        label: &'static str,
        body: Value,
    ) -> Self {
        Self::new(service, Method::POST, path, label).with_body(body)
    }
    /// PUT with a JSON body.
    pub fn put(
        service: Service,
        path: impl Into<String>,
        label: &'static str,
        body: Value,
    ) -> Self {
        Self::new(service, Method::PUT, path, label).with_body(body)
    }
    /// DELETE.
    pub fn delete(service: Service, path: impl Into<String>, label: &'static str) -> Self {
        Self::new(service, Method::DELETE, path, label)
    }
    /// Add a query parameter.
    pub fn with_query(mut self, key: &str, value: impl Into<String>) -> Self {
        self.query.push((key.to_owned(), value.into()));
        self
    }
    /// Add a query parameter when `value` is Some.
    pub fn with_opt_query(self, key: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.with_query(key, v),
            None => self,
        }
    }
    /// Set the JSON body.
    pub fn with_body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }
    /// Require a microversion.
    pub fn with_microversion(mut self, v: ApiVersion) -> Self {
        self.microversion = Some(v);
        self
    }
    /// Apply tag filters as query parameters.
    pub fn with_tags(mut self, tags: &TagFilter) -> Self {
        self.query.extend(tags.query());
        self
    }
    /// GET, HEAD, PUT and DELETE may be repeated; POST and PATCH may not.
    pub fn is_idempotent(&self) -> bool {
        matches!(
            self.method,
            Method::GET | Method::HEAD | Method::PUT | Method::DELETE
        )
    }
}

/// Neutron/Nova/Octavia tag filters: `tags` (all), `tags-any`, `not-tags`, `not-tags-any`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagFilter {
    /// Resource has all of these.
    pub tags: Vec<String>,
    /// Resource has at least one of these.
    pub tags_any: Vec<String>,
    /// Resource does not have all of these.
    pub not_tags: Vec<String>,
    /// Resource has none of these.
    pub not_tags_any: Vec<String>,
}

impl TagFilter {
    /// Filter on all of `tags`.
    pub fn all(tags: &[&str]) -> Self {
        Self {
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            ..Default::default()
        }
    }

    /// The query parameters (comma-joined lists; empty lists are omitted).
    pub fn query(&self) -> Vec<(String, String)> {
        [
            ("tags", &self.tags),
            ("tags-any", &self.tags_any),
            ("not-tags", &self.not_tags),
            ("not-tags-any", &self.not_tags_any),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.to_owned(), v.join(",")))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(ApiVersion::parse("v2.27"), Some(ApiVersion(2, 27)));
        assert_eq!(ApiVersion::parse("2.60"), Some(ApiVersion(2, 60)));
        assert_eq!(ApiVersion::parse("3"), Some(ApiVersion(3, 0)));
        assert!(ApiVersion(2, 9) < ApiVersion(2, 60));
        assert_eq!(ApiVersion::parse("x"), None);
    }

    #[test]
    fn tag_filters() {
        let f = TagFilter {
            tags: vec!["a".into(), "b".into()],
            tags_any: vec![],
            not_tags: vec!["c".into()],
            not_tags_any: vec!["d".into(), "e".into()],
        };
        let r = Request::get(Service::Network, "ports", "port_list").with_tags(&f);
        assert_eq!(
            r.query,
            vec![
                ("tags".into(), "a,b".into()),
                ("not-tags".into(), "c".into()),
                ("not-tags-any".into(), "d,e".into())
            ]
        );
    }

    #[test]
    fn debug_hides_body() {
        let r = Request::post(
            Service::Compute,
            "servers",
            "server_create",
            serde_json::json!({"server": {"user_data": "c2VjcmV0"}}),
        );
        assert!(!format!("{r:?}").contains("c2VjcmV0"));
        assert!(!r.is_idempotent());
    }
}

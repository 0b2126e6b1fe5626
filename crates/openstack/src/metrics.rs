//! Prometheus request metrics, named as upstream CAPO names them so dashboards keep working.
//! Every HTTP request is counted: API calls, Keystone token requests and version discovery.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The `request="<resource>_<op>"` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabel {
    /// `<resource>_<op>`, e.g. `server_create`, `token_create`, `compute_version_get`.
    pub request: String,
}

fn new_histogram() -> Histogram {
    Histogram::new([0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0])
}

/// The three request metrics. Cheap to clone (shared handles).
#[derive(Clone)]
pub struct ApiMetrics {
    requests: Family<RequestLabel, Counter>,
    errors: Family<RequestLabel, Counter>,
    duration: Family<RequestLabel, Histogram, fn() -> Histogram>,
}

impl std::fmt::Debug for ApiMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiMetrics")
    }
}

impl ApiMetrics {
    /// Create and register in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::unregistered();
        registry.register(
            "capo_openstack_api_requests",
            "OpenStack API requests, by request",
            m.requests.clone(),
        );
        registry.register(
            "capo_openstack_api_request_duration_seconds",
            "OpenStack API request duration, by request",
            m.duration.clone(),
        );
        registry.register(
            "capo_openstack_api_request_errors",
            "OpenStack API requests that failed (HTTP >= 400 or no reply), by request",
            m.errors.clone(),
        );
        m
    }

    /// Metrics that are collected but not exported (tests, tools).
    pub fn unregistered() -> Self {
        Self {
            requests: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(new_histogram as fn() -> Histogram),
        }
    }

    /// Record one HTTP request.
    pub fn observe(&self, request: &str, seconds: f64, failed: bool) {
        let l = RequestLabel {
            request: request.to_owned(),
        };
        self.requests.get_or_create(&l).inc();
        self.duration.get_or_create(&l).observe(seconds);
        if failed {
            self.errors.get_or_create(&l).inc();
        }
    }

    /// Requests counted so far for `request` (tests and benchmarks).
    pub fn requests(&self, request: &str) -> u64 {
        self.requests
            .get_or_create(&RequestLabel {
                request: request.to_owned(),
            })
            .get()
    }

    /// Errors counted so far for `request`.
    pub fn errors(&self, request: &str) -> u64 {
        self.errors
            .get_or_create(&RequestLabel {
                request: request.to_owned(),
            })
            .get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_names() {
        let mut reg = Registry::default();
        let m = ApiMetrics::register(&mut reg);
        m.observe("server_create", 0.2, false);
        m.observe("server_create", 0.3, true);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        assert!(
            out.contains("capo_openstack_api_requests_total{request=\"server_create\"} 2"),
            "{out}"
        );
        assert!(
            out.contains("capo_openstack_api_request_errors_total{request=\"server_create\"} 1")
        );
        assert!(out.contains(
            "capo_openstack_api_request_duration_seconds_count{request=\"server_create\"} 2"
        ));
    }
}

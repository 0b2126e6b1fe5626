//! Metrics of the conversion webhook, registered in the manager's registry: how many reviews
//! the API server sent, into which version, how many objects they held, and the time spent
//! converting. With Cluster API on contract v1beta2, every read and watch event of its
//! OpenStackClusters and OpenStackMachines is a review, so these say what serving both versions
//! costs the manager.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// Labels of one conversion review.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReviewLabels {
    /// `v1beta1`, `v1beta2`, or `other` for a version this webhook does not serve.
    desired_version: &'static str,
    /// `success` or `failure`.
    result: &'static str,
}

/// The conversion webhook's counters. Cheap to clone; unregistered ones (the default) count
/// for nobody.
#[derive(Clone, Debug, Default)]
pub struct ConversionMetrics {
    reviews: Family<ReviewLabels, Counter>,
    objects: Counter,
    seconds: Counter<f64, AtomicU64>,
}

impl ConversionMetrics {
    /// Creates and registers `capo_conversion_reviews_total{desired_version, result}`,
    /// `capo_conversion_objects_total` and `capo_conversion_seconds_total`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "capo_conversion_reviews",
            "ConversionReviews answered, by desired version and result",
            metrics.reviews.clone(),
        );
        registry.register(
            "capo_conversion_objects",
            "Objects in the ConversionReviews answered",
            metrics.objects.clone(),
        );
        registry.register(
            "capo_conversion_seconds",
            "Time spent converting ConversionReviews (decoding to encoding)",
            metrics.seconds.clone(),
        );
        metrics
    }

    /// Counts one review into `desired` (an apiVersion) of `objects` objects.
    pub(crate) fn record(&self, desired: &str, success: bool, objects: usize, elapsed: Duration) {
        let desired_version = match desired.rsplit('/').next() {
            Some("v1beta1") => "v1beta1",
            Some("v1beta2") => "v1beta2",
            _ => "other",
        };
        let result = if success { "success" } else { "failure" };
        self.reviews
            .get_or_create(&ReviewLabels {
                desired_version,
                result,
            })
            .inc();
        self.objects.inc_by(objects as u64);
        self.seconds.inc_by(elapsed.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn reviews_are_counted_by_version_and_result_with_bounded_labels() {
        let mut registry = Registry::default();
        let metrics = ConversionMetrics::register(&mut registry);
        let v2 = "infrastructure.cluster.x-k8s.io/v1beta2";
        metrics.record(v2, true, 3, Duration::from_millis(2));
        metrics.record(v2, false, 1, Duration::from_millis(1));
        metrics.record("junk/v9", false, 0, Duration::ZERO);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap_or_default();
        for line in [
            "capo_conversion_reviews_total{desired_version=\"v1beta2\",result=\"success\"} 1",
            "capo_conversion_reviews_total{desired_version=\"v1beta2\",result=\"failure\"} 1",
            "capo_conversion_reviews_total{desired_version=\"other\",result=\"failure\"} 1",
            "capo_conversion_objects_total 4",
        ] {
            assert!(text.contains(line), "{line} missing in:\n{text}");
        }
        assert!(
            text.contains("capo_conversion_seconds_total 0.003"),
            "{text}"
        );
    }
}

//! Reconcile metrics per controller: counts, errors by category, durations.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// `controller="openstackcluster"`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabel {
    /// Controller name (lower-case kind).
    pub controller: String,
}

/// `controller`, `category` (error category, see [`crate::Error::category`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabel {
    /// Controller name.
    pub controller: String,
    /// Error category.
    pub category: String,
}

fn new_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ])
}

/// Reconcile metrics. Cheap to clone (shared handles).
#[derive(Clone)]
pub struct ReconcileMetrics {
    reconciles: Family<ControllerLabel, Counter>,
    errors: Family<ErrorLabel, Counter>,
    duration: Family<ControllerLabel, Histogram, fn() -> Histogram>,
}

impl Default for ReconcileMetrics {
    fn default() -> Self {
        Self {
            reconciles: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(new_histogram as fn() -> Histogram),
        }
    }
}

impl std::fmt::Debug for ReconcileMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReconcileMetrics")
    }
}

impl ReconcileMetrics {
    /// Register these metrics in `registry` (names as controller-runtime's, `capo_` prefixed).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "capo_controller_reconciles",
            "Reconciles, by controller",
            self.reconciles.clone(),
        );
        registry.register(
            "capo_controller_reconcile_errors",
            "Failed reconciles, by controller and error category",
            self.errors.clone(),
        );
        registry.register(
            "capo_controller_reconcile_duration_seconds",
            "Reconcile duration, by controller",
            self.duration.clone(),
        );
    }

    /// Record one reconcile.
    pub fn observe(&self, controller: &str, seconds: f64, error: Option<&str>) {
        let l = ControllerLabel {
            controller: controller.to_owned(),
        };
        self.reconciles.get_or_create(&l).inc();
        self.duration.get_or_create(&l).observe(seconds);
        if let Some(category) = error {
            self.errors
                .get_or_create(&ErrorLabel {
                    controller: controller.to_owned(),
                    category: category.to_owned(),
                })
                .inc();
        }
    }

    /// Reconciles so far of `controller` (tests).
    pub fn reconciles(&self, controller: &str) -> u64 {
        self.reconciles
            .get_or_create(&ControllerLabel {
                controller: controller.to_owned(),
            })
            .get()
    }
}

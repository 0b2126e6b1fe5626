//! The apiVersions converted between.

/// apiVersion of the older version.
pub(crate) const V1BETA1: &str = "infrastructure.cluster.x-k8s.io/v1beta1";
/// apiVersion of the newer version, the hub.
pub(crate) const V1BETA2: &str = "infrastructure.cluster.x-k8s.io/v1beta2";

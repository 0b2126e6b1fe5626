//! The webhooks: one per kind, with upstream's URL paths and names.

use capo_api::v1alpha1::{OpenStackClusterIdentity, OpenStackFloatingIPPool, OpenStackServer};
use capo_api::v1beta1::{
    OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine, OpenStackMachineTemplate,
};

use crate::admission::review;
use crate::review::{AdmissionRequest, AdmissionResponse};

/// API group of every capo kind.
const GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// One validating webhook: where it is served and what it validates.
#[derive(Debug)]
pub struct Webhook {
    /// Name in the `ValidatingWebhookConfiguration` (`validation.<kind>.<group>`).
    pub name: &'static str,
    /// URL path (`/validate-<group with dashes>-<version>-<kind>`, controller-runtime's scheme).
    pub path: &'static str,
    /// API group.
    pub group: &'static str,
    /// API version the webhook is registered for.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Resource (plural) in the webhook rules.
    pub resource: &'static str,
    /// Whether upstream CAPO v0.14 registers this webhook too (the pool and identity webhooks
    /// are capo additions: their rules exist in `capo_api::validation`, upstream has none).
    pub upstream: bool,
    handler: fn(&Webhook, &AdmissionRequest) -> AdmissionResponse,
}

impl Webhook {
    /// Answers one admission request.
    pub fn review(&self, request: &AdmissionRequest) -> AdmissionResponse {
        (self.handler)(self, request)
    }
}

/// Every webhook this crate serves.
pub static WEBHOOKS: [Webhook; 7] = [
    Webhook {
        name: "validation.openstackcluster.infrastructure.cluster.x-k8s.io",
        path: "/validate-infrastructure-cluster-x-k8s-io-v1beta1-openstackcluster",
        group: GROUP,
        version: "v1beta1",
        kind: "OpenStackCluster",
        resource: "openstackclusters",
        upstream: true,
        handler: review::<OpenStackCluster>,
    },
    Webhook {
        name: "validation.openstackclustertemplate.infrastructure.cluster.x-k8s.io",
        path: "/validate-infrastructure-cluster-x-k8s-io-v1beta1-openstackclustertemplate",
        group: GROUP,
        version: "v1beta1",
        kind: "OpenStackClusterTemplate",
        resource: "openstackclustertemplates",
        upstream: true,
        handler: review::<OpenStackClusterTemplate>,
    },
    Webhook {
        name: "validation.openstackmachine.infrastructure.cluster.x-k8s.io",
        path: "/validate-infrastructure-cluster-x-k8s-io-v1beta1-openstackmachine",
        group: GROUP,
        version: "v1beta1",
        kind: "OpenStackMachine",
        resource: "openstackmachines",
        upstream: true,
        handler: review::<OpenStackMachine>,
    },
    Webhook {
        name: "validation.openstackmachinetemplate.infrastructure.cluster.x-k8s.io",
        path: "/validate-infrastructure-cluster-x-k8s-io-v1beta1-openstackmachinetemplate",
        group: GROUP,
        version: "v1beta1",
        kind: "OpenStackMachineTemplate",
        resource: "openstackmachinetemplates",
        upstream: true,
        handler: review::<OpenStackMachineTemplate>,
    },
    Webhook {
        name: "validation.openstackserver.infrastructure.cluster.x-k8s.io",
        path: "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-openstackserver",
        group: GROUP,
        version: "v1alpha1",
        kind: "OpenStackServer",
        resource: "openstackservers",
        upstream: true,
        handler: review::<OpenStackServer>,
    },
    Webhook {
        name: "validation.openstackfloatingippool.infrastructure.cluster.x-k8s.io",
        path: "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-openstackfloatingippool",
        group: GROUP,
        version: "v1alpha1",
        kind: "OpenStackFloatingIPPool",
        resource: "openstackfloatingippools",
        upstream: false,
        handler: review::<OpenStackFloatingIPPool>,
    },
    Webhook {
        name: "validation.openstackclusteridentity.infrastructure.cluster.x-k8s.io",
        path: "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-openstackclusteridentity",
        group: GROUP,
        version: "v1alpha1",
        kind: "OpenStackClusterIdentity",
        resource: "openstackclusteridentities",
        upstream: false,
        handler: review::<OpenStackClusterIdentity>,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_follow_the_controller_runtime_scheme() {
        for hook in &WEBHOOKS {
            let lower = hook.kind.to_lowercase();
            let group = hook.group.replace('.', "-");
            assert_eq!(
                hook.path,
                format!("/validate-{group}-{}-{lower}", hook.version)
            );
            assert_eq!(hook.name, format!("validation.{lower}.{}", hook.group));
        }
    }
}

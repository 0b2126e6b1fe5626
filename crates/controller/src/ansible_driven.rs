//! Clusters driven by the Ansible control-plane provider get the BA/ACP extension even without
//! `spec.extensions`: the peer provider always served them, and its manifests (which the
//! Ansible providers' users apply unchanged) never write that field.
//!
//! The defaults are overlaid in memory on the OpenStackCluster each controller reads, never
//! written to its spec (the controllers only ever patch status and single spec fields), so an
//! explicit `spec.extensions` always wins and a cluster whose control plane is anything else is
//! untouched. Detection is by the Cluster's `spec.controlPlaneRef.kind`; both the cluster and
//! the machine controller read the Cluster, so they always agree.

use std::sync::Arc;

use crate::stored::Stored;

use capo_api::extensions::{ANSIBLE_CONTROL_PLANE_KIND, OpenStackClusterExtensions};
use capo_api::v1beta1::OpenStackCluster;

use crate::capi::Cluster;

/// True when the Cluster's control plane is an AnsibleControlPlane.
pub fn driven_by_ansible(cluster: Option<&Cluster>) -> bool {
    cluster
        .and_then(|c| c.spec.control_plane_ref.as_ref())
        .is_some_and(|r| r.kind == ANSIBLE_CONTROL_PLANE_KIND)
}

/// `osc` with the peer's extension defaults when the Ansible providers drive `cluster` and the
/// spec has no `extensions`; `osc` itself otherwise.
pub fn with_defaults(mut osc: OpenStackCluster, cluster: Option<&Cluster>) -> OpenStackCluster {
    if needs_defaults(&osc, cluster) {
        let lb = osc.spec.api_load_balancer_enabled();
        osc.spec.extensions = Some(OpenStackClusterExtensions::peer_defaults(lb));
    }
    osc
}

fn needs_defaults(osc: &OpenStackCluster, cluster: Option<&Cluster>) -> bool {
    osc.spec.extensions.is_none() && driven_by_ansible(cluster)
}

/// [`with_defaults`] for the shared object a reconcile receives (cloned only when it changes).
pub fn with_defaults_arc(
    osc: Arc<Stored<OpenStackCluster>>,
    cluster: Option<&Cluster>,
) -> Arc<Stored<OpenStackCluster>> {
    if needs_defaults(&osc, cluster) {
        Arc::new(Stored(with_defaults(osc.0.clone(), cluster)))
    } else {
        osc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::{ClusterSpec, ContractReference};

    fn cluster(kind: &str) -> Cluster {
        Cluster::new(
            "c",
            ClusterSpec {
                control_plane_ref: Some(ContractReference {
                    api_group: "controlplane.cluster.x-k8s.io".into(),
                    kind: kind.into(),
                    name: "c".into(),
                }),
                ..Default::default()
            },
        )
    }

    #[test]
    fn only_ansible_driven_clusters_without_extensions_get_the_defaults() {
        let plain = OpenStackCluster::new("c", Default::default());
        let acp = cluster("AnsibleControlPlane");
        let kcp = cluster("KubeadmControlPlane");
        assert!(
            with_defaults(plain.clone(), Some(&acp))
                .spec
                .extensions
                .is_some()
        );
        assert!(
            with_defaults(plain.clone(), Some(&kcp))
                .spec
                .extensions
                .is_none()
        );
        assert!(with_defaults(plain.clone(), None).spec.extensions.is_none());
        let mut explicit = plain;
        explicit.spec.extensions = Some(OpenStackClusterExtensions::default());
        assert_eq!(
            with_defaults(explicit.clone(), Some(&acp)).spec.extensions,
            explicit.spec.extensions,
            "an explicit spec.extensions wins"
        );
    }
}

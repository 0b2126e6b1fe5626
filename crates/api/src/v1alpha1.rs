//! API group infrastructure.cluster.x-k8s.io/v1alpha1: servers, floating IP pools and cluster identities.

mod cluster_identity;
mod floating_ip_pool;
mod server;

pub use cluster_identity::OpenStackClusterIdentity;
pub use cluster_identity::{
    ClusterIdentitySecretReference, LabelSelector, LabelSelectorRequirement,
    OpenStackClusterIdentitySpec,
};
pub use floating_ip_pool::OpenStackFloatingIPPool;
pub use floating_ip_pool::{
    OpenStackFloatingIPPoolSpec, OpenStackFloatingIPPoolStatus, ReclaimPolicy,
};
pub use server::OpenStackServer;
pub use server::{
    OpenStackServerSpec, OpenStackServerStatus, PortOpts, ResolvedPortSpec, ResolvedServerSpec,
    ServerResources,
};

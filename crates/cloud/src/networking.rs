//! Neutron services: external network, cluster network and subnets (managed or pre-existing),
//! router, managed security groups, VIP ports and floating IPs, and their deletion.
//!
//! Lookups prefer an ID recorded in status, then the deterministic name plus the ownership
//! tag (see [`crate::ownership`]). User-provided resources (pre-existing network/subnets, a
//! BYO router, the external network) are resolved, never tagged, updated or deleted.

pub mod external;
pub mod floating_ip;
pub mod floating_ip_pool;
pub mod lookup;
pub mod network;
pub mod pod_network;
pub mod router;
pub mod security_groups;
pub mod vip_port;

pub use external::ensure_external_network;
pub use network::{delete_network, ensure_cluster_network, is_managed_network, node_subnet};
pub use router::{delete_router, ensure_router};
pub use security_groups::{SecurityGroups, delete_security_groups, ensure_security_groups};

/// The name a status records for a Neutron resource: its own, or its ID when it has none.
/// Neutron allows unnamed networks, subnets and routers (pre-existing ones often are), and
/// the v1beta2 status, which capo stores, requires a non-empty name.
pub fn status_name(name: String, id: &str) -> String {
    if name.is_empty() { id.to_owned() } else { name }
}

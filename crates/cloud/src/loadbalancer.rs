//! The API server load balancer (Octavia); its floating IP is a Neutron resource
//! ([`crate::networking::floating_ip`]).
//!
//! - [`balancer`]: the load balancer itself (`k8s-clusterapi-cluster-<ns>-<name>-kubeapi`),
//!   found by recorded ID, then by name + ownership tag (untagged = adopted, foreign = refused),
//!   and its cascade delete.
//! - [`children`]: one listener, pool and TCP health monitor per API port, reached only through
//!   this load balancer's own references (never a project-wide name lookup, which is where
//!   upstream picks up another cluster's listener of the same name).
//! - [`cidrs`]: the listeners' `allowed_cidrs` (IPv6 kept).
//! - [`members`]: pool members per (port, machine), for the machine controller.
//! - `octavia`: what the three read of Octavia alike: the load balancer body with its listener
//!   references, and provisioning status as progress.
//!
//! Nothing here waits: Octavia accepts one change at a time per load balancer and answers 409
//! while it is `PENDING_*`, so every function makes at most one Octavia write and returns
//! [`crate::Progress::Waiting`] (naming the resource awaited); the caller requeues and calls
//! again. The caller calls these only when `spec.apiServerLoadBalancer.enabled` is true.
//!
//! ## Request budget (capo-sim, warm session, 2 ports + floating IP; `tests/loadbalancer.rs`)
//! Create: 10 writes (LB, then listener, pool, monitor per port, FIP allocate, tag, associate)
//! plus reads that depend on how often the caller requeues while Octavia is busy (44 in the
//! test). Steady reconcile: 8 GETs (LB, 2 listeners, 2 pools, 2 monitors, FIP): 1 + 3 per port
//! + 1. Delete: FIP list/disassociate/delete, then cascade delete and one GET per requeue.

pub mod balancer;
pub mod children;
pub mod cidrs;
pub mod members;
mod octavia;

pub use balancer::{
    ApiLoadBalancer, LbInputs, delete_api_load_balancer, delete_load_balancer_named,
    ensure_api_load_balancer,
};
pub use members::{delete_member, ensure_member, ensure_port_member};

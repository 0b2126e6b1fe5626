//! Pure rendering of the inputs an Ansible bootstrap (BA) and control plane (ACP) provider reads
//! from capo, plus SSH key generation.
//!
//! Nothing here talks to Kubernetes or OpenStack: the controllers gather [`ClusterFacts`] (usually
//! with [`ClusterFacts::from_api`]), then store
//! - [`render_vars`] as `vars.yaml` and [`render_inventory`] as `inventory.yaml` in the Secret
//!   `<cluster>-ansible`, reporting [`unresolved`] in the `ExtensionsReady` condition and
//!   [`inventory_warnings`] as events;
//! - a key pair from [`generate_ed25519`] in the `kubernetes.io/ssh-auth` Secret `<cluster>-ssh`.
//!
//! Rendering is deterministic (maps are sorted, fields have a fixed order), so re-rendering the
//! same facts yields byte-identical documents and writing them never causes update storms.
//! The contract is described in `docs/ansible.md`.

mod error;
mod facts;
mod from_api;
mod inventory;
mod safety;
mod ssh;
mod vars;

#[cfg(test)]
mod test_fixtures;

pub use error::{Error, Result};
pub use facts::{BastionFacts, ClusterFacts, DEFAULT_SSH_PORT, DEFAULT_SSH_USER, HostFacts, Role};
pub use from_api::{ntp_server, webhook_enable};
pub use inventory::{
    BASTION_HOST, GROUP_BASTION, GROUP_ETCD, GROUP_K8S_CLUSTER, GROUP_KUBE_CONTROL_PLANE,
    GROUP_KUBE_NODE, inventory_warnings, render_inventory,
};
pub use ssh::{SSH_AUTH_PRIVATE_KEY, SSH_PUBLIC_KEY, SshKeyPair, generate_ed25519};
pub use vars::{CLUSTER_VARIABLES, RESERVATION_VARIABLES, render_vars, unresolved};

/// Key of `vars.yaml` in the Secret `<cluster>-ansible`.
pub const VARS_KEY: &str = "vars.yaml";
/// Key of `inventory.yaml` in the Secret `<cluster>-ansible`.
pub const INVENTORY_KEY: &str = "inventory.yaml";

//! capo cloud services: the idempotent `ensure_*` / `delete_*` functions the OpenStackCluster
//! controller calls, one module per OpenStack resource, and the pure planning they rely on.
//!
//! - [`plan`]: no IO. Managed security-group layout ([`plan::security_groups`]), the rule diff
//!   ([`plan::rule_diff`]), the control-plane endpoint decision ([`plan::endpoint`]) and failure
//!   domains from Nova availability zones ([`plan::failure_domains`]).
//! - [`networking`]: Neutron IO against a [`capo_openstack::Session`]: external network, cluster
//!   network and subnets (managed or pre-existing), router, security groups, VIP ports, floating
//!   IPs, and their deletion.
//! - [`cloud_provider`]: what the workload cluster's cloud-provider-openstack (CCM load
//!   balancers, floating IPs, security groups; CSI volumes and snapshots) left, swept at deletion.
//! - [`compute`]: Nova availability zones → `status.failureDomains`.
//! - [`identity`]: Keystone application credentials (one per cluster with the BA/ACP
//!   extension), adopted by name.
//! - [`progress`]: where a step stands (done, waiting for the cloud, stuck), the answer of
//!   every function here that may have to wait and of the controllers' steps.
//! - [`ownership`]: the Neutron tag that marks a resource as created (or adopted) by one
//!   OpenStackCluster, and how found resources are classified.
//!
//! ## Guarantees of every `ensure_*`
//! - **Idempotent**: a second call with the same inputs makes no write; lookups only.
//! - **Crash-safe**: nothing is created without first looking for it by recorded ID, then by
//!   deterministic name; a resource created but not yet tagged (crash in between) is found by
//!   name and tagged, never duplicated.
//! - **Ownership**: a resource with our name but another cluster's ownership tag is never
//!   touched; the call fails with [`Error::ForeignResource`] naming it. On a Neutron without
//!   the `standard-attr-tag` extension the first tag write fails with
//!   [`capo_openstack::Error::ExtensionMissing`]: nothing is made past that resource.
//! - **No waiting**: functions never sleep or poll. Neutron's network calls complete
//!   synchronously; a transient failure (5xx, 409 in use, 429) is returned as an error whose
//!   [`Error::is_retryable`] is true, and the caller requeues with backoff.
//! - Every function returns the IDs it ensured, so the caller can write them to status at once.
//!
//! ## Request budget (capo-sim, warm session; golden traces in `tests/golden/`)
//! Managed network + subnet + router + 2 security groups (no bastion, no LB): create 16
//! requests (3 reads; 13 writes: 5 creates, 5 tag writes, 1 router interface, and the rules
//! in one Neutron bulk create per group), steady reconcile 6 (all GETs: external network,
//! network, subnet, router, router ports, one list of the groups with their rules), rebuild
//! from names after a lost status 6, delete 10.
//! Tags are written with a separate `PUT .../tags` after the create, as upstream does: Neutron
//! refuses `tags` in the create body of every resource but ports ("Attribute 'tags' not
//! allowed in POST"), whatever its extension list says (`tag-creation` only lets the tags
//! sub-resource take several tags at once). A crash between create and tag write is healed
//! by adoption: an untagged resource with our name is ours to tag.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod cloud_provider;
pub mod compute;
pub mod error;
pub mod identity;
pub mod instance;
pub mod loadbalancer;
pub mod networking;
pub mod ownership;
pub mod plan;
pub mod probe;
pub mod progress;

pub use error::{Error, Result};
pub use ownership::{OWNER_TAG_PREFIX, Owner, Ownership};
pub use progress::{Progress, Wait};

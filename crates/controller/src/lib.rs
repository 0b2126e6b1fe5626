//! capo's reconcilers.
//!
//! - [`lifecycle`]: the one reconcile skeleton and [`lifecycle::Scope`] of every kind.
//! - [`cluster`]: OpenStackCluster → network, router, security groups, API endpoint, failure
//!   domains, bastion; and deletion of all of it.
//! - [`machine`]: OpenStackMachine → its OpenStackServer, state copied back, API traffic.
//! - [`server`]: OpenStackServer → ports, volumes, server (machines' servers and the bastion).
//! - [`machine_template`]: OpenStackMachineTemplate → `status.capacity` and `status.nodeInfo`
//!   from its flavor and image, for the cluster autoscaler (AutoScaleFromZero gate).
//! - [`identity_secret`]: the finalizer on identityRef Secrets while a capo object uses them.
//! - [`abandon`]: the `capo-abandon` annotation that lets an object whose credentials no longer
//!   work be deleted without its cloud resources.
//!
//! Shared pieces: [`context::Shared`] (client, sessions, options, metrics, stores, events; one
//! per manager) and [`context::Context`] (one per controller: concurrency, backoff, caches),
//! [`memo`] (what a controller remembers between reconciles, under typed keys),
//! [`informers`] (the watched stores owners and children are read from),
//! [`credentials`] (identityRef → session), [`conditions`], [`status`] (server-side apply of
//! status), [`runtime`] (error policy, instrumentation, watch filter), [`capi`] (the Cluster API
//! objects read), [`server_spec`] (machine spec → server spec).
//!
//! ## Guarantees common to every controller
//! The reconcile of every kind runs through [`lifecycle`], which documents them once: owners,
//! pause, finalizer before any cloud call, status written on change, failures reported by one
//! mapping, and the object's own status writes never waking it. Besides:
//! - A worker never waits on OpenStack: work in progress is a requeue at the progress pace
//!   ([`memo::Memo::delay`]: short first, growing, bounded, jittered); failures
//!   requeue with per-object backoff (the
//!   cloud's Retry-After wins; capacity problems and spec errors retry slowly, never stop).
//! - Owners and children are read from the manager's watched stores ([`informers`]), never
//!   with a GET per reconcile; Secrets are read live.
//! - Every ID goes to status with the next write after the step that created it (the cluster
//!   writes after each step; a server batches its resolution, ports and server ID into one
//!   write); a crash at any point is healed by the next reconcile, which finds what exists by
//!   recorded ID, then by deterministic name + ownership tag (see `capo_cloud`).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod abandon;
pub mod ansible_driven;
pub mod backoff;
pub mod capi;
pub mod cluster;
pub mod conditions;
pub mod context;
pub mod credentials;
pub mod error;
pub mod events;
pub mod fingerprint;
pub mod identity_secret;
pub mod informers;
pub mod ipam;
pub mod lifecycle;
pub mod machine;
pub mod machine_template;
pub mod memo;
pub mod metrics;
pub mod pace;
pub mod pool;
pub mod recent_reads;
pub mod runtime;
pub mod server;
pub mod server_spec;
pub mod status;
pub mod storage_migration;
pub mod stored;

pub use context::{Context, Options};
pub use error::{Error, Result};

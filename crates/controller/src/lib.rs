//! capo's reconcilers.
//!
//! - [`cluster`]: OpenStackCluster → network, router, security groups, API endpoint, failure
//!   domains, bastion; and deletion of all of it.
//!
//! Shared pieces: [`context::Context`] (client, sessions, options, backoff, convergence memo),
//! [`credentials`] (identityRef → session), [`conditions`], [`status`] (server-side apply of
//! status), [`runtime`] (error policy, instrumentation, watch filter), [`capi`] (the Cluster API
//! objects read), [`server_spec`] (machine spec → server spec).
//!
//! ## Guarantees common to every controller
//! - The finalizer is persisted before any cloud call; deletion runs only through it.
//! - A worker never waits on OpenStack: work in progress is a requeue after
//!   [`context::Options::requeue_pending`]; failures requeue with per-object backoff (the
//!   cloud's Retry-After wins; capacity problems and spec errors retry slowly, never stop).
//! - Every ID is written to status right after the step that created it; a crash at any point
//!   is healed by the next reconcile, which finds what exists by recorded ID, then by
//!   deterministic name + ownership tag (see `capo_cloud`).
//! - Paused objects (Cluster.spec.paused, or the `cluster.x-k8s.io/paused` annotation) get no
//!   cloud call and no write except their `Paused` condition.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod ansible_driven;
pub mod backoff;
pub mod capi;
pub mod cluster;
pub mod conditions;
pub mod context;
pub mod credentials;
pub mod error;
pub mod fingerprint;
pub mod machine;
pub mod metrics;
pub mod runtime;
pub mod server;
pub mod server_spec;
pub mod status;

pub use context::{Context, Options};
pub use error::{Error, Result};

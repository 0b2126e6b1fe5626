//! The OpenStackFloatingIPPool controller: a Cluster API IPAM provider handing out floating
//! IPs.
//!
//! Reconcile ([`crate::lifecycle`]): pause → finalizer → [`serve`] (release the addresses
//! being deleted, resolve the network, answer the claims, write status) or [`cleanup`].
//! Woken by the pool itself, by IPAddressClaims and by IPAddresses whose `spec.poolRef` names
//! it.
//!
//! ## Guarantees
//! - A claim is answered with an IPAddress named like it (owned by it, with upstream's
//!   finalizer, prefix 32, the pool in `poolRef`), then its `status.addressRef`.
//! - Pre-allocated addresses are handed out first, then floating IPs the pool allocated and
//!   got back, then new ones from `floatingIPNetwork` (default: the cloud's only external
//!   network) while fewer than `maxIPs` addresses are claimed; beyond that the claim waits
//!   and the pool reports MaxIPsReached.
//! - Claimed, available and failed addresses are recomputed every time from the IPAddresses
//!   and the project's floating IPs (one list), never from the pool's status: a floating IP is
//!   claimed exactly when an IPAddress holds it, so none is handed out twice.
//! - A floating IP the pool allocates is marked as the pool's in the create request itself
//!   (`capo_cloud::networking::floating_ip_pool`); killed at any point after the allocation
//!   (before the tag, before the IPAddress, before the claim's status), the next reconcile
//!   finds it unclaimed and hands it out, or finds the IPAddress and completes the claim:
//!   nothing is allocated twice or leaked.
//! - An IPAddress being deleted: with `reclaimPolicy: Delete` the floating IP the pool
//!   allocated is released first, then the finalizer is removed (pre-allocated addresses are
//!   never released); with `Retain` it becomes available again.
//! - The pool is deleted only when no IPAddress of it remains; the floating IPs it allocated
//!   are then released (pre-allocated ones are the user's and stay).
//! - An IPAddress whose claim is gone is deleted by the pool too (not only by Kubernetes'
//!   garbage collector); a claim whose IPAddress was deleted under it is served again.
//! - Claims and addresses of a paused Cluster (or carrying the paused annotation) are left
//!   alone until it resumes ([`paused`]).

mod claims;
mod cleanup;
mod ledger;
mod paused;
mod scope;
mod serve;

use std::sync::Arc;

use capo_api::constants::FLOATING_IP_POOL_FINALIZER;
use capo_api::constants::condition_reasons::UNABLE_TO_FIND_NETWORK;
use capo_api::constants::condition_types::FLOATING_IP_POOL_READY;
use capo_api::conversion::server::identity_to_v1beta1;
use capo_api::v1alpha1::{OpenStackFloatingIPPool, OpenStackFloatingIPPoolStatus};
use capo_api::v1beta1::OpenStackIdentityReference;
use capo_cloud::networking::floating_ip_pool::PoolOwner;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};

use crate::context::Context;
use crate::error::Result;
use crate::ipam;
use crate::lifecycle::{self, Owners, Reconciled, Reconciler};
use crate::runtime::{error_policy, primary_changes};
use claims::ipam_api;
use scope::Scope;

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "openstackfloatingippool";

/// Run the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    // The shared watch (the identity Secrets' finalizer reads the pools too).
    let informer = &ctx.shared.informers.openstack_floating_ip_pools;
    let trigger = primary_changes(&ctx, informer.subscribe());
    let store = informer.store();
    // Claims and addresses wake their pool on every change, deletions included (a claim
    // without finalizers is gone at once: its deletion is the only event). The pool's own
    // writes come back as one more reconcile that finds nothing to do.
    let claims = watcher(ipam_api(&ctx, &ipam::claim_resource()), ipam_config())
        .default_backoff()
        .modify(crate::informers::trim)
        .touched_objects();
    let addresses = watcher(ipam_api(&ctx, &ipam::address_resource()), ipam_config())
        .default_backoff()
        .modify(crate::informers::trim)
        .touched_objects();
    Controller::for_shared_stream(trigger, store)
        // Objects whose peers' waits just ended (see `crate::pace`).
        .reconcile_on(crate::runtime::nudged(&ctx, CONTROLLER))
        .watches_stream_with(claims, pool_of, ipam::claim_resource())
        .watches_stream_with(addresses, pool_of, ipam::address_resource())
        .with_config(ControllerConfig::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Reconciler::new(ctx))
        .for_each(|_| futures::future::ready(()))
        .await;
}

fn ipam_config() -> watcher::Config {
    watcher::Config::default().any_semantic()
}

/// The pool a claim or an address names.
fn pool_of(obj: DynamicObject) -> Option<ObjectRef<OpenStackFloatingIPPool>> {
    let ns = obj.namespace()?;
    let pool = ipam::floating_ip_pool_of(&obj)?;
    Some(ObjectRef::new(pool).within(&ns))
}

async fn reconcile(
    pool: Arc<OpenStackFloatingIPPool>,
    r: Arc<Reconciler<OpenStackFloatingIPPool>>,
) -> Result<Action> {
    lifecycle::reconcile(pool, r).await
}

impl Reconciled for OpenStackFloatingIPPool {
    const CONTROLLER: &'static str = CONTROLLER;
    const FINALIZER: &'static str = FLOATING_IP_POOL_FINALIZER;
    /// Spec errors of a pool are its network's (missing, ambiguous, not external).
    const INVALID_SPEC_REASON: &'static str = UNABLE_TO_FIND_NETWORK;
    lifecycle::status_of!(OpenStackFloatingIPPoolStatus, capo_api::v1beta2::Condition);
    type CloudOwner = PoolOwner;
    /// A pool hangs off nothing.
    type Owners = ();
    type State = ();

    fn state(_: &Context) {}

    /// Provisioned once the network is resolved.
    fn provisioned(status: &Self::Status) -> bool {
        status.floating_ip_network.is_some()
    }
    fn first_step(_: &Self::Status) -> &'static str {
        FLOATING_IP_POOL_READY
    }
    /// An unset `type` is a Secret (the API server's default).
    fn identity_ref(&self) -> Option<OpenStackIdentityReference> {
        Some(identity_to_v1beta1(&self.spec.identity_ref))
    }
    fn recorded(&self, status: &OpenStackFloatingIPPoolStatus) -> Vec<String> {
        let ips = status.available_ips.iter().chain(&status.claimed_ips);
        crate::abandon::ids("floating IP", ips.map(String::as_str))
    }
    fn cloud_owner(&self) -> PoolOwner {
        PoolOwner {
            // The first UID, kept in an annotation: after `clusterctl move` the floating IPs
            // the pool allocated are still recognised as its own.
            uid: crate::runtime::owner_id(self),
            namespace: self.namespace().unwrap_or_default(),
            name: self.name_any(),
        }
    }

    async fn owners(_: &Self, _: &Context, _: bool) -> Result<Owners<()>> {
        Ok(Owners::Found(()))
    }

    fn paused(_: &()) -> bool {
        false
    }

    async fn apply(scope: &mut Scope<'_>, _: ()) -> Result<Action> {
        serve::serve(scope).await
    }

    async fn cleanup(scope: &mut Scope<'_>, _: ()) -> Result<capo_cloud::Progress> {
        cleanup::cleanup(scope).await
    }
}

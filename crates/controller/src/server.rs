//! The OpenStackServer controller (machines' servers and the bastion).
//!
//! Reconcile: pause → finalizer → [`apply`] (resolve into `status.resolved`, written first;
//! ports, volumes, server; addresses) or [`cleanup`] (server, trunks, ports, volumes).
//!
//! ## Guarantees
//! - No cloud call before the finalizer is persisted; nothing is created before
//!   `status.resolved` is persisted.
//! - Every port ID is written to `status.resources` right after its create returns, the
//!   server ID to `status.instanceID` right after the create returns; resources are adopted
//!   by recorded ID, else by name + ownership (`capo_cloud::instance`), so a lost reply or a
//!   crash never duplicates anything.
//! - Nothing waits in-line: BUILD, volumes `creating` and deletes in progress requeue after
//!   [`crate::Options::requeue_pending`].
//! - A server in ERROR (NoValidHost, quota) is reported with Nova's fault in InstanceReady and
//!   Ready, deleted (ports and volumes are kept for the retry) and retried after
//!   [`crate::Options::slow_retry`], never frozen.
//! - A server deleted out of band is reported (reason InstanceDeleted), never silently
//!   re-created.
//! - A converged ACTIVE server costs one OpenStack request per reconcile (a GET of the server).
//! - Image, flavor, server group, network, subnet and security group lookups are cached for
//!   [`LOOKUP_TTL`] across servers of the same cloud project.
//! - The user data is read from the Secret at create time only and never logged.
//! - `spec.floatingIPPoolRef`: an IPAddressClaim `<server>-floating-ip-address` (owned, with
//!   the claim finalizer) is made once the server is ACTIVE; the pool's floating IP is put on
//!   the first port and reported as ExternalIP (FloatingAddressFromPoolReady); the server is
//!   ready only then. On delete the claim is released.

mod apply;
mod cache;
mod cleanup;
mod hold;
mod pool_ip;
mod resolve;
mod scope;
mod steady;

use std::sync::Arc;
use std::time::Duration;

use capo_api::constants::{CLUSTER_NAME_LABEL, SERVER_FINALIZER};
use capo_api::v1alpha1::OpenStackServer;
use futures::StreamExt;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::{Api, ResourceExt};

pub use cache::LookupCache;

use crate::capi::Cluster;
use crate::cluster::PAUSED_CONDITION;
use crate::context::Context;
use crate::error::{Error, KubeContext, Result};
use crate::runtime::{
    ensure_finalizer, error_policy, has_paused_annotation, instrumented, is_deleting,
    remove_finalizer, watcher_config,
};
use scope::Scope;

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "openstackserver";

/// How long resolved lookups are reused.
pub const LOOKUP_TTL: Duration = Duration::from_secs(300);

/// What the reconciles of this controller share.
struct ServerContext {
    ctx: Arc<Context>,
    cache: LookupCache,
    holds: hold::Holds,
}

/// Run the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let servers = ctx.watched_api::<OpenStackServer>();
    let wc = watcher_config(&ctx);
    let concurrency = ctx.options.concurrency;
    let sctx = Arc::new(ServerContext {
        ctx,
        cache: LookupCache::new(LOOKUP_TTL),
        holds: hold::Holds::default(),
    });
    let controller = Controller::new(servers, wc.clone());
    let store = controller.store();
    controller
        .watches_stream(pause_changes(&sctx.ctx, wc), move |c: Cluster| {
            servers_of_cluster(&store, &c)
        })
        .with_config(ControllerConfig::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown)
        .run(
            reconcile,
            |o, e: &Error, c: Arc<ServerContext>| error_policy(o, e, c.ctx.clone()),
            sctx,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Cluster API Clusters, passed on only when first seen and when `spec.paused` flips: a paused
/// server waits for a change, and resuming its Cluster is that change (`clusterctl move`
/// creates the servers in the target while the Cluster is paused, then resumes it). The
/// Clusters' frequent status writes are filtered out.
fn pause_changes(
    ctx: &Context,
    wc: kube::runtime::watcher::Config,
) -> impl futures::Stream<Item = std::result::Result<Cluster, kube::runtime::watcher::Error>>
+ Send
+ 'static {
    use kube::runtime::WatchStreamExt;
    kube::runtime::watcher(ctx.watched_api::<Cluster>(), wc)
        .default_backoff()
        .applied_objects()
        .predicate_filter(
            |c: &Cluster| Some(u64::from(c.is_paused())),
            Default::default(),
        )
}

/// The servers labelled with the Cluster's name in its namespace.
fn servers_of_cluster(
    store: &kube::runtime::reflector::Store<OpenStackServer>,
    cluster: &Cluster,
) -> Vec<kube::runtime::reflector::ObjectRef<OpenStackServer>> {
    let ns = cluster.namespace();
    let name = cluster.name_any();
    store
        .state()
        .into_iter()
        .filter(|s| s.namespace() == ns && s.labels().get(CLUSTER_NAME_LABEL) == Some(&name))
        .map(|s| kube::runtime::reflector::ObjectRef::from_obj(&*s))
        .collect()
}

async fn reconcile(oss: Arc<OpenStackServer>, sctx: Arc<ServerContext>) -> Result<Action> {
    let ctx = sctx.ctx.clone();
    instrumented(CONTROLLER, &*oss, &ctx, reconcile_inner(&oss, &sctx)).await
}

async fn reconcile_inner(oss: &OpenStackServer, sctx: &ServerContext) -> Result<Action> {
    let ctx = &sctx.ctx;
    let ns = oss.namespace().unwrap_or_default();
    let api: Api<OpenStackServer> = Api::namespaced(ctx.client.clone(), &ns);
    let paused = has_paused_annotation(oss) || cluster_paused(ctx, oss).await?;
    if set_paused(&api, oss, paused).await? {
        tracing::debug!(name = %oss.name_any(), "paused");
        return Ok(Action::await_change());
    }
    let mut scope = Scope::new(ctx, &sctx.cache, &sctx.holds, oss);
    if is_deleting(oss) {
        if !oss.finalizers().iter().any(|f| f == SERVER_FINALIZER) {
            return Ok(Action::await_change());
        }
        return match cleanup::cleanup(&mut scope).await? {
            Some(action) => Ok(action),
            None => {
                remove_finalizer(&api, oss, SERVER_FINALIZER).await?;
                Ok(Action::await_change())
            }
        };
    }
    if ensure_finalizer(&api, oss, SERVER_FINALIZER).await? {
        return Ok(Action::await_change());
    }
    apply::apply(&mut scope).await
}

/// Record pause in the `Paused` condition (written only when it changes); true when paused.
async fn set_paused(
    api: &Api<OpenStackServer>,
    oss: &OpenStackServer,
    paused: bool,
) -> Result<bool> {
    let mut status = oss.status.clone().unwrap_or_default();
    let current =
        crate::conditions::get(&status.conditions, PAUSED_CONDITION).map(|c| c.status == "True");
    if current == Some(paused) || (current.is_none() && !paused) {
        return Ok(paused);
    }
    let state = if paused {
        crate::conditions::State::True
    } else {
        crate::conditions::State::info("NotPaused", "")
    };
    crate::conditions::set(&mut status.conditions, PAUSED_CONDITION, state);
    crate::status::apply_status(api, &oss.name_any(), &status).await?;
    Ok(paused)
}

/// The Cluster named by the `cluster.x-k8s.io/cluster-name` label is paused.
async fn cluster_paused(ctx: &Context, oss: &OpenStackServer) -> Result<bool> {
    let Some(name) = oss.labels().get(CLUSTER_NAME_LABEL) else {
        return Ok(false);
    };
    let ns = oss.namespace().unwrap_or_default();
    let cluster = Api::<Cluster>::namespaced(ctx.client.clone(), &ns)
        .get_opt(name)
        .await
        .kctx(|| format!("get Cluster {ns}/{name}"))?;
    Ok(cluster.is_some_and(|c| c.is_paused()))
}

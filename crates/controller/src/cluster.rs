//! The OpenStackCluster controller.
//!
//! Reconcile: owner Cluster → pause → finalizer → [`apply`] (network, router, security groups,
//! API endpoint, failure domains, ready, bastion) or [`cleanup`] (machines gone, bastion, API
//! floating IPs, load balancer, router, network, security groups).
//!
//! ## Guarantees
//! - No cloud call before the finalizer is persisted; none while paused or externally managed.
//! - Each step writes the IDs it ensured to status before the next step starts.
//! - A converged cluster whose spec and status did not change costs at most two OpenStack
//!   requests per reconcile ([`steady`]); it is fully re-verified every
//!   [`crate::Options::verify_period`] and after every restart of the manager.
//! - Deletion finishes even when resources are already gone, and never deletes what the user
//!   provided (pre-existing network, subnets, BYO router, external network, a requested
//!   floating IP address).
//!
//! ## Assumptions
//! - Cluster API sets an owner reference to the Cluster on the OpenStackCluster; until then
//!   nothing happens (as upstream).
//! - The bastion's server is realised by the OpenStackServer controller.

mod apply;
mod bastion;
mod cleanup;
mod endpoint;
mod extensions;
mod network;
mod scope;
mod steady;

use std::sync::Arc;

use capo_api::constants::{CLUSTER_FINALIZER, CLUSTER_NAME_LABEL, condition_types};
use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::{OpenStackCluster, OpenStackClusterStatus, OpenStackMachine};
use futures::StreamExt;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};

use crate::capi::{CAPI_GROUP, Cluster, MANAGED_BY_ANNOTATION};
use crate::conditions::{self, State};
use crate::context::Context;
use crate::error::{KubeContext, Result};
use crate::runtime::{
    ensure_finalizer, error_policy, has_paused_annotation, instrumented, primary_stream,
    remove_finalizer, watcher_config,
};

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "openstackcluster";

/// Condition type of the v1beta2 contract reporting pause.
pub const PAUSED_CONDITION: &str = "Paused";

/// Annotation asking the controller to delete security-group rules it did not create
/// (default: hand-added rules are left alone).
pub const STRICT_RULES_ANNOTATION: &str =
    "infrastructure.cluster.x-k8s.io/capo-strict-security-group-rules";

/// Run the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let clusters = ctx.watched_api::<OpenStackCluster>();
    let servers = ctx.watched_api::<OpenStackServer>();
    let capi = ctx.watched_api::<Cluster>();
    let machines = ctx.watched_api::<OpenStackMachine>();
    let index = ctx.clone();
    let wc = watcher_config(&ctx);
    let (reader, trigger) = primary_stream(clusters, wc.clone());
    Controller::for_stream(trigger, reader)
        .owns(servers, wc.clone())
        .watches(capi, wc.clone(), |c: Cluster| {
            let ns = c.namespace();
            c.spec
                .infrastructure_ref
                .filter(|r| r.kind == "OpenStackCluster")
                .map(|r| {
                    let o = ObjectRef::new(&r.name);
                    match ns {
                        Some(ns) => o.within(&ns),
                        None => o,
                    }
                })
        })
        // Machines coming, going or changing address re-render the Ansible inventory.
        .watches(machines, wc.clone(), move |m: OpenStackMachine| {
            let ns = m.namespace()?;
            let cluster = m.labels().get(CLUSTER_NAME_LABEL)?.clone();
            let osc = index.osc_of(&ns, &cluster).unwrap_or(cluster);
            Some(ObjectRef::new(&osc).within(&ns))
        })
        .with_config(ControllerConfig::default().concurrency(ctx.options.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// One reconcile of an OpenStackCluster (public for tests that drive reconciles directly).
pub async fn reconcile(osc: Arc<OpenStackCluster>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(
        CONTROLLER,
        &*osc,
        &ctx,
        reconcile_inner(osc.clone(), ctx.clone()),
    )
    .await
}

async fn reconcile_inner(osc: Arc<OpenStackCluster>, ctx: Arc<Context>) -> Result<Action> {
    let ns = osc.namespace().unwrap_or_default();
    let api: Api<OpenStackCluster> = Api::namespaced(ctx.client.clone(), &ns);
    if osc.annotations().contains_key(MANAGED_BY_ANNOTATION) {
        tracing::debug!(name = %osc.name_any(), "externally managed; skipped");
        return Ok(Action::await_change());
    }
    let deleting = osc.metadata.deletion_timestamp.is_some();
    let cluster = owner_cluster(&ctx, &osc).await?;
    if cluster.is_none() && !deleting {
        tracing::info!(namespace = %ns, name = %osc.name_any(), "waiting for the owner Cluster to set an owner reference");
        return Ok(Action::await_change());
    }
    let paused = cluster.as_ref().is_some_and(Cluster::is_paused) || has_paused_annotation(&*osc);
    if paused {
        set_paused(&api, &osc, true).await?;
        return Ok(Action::await_change());
    }
    // Record the unpause and carry the new condition into this reconcile, so its own status
    // writes keep `Paused=False` instead of dropping it.
    let osc = match set_paused(&api, &osc, false).await? {
        Some(status) => {
            let mut o = (*osc).clone();
            o.status = Some(status);
            Arc::new(o)
        }
        None => osc,
    };
    let osc = crate::ansible_driven::with_defaults_arc(osc, cluster.as_ref());
    let cluster_name = cluster
        .as_ref()
        .map(|c| c.name_any())
        .or_else(|| owner_cluster_name(&osc))
        .unwrap_or_default();
    if deleting {
        if !osc.finalizers().iter().any(|f| f == CLUSTER_FINALIZER) {
            return Ok(Action::await_change());
        }
        return match cleanup::cleanup(&osc, &cluster_name, &ctx).await? {
            Some(action) => Ok(action),
            None => {
                remove_finalizer(&api, &*osc, CLUSTER_FINALIZER).await?;
                Ok(Action::await_change())
            }
        };
    }
    if ensure_finalizer(&api, &*osc, CLUSTER_FINALIZER).await? {
        return Ok(Action::await_change());
    }
    apply::apply(&osc, &ctx).await
}

fn owner_cluster_name(osc: &OpenStackCluster) -> Option<String> {
    osc.owner_references()
        .iter()
        .find(|r| r.kind == "Cluster" && r.api_version.starts_with(&format!("{CAPI_GROUP}/")))
        .map(|r| r.name.clone())
}

/// The owner Cluster, if the owner reference is set and the Cluster exists.
async fn owner_cluster(ctx: &Context, osc: &OpenStackCluster) -> Result<Option<Cluster>> {
    let Some(name) = owner_cluster_name(osc) else {
        return Ok(None);
    };
    let ns = osc.namespace().unwrap_or_default();
    Api::<Cluster>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&name)
        .await
        .kctx(|| format!("get Cluster {ns}/{name}"))
}

/// Record pause in the `Paused` condition; the status written, when a write was needed.
async fn set_paused(
    api: &Api<OpenStackCluster>,
    osc: &OpenStackCluster,
    paused: bool,
) -> Result<Option<OpenStackClusterStatus>> {
    let mut status = osc.status.clone().unwrap_or_default();
    let current = conditions::get(&status.conditions, PAUSED_CONDITION).map(|c| c.status == "True");
    if current == Some(paused) || (current.is_none() && !paused) {
        return Ok(None);
    }
    let state = if paused {
        State::True
    } else {
        State::info("NotPaused", "")
    };
    conditions::set(&mut status.conditions, PAUSED_CONDITION, state);
    crate::status::apply_status(api, &osc.name_any(), &status).await?;
    Ok(Some(status))
}

/// Condition types this controller owns, in upstream's names.
pub const CONDITIONS: [&str; 5] = [
    condition_types::READY,
    condition_types::NETWORK_READY,
    condition_types::ROUTER_READY,
    condition_types::SECURITY_GROUPS_READY,
    condition_types::API_ENDPOINT_READY,
];

//! The OpenStackMachineTemplate controller (upstream's AutoScaleFromZero gate): writes what a
//! node of the template offers, for the cluster autoscaler scaling a MachineDeployment up
//! from zero replicas, when no node exists to look at.
//!
//! Reconcile ([`crate::lifecycle`]): owner Cluster → its OpenStackCluster → pause → the
//! ports' `allowedAddressPairs` carried to the machines cloned from the template
//! ([`address_pairs`], Kubernetes only) → flavor and image ([`lookup`], cached) →
//! `status.capacity` and `status.nodeInfo` ([`capacity`]) and Ready. As upstream, this
//! controller runs only with the AutoScaleFromZero gate; without it, a machine's pairs are
//! changed on the OpenStackMachine.
//!
//! ## Guarantees and assumptions
//! - Only templates with an owner reference to a Cluster API Cluster are reconciled, as
//!   upstream: the templates of a ClusterClass hold values its patches replace, and are
//!   skipped. A paused Cluster or template gets no OpenStack request.
//! - Credentials: the template's `identityRef`, else its Cluster's OpenStackCluster's (as
//!   upstream); while neither is known, Ready says so and the template is retried.
//! - The template creates nothing in the cloud, so it gets no finalizer and its deletion is
//!   Kubernetes' alone.
//! - Values and formats are upstream's (`cpu: "4"`, `memory: 8Gi`, ...); unlike upstream,
//!   the whole capacity is recomputed, so a key the new flavor does not have (ephemeral
//!   disk) is removed rather than left from the old one. An image without `os_type` gives no
//!   `nodeInfo`.
//! - Status is written only when it changed; a change is announced by one Normal event.
//! - A flavor or image that cannot be read (gone, ambiguous, credentials) is reported on
//!   Ready with the cloud's message and a Warning event, the last capacity is kept, and the
//!   template is retried on the slow backoff (never at full speed); a fixed spec is
//!   reconciled at once, a fixed cloud at the next retry.
//! - A converged template is read again every sync period, through the lookup caches.

mod address_pairs;
mod capacity;
mod lookup;

use std::sync::Arc;

use capo_api::constants::condition_reasons::{
    INVALID_MACHINE_SPEC, WAITING_FOR_CLUSTER_INFRASTRUCTURE,
};
use capo_api::constants::condition_types::READY;
use capo_api::v1beta1::{
    OpenStackCluster, OpenStackIdentityReference, OpenStackMachineTemplate,
    OpenStackMachineTemplateStatus,
};
use capo_cloud::{Progress, Wait};
use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};

pub use address_pairs::APPLIED_ANNOTATION;
pub use capacity::{OS_TYPE_PROPERTY, binary_si, decimal_si};
pub use lookup::Lookups;

use crate::capi::{CAPI_GROUP, Cluster};
use crate::conditions::State;
use crate::context::Context;
use crate::error::Result;
use crate::lifecycle::{self, Owners, Reconciled, Reconciler};
use crate::runtime::{cluster_pause_changes, error_policy, primary_stream, watcher_config};
use crate::server::LookupCache;
use crate::stored::Stored;

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "openstackmachinetemplate";

/// Run the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let templates = ctx.shared.watched_api::<Stored<OpenStackMachineTemplate>>();
    let wc = watcher_config(&ctx);
    let (store, trigger) = primary_stream(templates, wc);
    Controller::for_stream(trigger, store.clone())
        // Objects whose peers' waits just ended (see `crate::pace`).
        .reconcile_on(crate::runtime::nudged(&ctx, CONTROLLER))
        .watches_shared_stream(cluster_pause_changes(&ctx), move |c: Arc<Cluster>| {
            templates_of_cluster(&store, &c)
        })
        .with_config(ControllerConfig::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Reconciler::new(ctx))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// The templates owned by `cluster`.
fn templates_of_cluster(
    store: &Store<Stored<OpenStackMachineTemplate>>,
    cluster: &Cluster,
) -> Vec<ObjectRef<Stored<OpenStackMachineTemplate>>> {
    let ns = cluster.namespace();
    let name = cluster.name_any();
    store
        .state()
        .into_iter()
        .filter(|t| t.namespace() == ns && owner_cluster(t) == Some(name.as_str()))
        .map(|t| ObjectRef::from_obj(&*t))
        .collect()
}

/// One reconcile of an OpenStackMachineTemplate.
pub async fn reconcile(
    osmt: Arc<Stored<OpenStackMachineTemplate>>,
    r: Arc<Reconciler<Stored<OpenStackMachineTemplate>>>,
) -> Result<Action> {
    lifecycle::reconcile(osmt, r).await
}

/// One reconcile's view of an OpenStackMachineTemplate.
type Scope<'a> = lifecycle::Scope<'a, Stored<OpenStackMachineTemplate>>;

/// What a template hangs off.
pub struct TemplateOwners {
    cluster: Cluster,
    osc: Option<OpenStackCluster>,
}

impl Reconciled for Stored<OpenStackMachineTemplate> {
    const CONTROLLER: &'static str = CONTROLLER;
    // Nothing is created in the cloud: no finalizer (upstream has none either).
    const FINALIZER: &'static str = "";
    const INVALID_SPEC_REASON: &'static str = INVALID_MACHINE_SPEC;
    lifecycle::status_of!(OpenStackMachineTemplateStatus);
    lifecycle::stored_status!();
    type CloudOwner = ();
    type Owners = TemplateOwners;
    type State = Lookups;

    fn state(ctx: &Context) -> Lookups {
        Lookups::new(ctx.shared.options.lookup_ttl)
    }

    /// Never: a flavor missing now is the spec's fault whatever was computed before, so it
    /// is reported as InvalidMachineSpec.
    fn provisioned(_: &Self::Status) -> bool {
        false
    }
    fn first_step(_: &Self::Status) -> &'static str {
        READY
    }
    fn identity_ref(&self) -> Option<OpenStackIdentityReference> {
        self.spec.template.spec.identity_ref.as_deref().cloned()
    }
    fn cloud_owner(&self) {}

    async fn owners(osmt: &Self, ctx: &Context, deleting: bool) -> Result<Owners<TemplateOwners>> {
        if deleting {
            return Ok(Owners::Skip("being deleted; nothing to clean up"));
        }
        let ns = osmt.namespace().unwrap_or_default();
        let Some(name) = owner_cluster(osmt) else {
            return Ok(Owners::Skip(
                "no owner Cluster (not yet set, or a ClusterClass template)",
            ));
        };
        let Some(cluster) = ctx.shared.informers.clusters.get(&ns, name).await? else {
            return Ok(Owners::Wait("the owner Cluster is not seen yet"));
        };
        let osc_name = cluster
            .spec
            .infrastructure_ref
            .as_ref()
            .filter(|r| r.kind == "OpenStackCluster")
            .map(|r| r.name.clone())
            .unwrap_or_default();
        let osc = (ctx
            .shared
            .informers
            .openstack_clusters
            .get(&ns, &osc_name)
            .await?)
            .map(|o| o.0);
        Ok(Owners::Found(TemplateOwners { cluster, osc }))
    }

    fn paused(owners: &TemplateOwners) -> bool {
        owners.cluster.is_paused()
    }

    /// The OpenStackCluster's identityRef when the template names none.
    fn effective(obj: Arc<Self>, owners: &TemplateOwners) -> Arc<Self> {
        match &owners.osc {
            Some(osc) if obj.identity_ref().is_none() => {
                let mut t = (*obj).clone();
                t.spec.template.spec.identity_ref = Some(Box::new(osc.spec.identity_ref.clone()));
                Arc::new(t)
            }
            _ => obj,
        }
    }

    async fn preconditions(scope: &mut Scope<'_>, _: &TemplateOwners) -> Result<Option<Action>> {
        if scope.obj.identity_ref().is_some() {
            return Ok(None);
        }
        let why = "waiting for the Cluster's OpenStackCluster (the template names no identityRef)";
        let w = Wait::new("OpenStackCluster", "", why);
        let action = scope
            .waiting(READY, WAITING_FOR_CLUSTER_INFRASTRUCTURE, w)
            .await?;
        Ok(Some(action))
    }

    async fn apply(scope: &mut Scope<'_>, owners: TemplateOwners) -> Result<Action> {
        let cluster = owners.cluster.name_any();
        address_pairs::carry(&scope.ctx.shared.client, scope.obj, &cluster).await?;
        apply(scope).await
    }

    async fn cleanup(_: &mut Scope<'_>, _: TemplateOwners) -> Result<Progress> {
        // Unreachable without a finalizer; nothing to delete either way.
        Ok(Progress::Done(()))
    }
}

/// Read flavor and image, write capacity and nodeInfo.
async fn apply(scope: &mut Scope<'_>) -> Result<Action> {
    let s = scope.session().await?;
    let cache_scope = LookupCache::scope_of(&s).await;
    let spec = &scope.obj.spec.template.spec;
    let lookups = scope.state;
    let flavor = lookups.flavor(&s, &cache_scope, spec).await?;
    let client = &scope.ctx.shared.client;
    let image = match lookups
        .image(&s, &cache_scope, client, &scope.namespace, spec)
        .await?
    {
        Progress::Done(image) => image,
        Progress::Waiting(w) => return scope.waiting(READY, "WaitingForImage", w).await,
        Progress::Stuck(why) => {
            let w = Wait::new("image", "", why);
            return scope.waiting(READY, "WaitingForImage", w).await;
        }
    };
    let capacity = capacity::capacity(&flavor, spec.root_volume.as_deref());
    let node_info = capacity::node_info(&image);
    let changed = scope.status.capacity != capacity || scope.status.node_info != node_info;
    let note = changed.then(|| describe(&capacity, node_info.as_ref(), &flavor.name));
    scope.status.capacity = capacity;
    scope.status.node_info = node_info;
    scope.set(READY, State::True);
    scope.flush().await?;
    // Done waiting on anything: a later wait starts again at the pending pace.
    scope.forget();
    if let Some(note) = note {
        scope
            .event(
                EventType::Normal,
                "CapacityUpdated",
                "Reconcile",
                Some(note),
            )
            .await;
    }
    Ok(scope.resync_later())
}

/// `flavor m1.large: cpu=4 memory=8Gi storage=80Gi, os linux`, for the event.
fn describe(
    capacity: &std::collections::BTreeMap<
        String,
        k8s_openapi::apimachinery::pkg::api::resource::Quantity,
    >,
    node_info: Option<&capo_api::v1beta1::NodeInfo>,
    flavor: &str,
) -> String {
    let values: Vec<String> = capacity
        .iter()
        .map(|(k, v)| format!("{k}={}", v.0))
        .collect();
    let os = node_info
        .and_then(|n| n.operating_system.as_deref())
        .unwrap_or("not given by the image");
    format!("flavor {flavor}: {}, os {os}", values.join(" "))
}

/// Name of the Cluster API Cluster owning `osmt`, if any.
fn owner_cluster(osmt: &OpenStackMachineTemplate) -> Option<&str> {
    osmt.owner_references()
        .iter()
        .find(|r| r.kind == "Cluster" && r.api_version.starts_with(&format!("{CAPI_GROUP}/")))
        .map(|r| r.name.as_str())
}

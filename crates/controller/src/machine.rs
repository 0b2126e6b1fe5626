//! The OpenStackMachine controller.
//!
//! Reconcile (upstream's flow, through [`crate::lifecycle`]): owner Machine → Cluster (label
//! `cluster.x-k8s.io/cluster-name`) → OpenStackCluster (Cluster.spec.infrastructureRef) →
//! pause → wait for cluster infrastructure (WaitingForClusterInfrastructure) and bootstrap
//! data (WaitingForBootstrapData) → finalizer → [`apply`] (OpenStackServer named like the machine,
//! state copied back, API traffic for control-plane machines) or [`cleanup`].
//!
//! ## Guarantees
//! - No OpenStackServer before the finalizer is persisted.
//! - The OpenStackServer is owned by the machine (controller reference), labelled with the
//!   cluster, and does every OpenStack create and delete of the machine's server (see
//!   [`crate::server`]). Its spec is written once, but for its ports' `allowedAddressPairs`,
//!   which follow the machine's spec and the cluster's keepalived VIPs (the server controller
//!   then updates the ports).
//! - providerID is upstream's `openstack://<region>/<instanceID>` (region of the identityRef,
//!   usually empty).
//! - A server deleted out of band sets Ready False with reason InstanceDeleted for good (v1beta2
//!   has no failureReason), so a MachineHealthCheck remediates; a server in ERROR only makes
//!   Ready False (the server controller retries it).
//! - Control-plane machines: one LB member per API port while the machine lives, removed
//!   before its server is deleted; without a load balancer the API floating IP is put on the
//!   machine's first port when nobody holds it, and a deleted machine hands it to another live
//!   control-plane machine or disassociates it — it is never deleted.
//! - A ready machine whose inputs did not change makes no OpenStack request
//!   (fingerprint memo, see [`steady`]).

mod apply;
mod cleanup;
mod extensions;
mod ingress;
mod scope;
mod steady;

use std::sync::Arc;

use capo_api::constants::condition_reasons::{
    INVALID_MACHINE_SPEC, WAITING_FOR_BOOTSTRAP_DATA, WAITING_FOR_CLUSTER_INFRASTRUCTURE,
};
use capo_api::constants::condition_types::{INSTANCE_READY, READY};
use capo_api::constants::{CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, MACHINE_FINALIZER};
use capo_api::v1beta1::{OpenStackCluster, OpenStackMachine, OpenStackMachineStatus};
use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{ObjectRef, Store};

use crate::capi::{CAPI_GROUP, Cluster, Machine};
use crate::conditions::State;
use crate::context::Context;
use crate::error::Result;
use crate::lifecycle::{self, Owners, Reconciled, Reconciler};
use crate::runtime::{all_changes, error_policy, primary_changes, spec_changes};
use crate::stored::Stored;
use scope::Scope;

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "openstackmachine";

/// Run the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let informers = &ctx.shared.informers;
    let store = informers.openstack_machines.store();
    let trigger = primary_changes(&ctx, informers.openstack_machines.subscribe());
    Controller::for_shared_stream(trigger, store.clone())
        // Objects whose peers' waits just ended (see `crate::pace`).
        .reconcile_on(crate::runtime::nudged(&ctx, CONTROLLER))
        // Owned servers, whichever version their owner reference names.
        .watches_shared_stream(
            all_changes(informers.openstack_servers.subscribe()),
            |oss: Arc<capo_api::v1alpha1::OpenStackServer>| {
                crate::stored::owners_of::<OpenStackMachine, _>(&*oss)
            },
        )
        .watches_shared_stream(
            spec_changes(informers.machines.subscribe()),
            |m: Arc<Machine>| {
                let r = m.spec.infrastructure_ref.as_ref()?;
                r.object_ref(m.namespace().as_deref())
            },
        )
        .watches_shared_stream(
            all_changes(informers.openstack_clusters.subscribe()),
            move |osc: Arc<Stored<OpenStackCluster>>| machines_of_cluster(&store, &osc),
        )
        .with_config(ControllerConfig::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Reconciler::new(ctx))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Every machine of the cluster of `osc` (its readiness, network and load balancer changes
/// matter to them all).
fn machines_of_cluster(
    store: &Store<Stored<OpenStackMachine>>,
    osc: &OpenStackCluster,
) -> Vec<ObjectRef<Stored<OpenStackMachine>>> {
    let ns = osc.namespace();
    let Some(cluster) = osc.cluster_name() else {
        return Vec::new();
    };
    store
        .state()
        .into_iter()
        .filter(|m| m.namespace() == ns && m.labels().get(CLUSTER_NAME_LABEL) == Some(&cluster))
        .map(|m| ObjectRef::from_obj(&*m))
        .collect()
}

/// One reconcile of an OpenStackMachine (public for tests that drive reconciles directly).
pub async fn reconcile(
    osm: Arc<Stored<OpenStackMachine>>,
    r: Arc<Reconciler<Stored<OpenStackMachine>>>,
) -> Result<Action> {
    lifecycle::reconcile(osm, r).await
}

/// What an OpenStackMachine hangs off.
pub struct MachineOwners {
    machine: Option<Machine>,
    cluster: Option<Cluster>,
    osc: Option<OpenStackCluster>,
    cluster_name: String,
    control_plane: bool,
}

impl Reconciled for Stored<OpenStackMachine> {
    const CONTROLLER: &'static str = CONTROLLER;
    const FINALIZER: &'static str = MACHINE_FINALIZER;
    const INVALID_SPEC_REASON: &'static str = INVALID_MACHINE_SPEC;
    lifecycle::status_of!(OpenStackMachineStatus);
    lifecycle::stored_status!();
    type CloudOwner = ();
    type Owners = MachineOwners;
    type State = ();

    fn state(_: &Context) {}

    fn provisioned(status: &Self::Status) -> bool {
        status.ready == Some(true)
    }
    fn first_step(_: &Self::Status) -> &'static str {
        INSTANCE_READY
    }
    fn identity_ref(&self) -> Option<capo_api::v1beta1::OpenStackIdentityReference> {
        self.spec.identity_ref.as_deref().cloned()
    }
    /// The machine's server (its OpenStackServer records the same, and volumes by name).
    fn recorded(&self, status: &OpenStackMachineStatus) -> Vec<String> {
        use crate::abandon::ids;
        let mut out = ids("server", status.instance_id.as_deref());
        if let Some(r) = &status.resources {
            out.extend(ids("port", r.ports.iter().map(|p| p.id.as_str())));
        }
        out
    }
    fn cloud_owner(&self) {}

    async fn owners(osm: &Self, ctx: &Context, deleting: bool) -> Result<Owners<MachineOwners>> {
        let ns = osm.namespace().unwrap_or_default();
        let machine = owner_machine(ctx, osm).await?;
        if machine.is_none() && !deleting {
            return Ok(if owner_machine_name(osm).is_none() {
                Owners::Skip("waiting for the owner Machine to set an owner reference")
            } else {
                Owners::Wait("waiting for the owner Machine to be seen")
            });
        }
        let cluster_name = osm
            .labels()
            .get(CLUSTER_NAME_LABEL)
            .cloned()
            .or_else(|| machine.as_ref().map(|m| m.spec.cluster_name.clone()))
            .unwrap_or_default();
        let cluster = ctx
            .shared
            .informers
            .clusters
            .get(&ns, &cluster_name)
            .await?;
        let osc_name = cluster
            .as_ref()
            .and_then(|c| c.spec.infrastructure_ref.as_ref())
            .filter(|r| r.kind == "OpenStackCluster")
            .map(|r| r.name.clone());
        let osc = match &osc_name {
            Some(n) => ctx
                .shared
                .informers
                .openstack_clusters
                .get(&ns, n)
                .await?
                .map(|o| crate::ansible_driven::with_defaults(o.0.clone(), cluster.as_ref())),
            None => None,
        };
        let control_plane = machine
            .as_ref()
            .map_or(osm.labels(), |m| m.labels())
            .contains_key(CONTROL_PLANE_LABEL)
            || osm.labels().contains_key(CONTROL_PLANE_LABEL);
        Ok(Owners::Found(MachineOwners {
            machine,
            cluster,
            osc,
            cluster_name,
            control_plane,
        }))
    }

    fn paused(owners: &MachineOwners) -> bool {
        owners.cluster.as_ref().is_some_and(Cluster::is_paused)
    }

    async fn preconditions(scope: &mut Scope<'_>, o: &MachineOwners) -> Result<Option<Action>> {
        let (Some(machine), Some(osc)) = (&o.machine, &o.osc) else {
            return wait(
                scope,
                WAITING_FOR_CLUSTER_INFRASTRUCTURE,
                "waiting for the Cluster and its OpenStackCluster",
            )
            .await
            .map(Some);
        };
        if !osc.status.as_ref().is_some_and(|s| s.ready) {
            return wait(
                scope,
                WAITING_FOR_CLUSTER_INFRASTRUCTURE,
                "cluster infrastructure is not ready yet",
            )
            .await
            .map(Some);
        }
        if machine.spec.bootstrap.data_secret_name.is_none() {
            return wait(
                scope,
                WAITING_FOR_BOOTSTRAP_DATA,
                "bootstrap data secret is not set yet",
            )
            .await
            .map(Some);
        }
        Ok(None)
    }

    async fn apply(scope: &mut Scope<'_>, o: MachineOwners) -> Result<Action> {
        // Present: the preconditions returned early otherwise.
        let (Some(machine), Some(osc)) = (o.machine, o.osc) else {
            return Ok(Action::await_change());
        };
        let inputs = apply::Inputs::new(&machine, &osc, &o.cluster_name, o.control_plane);
        apply::apply(scope, &inputs).await
    }

    async fn cleanup(scope: &mut Scope<'_>, o: MachineOwners) -> Result<capo_cloud::Progress> {
        cleanup::cleanup(scope, o.osc.as_ref(), &o.cluster_name, o.control_plane).await
    }
}

/// Record a wait on InstanceReady and Ready. The watches (Machine, OpenStackCluster) wake the
/// machine when it is over; the owners were read from the manager's stores, which may be one
/// event behind the watch that woke it, so it also looks again at the progress pace (a look
/// costs no request while nothing changed).
async fn wait(scope: &mut Scope<'_>, reason: &str, message: &str) -> Result<Action> {
    scope.set(INSTANCE_READY, State::info(reason, message));
    scope.set(READY, State::info(reason, message));
    scope.flush().await?;
    Ok(Action::requeue(scope.ctx.memo.delay(&scope.key(), reason)))
}

/// The name of the owner Machine, if the owner reference is set.
fn owner_machine_name(osm: &OpenStackMachine) -> Option<String> {
    osm.owner_references()
        .iter()
        .find(|r| r.kind == "Machine" && r.api_version.starts_with(&format!("{CAPI_GROUP}/")))
        .map(|r| r.name.clone())
}

/// The owner Machine, if the owner reference is set and the Machine exists.
async fn owner_machine(ctx: &Context, osm: &OpenStackMachine) -> Result<Option<Machine>> {
    let Some(name) = owner_machine_name(osm) else {
        return Ok(None);
    };
    let ns = osm.namespace().unwrap_or_default();
    ctx.shared.informers.machines.get(&ns, &name).await
}

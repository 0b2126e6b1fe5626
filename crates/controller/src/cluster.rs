//! The OpenStackCluster controller.
//!
//! Reconcile ([`crate::lifecycle`]): owner Cluster → pause → finalizer → [`apply`] (network,
//! router, security groups, API endpoint, failure domains, ready, bastion) or [`cleanup`]
//! (machines gone, bastion, what cloud-provider-openstack left ([`cloud_provider`]), API
//! floating IPs, load balancer, router, network, security groups).
//!
//! ## Guarantees
//! - No cloud call while externally managed (`cluster.x-k8s.io/managed-by`).
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
pub mod cloud_provider;
mod endpoint;
mod extensions;
mod network;
mod scope;
mod steady;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use capo_api::constants::{CLUSTER_FINALIZER, CLUSTER_NAME_LABEL, condition_types};
use capo_api::v1beta1::{OpenStackCluster, OpenStackClusterStatus, OpenStackMachine};
use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::ObjectRef;

use crate::capi::{CAPI_GROUP, Cluster, MANAGED_BY_ANNOTATION};
use crate::context::Context;
use crate::error::Result;
use crate::lifecycle::{self, Owners, Reconciled, Reconciler};
use crate::memo::Key;
use crate::runtime::{all_changes, error_policy, primary_changes, spec_changes};
use crate::stored::Stored;
use capo_cloud::Owner;
use scope::Scope;

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "openstackcluster";

/// Run the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let r = Reconciler::<Stored<OpenStackCluster>>::new(ctx.clone());
    let index = r.clone();
    let informers = &ctx.shared.informers;
    let trigger = primary_changes(&ctx, informers.openstack_clusters.subscribe());
    Controller::for_shared_stream(trigger, informers.openstack_clusters.store())
        // Objects whose peers' waits just ended (see `crate::pace`).
        .reconcile_on(crate::runtime::nudged(&ctx, CONTROLLER))
        // Owned servers, whichever version their owner reference names.
        .watches_shared_stream(
            all_changes(informers.openstack_servers.subscribe()),
            |oss: Arc<capo_api::v1alpha1::OpenStackServer>| {
                crate::stored::owners_of::<OpenStackCluster, _>(&*oss)
            },
        )
        .watches_shared_stream(
            spec_changes(informers.clusters.subscribe()),
            |c: Arc<Cluster>| {
                let r = c.spec.infrastructure_ref.as_ref()?;
                r.object_ref(c.namespace().as_deref())
            },
        )
        // Machines coming, going or changing address re-render the Ansible inventory, for the
        // clusters that have one (the others do not hear of their machines: a 3+2 cluster
        // would otherwise be reconciled some fifty times on its way up for nothing).
        .watches_shared_stream(
            all_changes(informers.openstack_machines.subscribe()),
            move |m: Arc<Stored<OpenStackMachine>>| {
                let ns = m.namespace()?;
                let cluster = m.labels().get(CLUSTER_NAME_LABEL)?;
                let osc = index.state.inventory_of(&ns, cluster)?;
                Some(ObjectRef::new(&osc).within(&ns))
            },
        )
        .with_config(ControllerConfig::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, r)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// One reconcile of an OpenStackCluster (public for tests that drive reconciles directly).
pub async fn reconcile(
    osc: Arc<Stored<OpenStackCluster>>,
    r: Arc<Reconciler<Stored<OpenStackCluster>>>,
) -> Result<Action> {
    lifecycle::reconcile(osc, r).await
}

/// What the OpenStackCluster controller keeps between reconciles besides its memo: which
/// OpenStackCluster renders the Ansible inventory of each Cluster, so that machine events,
/// which carry only the cluster's name, reach it.
#[derive(Debug, Default)]
pub struct ClusterState {
    inventories: Mutex<HashMap<(String, String), String>>,
}

impl ClusterState {
    /// Remember that Cluster `cluster` in `namespace` has OpenStackCluster `osc`, which renders
    /// an Ansible inventory of its machines.
    fn index_inventory(&self, namespace: &str, cluster: &str, osc: &str) {
        if let Ok(mut m) = self.inventories.lock() {
            m.insert((namespace.to_owned(), cluster.to_owned()), osc.to_owned());
        }
    }

    /// The OpenStackCluster of Cluster `cluster` in `namespace` that renders an inventory, if a
    /// reconcile saw it.
    fn inventory_of(&self, namespace: &str, cluster: &str) -> Option<String> {
        self.inventories
            .lock()
            .ok()
            .and_then(|m| m.get(&(namespace.to_owned(), cluster.to_owned())).cloned())
    }

    /// Forget OpenStackCluster `osc` of `namespace` (gone).
    fn forget(&self, namespace: &str, osc: &str) {
        if let Ok(mut m) = self.inventories.lock() {
            m.retain(|(ns, _), o| !(ns == namespace && o == osc));
        }
    }
}

/// What an OpenStackCluster hangs off.
pub struct ClusterOwners {
    /// The Cluster API Cluster (absent while deleting after it went).
    cluster: Option<Cluster>,
    /// Its name (from the Cluster, else the owner reference).
    name: String,
}

impl Reconciled for Stored<OpenStackCluster> {
    const CONTROLLER: &'static str = CONTROLLER;
    const FINALIZER: &'static str = CLUSTER_FINALIZER;
    const INVALID_SPEC_REASON: &'static str = "InvalidSpec";
    lifecycle::status_of!(OpenStackClusterStatus);
    lifecycle::stored_status!();
    type CloudOwner = Owner;
    type Owners = ClusterOwners;
    type State = ClusterState;

    fn state(_: &Context) -> ClusterState {
        ClusterState::default()
    }
    fn forget(state: &ClusterState, obj: &Self, _key: &Key) {
        state.forget(&obj.namespace().unwrap_or_default(), &obj.name_any());
    }

    fn provisioned(status: &Self::Status) -> bool {
        status.ready
    }
    fn first_step(_: &Self::Status) -> &'static str {
        condition_types::READY
    }
    fn identity_ref(&self) -> Option<capo_api::v1beta1::OpenStackIdentityReference> {
        Some(self.spec.identity_ref.clone())
    }
    fn cloud_owner(&self) -> Owner {
        Owner {
            uid: crate::runtime::owner_id(self),
            namespace: self.namespace().unwrap_or_default(),
            name: self.name_any(),
            spec_tags: self.spec.tags.clone(),
        }
    }

    fn recorded(&self, status: &OpenStackClusterStatus) -> Vec<String> {
        use crate::abandon::ids;
        let mut out = Vec::new();
        // A network the user provided is not the cluster's to delete, nor left behind by it.
        if self.spec.network.is_none()
            && let Some(n) = &status.network
        {
            out.extend(ids("network", [n.id.as_str()]));
            out.extend(ids("subnet", n.subnets.iter().map(|s| s.id.as_str())));
        }
        if self.spec.router.is_none()
            && let Some(r) = &status.router
        {
            out.extend(ids("router", [r.id.as_str()]));
        }
        if let Some(lb) = &status.api_server_load_balancer {
            out.extend(ids("load balancer", [lb.id.as_str()]));
        }
        let groups = [
            &status.control_plane_security_group,
            &status.worker_security_group,
            &status.bastion_security_group,
        ];
        out.extend(ids(
            "security group",
            groups
                .iter()
                .filter_map(|g| g.as_ref())
                .map(|g| g.id.as_str()),
        ));
        if let Some(b) = &status.bastion {
            out.extend(ids("bastion server", b.id.as_deref()));
            if let Some(r) = &b.resources {
                out.extend(ids("bastion port", r.ports.iter().map(|p| p.id.as_str())));
            }
            out.extend(ids("bastion floating IP", b.floating_ip.as_deref()));
        }
        // The API floating IP capo allocated (a requested address is the user's).
        if self.spec.api_server_floating_ip.is_none()
            && self.spec.disable_api_server_floating_ip != Some(true)
            && let Some(ep) = &self.spec.control_plane_endpoint
        {
            out.extend(ids("API floating IP", ep.host.as_deref()));
        }
        out
    }

    async fn owners(osc: &Self, ctx: &Context, deleting: bool) -> Result<Owners<ClusterOwners>> {
        if osc.annotations().contains_key(MANAGED_BY_ANNOTATION) {
            return Ok(Owners::Skip("externally managed; skipped"));
        }
        let cluster = owner_cluster(ctx, osc).await?;
        if cluster.is_none() && !deleting {
            return Ok(if owner_cluster_name(osc).is_none() {
                Owners::Skip("waiting for the owner Cluster to set an owner reference")
            } else {
                Owners::Wait("waiting for the owner Cluster to be seen")
            });
        }
        let name = cluster
            .as_ref()
            .map(|c| c.name_any())
            .or_else(|| osc.cluster_name())
            .unwrap_or_default();
        Ok(Owners::Found(ClusterOwners { cluster, name }))
    }

    fn paused(owners: &ClusterOwners) -> bool {
        owners.cluster.as_ref().is_some_and(Cluster::is_paused)
    }

    fn effective(osc: Arc<Self>, owners: &ClusterOwners) -> Arc<Self> {
        crate::ansible_driven::with_defaults_arc(osc, owners.cluster.as_ref())
    }

    async fn apply(scope: &mut Scope<'_>, owners: ClusterOwners) -> Result<Action> {
        apply::apply(scope, owners.cluster.as_ref()).await
    }

    async fn cleanup(scope: &mut Scope<'_>, owners: ClusterOwners) -> Result<capo_cloud::Progress> {
        cleanup::cleanup(scope, &owners.name).await
    }
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
    ctx.shared.informers.clusters.get(&ns, &name).await
}

/// Condition types this controller owns, in upstream's names.
pub const CONDITIONS: [&str; 5] = [
    condition_types::READY,
    condition_types::NETWORK_READY,
    condition_types::ROUTER_READY,
    condition_types::SECURITY_GROUPS_READY,
    condition_types::API_ENDPOINT_READY,
];

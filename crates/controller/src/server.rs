//! The OpenStackServer controller (machines' servers and the bastion).
//!
//! Reconcile ([`crate::lifecycle`]): pause → finalizer → [`apply`] (resolve into
//! `status.resolved`, written first; ports, volumes, server; addresses) or [`cleanup`] (server,
//! trunks, ports, volumes).
//!
//! ## Guarantees
//! - Nothing is created before `status.resolved` is persisted.
//! - The resolution, port IDs (`status.resources`) and the server ID (`status.instanceID`)
//!   go out with the next status write after their creates (the server's ID, a wait or a
//!   failure), not one write each. What was created before that write is adopted by recorded
//!   ID, else by deterministic name + ownership (`capo_cloud::instance`); a port whose create
//!   outcome this process did not see (a lost reply, a failed pass, a restart) is looked for
//!   once more when the server is ACTIVE and its duplicates deleted. A lost reply or a crash
//!   never leaves a duplicate behind.
//! - Nothing waits in-line: BUILD, volumes `creating` and deletes in progress requeue at the
//!   progress pace ([`crate::memo::Memo::delay`]).
//! - A server in ERROR (NoValidHost, quota) is reported with Nova's fault in InstanceReady and
//!   Ready, deleted (ports and volumes are kept for the retry) and retried after
//!   [`crate::Options::slow_retry`], never frozen.
//! - A server deleted out of band is reported (reason InstanceDeleted while Nova shows it
//!   deleted, InstanceNotFound once Nova no longer knows its ID, as upstream), never silently
//!   re-created.
//! - A converged ACTIVE server costs one OpenStack request per reconcile (a GET of the server).
//! - A port's `allowedAddressPairs` changed in the spec (the one port setting admission lets
//!   change) is put on the Neutron port with one PUT once the server is ACTIVE, and recorded
//!   in `status.resolved`, which says what each port was made or last updated with.
//! - Image, flavor, server group, network, subnet and security group lookups are cached for
//!   [`crate::Options::lookup_ttl`] (default [`crate::context::LOOKUP_TTL`]) across servers of the same cloud
//!   project.
//! - The user data is read from the Secret at create time only and never logged.
//! - `spec.floatingIPPoolRef`: an IPAddressClaim `<server>-floating-ip-address` (owned, with
//!   the claim finalizer) is made once the server is ACTIVE; the pool's floating IP is put on
//!   the first port and reported as ExternalIP (FloatingAddressFromPoolReady); the server is
//!   ready only then. On delete the claim is released.
//! - A server whose deletion fails because its credentials no longer work follows the abandon
//!   annotation of its cluster's OpenStackCluster, or its own ([`crate::abandon`]); a change of
//!   that annotation wakes the cluster's servers being deleted.

mod apply;
mod cache;
mod cleanup;
mod pool_ip;
mod resolve;
mod scope;
mod steady;
mod unseen;

use std::sync::Arc;

use capo_api::constants::condition_reasons::INVALID_MACHINE_SPEC;
use capo_api::constants::condition_types::{INSTANCE_READY, READY};
use capo_api::constants::{CLUSTER_NAME_LABEL, SERVER_FINALIZER};
use capo_api::v1alpha1::{OpenStackServer, OpenStackServerStatus};
use capo_cloud::instance::ServerOwner;
use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};

pub use cache::LookupCache;
pub(crate) use resolve::orc_image_id;
use scope::Scope;

use crate::capi::Cluster;
use crate::context::Context;
use crate::error::Result;
use crate::lifecycle::{self, Owners, Reconciled, Reconciler};
use crate::memo::Key;
use crate::runtime::{abandon_changes, cluster_pause_changes, error_policy, primary_changes};

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "openstackserver";

/// Run the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let store = ctx.shared.informers.openstack_servers.store();
    let pause_store = store.clone();
    let trigger = primary_changes(&ctx, ctx.shared.informers.openstack_servers.subscribe());
    Controller::for_shared_stream(trigger, store.clone())
        // Objects whose peers' waits just ended (see `crate::pace`).
        .reconcile_on(crate::runtime::nudged(&ctx, CONTROLLER))
        .watches_shared_stream(cluster_pause_changes(&ctx), move |c: Arc<Cluster>| {
            servers_of_cluster(&pause_store, &c)
        })
        // Servers being deleted follow their OpenStackCluster's abandon annotation.
        .watches_shared_stream(abandon_changes(&ctx), move |osc| {
            deleting_servers_of(&store, osc.namespace(), osc.cluster_name())
        })
        .with_config(ControllerConfig::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Reconciler::new(ctx))
        .for_each(|_| futures::future::ready(()))
        .await;
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

/// The servers being deleted that are labelled with cluster `name` in `ns`.
fn deleting_servers_of(
    store: &kube::runtime::reflector::Store<OpenStackServer>,
    ns: Option<String>,
    name: Option<String>,
) -> Vec<kube::runtime::reflector::ObjectRef<OpenStackServer>> {
    let Some(name) = name else {
        return Vec::new();
    };
    store
        .state()
        .into_iter()
        .filter(|s| s.metadata.deletion_timestamp.is_some())
        .filter(|s| s.namespace() == ns && s.labels().get(CLUSTER_NAME_LABEL) == Some(&name))
        .map(|s| kube::runtime::reflector::ObjectRef::from_obj(&*s))
        .collect()
}

async fn reconcile(
    oss: Arc<OpenStackServer>,
    r: Arc<Reconciler<OpenStackServer>>,
) -> Result<Action> {
    lifecycle::reconcile(oss, r).await
}

/// What the OpenStackServer controller keeps between reconciles besides its memo.
pub struct ServerState {
    /// Image, flavor, server group, network, subnet and security group lookups, shared across
    /// servers of one cloud project.
    lookups: LookupCache,
    /// Servers whose creates may have had outcomes not seen.
    unseen: unseen::UnseenCreates,
}

impl Reconciled for OpenStackServer {
    const CONTROLLER: &'static str = CONTROLLER;
    const FINALIZER: &'static str = SERVER_FINALIZER;
    const INVALID_SPEC_REASON: &'static str = INVALID_MACHINE_SPEC;
    lifecycle::status_of!(OpenStackServerStatus, capo_api::v1beta2::Condition);
    type CloudOwner = ServerOwner;
    /// Whether the server's Cluster is paused.
    type Owners = bool;
    type State = ServerState;

    fn state(ctx: &Context) -> ServerState {
        ServerState {
            lookups: LookupCache::new(ctx.shared.options.lookup_ttl),
            unseen: unseen::UnseenCreates::default(),
        }
    }
    fn forget(state: &ServerState, _obj: &Self, key: &Key) {
        state.unseen.forget(key);
    }

    fn provisioned(status: &Self::Status) -> bool {
        status.ready
    }
    /// Failures are reported on InstanceReady until the server is ready, then on Ready only.
    fn first_step(status: &Self::Status) -> &'static str {
        if status.ready { READY } else { INSTANCE_READY }
    }
    /// An unset `type` is a Secret (the API server's default).
    fn identity_ref(&self) -> Option<capo_api::v1beta1::OpenStackIdentityReference> {
        Some(crate::server_spec::identity(&self.spec))
    }
    fn recorded(&self, status: &OpenStackServerStatus) -> Vec<String> {
        use crate::abandon::ids;
        let mut out = ids("server", status.instance_id.as_deref());
        if let Some(r) = &status.resources {
            out.extend(ids("port", r.ports.iter().map(|p| p.id.as_str())));
        }
        // Volumes are found by name (their IDs are not recorded).
        let name = self.name_any();
        let mut volumes = Vec::new();
        if self.spec.root_volume.is_some() {
            volumes.push(capo_api::names::root_volume_name(&name));
        }
        volumes.extend(
            self.spec
                .additional_block_devices
                .iter()
                .filter(|d| d.storage.r#type == capo_api::v1beta2::BlockDeviceType::Volume)
                .map(|d| capo_api::names::block_device_volume_name(&name, &d.name)),
        );
        out.extend(ids("volume named", volumes.iter().map(String::as_str)));
        out
    }
    fn cloud_owner(&self) -> ServerOwner {
        ServerOwner {
            // The first UID, kept in an annotation: after `clusterctl move` (new UID) the
            // server's resources are still recognised as ours.
            uid: crate::runtime::owner_id(self),
            name: self.name_any(),
            spec_tags: self.spec.tags.clone(),
        }
    }

    async fn owners(oss: &Self, ctx: &Context, _deleting: bool) -> Result<Owners<bool>> {
        Ok(Owners::Found(cluster_paused(ctx, oss).await?))
    }

    fn paused(cluster_paused: &bool) -> bool {
        *cluster_paused
    }

    async fn apply(scope: &mut Scope<'_>, _: bool) -> Result<Action> {
        apply::apply(scope).await
    }

    async fn cleanup(scope: &mut Scope<'_>, _: bool) -> Result<capo_cloud::Progress> {
        cleanup::cleanup(scope).await
    }
}

/// The Cluster named by the `cluster.x-k8s.io/cluster-name` label is paused.
async fn cluster_paused(ctx: &Context, oss: &OpenStackServer) -> Result<bool> {
    let Some(name) = oss.labels().get(CLUSTER_NAME_LABEL) else {
        return Ok(false);
    };
    let ns = oss.namespace().unwrap_or_default();
    let cluster = ctx.shared.informers.clusters.get(&ns, name).await?;
    Ok(cluster.is_some_and(|c| c.is_paused()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector, watcher};

    fn server(ns: &str, name: &str, cluster: Option<&str>) -> OpenStackServer {
        let labels = cluster.map(|c| serde_json::json!({ CLUSTER_NAME_LABEL: c }));
        serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1",
            "kind": "OpenStackServer",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"identityRef": {"name": "creds", "cloudName": "openstack"},
                     "flavor": "m1.small", "image": {"id": "img"}, "ports": [{}],
                     "sshKeyName": ""},
        }))
        .unwrap()
    }

    fn cluster(ns: &str, name: &str) -> Cluster {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": name, "namespace": ns},
            "spec": {},
        }))
        .unwrap()
    }

    fn woken(servers: Vec<OpenStackServer>, c: &Cluster) -> Vec<String> {
        let (store, mut writer) = reflector::store();
        for s in servers {
            writer.apply_watcher_event(&watcher::Event::Apply(s));
        }
        let mut names: Vec<String> = servers_of_cluster(&store, c)
            .into_iter()
            .map(|r| r.name)
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_clusters_change_wakes_its_servers_and_no_other() {
        let c = cluster("ns", "c1");
        assert!(woken(vec![], &c).is_empty(), "no servers");
        let all = vec![
            server("ns", "s-1", Some("c1")),
            server("ns", "s-2", Some("c1")),
            server("ns", "other", Some("c2")),
            server("elsewhere", "same-name", Some("c1")),
            server("ns", "unlabelled", None),
        ];
        assert_eq!(woken(all, &c), ["s-1", "s-2"]);
    }
}

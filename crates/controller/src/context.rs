//! What every reconcile shares: the Kubernetes client, the OpenStack session cache, options,
//! per-object backoff and the controller's memo ([`crate::memo`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capo_openstack::SessionCache;
use capo_openstack::credentials::NilSelectorPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;

use crate::backoff::Backoff;
use crate::metrics::ReconcileMetrics;

/// Field manager of every write the controllers make (server-side apply and patches).
pub const FIELD_MANAGER: &str = "capo-controller-manager";

/// Tunables of the controllers. `Default` gives production values.
#[derive(Debug, Clone)]
pub struct Options {
    /// First requeue while the cloud works (Octavia PENDING_*, server BUILD, ORC images,
    /// IPAM claims, deletes in progress); grows by half while the same wait continues, up to
    /// `requeue_pending_max` ([`Context::pending_delay`]).
    pub requeue_pending: Duration,
    /// Longest requeue of a continuing wait.
    pub requeue_pending_max: Duration,
    /// Requeue of a converged object (upstream `--sync-period`, 10 minutes).
    pub sync_period: Duration,
    /// A converged object whose spec did not change is fully re-verified against the cloud at
    /// most this often; in between, a steady reconcile only probes its key resources.
    pub verify_period: Duration,
    /// A steady cluster probes its network and load balancer at most this often; reconciles
    /// in between (machines coming and going wake the cluster to re-render its inventory)
    /// make no OpenStack request.
    pub probe_interval: Duration,
    /// First and last delay of the error backoff.
    pub backoff_min: Duration,
    /// See `backoff_min`.
    pub backoff_max: Duration,
    /// Backoff of capacity failures (NoValidHost, quota): these clear only when capacity is
    /// freed, so they are retried slowly but forever.
    pub slow_retry: Duration,
    /// What a nil `namespaceSelector` of an OpenStackClusterIdentity means.
    pub nil_selector_policy: NilSelectorPolicy,
    /// Only objects whose `cluster.x-k8s.io/watch-filter` label equals this are reconciled
    /// (upstream `--watch-filter`).
    pub watch_filter: Option<String>,
    /// Restrict watches to one namespace (upstream `--namespace`).
    pub namespace: Option<String>,
    /// Concurrent reconciles per controller.
    pub concurrency: u16,
    /// How long cached flavor, image and network lookups are reused: a cloud change (a
    /// flavor deleted and recreated under the same name) is seen at most this late.
    pub lookup_ttl: Duration,
    /// How long a read of an identity Secret (and of an OpenStackClusterIdentity and its
    /// namespace) is shared by the reconciles that need it: a rotated Secret is used at most
    /// this late, or until the credentials read before are refused ([`crate::recent_reads`]).
    /// Zero reads on every use.
    pub identity_read_max_age: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            requeue_pending: Duration::from_secs(1),
            requeue_pending_max: Duration::from_secs(20),
            sync_period: Duration::from_secs(600),
            verify_period: Duration::from_secs(3600),
            probe_interval: Duration::from_secs(60),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(300),
            slow_retry: Duration::from_secs(120),
            nil_selector_policy: NilSelectorPolicy::Deny,
            watch_filter: None,
            namespace: None,
            concurrency: 10,
            lookup_ttl: crate::server::LOOKUP_TTL,
            identity_read_max_age: Duration::from_secs(60),
        }
    }
}

/// The shared context of the controllers.
pub struct Context {
    /// Kubernetes client.
    pub client: Client,
    /// OpenStack sessions keyed by credentials.
    pub sessions: Arc<SessionCache>,
    /// Tunables.
    pub options: Options,
    /// Per-object error backoff.
    pub backoff: Backoff,
    /// Image, flavor, server group, network, subnet and security group lookups of the
    /// OpenStackServer controller, shared across servers of one cloud project.
    pub lookups: crate::server::LookupCache,
    /// Flavors and images read by the OpenStackMachineTemplate controller, shared across
    /// templates of one cloud project.
    pub template_lookups: crate::machine_template::Lookups,
    /// Reconcile metrics.
    pub metrics: ReconcileMetrics,
    /// The watched stores owners and children are read from (one set per manager, shared by
    /// the controllers' contexts).
    pub informers: Arc<crate::informers::Informers>,
    /// Identity Secrets, OpenStackClusterIdentities and namespaces read recently (shared by
    /// the controllers' contexts like the stores).
    pub identity_reads: Arc<crate::credentials::IdentityReads>,
    /// What this controller remembers about its objects between reconciles.
    pub memo: crate::memo::Memo,
    events: crate::events::Events,
    inventories: Mutex<HashMap<(String, String), String>>,
    started_at: k8s_openapi::jiff::Timestamp,
    unseen_creates: Mutex<HashSet<crate::memo::Key>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context for the controllers.
    pub fn new(client: Client, sessions: Arc<SessionCache>, options: Options) -> Arc<Self> {
        let backoff = Backoff::new(options.backoff_min, options.backoff_max);
        let ttl = options.lookup_ttl;
        let informers = Arc::new(crate::informers::Informers::new(
            &client,
            options.namespace.as_deref(),
        ));
        let memo = crate::memo::Memo::new(crate::memo::Timing {
            verify_period: options.verify_period,
            sync_period: options.sync_period,
            requeue_pending: options.requeue_pending,
            requeue_pending_max: options.requeue_pending_max,
        });
        let identity_reads = Arc::new(crate::credentials::IdentityReads::new(
            options.identity_read_max_age,
        ));
        Arc::new(Self {
            client: client.clone(),
            sessions,
            identity_reads,
            options,
            backoff,
            metrics: ReconcileMetrics::default(),
            informers,
            events: crate::events::Events::new(
                client.clone(),
                FIELD_MANAGER,
                std::env::var("POD_NAME").ok(),
            ),
            lookups: crate::server::LookupCache::new(ttl),
            template_lookups: crate::machine_template::Lookups::new(ttl),
            memo,
            inventories: Mutex::new(HashMap::new()),
            started_at: k8s_openapi::jiff::Timestamp::now(),
            unseen_creates: Mutex::new(HashSet::new()),
        })
    }

    /// Remember that a create for `key` may have happened without its outcome being seen
    /// (a create or a later step of the same pass failed: the reply may be lost while the
    /// cloud still makes the resource).
    pub fn mark_unseen_create(&self, key: &crate::memo::Key) {
        if let Ok(mut m) = self.unseen_creates.lock() {
            m.insert(key.clone());
        }
    }

    /// Whether creates for `key`, an object created at `created`, may have had outcomes this
    /// context never saw: the object is older than this context (an earlier process may have
    /// been killed while the cloud was still making something), or a pass of this context
    /// failed while creating ([`Context::mark_unseen_create`]). Taken out of the table: the
    /// caller looks for strays once. Costs nothing for objects this process made from the
    /// start without a failure, the bulk of a scale-out.
    pub fn take_unseen_creates(&self, key: &crate::memo::Key, created: Option<&Time>) -> bool {
        let marked = self.unseen_creates.lock().is_ok_and(|mut m| m.remove(key));
        marked || created.is_none_or(|t| t.0 < self.started_at)
    }

    /// The API of `K` the controllers watch: the `--namespace` one, or all namespaces.
    pub fn watched_api<K>(&self) -> kube::Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        match &self.options.namespace {
            Some(ns) => kube::Api::namespaced(self.client.clone(), ns),
            None => kube::Api::all(self.client.clone()),
        }
    }

    /// Publish an event about `obj` (notes capped at 1000 characters; failures to publish are
    /// logged, never fatal: events are best effort).
    pub async fn publish<K>(
        &self,
        obj: &K,
        type_: kube::runtime::events::EventType,
        reason: &str,
        action: &str,
        note: Option<String>,
    ) where
        K: kube::Resource<DynamicType = ()>,
    {
        let ev = crate::events::Note {
            type_,
            reason,
            action,
            note,
        };
        if let Err(e) = self.events.publish(ev, &obj.object_ref(&())).await {
            tracing::debug!(error = %e, "could not publish event");
        }
    }

    /// Forget everything remembered about `key` ([`crate::memo::Memo::forget`], and its
    /// unseen creates).
    pub fn forget(&self, key: &crate::memo::Key) {
        self.memo.forget(key);
        if let Ok(mut m) = self.unseen_creates.lock() {
            m.remove(key);
        }
    }

    /// Remember that Cluster `cluster` in `namespace` has OpenStackCluster `osc`, which renders
    /// an Ansible inventory of its machines (so machine events, which carry only the cluster's
    /// name, reach it).
    pub fn index_inventory(&self, namespace: &str, cluster: &str, osc: &str) {
        if let Ok(mut m) = self.inventories.lock() {
            m.insert((namespace.to_owned(), cluster.to_owned()), osc.to_owned());
        }
    }

    /// The OpenStackCluster of Cluster `cluster` in `namespace` that renders an inventory, if a
    /// reconcile saw it.
    pub fn inventory_of(&self, namespace: &str, cluster: &str) -> Option<String> {
        self.inventories
            .lock()
            .ok()
            .and_then(|m| m.get(&(namespace.to_owned(), cluster.to_owned())).cloned())
    }
}

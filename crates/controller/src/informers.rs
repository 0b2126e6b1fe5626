//! The manager's in-memory view of the objects the controllers read besides the one they
//! reconcile: one watch per kind, shared by every controller, as controller-runtime's cache
//! is for upstream.
//!
//! Owners (Cluster API Clusters and Machines, OpenStackClusters) and children
//! (OpenStackServers, a cluster's OpenStackMachines) are read from these stores instead of
//! with a GET per reconcile: a 3+2 cluster used to cost about 130 such reads on its way to
//! Ready (most of them 404s of servers not made yet), which at client-go's default 20 QPS
//! made the manager wait on its own rate limiter. Secrets are still read live: a changed
//! credential must be seen at once.
//!
//! ## Freshness
//! A store follows its watch, a few milliseconds behind the apiserver, and is not the same
//! stream as the watch that triggered a reconcile. A reconcile may therefore see a dependency
//! one event old. Every decision taken on such a read is one the next reconcile can correct
//! (waits requeue at the progress pace rather than waiting for a watch event that may already
//! have been consumed, and creations are idempotent: a create that finds the object already
//! there is treated as done).
//!
//! ## Scope
//! The stores follow `--namespace` but not `--watch-filter`: an object's owners are read
//! whatever their labels, as a GET would. The OpenStack kinds' stores are their controllers'
//! own primary stores when no watch filter is set ([`Informer::adopt`]), so each object is
//! held once. Each other store starts on first use (so controllers and
//! tests that never read a kind never watch it) and a read waits for its first list; if that
//! list cannot be had within [`READY_TIMEOUT`] (no RBAC for the kind, apiserver away) the
//! read falls back to a GET, whose error names the problem.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::{OpenStackCluster, OpenStackMachine};
use futures::StreamExt;
use kube::api::Api;
use kube::core::NamespaceResourceScope;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};

use crate::capi::{Cluster, Machine};
use crate::error::{KubeContext, Result};

/// How long a read waits for a store's first list before falling back to a GET.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How often a read waiting for a store's first list looks again.
const READY_POLL: Duration = Duration::from_millis(50);

/// The stores of every kind the controllers read.
pub struct Informers {
    /// Cluster API Clusters.
    pub clusters: Informer<Cluster>,
    /// Cluster API Machines.
    pub machines: Informer<Machine>,
    /// OpenStackClusters.
    pub openstack_clusters: Informer<OpenStackCluster>,
    /// OpenStackMachines.
    pub openstack_machines: Informer<OpenStackMachine>,
    /// OpenStackServers.
    pub openstack_servers: Informer<OpenStackServer>,
}

impl Informers {
    /// Stores over `client`, restricted to `namespace` when set (`--namespace`).
    pub fn new(client: &Client, namespace: Option<&str>) -> Self {
        Self {
            clusters: Informer::new(client.clone(), namespace),
            machines: Informer::new(client.clone(), namespace),
            openstack_clusters: Informer::new(client.clone(), namespace),
            openstack_machines: Informer::new(client.clone(), namespace),
            openstack_servers: Informer::new(client.clone(), namespace),
        }
    }
}

/// One kind's store, started on first use.
pub struct Informer<K: Resource<DynamicType = ()> + Clone + 'static> {
    client: Client,
    /// `Some` restricts the watch to one namespace.
    namespace: Option<String>,
    store: OnceLock<Store<K>>,
}

impl<K> Informer<K>
where
    K: crate::runtime::Watched + Resource<Scope = NamespaceResourceScope>,
{
    fn new(client: Client, namespace: Option<&str>) -> Self {
        Self {
            client,
            namespace: namespace.map(str::to_owned),
            store: OnceLock::new(),
        }
    }

    fn watched_api(&self) -> Api<K> {
        match &self.namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }

    /// The store, its watch started on the first call (on the calling runtime, which is the
    /// manager's: the task lives as long as the manager does).
    fn store(&self) -> &Store<K> {
        self.store.get_or_init(|| {
            let (reader, writer) = reflector::store();
            let events = watcher(self.watched_api(), watcher::Config::default().any_semantic())
                .default_backoff()
                .modify(crate::runtime::trim)
                .reflect(writer);
            tokio::spawn(events.for_each(|ev| {
                if let Err(e) = ev {
                    tracing::debug!(kind = %K::kind(&()), error = %e, "informer watch error; retrying");
                }
                futures::future::ready(())
            }));
            reader
        })
    }

    /// Use `store`, the primary store of the controller of `K` (same objects, same watch),
    /// instead of a watch of its own: one copy of each object in memory. Only before the first
    /// read, and only for an unfiltered store (`--watch-filter` unset): a controller's
    /// primary store holds only the objects it reconciles, and owners are read whatever their
    /// labels.
    pub fn adopt(&self, store: &Store<K>, watch_filter: Option<&str>) {
        if watch_filter.is_none() {
            // Already set: a read came first and started a watch; both stay correct.
            let _ = self.store.set(store.clone());
        }
    }

    /// The store once it holds a complete list, `None` if that takes longer than
    /// [`READY_TIMEOUT`].
    async fn ready_store(&self) -> Option<&Store<K>> {
        let store = self.store();
        let started = std::time::Instant::now();
        // The readiness signal wakes only the last of several concurrent waiters (a oneshot
        // channel keeps one waker): look again every READY_POLL instead of waiting once.
        while started.elapsed() < READY_TIMEOUT {
            match tokio::time::timeout(READY_POLL, store.wait_until_ready()).await {
                Ok(Ok(())) => return Some(store),
                Ok(Err(_)) => return None,
                Err(_) => {}
            }
        }
        None
    }

    /// Object `name` in `ns`, if it exists (`None` for an empty name).
    pub async fn get(&self, ns: &str, name: &str) -> Result<Option<K>> {
        if name.is_empty() {
            return Ok(None);
        }
        if let Some(store) = self.ready_store().await {
            return Ok(store
                .get(&ObjectRef::new(name).within(ns))
                .map(|o| (*o).clone()));
        }
        Api::<K>::namespaced(self.client.clone(), ns)
            .get_opt(name)
            .await
            .kctx(|| format!("get {} {ns}/{name}", K::kind(&())))
    }

    /// The objects of `ns` whose label `key` equals `value`, sorted by name.
    pub async fn list_labelled(&self, ns: &str, key: &str, value: &str) -> Result<Vec<Arc<K>>> {
        let matches = |o: &K| {
            o.namespace().as_deref() == Some(ns)
                && o.labels().get(key).map(String::as_str) == Some(value)
        };
        let mut out: Vec<Arc<K>> = match self.ready_store().await {
            Some(store) => store.state().into_iter().filter(|o| matches(o)).collect(),
            None => Api::<K>::namespaced(self.client.clone(), ns)
                .list(&kube::api::ListParams::default().labels(&format!("{key}={value}")))
                .await
                .kctx(|| format!("list {} of {key}={value} in {ns}", K::kind(&())))?
                .items
                .into_iter()
                .map(Arc::new)
                .collect(),
        };
        out.sort_by_key(|o| o.name_any());
        Ok(out)
    }
}

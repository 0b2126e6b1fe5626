//! The manager's in-memory view of the objects the controllers read besides the one they
//! reconcile: one watch per kind, shared by every controller, as controller-runtime's cache
//! is for upstream.
//!
//! Owners (Cluster API Clusters and Machines, OpenStackClusters) and children
//! (OpenStackServers, a cluster's OpenStackMachines) are read from these stores instead of
//! with a GET per reconcile: a 3+2 cluster used to cost about 130 such reads on its way to
//! Ready (most of them 404s of servers not made yet), which at client-go's default 20 QPS
//! made the manager wait on its own rate limiter. Secrets are still read live: a changed
//! credential must be seen at once. Every kind with an identityRef is here too, so the
//! identity Secrets' finalizer ([`crate::identity_secret`]) counts their users from memory.
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
//! whatever their labels, as a GET would, and the controllers skip objects without the filter
//! label themselves (as upstream's predicates do; its cache is not filtered by label either).
//! Each store starts on first use (so controllers and tests that never read a kind never watch
//! it) and a read waits for its first list; if that list cannot be had within [`READY_TIMEOUT`]
//! (no RBAC for the kind, apiserver away) the read falls back to a GET, whose error names the
//! problem.
//!
//! ## Subscriptions
//! The controllers' triggers are subscriptions to these watches ([`Informer::subscribe`]), not
//! watches of their own: an OpenStackServer's status write used to be sent to, and decoded by,
//! three watches (its controller's, and the machine and cluster controllers' `owns`), and the
//! manager held fifteen watches where seven kinds are watched. A subscriber first hears of every
//! object already in the store, then of every change, deletions included; a relist after an
//! interrupted watch reports the objects that went meanwhile as deleted.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use capo_api::v1alpha1::{OpenStackFloatingIPPool, OpenStackServer};
use capo_api::v1beta1::{OpenStackCluster, OpenStackMachine};
use futures::channel::mpsc::UnboundedSender;
use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::core::NamespaceResourceScope;
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};

use crate::capi::{Cluster, Machine};
use crate::error::{KubeContext, Result};
use crate::stored::Stored;

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
    pub openstack_clusters: Informer<Stored<OpenStackCluster>>,
    /// OpenStackMachines.
    pub openstack_machines: Informer<Stored<OpenStackMachine>>,
    /// OpenStackServers.
    pub openstack_servers: Informer<OpenStackServer>,
    /// OpenStackFloatingIPPools.
    pub openstack_floating_ip_pools: Informer<OpenStackFloatingIPPool>,
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
            openstack_floating_ip_pools: Informer::new(client.clone(), namespace),
        }
    }
}

/// One kind's store and watch, started on first use.
pub struct Informer<K: Resource<DynamicType = ()> + Clone + 'static> {
    client: Client,
    /// `Some` restricts the watch to one namespace.
    namespace: Option<String>,
    shared: OnceLock<Shared<K>>,
}

/// A started watch: its store and the channels of its subscribers.
struct Shared<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    subscribers: Arc<Mutex<Vec<UnboundedSender<Change<K>>>>>,
}

impl<K: Watched> Shared<K> {
    /// Every stored object as [`Change::Applied`], then every change.
    fn subscribe(&self) -> futures::channel::mpsc::UnboundedReceiver<Change<K>> {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        // Under the lock the watch task dispatches under (after updating the store): a change
        // is either in this snapshot or dispatched to this subscriber afterwards (or both,
        // which only repeats an Applied).
        let mut subscribers = lock(&self.subscribers);
        for obj in self.store.state() {
            let _ = tx.unbounded_send(Change::Applied(obj));
        }
        subscribers.push(tx);
        rx
    }
}

/// What a watch saw happen to one object, as passed to subscribers.
#[derive(Clone)]
pub enum Change<K> {
    /// Created or changed (also: present when the subscription started).
    Applied(Arc<K>),
    /// Deleted (its last state).
    Deleted(Arc<K>),
}

impl<K> Change<K> {
    /// The object, applied or deleted.
    pub fn object(self) -> Arc<K> {
        match self {
            Self::Applied(o) | Self::Deleted(o) => o,
        }
    }

    /// The object, borrowed.
    pub fn get(&self) -> &K {
        match self {
            Self::Applied(o) | Self::Deleted(o) => o,
        }
    }
}

impl<K> Informer<K>
where
    K: Watched + Resource<Scope = NamespaceResourceScope>,
{
    fn new(client: Client, namespace: Option<&str>) -> Self {
        Self {
            client,
            namespace: namespace.map(str::to_owned),
            shared: OnceLock::new(),
        }
    }

    fn watched_api(&self) -> Api<K> {
        match &self.namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }

    /// The watch, started on the first call (on the calling runtime, which is the manager's:
    /// the task lives as long as the manager does).
    fn shared(&self) -> &Shared<K> {
        self.shared.get_or_init(|| {
            let (reader, writer) = reflector::store();
            let subscribers = Arc::new(Mutex::new(Vec::new()));
            let events = watcher(
                self.watched_api(),
                watcher::Config::default().any_semantic(),
            )
            .default_backoff()
            .modify(trim);
            tokio::spawn(follow(events, writer, reader.clone(), subscribers.clone()));
            Shared {
                store: reader,
                subscribers,
            }
        })
    }

    /// The store (its watch started).
    pub fn store(&self) -> Store<K> {
        self.shared().store.clone()
    }

    /// Every object of the store as [`Change::Applied`], then every change the watch sees.
    pub fn subscribe(&self) -> impl futures::Stream<Item = Change<K>> + Send + 'static {
        self.shared().subscribe()
    }

    /// The store once it holds a complete list, `None` if that takes longer than
    /// [`READY_TIMEOUT`].
    async fn ready_store(&self) -> Option<&Store<K>> {
        let store = &self.shared().store;
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

    /// Every object of the store once it holds a complete list; an error if that takes longer
    /// than [`READY_TIMEOUT`]. For decisions that must not be taken on a partial view (no GET
    /// fallback: a list would be the same as the store's).
    pub async fn ready_state(&self) -> Result<Vec<Arc<K>>> {
        match self.ready_store().await {
            Some(store) => Ok(store.state()),
            None => Err(crate::error::Error::NotYet(format!(
                "the watch of {} has not listed them yet",
                K::plural(&())
            ))),
        }
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

/// The subscriber list, whatever a panicking holder left (a list of channels stays usable).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Apply a watch's events to its store and pass each change on to the subscribers.
async fn follow<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    mut writer: Writer<K>,
    store: Store<K>,
    subscribers: Arc<Mutex<Vec<UnboundedSender<Change<K>>>>>,
) where
    K: Watched,
{
    let mut events = std::pin::pin!(events);
    // The store before a relist, to tell which objects went while the watch was away.
    let mut before_relist: Option<Vec<Arc<K>>> = None;
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::debug!(kind = %K::kind(&()), error = %e, "informer watch error; retrying");
                continue;
            }
        };
        if matches!(event, watcher::Event::Init) {
            before_relist = Some(store.state());
        }
        writer.apply_watcher_event(&event);
        let changes: Vec<Change<K>> = match event {
            watcher::Event::Apply(obj) => store
                .get(&ObjectRef::from_obj(&obj))
                .map(Change::Applied)
                .into_iter()
                .collect(),
            watcher::Event::Delete(obj) => vec![Change::Deleted(Arc::new(obj))],
            watcher::Event::Init | watcher::Event::InitApply(_) => Vec::new(),
            watcher::Event::InitDone => {
                let now = store.state();
                let gone = before_relist
                    .take()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|old| store.get(&ObjectRef::from_obj(&**old)).is_none())
                    .map(Change::Deleted);
                gone.chain(now.into_iter().map(Change::Applied)).collect()
            }
        };
        if changes.is_empty() {
            continue;
        }
        let mut subscribers = lock(&subscribers);
        // A subscriber whose stream was dropped (its controller stopped) is forgotten.
        subscribers.retain(|tx| {
            changes
                .iter()
                .all(|change| tx.unbounded_send(change.clone()).is_ok())
        });
    }
}

/// What a kind needs to be watched and cached by the controllers.
pub trait Watched:
    Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Watched for K where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// Prefix of the annotations capo itself sets and reads (owner ID, bastion spec hash, strict
/// security-group rules).
const OWN_ANNOTATION_PREFIX: &str = "infrastructure.cluster.x-k8s.io/capo-";

/// Whether a controller reads annotation `key` from a watched object: Cluster API's pause and
/// managed-by, and capo's own.
fn annotation_is_read(key: &str) -> bool {
    key == capo_api::constants::PAUSED_ANNOTATION
        || key == crate::capi::MANAGED_BY_ANNOTATION
        || key.starts_with(OWN_ANNOTATION_PREFIX)
}

/// Drop what no controller reads from a watched object before it is cached or passed on: its
/// managed fields (one JSON tree per field manager, decoded here into maps of strings, which
/// made them the largest part of a cached OpenStackServer) and every annotation no controller
/// reads (`kubectl apply`'s copy of the object, Cluster API's cloned-from and kubeadm
/// configuration copies, users' own); an emptied map is dropped too, so an object without
/// such annotations holds no map node. Writes never start from a cached object's metadata as
/// a whole (finalizer and annotation patches name their keys), so nothing is lost on the way
/// back.
pub fn trim<K: Resource>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.retain(|key, _| annotation_is_read(key));
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(name: &str, version: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                resource_version: Some(version.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn described(changes: Vec<Change<ConfigMap>>) -> Vec<String> {
        changes
            .into_iter()
            .map(|c| match c {
                Change::Applied(o) => format!("applied {}", o.name_any()),
                Change::Deleted(o) => format!("deleted {}", o.name_any()),
            })
            .collect()
    }

    /// Runs `events` through a store and returns what a subscriber that joined before them,
    /// and one that joined after them, heard.
    async fn follow_events(
        events: Vec<watcher::Event<ConfigMap>>,
    ) -> (Vec<String>, Vec<String>, Store<ConfigMap>) {
        let (reader, writer) = reflector::store();
        let shared = Shared {
            store: reader.clone(),
            subscribers: Arc::new(Mutex::new(Vec::new())),
        };
        let early_rx = shared.subscribe();
        let stream = futures::stream::iter(events.into_iter().map(Ok));
        follow(stream, writer, reader.clone(), shared.subscribers.clone()).await;
        let late_rx = shared.subscribe();
        // Closes both channels: what they hold is all they will hear.
        lock(&shared.subscribers).clear();
        let early = described(early_rx.collect().await);
        let late = described(late_rx.collect().await);
        (early, late, reader)
    }

    #[tokio::test]
    async fn a_subscriber_hears_the_first_list_then_each_change_with_deletions() {
        let (early, _, store) = follow_events(vec![
            watcher::Event::Init,
            watcher::Event::InitApply(cm("a", "1")),
            watcher::Event::InitDone,
            watcher::Event::Apply(cm("b", "2")),
            watcher::Event::Delete(cm("a", "3")),
        ])
        .await;
        assert_eq!(early, ["applied a", "applied b", "deleted a"]);
        assert_eq!(store.state().len(), 1);
    }

    #[tokio::test]
    async fn a_relist_reports_what_went_while_the_watch_was_away_as_deleted() {
        let (early, _, store) = follow_events(vec![
            watcher::Event::Init,
            watcher::Event::InitApply(cm("a", "1")),
            watcher::Event::InitApply(cm("b", "2")),
            watcher::Event::InitDone,
            // The watch broke; `a` was deleted meanwhile, `b` changed.
            watcher::Event::Init,
            watcher::Event::InitApply(cm("b", "4")),
            watcher::Event::InitDone,
        ])
        .await;
        let mut first = early[..2].to_vec();
        first.sort();
        assert_eq!(first, ["applied a", "applied b"]);
        assert_eq!(early[2..], ["deleted a", "applied b"]);
        let left: Vec<String> = store.state().iter().map(|o| o.name_any()).collect();
        assert_eq!(left, ["b"]);
    }

    #[tokio::test]
    async fn a_late_subscriber_hears_of_every_stored_object() {
        let (_, late, _) = follow_events(vec![
            watcher::Event::Init,
            watcher::Event::InitApply(cm("a", "1")),
            watcher::Event::InitApply(cm("b", "1")),
            watcher::Event::InitDone,
            watcher::Event::Delete(cm("a", "2")),
        ])
        .await;
        assert_eq!(late, ["applied b"]);
    }
}

//! What every reconcile shares: the Kubernetes client, the OpenStack session cache, options,
//! per-object backoff and the memo of converged fingerprints.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capo_openstack::SessionCache;
use capo_openstack::credentials::NilSelectorPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::runtime::controller::Action;

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

/// Converged state of one object, kept in memory: after a restart every object gets one
/// full reconcile, which is exactly what upstream does on every reconcile.
#[derive(Debug, Clone)]
pub struct Converged {
    /// Fingerprint of everything the reconcile depended on (spec, generation, recorded IDs).
    pub fingerprint: crate::fingerprint::Digest,
    /// When the cloud was last fully verified.
    pub verified_at: Instant,
    /// When the cloud was last verified or probed.
    pub probed_at: Instant,
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
    events: crate::events::Events,
    converged: Mutex<HashMap<String, Converged>>,
    pace: crate::pace::Pace,
    inventories: Mutex<HashMap<(String, String), String>>,
    writes: Mutex<RecentWrites>,
    objects: Mutex<HashMap<String, (String, String)>>,
    nudge: Mutex<Option<futures::channel::mpsc::UnboundedSender<(String, String)>>>,
    resyncs: Arc<Resyncs>,
    started_at: k8s_openapi::jiff::Timestamp,
    unseen_creates: Mutex<HashSet<String>>,
}

/// Converged objects to look at again once the sync period has passed, by controller:
/// (namespace, name) and when. This is the periodic re-verification upstream gets from
/// requeueing every reconcile after `--sync-period`. Kept here rather than as a requeue in
/// kube-runtime's scheduler, where each of the hundreds of converged objects would hold two
/// copies of its reconcile request (name, namespace, UID and resource version, about 0.7 KB).
#[derive(Default)]
pub struct Resyncs(Mutex<HashMap<&'static str, DueAt>>);

/// When each (namespace, name) is due.
type DueAt = HashMap<(String, String), Instant>;

impl Resyncs {
    /// Look at `namespace/name` of `controller` again at `due`, unless an earlier look is
    /// already due (as kube-runtime keeps the earlier of two requeues).
    fn schedule(&self, controller: &'static str, namespace: &str, name: &str, due: Instant) {
        let Ok(mut all) = self.0.lock() else {
            return;
        };
        all.entry(controller)
            .or_default()
            .entry((namespace.to_owned(), name.to_owned()))
            .and_modify(|at| *at = (*at).min(due))
            .or_insert(due);
    }

    /// The objects of `controller` whose look is due now, taken out of the table.
    pub fn due(&self, controller: &str) -> Vec<(String, String)> {
        let Ok(mut all) = self.0.lock() else {
            return Vec::new();
        };
        let Some(table) = all.get_mut(controller) else {
            return Vec::new();
        };
        let now = Instant::now();
        let mut due = Vec::new();
        table.retain(|k, at| {
            let keep = *at > now;
            if !keep {
                due.push(k.clone());
            }
            keep
        });
        shrink_after_burst(table);
        due
    }
}

/// How long this controller's own status write is remembered: longer than a watch event takes
/// to reach the store, short enough that a status changed by someone else since is written
/// back soon.
const RECENT_WRITE: Duration = Duration::from_secs(5);

/// This controller's status writes of the last [`RECENT_WRITE`], by object key: (when, digest).
/// Older ones are dropped at most once per [`RECENT_WRITE`], so in steady state the table is
/// about empty instead of holding one entry per object ever written.
#[derive(Default)]
struct RecentWrites {
    by_key: HashMap<String, (Instant, u64)>,
    pruned_at: Option<Instant>,
}

impl RecentWrites {
    fn prune(&mut self) {
        if self.pruned_at.is_some_and(|at| at.elapsed() < RECENT_WRITE) {
            return;
        }
        self.pruned_at = Some(Instant::now());
        self.by_key.retain(|_, (at, _)| at.elapsed() < RECENT_WRITE);
        shrink_after_burst(&mut self.by_key);
    }
}

/// Give back the buckets of a table that a burst grew and that is now mostly empty (a hash
/// table never shrinks by itself). Shrinks only below a quarter full, so a table that
/// empties entry by entry is reallocated a logarithmic number of times.
fn shrink_after_burst<K: std::hash::Hash + Eq, V>(table: &mut HashMap<K, V>) {
    if table.capacity() > 4 * table.len().max(16) {
        table.shrink_to_fit();
    }
}

/// A digest of `status` as it would be written (0 when it cannot be serialized: the write
/// itself then fails and says why, and nothing is remembered).
pub fn digest<S: serde::Serialize>(status: &S) -> u64 {
    use std::hash::{Hash, Hasher};
    let Ok(json) = serde_json::to_string(status) else {
        return 0;
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    json.hash(&mut h);
    h.finish()
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
        let options_first_poll = options.requeue_pending;
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
            converged: Mutex::new(HashMap::new()),
            pace: crate::pace::Pace::new(options_first_poll),
            inventories: Mutex::new(HashMap::new()),
            writes: Mutex::new(RecentWrites::default()),
            objects: Mutex::new(HashMap::new()),
            nudge: Mutex::new(None),
            resyncs: Arc::new(Resyncs::default()),
            started_at: k8s_openapi::jiff::Timestamp::now(),
            unseen_creates: Mutex::new(HashSet::new()),
        })
    }

    /// Remember that a create for `key` may have happened without its outcome being seen
    /// (a create or a later step of the same pass failed: the reply may be lost while the
    /// cloud still makes the resource).
    pub fn mark_unseen_create(&self, key: &str) {
        if let Ok(mut m) = self.unseen_creates.lock() {
            m.insert(key.to_owned());
        }
    }

    /// Whether creates for `key`, an object created at `created`, may have had outcomes this
    /// context never saw: the object is older than this context (an earlier process may have
    /// been killed while the cloud was still making something), or a pass of this context
    /// failed while creating ([`Context::mark_unseen_create`]). Taken out of the table: the
    /// caller looks for strays once. Costs nothing for objects this process made from the
    /// start without a failure, the bulk of a scale-out.
    pub fn take_unseen_creates(&self, key: &str, created: Option<&Time>) -> bool {
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

    /// The converged record of `key` (an object UID plus a scope), if any.
    pub fn converged(&self, key: &str) -> Option<Converged> {
        self.converged
            .lock()
            .map(|m| m.get(key).cloned())
            .unwrap_or_default()
    }

    /// Record that `key` converged with `fingerprint` (verified now when `verified`).
    pub fn set_converged(
        &self,
        key: &str,
        fingerprint: crate::fingerprint::Digest,
        verified: bool,
    ) {
        if let Ok(mut m) = self.converged.lock() {
            let verified_at = match (verified, m.get(key)) {
                (false, Some(prev)) if prev.fingerprint == fingerprint => prev.verified_at,
                _ => Instant::now(),
            };
            m.insert(
                key.to_owned(),
                Converged {
                    fingerprint,
                    verified_at,
                    probed_at: Instant::now(),
                },
            );
        }
        // A converged object waits on nothing: its wait ended now, and no peer's ended wait
        // needs to find it by name (the next reconcile remembers it again).
        self.pace.done(key);
        if let Ok(mut m) = self.objects.lock() {
            m.remove(key);
            shrink_after_burst(&mut m);
        }
        self.send_due();
    }

    /// Requeue delay for `key` waiting on `reason` ([`crate::pace`]): short first
    /// (`requeue_pending`), growing by half while the same wait lasts, up to
    /// `requeue_pending_max`, jittered; once waits of this reason have been seen to end, from
    /// their typical length. A different reason starts the pace again.
    pub fn pending_delay(&self, key: &str, reason: &str) -> Duration {
        self.paced(key, reason, reason)
    }

    /// [`Context::pending_delay`] for a wait told apart by `text` (the resource and its
    /// state), of kind `kind` (no names: the controller and reason), which learns from the
    /// kind's earlier waits.
    pub fn paced(&self, key: &str, kind: &str, text: &str) -> Duration {
        let delay = self.pace.delay(
            key,
            kind,
            text,
            self.options.requeue_pending,
            self.options.requeue_pending_max,
        );
        self.send_due();
        delay
    }

    /// The action of a converged reconcile: look at `namespace/name` of `controller` again
    /// after the sync period ([`Resyncs`]; the controller's [`crate::runtime::nudged`] stream
    /// brings it back), and until then only on a change.
    pub fn resync_later(&self, controller: &'static str, namespace: &str, name: &str) -> Action {
        self.resyncs.schedule(
            controller,
            namespace,
            name,
            Instant::now() + self.options.sync_period,
        );
        Action::await_change()
    }

    /// The table [`Context::resync_later`] fills (shared with the controller's trigger stream).
    pub fn resyncs(&self) -> Arc<Resyncs> {
        self.resyncs.clone()
    }

    /// Remember that `key` names object `namespace/name` (so a peer's ended wait can wake it).
    pub fn remember_object(&self, key: &str, namespace: &str, name: &str) {
        if let Ok(mut m) = self.objects.lock()
            && m.get(key)
                .is_none_or(|(ns, n)| ns != namespace || n != name)
        {
            m.insert(key.to_owned(), (namespace.to_owned(), name.to_owned()));
        }
    }

    /// The objects (`namespace`, `name`) to reconcile now because a peer's wait of their kind
    /// ended ([`crate::pace`]); the controller passes them to `reconcile_on`. One stream per
    /// context: a second call replaces the first.
    pub fn nudges(&self) -> futures::channel::mpsc::UnboundedReceiver<(String, String)> {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        if let Ok(mut n) = self.nudge.lock() {
            *n = Some(tx);
        }
        rx
    }

    fn send_due(&self) {
        let due = self.pace.due();
        if due.is_empty() {
            return;
        }
        let (Ok(objects), Ok(nudge)) = (self.objects.lock(), self.nudge.lock()) else {
            return;
        };
        let Some(tx) = nudge.as_ref() else {
            return;
        };
        for key in due {
            if let Some(object) = objects.get(&key) {
                // A closed channel (controller stopped) only means nobody listens any more.
                let _ = tx.unbounded_send(object.clone());
            }
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

    /// Whether status with `digest` is what this controller wrote for `key` moments ago.
    pub fn written_recently(&self, key: &str, digest: u64) -> bool {
        self.writes.lock().is_ok_and(|w| {
            w.by_key
                .get(key)
                .is_some_and(|(at, d)| *d == digest && at.elapsed() < RECENT_WRITE)
        })
    }

    /// Remember that status with `digest` was just written for `key`.
    pub fn record_write(&self, key: &str, digest: u64) {
        if let Ok(mut w) = self.writes.lock() {
            w.prune();
            w.by_key.insert(key.to_owned(), (Instant::now(), digest));
        }
    }

    /// Forget `key` (spec changed, drift found, object deleted).
    pub fn forget_converged(&self, key: &str) {
        if let Ok(mut m) = self.converged.lock() {
            m.remove(key);
        }
        if let Ok(mut m) = self.objects.lock() {
            m.remove(key);
        }
        if let Ok(mut m) = self.unseen_creates.lock() {
            m.remove(key);
        }
        self.pace.forget(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resync_is_due_once_at_the_earlier_time_and_per_controller() {
        let r = Resyncs::default();
        let now = Instant::now();
        let later = now + Duration::from_secs(600);
        r.schedule("machine", "ns", "a", later);
        // An earlier look wins, as kube-runtime keeps the earlier of two requeues; a later one
        // does not postpone it.
        r.schedule("machine", "ns", "a", now);
        r.schedule("machine", "ns", "a", later);
        r.schedule("machine", "ns", "b", later);
        r.schedule("server", "ns", "a", now);
        assert_eq!(r.due("machine"), vec![("ns".to_owned(), "a".to_owned())]);
        assert!(r.due("machine").is_empty(), "taken out once due");
        assert_eq!(r.due("server"), vec![("ns".to_owned(), "a".to_owned())]);
        assert!(r.due("cluster").is_empty());
    }

    #[test]
    fn recent_writes_forget_old_entries_and_give_back_their_buckets() {
        let mut w = RecentWrites::default();
        let old = Instant::now() - RECENT_WRITE * 2;
        for i in 0..1000 {
            w.by_key.insert(format!("k{i}"), (old, 1));
        }
        w.prune();
        assert!(w.by_key.is_empty());
        assert!(w.by_key.capacity() < 1000, "{}", w.by_key.capacity());
    }
}

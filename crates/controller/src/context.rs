//! What every reconcile shares: the Kubernetes client, the OpenStack session cache, options,
//! per-object backoff and the memo of converged fingerprints.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capo_openstack::SessionCache;
use capo_openstack::credentials::NilSelectorPolicy;
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

/// Converged state of one object, kept in memory: after a restart every object gets one
/// full reconcile, which is exactly what upstream does on every reconcile.
#[derive(Debug, Clone)]
pub struct Converged {
    /// Fingerprint of everything the reconcile depended on (spec, generation, recorded IDs).
    pub fingerprint: String,
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
    writes: Mutex<HashMap<String, (Instant, u64)>>,
    objects: Mutex<HashMap<String, (String, String)>>,
    nudge: Mutex<Option<futures::channel::mpsc::UnboundedSender<(String, String)>>>,
}

/// How long this controller's own status write is remembered: longer than a watch event takes
/// to reach the store, short enough that a status changed by someone else since is written
/// back soon.
const RECENT_WRITE: Duration = Duration::from_secs(5);

/// Remembered writes kept before old ones are dropped.
const WRITES_PRUNE_ABOVE: usize = 4096;

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
            writes: Mutex::new(HashMap::new()),
            objects: Mutex::new(HashMap::new()),
            nudge: Mutex::new(None),
        })
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
    pub fn set_converged(&self, key: &str, fingerprint: String, verified: bool) {
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
        // A converged object waits on nothing: its wait ended now.
        self.pace.done(key);
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
            w.get(key)
                .is_some_and(|(at, d)| *d == digest && at.elapsed() < RECENT_WRITE)
        })
    }

    /// Remember that status with `digest` was just written for `key`.
    pub fn record_write(&self, key: &str, digest: u64) {
        if let Ok(mut w) = self.writes.lock() {
            if w.len() > WRITES_PRUNE_ABOVE {
                w.retain(|_, (at, _)| at.elapsed() < RECENT_WRITE);
            }
            w.insert(key.to_owned(), (Instant::now(), digest));
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
        self.pace.forget(key);
    }
}

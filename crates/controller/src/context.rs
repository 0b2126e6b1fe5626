//! What reconciles share: [`Shared`], built once per manager (the Kubernetes client, the
//! OpenStack session cache, options, metrics, the watched stores, recent identity reads,
//! events), and each controller's [`Context`] over it (its concurrency, error backoff, memo
//! ([`crate::memo`]) and caches).

use std::sync::Arc;
use std::time::Duration;

use capo_openstack::SessionCache;
use capo_openstack::credentials::NilSelectorPolicy;
use kube::Client;

use crate::backoff::Backoff;
use crate::metrics::ReconcileMetrics;

/// Field manager of every write the controllers make (server-side apply and patches).
pub const FIELD_MANAGER: &str = "capo-controller-manager";

/// How long resolved lookups are reused by default ([`Options::lookup_ttl`]).
pub const LOOKUP_TTL: Duration = Duration::from_secs(300);

/// Tunables of the controllers. `Default` gives production values.
#[derive(Debug, Clone)]
pub struct Options {
    /// First requeue while the cloud works (Octavia PENDING_*, server BUILD, ORC images,
    /// IPAM claims, deletes in progress); grows by half while the same wait continues, up to
    /// `requeue_pending_max` ([`crate::memo::Memo::delay`]).
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
            lookup_ttl: LOOKUP_TTL,
            identity_read_max_age: Duration::from_secs(60),
        }
    }
}

/// What every controller of one manager shares, built once ([`Shared::new`]): the Kubernetes
/// client, the OpenStack sessions, the options, the reconcile metrics, the watched stores, the
/// recent identity reads and the event recorder. Each controller's own state is in its
/// [`Context`].
pub struct Shared {
    /// Kubernetes client.
    pub client: Client,
    /// OpenStack sessions keyed by credentials.
    pub sessions: Arc<SessionCache>,
    /// Tunables (`concurrency` is each controller's default; [`Shared::context`] may set
    /// another).
    pub options: Options,
    /// Reconcile metrics (labelled by controller).
    pub metrics: ReconcileMetrics,
    /// The watched stores owners and children are read from.
    pub informers: crate::informers::Informers,
    /// Identity Secrets, OpenStackClusterIdentities and namespaces read recently.
    pub identity_reads: crate::recent_reads::IdentityReads,
    events: crate::events::Events,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// What the controllers of one manager share; `metrics` are the ones it exports.
    pub fn new(
        client: Client,
        sessions: Arc<SessionCache>,
        options: Options,
        metrics: ReconcileMetrics,
    ) -> Arc<Self> {
        Arc::new(Self {
            informers: crate::informers::Informers::new(&client, options.namespace.as_deref()),
            identity_reads: crate::recent_reads::IdentityReads::new(options.identity_read_max_age),
            events: crate::events::Events::new(
                client.clone(),
                FIELD_MANAGER,
                std::env::var("POD_NAME").ok(),
            ),
            client,
            sessions,
            options,
            metrics,
        })
    }

    /// The context of one controller with the default concurrency.
    pub fn context(self: &Arc<Self>) -> Arc<Context> {
        self.context_with(self.options.concurrency)
    }

    /// The context of one controller running `concurrency` reconciles at once.
    pub fn context_with(self: &Arc<Self>, concurrency: u16) -> Arc<Context> {
        let o = &self.options;
        Arc::new(Context {
            shared: self.clone(),
            concurrency,
            backoff: Backoff::new(o.backoff_min, o.backoff_max),
            memo: crate::memo::Memo::new(crate::memo::Timing {
                verify_period: o.verify_period,
                sync_period: o.sync_period,
                requeue_pending: o.requeue_pending,
                requeue_pending_max: o.requeue_pending_max,
            }),
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
}

/// One controller's context: what all share, and this controller's concurrency, error
/// backoff and memo. What a kind keeps besides (caches, indexes) is its own
/// ([`crate::lifecycle::Reconciled::State`]).
pub struct Context {
    /// What every controller shares.
    pub shared: Arc<Shared>,
    /// Concurrent reconciles of this controller.
    pub concurrency: u16,
    /// Per-object error backoff.
    pub backoff: Backoff,
    /// What this controller remembers about its objects between reconciles.
    pub memo: crate::memo::Memo,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("concurrency", &self.concurrency)
            .field("memo", &self.memo)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A controller context over a [`Shared`] of its own, with unexported metrics (tests and
    /// tools that run controllers outside the manager).
    pub fn new(client: Client, sessions: Arc<SessionCache>, options: Options) -> Arc<Self> {
        Shared::new(client, sessions, options, ReconcileMetrics::default()).context()
    }
}

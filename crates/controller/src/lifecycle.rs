//! The one reconcile lifecycle of every kind: owners → pause → finalizer → apply or cleanup,
//! with the status built in a [`Scope`] and failures reported by one mapping.
//!
//! A kind supplies its owner lookup, its preconditions, `apply` and `cleanup` ([`Reconciled`]);
//! everything else is here, once:
//!
//! 1. **Owners.** [`Reconciled::owners`] reads what the object hangs off (Cluster API Cluster,
//!    Machine, OpenStackCluster) from the manager's stores ([`crate::informers`]). Until the
//!    owner reference is set nothing happens, as upstream; an owner referenced but not in the
//!    store yet is looked for again at the progress pace; an object being deleted proceeds
//!    without its owners.
//! 2. **Pause.** A paused object (its Cluster's `spec.paused`, or the `cluster.x-k8s.io/paused`
//!    annotation on itself) gets no cloud call and no write except its `Paused` condition
//!    (v1beta2 contract). Resuming writes `Paused=False` and carries it into the same reconcile,
//!    so the status written next keeps it.
//! 3. **Finalizer.** No cloud call before the finalizer and the ownership-ID annotation are
//!    persisted ([`runtime::ensure_finalizer`]); the reconcile stops after adding them and the
//!    update event starts the next one. Kinds that create nothing have none
//!    ([`Reconciled::FINALIZER`] empty). Deletion runs only through the finalizer, which is
//!    removed once `cleanup` reports everything gone; until then Ready says what is going
//!    away and the object is requeued, backing off while the same wait lasts. A cleanup that
//!    fails because the credentials can no longer work says so on Ready, with the annotation
//!    that lets capo remove the finalizer without deleting; with that annotation it does
//!    ([`crate::abandon`]).
//! 4. **Status.** Each step writes status when it changed ([`Scope::flush`], server-side apply);
//!    a failure is reported on the condition of the step under way and on `Ready`, written,
//!    and published as a Warning event ([`Scope::fail`]).
//! 5. **Authentication.** `OpenStackAuthenticationSucceeded` (upstream v0.15's condition, on
//!    every kind) says whether the object's credentials work. It is False, reason
//!    `OpenStackAuthenticationFailed`, when a reconcile fails on them
//!    ([`Error::is_credentials_problem`]: identityRef Secret missing, clouds.yaml unusable,
//!    namespace refused by an OpenStackClusterIdentity, Keystone answering 401), with the same
//!    message as Ready (which keeps its reason `InvalidCredentials`); the message names the
//!    Secret or identity, never what the Secret holds. Upstream authenticates eagerly when it
//!    builds its client and sets True right then; a capo session authenticates lazily, on its
//!    first request ([`capo_openstack::Session::authenticated`]), so capo sets True, reason
//!    `Ready`, only once a session the reconcile obtained ([`Scope::session_for`]) has had a
//!    token from Keystone: with the next status write after the cloud calls, or, when a
//!    reconcile succeeds without another write, with one write of its own. A reconcile that
//!    makes no cloud call (converged, waiting for something else) leaves the condition as
//!    stored, and an object that never used its credentials has none. An OpenStackMachine's
//!    cloud work is done by its OpenStackServer, so it also mirrors the server's condition, with its
//!    next write (never a write of its own while the server is on its way).
//! 6. **Events in.** The object's own watch passes on only changes that can change the desired
//!    state (generation, labels, annotations, finalizers, owner references:
//!    [`runtime::primary_stream`]), so the
//!    status writes of a reconcile never wake it again; retries are the requeue it returned or
//!    the error policy's backoff ([`runtime::error_policy`]).

use std::future::Future;
use std::sync::Arc;

use capo_api::constants::{condition_reasons, condition_types};
use capo_api::v1beta1::OpenStackIdentityReference;
use capo_cloud::{Progress, Wait};
use kube::core::NamespaceResourceScope;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::abandon;
use crate::conditions::{self, Entry, State};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::memo::Key;
use crate::runtime::{self, ensure_finalizer, has_paused_annotation, is_deleting};

/// Condition type of the v1beta2 contract reporting pause.
pub const PAUSED_CONDITION: &str = "Paused";

/// What the owner lookup decided.
pub enum Owners<O> {
    /// Go on with these owners.
    Found(O),
    /// Nothing to do until the object changes (owner reference not set yet, or the object is
    /// managed by someone else); the text is logged.
    Skip(&'static str),
    /// The owner reference is set but the owner is not in the manager's store yet (it can be
    /// one event behind): look again at the progress pace; the text is logged.
    Wait(&'static str),
}

/// A kind reconciled through the [`lifecycle`](self).
pub trait Reconciled:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + Sized
    + 'static
{
    /// Controller name in metrics, logs and memo keys.
    const CONTROLLER: &'static str;
    /// The finalizer guarding the kind's cloud resources (upstream's name). Empty for a kind
    /// that creates nothing in the cloud (a template only reads it): such objects get no
    /// finalizer, and their deletion is left to Kubernetes.
    const FINALIZER: &'static str;
    /// Condition reason of a spec the cloud cannot realise (upstream's name for the kind).
    const INVALID_SPEC_REASON: &'static str;
    /// The status, written whole by server-side apply.
    type Status: Clone + Default + PartialEq + Serialize + Send + Sync;
    /// The form of the status' conditions (v1beta1's, or standard for the v1alpha1 kinds).
    type Condition: Entry + Send + Sync;
    /// How cloud resources made for this object are tagged and named.
    type CloudOwner: Send + Sync;
    /// What [`Reconciled::owners`] finds.
    type Owners: Send + Sync;
    /// What the kind's controller keeps for itself between reconciles (caches, indexes), apart
    /// from the memo every controller has ([`crate::memo`]); `()` for none.
    type State: Send + Sync + 'static;

    /// The controller's state when it starts.
    fn state(ctx: &Context) -> Self::State;
    /// Drop what `state` keeps about `obj` (gone, or starting over; key `key`).
    fn forget(_state: &Self::State, _obj: &Self, _key: &Key) {}

    /// The status, if any was written.
    fn status(&self) -> Option<&Self::Status>;
    /// The conditions of `status`.
    fn conditions(status: &mut Self::Status) -> &mut Vec<Self::Condition>;
    /// Whether the cloud side exists and is usable (upstream's `status.ready`).
    fn provisioned(status: &Self::Status) -> bool;
    /// The condition a failure is reported on before any step names its own.
    fn first_step(status: &Self::Status) -> &'static str;
    /// The credentials of the object, where it names them itself, with the type stated (the
    /// v1alpha1 kinds may leave it to its default).
    fn identity_ref(&self) -> Option<OpenStackIdentityReference>;
    /// Ownership of the object's cloud resources.
    fn cloud_owner(&self) -> Self::CloudOwner;
    /// The cloud resources `status` records (`kind id`), named in the event of an object
    /// abandoned ([`crate::abandon`]).
    fn recorded(&self, _status: &Self::Status) -> Vec<String> {
        Vec::new()
    }
    /// `status` as the API server stores it (the kinds stored in another version than the one
    /// the controller works on convert it: [`crate::stored`]). Two statuses with the same
    /// stored form are the same to the API server: writing one over the other changes nothing.
    fn wire_status(&self, status: &Self::Status) -> Result<serde_json::Value> {
        serde_json::to_value(status).map_err(|source| Error::Serialize {
            what: "status",
            source,
        })
    }

    /// Read the owners; `deleting` objects proceed without them.
    fn owners(
        obj: &Self,
        ctx: &Context,
        deleting: bool,
    ) -> impl Future<Output = Result<Owners<Self::Owners>>> + Send;
    /// Whether the owners pause this object (its own annotation is checked by the lifecycle).
    fn paused(owners: &Self::Owners) -> bool;
    /// The object as reconciled, given its owners (defaults that depend on them).
    fn effective(obj: Arc<Self>, _owners: &Self::Owners) -> Arc<Self> {
        obj
    }
    /// What must hold before the finalizer is added and anything is done (a requeue while
    /// waiting, reported in status by the kind).
    fn preconditions(
        _scope: &mut Scope<'_, Self>,
        _owners: &Self::Owners,
    ) -> impl Future<Output = Result<Option<Action>>> + Send {
        async { Ok(None) }
    }
    /// Create or update the cloud side (finalizer in place).
    fn apply(
        scope: &mut Scope<'_, Self>,
        owners: Self::Owners,
    ) -> impl Future<Output = Result<Action>> + Send;
    /// Delete the cloud side: Done once everything is gone (the finalizer is then removed),
    /// else what is still going away.
    fn cleanup(
        scope: &mut Scope<'_, Self>,
        owners: Self::Owners,
    ) -> impl Future<Output = Result<Progress>> + Send;
}

/// `type Status`, `type Condition` and the two accessors every kind writes the same way (its
/// `status` field, with `conditions` in it). The conditions are v1beta1's unless a form is given.
macro_rules! status_of {
    ($status:ty) => {
        $crate::lifecycle::status_of!($status, capo_api::v1beta1::Condition);
    };
    ($status:ty, $condition:ty) => {
        type Status = $status;
        type Condition = $condition;

        fn status(&self) -> Option<&$status> {
            self.status.as_ref()
        }

        fn conditions(status: &mut $status) -> &mut Vec<$condition> {
            &mut status.conditions
        }
    };
}
pub(crate) use status_of;

/// The status hooks of a kind stored in v1beta2 and reconciled as v1beta1 ([`crate::stored`]).
macro_rules! stored_status {
    () => {
        fn wire_status(&self, status: &Self::Status) -> Result<serde_json::Value> {
            crate::stored::wire_status(&self.0, status)
        }
    };
}
pub(crate) use stored_status;

/// The controller of kind `K`: its context and the kind's own state (the context kube-runtime
/// passes to every reconcile of the kind).
pub struct Reconciler<K: Reconciled> {
    /// The controller's context.
    pub ctx: Arc<Context>,
    /// The kind's own state.
    pub state: K::State,
}

impl<K: Reconciled> Reconciler<K> {
    /// The controller of `K` over `ctx`, with the kind's state as it starts.
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        let state = K::state(&ctx);
        Arc::new(Self { ctx, state })
    }
}

impl<K: Reconciled> AsRef<Context> for Reconciler<K> {
    fn as_ref(&self) -> &Context {
        &self.ctx
    }
}

/// One reconcile of `obj`, instrumented (metrics, logs, backoff reset on success).
pub async fn reconcile<K: Reconciled>(obj: Arc<K>, r: Arc<Reconciler<K>>) -> Result<Action> {
    runtime::instrumented(K::CONTROLLER, &*obj, &r.ctx, run(obj.clone(), &r)).await
}

async fn run<K: Reconciled>(obj: Arc<K>, r: &Reconciler<K>) -> Result<Action> {
    let ctx = &*r.ctx;
    // Another manager's object (`--watch-filter`): the shared stores hold every object of the
    // watched namespaces, so a related object's change or a peer's nudge can name it.
    if !runtime::has_filter_label(&*obj, ctx.shared.options.watch_filter.as_deref()) {
        return Ok(Action::await_change());
    }
    let deleting = is_deleting(&*obj);
    let owners = match Box::pin(K::owners(&obj, ctx, deleting)).await? {
        Owners::Found(o) => o,
        Owners::Skip(why) => {
            let ns = obj.namespace().unwrap_or_default();
            tracing::debug!(controller = K::CONTROLLER, namespace = %ns, name = %obj.name_any(), "{why}");
            return Ok(Action::await_change());
        }
        Owners::Wait(why) => {
            let ns = obj.namespace().unwrap_or_default();
            tracing::debug!(controller = K::CONTROLLER, namespace = %ns, name = %obj.name_any(), "{why}");
            return Ok(Action::requeue(ctx.memo.delay(&key_of(&*obj), "Owners")));
        }
    };
    let own_pause = has_paused_annotation(&*obj);
    let owner_pause = K::paused(&owners);
    let obj = K::effective(obj, &owners);
    let mut scope = Scope::new(ctx, &r.state, &*obj);
    Box::pin(scope.record_pause(own_pause || owner_pause)).await?;
    if own_pause {
        tracing::debug!(controller = K::CONTROLLER, name = %obj.name_any(), "paused");
        return Ok(Action::await_change());
    }
    if owner_pause {
        // The owner's pause is read from its store, which can be one event behind the watch
        // that woke this reconcile (the owner's unpause): look again at the progress pace
        // (no API request while it lasts) instead of waiting for an event already had.
        tracing::debug!(controller = K::CONTROLLER, name = %obj.name_any(), "paused by its owner");
        return Ok(Action::requeue(scope.ctx.memo.delay(&scope.key, "Paused")));
    }
    if deleting {
        if !obj.finalizers().iter().any(|f| f == K::FINALIZER) {
            // Going away without anything of ours to delete: its waits end here.
            scope.forget();
            return Ok(Action::await_change());
        }
        return match Box::pin(K::cleanup(&mut scope, owners)).await {
            Ok(Progress::Done(())) => {
                scope.forget();
                Box::pin(runtime::remove_finalizer(&scope.api, &*obj, K::FINALIZER)).await?;
                Box::pin(scope.abandon_ignored_when_deleted()).await;
                Ok(Action::await_change())
            }
            Ok(Progress::Waiting(Wait { message: why, .. }) | Progress::Stuck(why)) => {
                Box::pin(scope.deleting(why)).await
            }
            Err(e) if e.is_credentials_problem() => Box::pin(scope.blocked(e)).await,
            Err(e) => Err(Box::pin(scope.fail(e)).await),
        };
    }
    if !K::FINALIZER.is_empty() && abandon::annotated(&*obj) {
        let note = format!(
            "{}={} ignored: the object is not being deleted (it only lets capo remove its finalizer from an object being deleted whose credentials no longer work)",
            abandon::ABANDON_ANNOTATION,
            "true"
        );
        scope
            .event(
                EventType::Warning,
                abandon::ABANDON_IGNORED,
                "Reconcile",
                Some(note),
            )
            .await;
    }
    if let Some(action) = Box::pin(K::preconditions(&mut scope, &owners)).await? {
        return Ok(action);
    }
    if !K::FINALIZER.is_empty()
        && Box::pin(ensure_finalizer(&scope.api, &*obj, K::FINALIZER)).await?
    {
        return Ok(Action::await_change());
    }
    match Box::pin(K::apply(&mut scope, owners)).await {
        Ok(action) => {
            Box::pin(scope.flush_authentication()).await?;
            Ok(action)
        }
        Err(e) => Err(Box::pin(scope.fail(e)).await),
    }
}

/// Key of `obj` in the controller's memo: the controller, its ownership ID (stable across
/// `clusterctl move`), its namespace and name.
fn key_of<K: Reconciled>(obj: &K) -> Key {
    Key::new(
        K::CONTROLLER,
        &runtime::owner_id(obj),
        &obj.namespace().unwrap_or_default(),
        &obj.name_any(),
    )
}

/// One reconcile's view of an object: the object, its status being built, and the status last
/// written (so a step writes only when something changed).
pub struct Scope<'a, K: Reconciled> {
    /// The controller's context.
    pub ctx: &'a Context,
    /// The kind's own state ([`Reconciled::State`]).
    pub state: &'a K::State,
    /// The object as reconciled.
    pub obj: &'a K,
    /// The object's API (its namespace).
    pub api: Api<K>,
    /// The object's name.
    pub name: String,
    /// The object's namespace.
    pub namespace: String,
    /// Ownership of the object's cloud resources.
    pub owner: K::CloudOwner,
    /// Status being built.
    pub status: K::Status,
    written: K::Status,
    /// Condition type of the step under way (where a failure is reported besides Ready).
    pub step: &'static str,
    key: Key,
    /// The OpenStack sessions this reconcile obtained ([`Scope::session_for`]).
    sessions: std::sync::Mutex<Vec<capo_openstack::Session>>,
    /// This reconcile failed because of the credentials: it reports the authentication False
    /// whatever a session says.
    authentication_failed: bool,
}

impl<'a, K: Reconciled> Scope<'a, K> {
    /// The scope of one reconcile of `obj`.
    pub fn new(ctx: &'a Context, state: &'a K::State, obj: &'a K) -> Self {
        let namespace = obj.namespace().unwrap_or_default();
        let mut status = obj.status().cloned().unwrap_or_default();
        // Conditions stored by older writers are made valid for this form before anything
        // is written; `written` gets the same, so this alone causes no write.
        conditions::normalize(K::conditions(&mut status));
        let name = obj.name_any();
        let key = key_of(obj);
        Self {
            ctx,
            state,
            obj,
            api: Api::namespaced(ctx.shared.client.clone(), &namespace),
            name,
            namespace,
            owner: obj.cloud_owner(),
            step: K::first_step(&status),
            written: status.clone(),
            status,
            key,
            sessions: std::sync::Mutex::new(Vec::new()),
            authentication_failed: false,
        }
    }

    /// The action of a converged reconcile: the next look comes with a change, or once the
    /// sync period has passed ([`crate::memo::Memo::resync_later`]).
    pub fn resync_later(&self) -> Action {
        self.ctx.memo.resync_later(&self.key)
    }

    /// Key of this object in the controller's memo (cheap to clone).
    pub fn key(&self) -> Key {
        self.key.clone()
    }

    /// Forget what the controller remembers about this object (gone, or starting over): its
    /// memo entries ([`crate::memo::Memo::forget`]) and what the kind's state keeps about it.
    pub fn forget(&self) {
        self.ctx.memo.forget(&self.key);
        K::forget(self.state, self.obj, &self.key);
    }

    /// `Kind ns/name`, for messages.
    pub fn object(&self) -> String {
        format!("{} {}/{}", K::kind(&()), self.namespace, self.name)
    }

    /// The OpenStack session of `identity`, remembered for the authentication condition
    /// ([`Scope::note_authentication`]). Every cloud call of a reconcile takes its session here.
    pub async fn session_for(
        &self,
        identity: &OpenStackIdentityReference,
    ) -> Result<capo_openstack::Session> {
        let session =
            crate::credentials::session_for(self.ctx, &self.object(), &self.namespace, identity)
                .await?;
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.push(session.clone());
        }
        Ok(session)
    }

    /// The OpenStack session of the object's own identityRef.
    pub async fn session(&self) -> Result<capo_openstack::Session> {
        let identity = self.obj.identity_ref().ok_or_else(|| {
            Error::InvalidSpec(format!("{}: spec.identityRef is not set", self.object()))
        })?;
        self.session_for(&identity).await
    }

    /// Set a condition (observed at the object's current generation).
    pub fn set(&mut self, type_: &str, state: State) {
        let generation = self.obj.meta().generation;
        conditions::set(K::conditions(&mut self.status), type_, state, generation);
    }

    /// Write status if it changed since the last write. A reconcile that started from a
    /// store one event behind this controller's own last write computes that write again: it
    /// is not sent twice ([`crate::memo::Memo::written_recently`]).
    pub async fn flush(&mut self) -> Result<()> {
        self.note_authentication();
        if self.status == self.written {
            return Ok(());
        }
        let digest = crate::memo::digest(&self.status);
        if self.ctx.memo.written_recently(&self.key, digest) {
            self.written = self.status.clone();
            return Ok(());
        }
        // Compared as stored: what only the controller's form holds (condition severities in
        // a kind stored as v1beta2) is no reason to write. The new status is converted once.
        let wire = self.obj.wire_status(&self.status)?;
        if self.obj.wire_status(&self.written).ok().as_ref() == Some(&wire) {
            self.written = self.status.clone();
            return Ok(());
        }
        if tracing::enabled!(tracing::Level::DEBUG) {
            let changed = self.changed_conditions();
            tracing::debug!(object = %self.object(), ?changed, "writing status");
        }
        crate::status::apply_status(&self.api, &self.name, &wire).await?;
        self.ctx.memo.record_write(&self.key, digest);
        self.written = self.status.clone();
        Ok(())
    }

    /// `OpenStackAuthenticationSucceeded=True` once a session this reconcile obtained has a
    /// token from Keystone, unless the reconcile failed on its credentials (see the module
    /// documentation). Sessions authenticate lazily, so this is looked at when status is
    /// written, after the cloud calls before it. True when it set the condition.
    fn note_authentication(&mut self) -> bool {
        if self.authentication_failed {
            return false;
        }
        let authenticated = self
            .sessions
            .lock()
            .is_ok_and(|s| s.iter().any(capo_openstack::Session::authenticated));
        if authenticated {
            self.set(
                condition_types::OPENSTACK_AUTHENTICATION_SUCCEEDED,
                State::noted(condition_reasons::READY, ""),
            );
        }
        authenticated
    }

    /// After a reconcile that succeeded: write status if the authentication condition changed
    /// since the last write because a session of this reconcile authenticated (a converged
    /// object whose reconcile writes nothing else still records, once, that its credentials
    /// work). A condition only mirrored from elsewhere (a machine's, from its server) waits
    /// for the object's next write, so a machine still writes nothing while its server is
    /// on its way.
    async fn flush_authentication(&mut self) -> Result<()> {
        let own = self.note_authentication();
        let type_ = condition_types::OPENSTACK_AUTHENTICATION_SUCCEEDED;
        let now = conditions::get(K::conditions(&mut self.status), type_).cloned();
        let written = conditions::get(K::conditions(&mut self.written), type_).cloned();
        if !own || now == written {
            return Ok(());
        }
        self.flush().await
    }

    /// [`Scope::flush`] when a condition, or whether the object is provisioned, changed since
    /// the last write; other changed fields wait for the next write. For progress a reconcile
    /// derives again each time (a machine mirrors the ports and ID its server records on its
    /// way to ACTIVE): Ready already tells the progress, and one write per stage is enough.
    pub async fn flush_progress(&mut self) -> Result<()> {
        let same = K::conditions(&mut self.status) == K::conditions(&mut self.written)
            && K::provisioned(&self.status) == K::provisioned(&self.written);
        if same {
            return Ok(());
        }
        self.flush().await
    }

    /// `type=reason: message` of the conditions that differ from the last write (what a status
    /// write is for, in debug logs; condition messages never carry secrets).
    fn changed_conditions(&mut self) -> Vec<String> {
        let before = K::conditions(&mut self.written).clone();
        K::conditions(&mut self.status)
            .iter()
            .filter(|c| !before.contains(c))
            .map(|c| {
                let reason = c.reason().unwrap_or(c.status());
                let message = c.message().unwrap_or_default();
                format!("{}={reason}: {message}", c.type_())
            })
            .collect()
    }

    /// Record pause in the `Paused` condition, written at once when it changes (absent counts
    /// as not paused, so objects never paused carry no condition).
    async fn record_pause(&mut self, paused: bool) -> Result<()> {
        let current = conditions::get(K::conditions(&mut self.status), PAUSED_CONDITION)
            .map(|c| c.status() == "True");
        if current == Some(paused) || (current.is_none() && !paused) {
            return Ok(());
        }
        let state = if paused {
            State::True
        } else {
            State::info("NotPaused", "")
        };
        self.set(PAUSED_CONDITION, state);
        self.flush().await
    }

    /// Report a step under way on `condition` (and on Ready while the object was never
    /// provisioned) and requeue at the progress pace, slowing while the same wait lasts. The
    /// wait is told apart by the resource it names ([`Wait::on`] and [`Wait::id`], never its
    /// message): the next stage of a chain (the load balancer ACTIVE, then its listener, pool,
    /// monitor) starts short again.
    pub async fn waiting(&mut self, condition: &str, reason: &str, wait: Wait) -> Result<Action> {
        let delay = self.mark_waiting(condition, reason, wait);
        self.flush().await?;
        Ok(Action::requeue(delay))
    }

    /// Set `condition` (and Ready, while never provisioned) to the wait and return when to look
    /// again.
    fn mark_waiting(&mut self, condition: &str, reason: &str, wait: Wait) -> std::time::Duration {
        let delay = self.ctx.memo.paced(
            &self.key,
            &format!("{}/{reason}", K::CONTROLLER),
            &format!("{reason}/{}/{}", wait.on, wait.id),
        );
        self.set(condition, State::info(reason, wait.message.clone()));
        if !K::provisioned(&self.status) {
            self.set(condition_types::READY, State::info(reason, wait.message));
        }
        delay
    }

    /// Like [`Scope::waiting`], for a step whose progress the object's status does not mirror
    /// until it is provisioned: the conditions are set (they go out with the next write), the
    /// pace is the same, and nothing is written while the object was never provisioned. Upstream
    /// writes an OpenStackMachine's status once, at Ready; its server and the cluster's load
    /// balancer carry the progress meanwhile.
    pub async fn waiting_unwritten(
        &mut self,
        condition: &str,
        reason: &str,
        wait: Wait,
    ) -> Result<Action> {
        if K::provisioned(&self.written) {
            return self.waiting(condition, reason, wait).await;
        }
        Ok(Action::requeue(self.mark_waiting(condition, reason, wait)))
    }

    /// Report a failure only the operator can fix (a load balancer in ERROR) as errors on
    /// `condition` and Ready, with one Warning event, and retry slowly: the cloud will not
    /// change by itself.
    pub async fn stuck(&mut self, condition: &str, reason: &str, why: String) -> Result<Action> {
        self.set(condition, State::error(reason, why.clone()));
        self.set(condition_types::READY, State::error(reason, why.clone()));
        self.flush().await?;
        self.event(EventType::Warning, reason, "Reconcile", Some(why))
            .await;
        Ok(Action::requeue(self.ctx.shared.options.slow_retry))
    }

    /// Report a deletion in progress on Ready and requeue: soon at first, backing off while it
    /// lasts (Nova can take minutes to delete a server; a cluster waits for its machines).
    async fn deleting(&mut self, why: String) -> Result<Action> {
        self.set(condition_types::READY, State::info("Deleting", why));
        self.flush().await?;
        let delay = self.ctx.memo.delay(&self.key, "Deleting");
        Ok(Action::requeue(delay))
    }

    /// A cleanup failed because the credentials can no longer work (`err`): with the abandon
    /// annotation, remove the finalizer without deleting and list what is left behind in a
    /// Warning event; without it, say on Ready what blocks and which annotation lets capo go
    /// ([`crate::abandon`]).
    async fn blocked(&mut self, err: Error) -> Result<Action> {
        let object = self.object();
        let request = match abandon::Request::of(self.ctx, self.obj, &object).await {
            Ok(r) => r,
            Err(e) => return Err(self.fail(e).await),
        };
        if !request.requested {
            let identity = self
                .obj
                .identity_ref()
                .map(|i| abandon::describe_identity(&self.namespace, &i));
            let message = abandon::blocked(&err, identity.as_deref(), &request);
            return Err(self.fail_with(err, message).await);
        }
        let recorded = self.obj.recorded(&self.status);
        let passed_on = match abandon::pass_on(self.ctx, self.obj).await {
            Ok(names) => names,
            Err(e) => return Err(self.fail(e).await),
        };
        let note = abandon::abandoned_note(&err, &recorded, &passed_on);
        Box::pin(runtime::remove_finalizer(&self.api, self.obj, K::FINALIZER)).await?;
        self.forget();
        tracing::warn!(object = %object, "abandoned: {note}");
        self.event(EventType::Warning, abandon::ABANDONED, "Delete", Some(note))
            .await;
        Ok(Action::await_change())
    }

    /// After a deletion that completed: the object's own abandon annotation was not needed
    /// (its cleanup worked), which the operator is told. An annotation it follows from its
    /// cluster is not mentioned: what the object deleted may have been abandoned below it (a
    /// machine waits for its server, which the annotation may have let go).
    async fn abandon_ignored_when_deleted(&self) {
        if !abandon::annotated(self.obj) {
            return;
        }
        let note = format!(
            "{}=true ignored: the deletion of {} completed with working credentials, nothing of it was abandoned",
            abandon::ABANDON_ANNOTATION,
            self.object()
        );
        self.event(
            EventType::Warning,
            abandon::ABANDON_IGNORED,
            "Delete",
            Some(note),
        )
        .await;
    }

    /// Report `err` on the current step's condition and on Ready, write status and emit a
    /// Warning event; returns the error for the error policy.
    pub async fn fail(&mut self, err: Error) -> Error {
        let message = err.to_string();
        self.fail_with(err, message).await
    }

    /// [`Scope::fail`] with `message` instead of the error's own text.
    async fn fail_with(&mut self, err: Error, message: String) -> Error {
        if err.is_conflict() {
            return err;
        }
        if err.is_credentials_problem() {
            self.authentication_failed = true;
            self.set(
                condition_types::OPENSTACK_AUTHENTICATION_SUCCEEDED,
                State::error(
                    condition_reasons::OPENSTACK_AUTHENTICATION_FAILED,
                    err.to_string(),
                ),
            );
        }
        let provisioned = K::provisioned(&self.status);
        let reason = failure_reason(&err, self.step, provisioned, K::INVALID_SPEC_REASON);
        if self.step != condition_types::READY {
            self.set(self.step, State::error(reason, message.clone()));
        }
        self.set(
            condition_types::READY,
            State::error(reason, message.clone()),
        );
        if let Err(e) = self.flush().await {
            tracing::warn!(error = %e, "could not record the failure in status");
        }
        self.event(EventType::Warning, reason, "Reconcile", Some(message))
            .await;
        err
    }

    /// Publish an event about this object (failures to publish are logged, never fatal).
    pub async fn event(&self, type_: EventType, reason: &str, action: &str, note: Option<String>) {
        self.ctx
            .shared
            .publish(self.obj, type_, reason, action, note)
            .await;
    }
}

/// The condition reason of a failure, for every kind: the spec (or something it references
/// that the cloud does not have, before the object was ever provisioned), the credentials
/// (unusable, or refused by the cloud: [`Error::is_credentials_problem`]), else what the step
/// under way was doing.
pub fn failure_reason(
    err: &Error,
    step: &str,
    provisioned: bool,
    invalid_spec: &'static str,
) -> &'static str {
    use capo_cloud::Error as Cloud;
    match err {
        Error::InvalidSpec(_) | Error::Cloud(Cloud::InvalidSpec(_)) => invalid_spec,
        Error::Cloud(Cloud::NotFound { .. }) if !provisioned => invalid_spec,
        e if e.is_credentials_problem() => conditions::INVALID_CREDENTIALS,
        _ if step == condition_types::API_SERVER_INGRESS_READY => {
            condition_reasons::LOAD_BALANCER_MEMBER_ERROR
        }
        Error::Cloud(_) if step == condition_types::INSTANCE_READY && !provisioned => {
            condition_reasons::INSTANCE_CREATE_FAILED
        }
        _ => condition_reasons::OPENSTACK_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mapping_for_every_kind() {
        let spec = Error::InvalidSpec("x".into());
        assert_eq!(
            failure_reason(&spec, condition_types::READY, true, "InvalidSpec"),
            "InvalidSpec"
        );
        let creds = Error::Credentials("x".into());
        assert_eq!(
            failure_reason(&creds, condition_types::INSTANCE_READY, false, "I"),
            "InvalidCredentials"
        );
        // Keystone's 401 (a user, project or domain gone) is a credentials problem too.
        let refused = Error::Cloud(capo_cloud::Error::api(
            "list networks",
            capo_openstack::Error::Api {
                kind: capo_openstack::ErrorKind::Unauthorized,
                request: "token_create".into(),
                status: 401,
                message: "The request you have made requires authentication.".into(),
            },
        ));
        assert_eq!(
            failure_reason(&refused, condition_types::READY, true, "I"),
            "InvalidCredentials"
        );
        let fin = Error::Finalizer("x".into());
        assert_eq!(
            failure_reason(&fin, condition_types::API_SERVER_INGRESS_READY, true, "I"),
            condition_reasons::LOAD_BALANCER_MEMBER_ERROR
        );
        assert_eq!(
            failure_reason(&fin, condition_types::INSTANCE_READY, false, "I"),
            condition_reasons::OPENSTACK_ERROR
        );
    }
}

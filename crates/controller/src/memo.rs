//! What one controller remembers about its objects between reconciles, in memory, under typed
//! keys: converged fingerprints, the pace of current waits (a peer's ended wait wakes the
//! object its key names), the periodic look of converged objects, and its own recent status
//! writes.
//!
//! Guarantees:
//! - Every table is keyed by [`Key`] (the object's ownership ID and the controller), never by a
//!   string built at the call site; a kind that converges in parts (the cluster's network layer
//!   apart from the rest) names the part with [`Part`].
//! - "Converged and recently verified" is decided in one place, [`Memo::fresh`]: the same
//!   fingerprint, verified less than the verify period ago.
//! - [`Memo::forget`] drops every entry of a key (all parts, its wait, its periodic look, its
//!   recent write), so an object deleted or starting over leaves nothing behind; [`Memo::sizes`] shows
//!   the tables' sizes.
//! - Nothing survives a restart: after one, every object gets one full reconcile, which is what
//!   upstream does on every reconcile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::runtime::controller::Action;

use crate::fingerprint::Digest;
use crate::pace::Pace;

/// The key of one object of one controller: the controller, the object's ownership ID
/// (stable across `clusterctl move`) and where the object is. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key(Arc<KeyParts>);

#[derive(Debug, PartialEq, Eq, Hash)]
struct KeyParts {
    controller: &'static str,
    owner: String,
    namespace: String,
    name: String,
}

impl Key {
    /// The key of object `namespace/name` with ownership ID `owner` in `controller`.
    pub fn new(controller: &'static str, owner: &str, namespace: &str, name: &str) -> Self {
        Self(Arc::new(KeyParts {
            controller,
            owner: owner.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }))
    }

    /// The controller.
    pub fn controller(&self) -> &'static str {
        self.0.controller
    }

    /// The object's (namespace, name).
    fn object(&self) -> (String, String) {
        (self.0.namespace.clone(), self.0.name.clone())
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let k = &self.0;
        write!(
            f,
            "{} {}/{} ({})",
            k.controller, k.namespace, k.name, k.owner
        )
    }
}

/// What part of an object converged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// The whole object.
    Object,
    /// An OpenStackCluster's network layer (network, subnets, router, security groups), which
    /// converges before its load balancer and bastion.
    Network,
}

/// Converged state of one part of an object.
#[derive(Debug, Clone)]
pub struct Converged {
    /// Fingerprint of everything the reconcile depended on.
    pub fingerprint: Digest,
    /// When the cloud was last fully verified.
    pub verified_at: Instant,
    /// When the cloud was last verified or probed.
    pub probed_at: Instant,
}

/// How the memo is timed (from the controller's options).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// A converged part is fresh for this long after its last full verification.
    pub verify_period: Duration,
    /// The periodic look of a converged object comes this long after it converged.
    pub sync_period: Duration,
    /// First requeue of a wait ([`crate::pace`]).
    pub requeue_pending: Duration,
    /// Longest requeue of a continuing wait.
    pub requeue_pending_max: Duration,
}

/// The sizes of a memo's tables ([`Memo::sizes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sizes {
    /// Converged parts.
    pub converged: usize,
    /// Current waits.
    pub waits: usize,
    /// Recent status writes.
    pub writes: usize,
    /// Converged objects scheduled for their periodic look.
    pub resyncs: usize,
}

/// One controller's memo.
pub struct Memo {
    timing: Timing,
    converged: Mutex<HashMap<(Key, Part), Converged>>,
    pace: Pace<Key>,
    writes: Mutex<RecentWrites>,
    nudge: Mutex<Option<futures::channel::mpsc::UnboundedSender<(String, String)>>>,
    resyncs: Arc<Resyncs>,
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo")
            .field("timing", &self.timing)
            .field("sizes", &self.sizes())
            .finish_non_exhaustive()
    }
}

impl Memo {
    /// An empty memo timed by `timing`.
    pub fn new(timing: Timing) -> Self {
        Self {
            timing,
            converged: Mutex::default(),
            pace: Pace::new(timing.requeue_pending),
            writes: Mutex::default(),
            nudge: Mutex::new(None),
            resyncs: Arc::new(Resyncs::default()),
        }
    }

    /// The record of `part` of `key` when it converged with `fingerprint` and was fully
    /// verified less than the verify period ago (the one freshness check); `None` means a full
    /// reconcile is due.
    pub fn fresh(&self, key: &Key, part: Part, fingerprint: &Digest) -> Option<Converged> {
        let m = self.converged.lock().ok()?;
        m.get(&(key.clone(), part))
            .filter(|c| {
                c.fingerprint == *fingerprint && c.verified_at.elapsed() < self.timing.verify_period
            })
            .cloned()
    }

    /// Record that `part` of `key` converged with `fingerprint` (fully verified now when
    /// `verified`; otherwise probed now, keeping the last verification if the fingerprint is
    /// the same). The whole object converging ends its wait.
    pub fn set_converged(&self, key: &Key, part: Part, fingerprint: Digest, verified: bool) {
        if let Ok(mut m) = self.converged.lock() {
            let entry = (key.clone(), part);
            let verified_at = match (verified, m.get(&entry)) {
                (false, Some(prev)) if prev.fingerprint == fingerprint => prev.verified_at,
                _ => Instant::now(),
            };
            m.insert(
                entry,
                Converged {
                    fingerprint,
                    verified_at,
                    probed_at: Instant::now(),
                },
            );
        }
        if part == Part::Object {
            // A converged object waits on nothing: its wait ended now.
            self.pace.done(key);
            self.send_due();
        }
    }

    /// Forget everything about `key` (spec changed, drift found, object deleted): every part,
    /// its wait (not learnt), its periodic look and its recent write.
    pub fn forget(&self, key: &Key) {
        if let Ok(mut m) = self.converged.lock() {
            for part in [Part::Object, Part::Network] {
                m.remove(&(key.clone(), part));
            }
            shrink_after_burst(&mut m);
        }
        self.resyncs.cancel(key);
        if let Ok(mut w) = self.writes.lock() {
            w.by_key.remove(key);
        }
        self.pace.forget(key);
    }

    /// Requeue delay for `key` waiting on `reason` ([`crate::pace`]): short first, growing by
    /// half while the same wait lasts, up to the longest requeue, jittered; once waits of this
    /// reason have been seen to end, from their typical length. A different reason starts the
    /// pace again.
    pub fn delay(&self, key: &Key, reason: &str) -> Duration {
        self.paced(key, reason, reason)
    }

    /// [`Memo::delay`] for a wait told apart by `stage` (built from typed parts: the reason and
    /// the resource awaited, never a message), of kind `kind` (no names: the controller and
    /// reason), which learns from the kind's earlier waits.
    pub fn paced(&self, key: &Key, kind: &str, stage: &str) -> Duration {
        let delay = self.pace.delay(
            key,
            kind,
            stage,
            self.timing.requeue_pending,
            self.timing.requeue_pending_max,
        );
        self.send_due();
        delay
    }

    /// The action of a converged reconcile: look at the object of `key` again after the sync
    /// period ([`Resyncs`]; the controller's [`crate::runtime::nudged`] stream brings it back),
    /// and until then only on a change.
    pub fn resync_later(&self, key: &Key) -> Action {
        self.resyncs
            .schedule(key, Instant::now() + self.timing.sync_period);
        Action::await_change()
    }

    /// The table [`Memo::resync_later`] fills (shared with the controller's trigger stream).
    pub fn resyncs(&self) -> Arc<Resyncs> {
        self.resyncs.clone()
    }

    /// The objects (`namespace`, `name`) to reconcile now because a peer's wait of their kind
    /// ended ([`crate::pace`]); the controller passes them to `reconcile_on`. One stream per
    /// memo: a second call replaces the first.
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
        let Ok(nudge) = self.nudge.lock() else {
            return;
        };
        let Some(tx) = nudge.as_ref() else {
            return;
        };
        for key in due {
            // A closed channel (controller stopped) only means nobody listens any more.
            let _ = tx.unbounded_send(key.object());
        }
    }

    /// Whether status with `digest` is what this controller wrote for `key` moments ago.
    pub fn written_recently(&self, key: &Key, digest: u64) -> bool {
        self.writes.lock().is_ok_and(|w| {
            w.by_key
                .get(key)
                .is_some_and(|(at, d)| *d == digest && at.elapsed() < RECENT_WRITE)
        })
    }

    /// Remember that status with `digest` was just written for `key`.
    pub fn record_write(&self, key: &Key, digest: u64) {
        if let Ok(mut w) = self.writes.lock() {
            w.prune();
            w.by_key.insert(key.clone(), (Instant::now(), digest));
        }
    }

    /// The sizes of the tables.
    pub fn sizes(&self) -> Sizes {
        Sizes {
            converged: self.converged.lock().map(|m| m.len()).unwrap_or_default(),
            waits: self.pace.waiting(),
            writes: self
                .writes
                .lock()
                .map(|w| w.by_key.len())
                .unwrap_or_default(),
            resyncs: self.resyncs.len(),
        }
    }
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
    /// Look at the object of `key` again at `due`, unless an earlier look is already due (as
    /// kube-runtime keeps the earlier of two requeues).
    fn schedule(&self, key: &Key, due: Instant) {
        let Ok(mut all) = self.0.lock() else {
            return;
        };
        all.entry(key.controller())
            .or_default()
            .entry(key.object())
            .and_modify(|at| *at = (*at).min(due))
            .or_insert(due);
    }

    /// Drop the look scheduled for the object of `key`.
    fn cancel(&self, key: &Key) {
        if let Ok(mut all) = self.0.lock()
            && let Some(table) = all.get_mut(key.controller())
        {
            table.remove(&key.object());
            shrink_after_burst(table);
        }
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

    /// Scheduled looks, all controllers.
    fn len(&self) -> usize {
        self.0
            .lock()
            .map(|all| all.values().map(HashMap::len).sum())
            .unwrap_or_default()
    }
}

/// How long this controller's own status write is remembered: longer than a watch event takes
/// to reach the store, short enough that a status changed by someone else since is written
/// back soon.
const RECENT_WRITE: Duration = Duration::from_secs(5);

/// This controller's status writes of the last [`RECENT_WRITE`], by key: (when, digest).
/// Older ones are dropped at most once per [`RECENT_WRITE`], so in steady state the table is
/// about empty instead of holding one entry per object ever written.
#[derive(Default)]
struct RecentWrites {
    by_key: HashMap<Key, (Instant, u64)>,
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
pub(crate) fn shrink_after_burst<K: std::hash::Hash + Eq, V>(table: &mut HashMap<K, V>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> Timing {
        Timing {
            verify_period: Duration::from_secs(3600),
            sync_period: Duration::from_secs(600),
            requeue_pending: Duration::from_secs(1),
            requeue_pending_max: Duration::from_secs(20),
        }
    }

    fn fp(n: u8) -> Digest {
        let mut h = crate::fingerprint::Fingerprint::new();
        h.bytes([n]);
        h.finish()
    }

    #[test]
    fn a_resync_is_due_once_at_the_earlier_time_and_per_controller() {
        let r = Resyncs::default();
        let now = Instant::now();
        let later = now + Duration::from_secs(600);
        let key = |c, n| Key::new(c, "uid", "ns", n);
        r.schedule(&key("machine", "a"), later);
        // An earlier look wins, as kube-runtime keeps the earlier of two requeues; a later one
        // does not postpone it.
        r.schedule(&key("machine", "a"), now);
        r.schedule(&key("machine", "a"), later);
        r.schedule(&key("machine", "b"), later);
        r.schedule(&key("server", "a"), now);
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
            w.by_key
                .insert(Key::new("cluster", &format!("k{i}"), "ns", "n"), (old, 1));
        }
        w.prune();
        assert!(w.by_key.is_empty());
        assert!(w.by_key.capacity() < 1000, "{}", w.by_key.capacity());
    }

    #[test]
    fn fresh_needs_the_same_fingerprint_and_a_verification_within_the_period() {
        let m = Memo::new(timing());
        let k = Key::new("cluster", "uid-1", "ns", "c");
        assert!(m.fresh(&k, Part::Object, &fp(1)).is_none());
        m.set_converged(&k, Part::Object, fp(1), true);
        assert!(m.fresh(&k, Part::Object, &fp(1)).is_some());
        assert!(
            m.fresh(&k, Part::Object, &fp(2)).is_none(),
            "another fingerprint"
        );
        assert!(
            m.fresh(&k, Part::Network, &fp(1)).is_none(),
            "parts are apart"
        );
        assert!(
            m.fresh(
                &Key::new("machine", "uid-1", "ns", "c"),
                Part::Object,
                &fp(1)
            )
            .is_none(),
            "controllers are apart"
        );
        let stale = Memo::new(Timing {
            verify_period: Duration::ZERO,
            ..timing()
        });
        stale.set_converged(&k, Part::Object, fp(1), true);
        assert!(stale.fresh(&k, Part::Object, &fp(1)).is_none());
    }

    #[test]
    fn a_thousand_objects_made_and_deleted_leave_the_tables_as_they_were() {
        let m = Memo::new(timing());
        let start = m.sizes();
        let keys: Vec<Key> = (0..1000)
            .map(|i| Key::new("cluster", &format!("uid-{i}"), "ns", &format!("c{i}")))
            .collect();
        // What a cluster's reconciles leave behind on their way to ready: waits, the network
        // converged, the object converged, its periodic look, its status writes.
        for k in &keys {
            m.delay(k, "LoadBalancerNotReady");
            m.record_write(k, 1);
            m.set_converged(k, Part::Network, fp(1), true);
            m.set_converged(k, Part::Object, fp(2), true);
            m.resync_later(k);
        }
        let busy = m.sizes();
        assert_eq!((busy.converged, busy.resyncs), (2000, 1000), "{busy:?}");
        // Half start waiting again (a spec change), then every one is deleted.
        for k in keys.iter().step_by(2) {
            m.delay(k, "Deleting");
        }
        for k in &keys {
            m.forget(k);
        }
        assert_eq!(m.sizes(), start);
    }

    #[test]
    fn forget_drops_every_part_of_a_key_and_nothing_of_others() {
        let m = Memo::new(timing());
        let a = Key::new("cluster", "a", "ns", "a");
        let b = Key::new("cluster", "b", "ns", "b");
        for k in [&a, &b] {
            m.delay(k, "Waiting");
            m.set_converged(k, Part::Network, fp(1), true);
            m.resync_later(k);
            m.record_write(k, 7);
        }
        m.forget(&a);
        assert!(m.fresh(&a, Part::Network, &fp(1)).is_none());
        assert!(m.fresh(&b, Part::Network, &fp(1)).is_some());
        assert!(!m.written_recently(&a, 7));
        assert!(m.written_recently(&b, 7));
        assert_eq!(
            m.sizes(),
            Sizes {
                converged: 1,
                waits: 1,
                writes: 1,
                resyncs: 1
            }
        );
    }
}

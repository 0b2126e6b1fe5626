//! The pace at which work the cloud does by itself is looked at again (an Octavia object
//! `PENDING_*`, a server in `BUILD`, a volume `creating`, anything being deleted), learnt from
//! how long such waits have been taking.
//!
//! A wait is one object waiting on one thing (told apart by its stage: the reason and the
//! resource awaited, never a message) and belongs to a kind (the controller and condition
//! reason, no names: "servers building", "load balancers provisioning"). Until a kind's waits have been seen to end, a wait
//! is polled after `first`, then after half as long again each time, up to `max`: short first
//! because most waits are short, bounded so a long one is seen at most `max` late. Once waits
//! of a kind have ended, their typical length `T` (a moving average) is known: the first poll
//! comes at 0.8 × `T`, then every 0.1 × `T` growing by half. A cloud whose servers take 10 s
//! to build thus gets three polls per build, the last within a second of the build ending,
//! where a fixed ladder would have needed five and been three seconds late. Every delay is
//! jittered so objects created together do not poll in lockstep.
//!
//! Objects created together also tend to finish together (ten servers of one cluster, three
//! control-plane members of one load balancer): when a wait ends after `T`, the other waits of
//! its kind that have lasted at least `PEER_SHARE` × `T` are due for a look now ([`Pace::due`]),
//! once per wait, instead of at their own next poll, which can be half their wait away while
//! a kind is still unknown. To that end each wait of an unknown kind runs its ladder at its own
//! scale, drawn between 2/3 and 1 (one step of 1.5): waits started together then poll at
//! staggered times that cover the gaps between steps, and the first to see the end wakes the
//! rest.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use capo_openstack::retry::geometric_delay;
use rand::Rng;

/// Growth of an unknown kind's polls.
const LADDER: f64 = 1.5;

/// Scales of an unknown kind's ladder: one step of [`LADDER`] wide.
const LADDER_SCALE: std::ops::RangeInclusive<f64> = (1.0 / LADDER)..=1.0;

/// A wait of the same kind that has lasted this share of one that just ended is looked at now.
const PEER_SHARE: f64 = 0.9;

/// Weight of the newest observation in a kind's typical length.
const LEARNING_RATE: f64 = 0.3;

/// The first poll of a learnt wait never comes later than this many `max`s (a kind whose
/// waits took minutes still gets looked at within a few).
const LEARNT_FIRST_POLL_CAP: u32 = 2;

/// One object's current wait.
#[derive(Debug)]
struct Wait {
    /// What it waits on (its stage: the reason and the resource).
    stage: String,
    /// Its kind (no names).
    kind: String,
    /// Polls so far.
    polls: u32,
    /// When the wait started.
    since: Instant,
    /// Whether a peer's end already made it due.
    nudged: bool,
    /// This wait's ladder scale (see the module's comment).
    scale: f64,
}

/// Current waits per object key (of type `K`) and typical lengths per kind.
#[derive(Debug)]
pub struct Pace<K = String> {
    waits: Mutex<HashMap<K, Wait>>,
    typical: Mutex<HashMap<String, Duration>>,
    due: Mutex<Vec<K>>,
    /// A wait that ended sooner makes no peer due (it says nothing about theirs).
    min_peer_wait: Duration,
}

impl<K: Clone + Eq + Hash> Default for Pace<K> {
    fn default() -> Self {
        Self::new(Duration::from_secs(1))
    }
}

impl<K: Clone + Eq + Hash> Pace<K> {
    /// A pace whose ended waits make peers due when they lasted at least `min_peer_wait`.
    pub fn new(min_peer_wait: Duration) -> Self {
        Self {
            waits: Mutex::default(),
            typical: Mutex::default(),
            due: Mutex::default(),
            min_peer_wait,
        }
    }

    /// The delay before looking again at object `key`, which waits on `stage` (a wait of
    /// `kind`). A new `stage` ends the object's previous wait, whose length is learnt.
    pub fn delay<Q>(
        &self,
        key: &Q,
        kind: &str,
        stage: &str,
        first: Duration,
        max: Duration,
    ) -> Duration
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let max = max.max(first);
        let (polls, scale, kind_typical) = {
            let Ok(mut waits) = self.waits.lock() else {
                return first;
            };
            let ended = match waits.get_mut(key) {
                Some(w) if w.stage == stage => {
                    w.polls = w.polls.saturating_add(1);
                    None
                }
                _ => waits
                    .insert(
                        key.to_owned(),
                        Wait {
                            stage: stage.to_owned(),
                            kind: kind.to_owned(),
                            polls: 1,
                            since: Instant::now(),
                            nudged: false,
                            scale: rand::rng().random_range(LADDER_SCALE),
                        },
                    )
                    .map(|w| (w.kind, w.since.elapsed())),
            };
            if let Some((kind, length)) = ended {
                self.learn(&kind, length);
                self.peers_due(&mut waits, &kind, length);
            }
            let (polls, scale) = waits.get(key).map_or((1, 1.0), |w| (w.polls, w.scale));
            (polls, scale, self.typical(kind))
        };
        match kind_typical {
            None => geometric_delay(first.mul_f64(scale), max, polls, LADDER, 0.95..=1.05),
            Some(t) if polls == 1 => {
                let cap = max.saturating_mul(LEARNT_FIRST_POLL_CAP);
                let jump = t.mul_f64(0.8).clamp(first, cap);
                geometric_delay(jump, jump.mul_f64(1.1), 1, 1.0, 0.9..=1.1)
            }
            Some(t) => {
                let step = t.mul_f64(0.1).clamp(first.min(max), max);
                geometric_delay(step, max, polls - 1, 1.5, 0.8..=1.2)
            }
        }
    }

    /// Object `key` waits on nothing any more (it converged): its wait ended now.
    pub fn done<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let Ok(mut waits) = self.waits.lock() else {
            return;
        };
        if let Some(w) = waits.remove(key) {
            let length = w.since.elapsed();
            self.learn(&w.kind, length);
            self.peers_due(&mut waits, &w.kind, length);
        }
    }

    /// The objects (keys) due for a look now because a peer's wait ended; each is returned
    /// once.
    pub fn due(&self) -> Vec<K> {
        self.due
            .lock()
            .map(|mut d| std::mem::take(&mut *d))
            .unwrap_or_default()
    }

    /// Mark the waits of `kind` that lasted at least [`PEER_SHARE`] of `length` as due.
    fn peers_due(&self, waits: &mut HashMap<K, Wait>, kind: &str, length: Duration) {
        if length < self.min_peer_wait {
            return;
        }
        let threshold = length.mul_f64(PEER_SHARE);
        let peers: Vec<K> = waits
            .iter_mut()
            .filter(|(_, w)| !w.nudged && w.kind == kind && w.since.elapsed() >= threshold)
            .map(|(k, w)| {
                w.nudged = true;
                k.clone()
            })
            .collect();
        if !peers.is_empty()
            && let Ok(mut due) = self.due.lock()
        {
            due.extend(peers);
        }
    }

    /// Object `key` is gone or starts over (spec changed): its wait is dropped, not learnt.
    pub fn forget<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Ok(mut w) = self.waits.lock() {
            w.remove(key);
        }
    }

    /// How many objects wait now (a converged or forgotten object has no entry).
    pub fn waiting(&self) -> usize {
        self.waits.lock().map(|w| w.len()).unwrap_or_default()
    }

    /// The typical length of waits of `kind`, once one was seen to end.
    pub fn typical(&self, kind: &str) -> Option<Duration> {
        self.typical.lock().ok()?.get(kind).copied()
    }

    fn learn(&self, kind: &str, length: Duration) {
        if let Ok(mut t) = self.typical.lock() {
            let v = t.get(kind).map_or(length, |old| {
                old.mul_f64(1.0 - LEARNING_RATE) + length.mul_f64(LEARNING_RATE)
            });
            t.insert(kind.to_owned(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(20);

    #[test]
    fn unknown_kinds_start_short_and_grow_to_max() {
        let p = Pace::default();
        let d: Vec<Duration> = (0..12)
            .map(|_| p.delay("a", "k", "w", FIRST, MAX))
            .collect();
        // Scale 2/3..1, jitter 0.95..1.05.
        assert!(
            d[0] >= Duration::from_millis(630) && d[0] <= Duration::from_millis(1050),
            "{d:?}"
        );
        assert!(
            d[2] >= Duration::from_millis(1420) && d[2] <= Duration::from_millis(2370),
            "{d:?}"
        );
        assert!(d.iter().all(|x| *x <= MAX), "{d:?}");
        assert!(d[11] >= Duration::from_secs(16), "{d:?}");
    }

    #[test]
    fn a_new_text_starts_again_and_teaches_the_kind() {
        let p = Pace::default();
        for _ in 0..5 {
            p.delay("a", "k", "w1", FIRST, MAX);
        }
        std::thread::sleep(Duration::from_millis(30));
        let d = p.delay("a", "k", "w2", FIRST, MAX);
        let t = p.typical("k").unwrap();
        assert!(t >= Duration::from_millis(30), "{t:?}");
        // Learnt: the first poll is 0.8 T, but never below `first`.
        assert!(
            d >= Duration::from_millis(900) && d <= Duration::from_millis(1100),
            "{d:?}"
        );
    }

    #[test]
    fn learnt_kinds_jump_near_the_typical_length_then_poll_finely() {
        let p = Pace::default();
        p.learn("build", Duration::from_secs(10));
        let d1 = p.delay("s", "build", "BUILD", FIRST, MAX);
        assert!(
            d1 >= Duration::from_millis(7200) && d1 <= Duration::from_millis(8800),
            "{d1:?}"
        );
        let d2 = p.delay("s", "build", "BUILD", FIRST, MAX);
        assert!(
            d2 >= Duration::from_millis(800) && d2 <= Duration::from_millis(1200),
            "{d2:?}"
        );
        // A kind whose waits took minutes is still looked at within LEARNT_FIRST_POLL_CAP maxes.
        p.learn("slow", Duration::from_secs(3600));
        let d = p.delay("x", "slow", "w", FIRST, MAX);
        assert!(d <= MAX * LEARNT_FIRST_POLL_CAP + MAX, "{d:?}");
        // The typical length moves towards new observations.
        p.learn("build", Duration::from_secs(20));
        let t = p.typical("build").unwrap();
        assert!(
            t > Duration::from_secs(12) && t < Duration::from_secs(14),
            "{t:?}"
        );
    }

    #[test]
    fn an_ended_wait_makes_its_long_waiting_peers_due_once() {
        let p = Pace::new(Duration::from_millis(20));
        p.delay("a", "servers", "a building", FIRST, MAX);
        p.delay("b", "servers", "b building", FIRST, MAX);
        p.delay("other", "lbs", "lb pending", FIRST, MAX);
        std::thread::sleep(Duration::from_millis(40));
        p.delay("c", "servers", "c building", FIRST, MAX);
        p.delay("c", "servers", "c active", FIRST, MAX);
        assert!(
            p.due().is_empty(),
            "a wait shorter than the minimum says nothing"
        );
        p.delay("late", "servers", "late building", FIRST, MAX);
        p.done("a");
        assert_eq!(p.due(), vec!["b".to_owned()], "same kind, as long: due");
        assert!(p.due().is_empty(), "taken once");
        std::thread::sleep(Duration::from_millis(40));
        p.done("late");
        let due = p.due();
        assert_eq!(due, vec!["c".to_owned()], "b was due once already: {due:?}");
    }

    #[test]
    fn done_learns_and_forget_does_not() {
        let p = Pace::default();
        p.delay("a", "k", "w", FIRST, MAX);
        p.forget("a");
        assert!(p.typical("k").is_none());
        p.delay("a", "k", "w", FIRST, MAX);
        p.done("a");
        assert!(p.typical("k").is_some());
    }
}

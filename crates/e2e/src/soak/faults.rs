//! The soak's faults on one capo-sim: one-shot rules added at random moments (a seeded RNG picks
//! the moment and the kind), latency spikes, and the tally of what actually fired, read from
//! the sim's request log (it marks injected replies).
//!
//! Each kind has a reply status of its own, so the log alone tells them apart: 500 and 503
//! (server errors), 409 (conflict on a write), 429 with `Retry-After` (rate limited), and 502
//! on a POST after the sim performed it (a lost reply: the resource exists, the client never
//! learns its ID).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use capo_sim::{Control, FaultSpec, LogEntry};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The reply status that marks a lost reply (no other kind uses it).
const LOST_REPLY_STATUS: u16 = 502;
/// Pending one-shot rules per sim at most: an idle cloud does not pile them up.
const MAX_PENDING: usize = 3;
/// The services a latency spike slows down.
const SERVICES: [&str; 5] = ["identity", "compute", "network", "load-balancer", "image"];

/// Faults by kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally(pub BTreeMap<&'static str, u64>);

impl Tally {
    /// Adds `other` into this tally.
    pub fn add(&mut self, other: &Tally) {
        for (kind, n) in &other.0 {
            *self.0.entry(kind).or_default() += n;
        }
    }

    /// All faults.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// The injected replies of a request log, by kind.
    pub fn from_log(log: &[LogEntry]) -> Tally {
        let mut tally = Tally::default();
        for entry in log.iter().filter(|e| e.injected) {
            *tally.0.entry(kind_of(entry)).or_default() += 1;
        }
        tally
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, n)| format!("{k} {n}")).collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

fn kind_of(entry: &LogEntry) -> &'static str {
    match entry.status {
        LOST_REPLY_STATUS if entry.method == "POST" => "lost reply (POST)",
        409 => "409 conflict",
        429 => "429 Retry-After",
        500..=599 => "5xx",
        _ => "other",
    }
}

/// One fault rule of a random kind, firing once.
fn random_rule(rng: &mut StdRng) -> FaultSpec {
    let mut rule = FaultSpec {
        method: None,
        path_regex: ".".to_owned(),
        status: 500,
        body: None,
        count: Some(1),
        rate: None,
        after_action: false,
        headers: BTreeMap::new(),
    };
    match rng.random_range(0..4) {
        0 => rule.status = if rng.random_bool(0.5) { 500 } else { 503 },
        1 => {
            rule.status = 409;
            rule.method = Some(["POST", "PUT", "DELETE"][rng.random_range(0..3)].to_owned());
        }
        2 => {
            rule.status = 429;
            rule.headers
                .insert("Retry-After".to_owned(), rng.random_range(1..3).to_string());
        }
        _ => {
            rule.status = LOST_REPLY_STATUS;
            rule.method = Some("POST".to_owned());
            rule.after_action = true;
        }
    }
    rule
}

/// Injects faults into one sim until stopped.
pub struct Injector {
    stop: Arc<AtomicBool>,
    spikes: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Injector {
    /// Every `interval` on average (uniformly 0.5 to 1.5 times it), adds one one-shot rule
    /// (unless [`MAX_PENDING`] are waiting) or, one time in five, slows every service by 0.5
    /// to 2.5 s for 2 to 8 s. `None`: no faults.
    pub fn start(control: Control, interval: Option<Duration>, seed: u64) -> Injector {
        let stop = Arc::new(AtomicBool::new(false));
        let spikes = Arc::new(AtomicU64::new(0));
        let (stop2, spikes2) = (stop.clone(), spikes.clone());
        let task = tokio::spawn(async move {
            let Some(interval) = interval else { return };
            let mut rng = StdRng::seed_from_u64(seed);
            while !stop2.load(Ordering::SeqCst) {
                let wait = interval.mul_f64(rng.random_range(0.5..1.5));
                tokio::time::sleep(wait).await;
                if rng.random_range(0..5) == 0 {
                    let ms = rng.random_range(500..2500);
                    let hold = Duration::from_millis(rng.random_range(2000..8000));
                    control.set_latency(SERVICES.iter().map(|s| (s.to_string(), ms)).collect());
                    spikes2.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(hold).await;
                    control.set_latency(HashMap::new());
                } else if control.faults().len() < MAX_PENDING {
                    // The rules are well-formed (fixed regex and header names).
                    let _ = control.add_faults(vec![random_rule(&mut rng)]);
                }
            }
        });
        Injector { stop, spikes, task }
    }

    /// Latency spikes so far.
    pub fn spikes(&self) -> u64 {
        self.spikes.load(Ordering::SeqCst)
    }

    /// Stops injecting and waits for the task (a spike in progress is cut short).
    pub async fn stop(self, control: &Control) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.task.abort();
        let _ = self.task.await;
        control.set_latency(HashMap::new());
        control.clear_faults();
        self.spikes.load(Ordering::SeqCst)
    }
}

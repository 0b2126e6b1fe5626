//! The fault soak (docs/soak.md): several clusters, each on a capo-sim of its own, go through
//! create → scale the MachineDeployment up and down → delete, cycle after cycle, driven by the
//! real Cluster API controllers, while capo-sim injects faults ([`faults`]) and capo's manager,
//! a child process, is SIGKILLed at random moments and started again. After every settled step
//! the cloud must hold exactly what the objects describe ([`invariants`]), and after every
//! deletion nothing at all.

pub mod faults;
pub mod invariants;
mod lane;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::management::{Management, ManagerMode};

pub use lane::LaneReport;

/// The soak's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The `capo-controller-manager` binary.
    pub manager: std::path::PathBuf,
    /// Cycles per cluster.
    pub cycles: u32,
    /// Clusters going through their cycles concurrently.
    pub clusters: u32,
    /// Seed of every random choice (kill moments, fault moments and kinds).
    pub seed: u64,
    /// Mean time between two faults on one cluster's cloud; `None`: no faults.
    pub fault_interval: Option<Duration>,
    /// Mean time between two kills of the manager; `None`: no kills.
    pub kill_interval: Option<Duration>,
    /// How long a step may take to settle (Machines Running, cloud exact).
    pub step_timeout: Duration,
    /// How long a deletion may take.
    pub delete_timeout: Duration,
    /// No cycle starts after this much time (a cycle in progress finishes); `None`: no limit.
    pub duration: Option<Duration>,
}

/// What the soak measured.
#[derive(Debug, Default)]
pub struct Report {
    /// Per cluster.
    pub lanes: Vec<LaneReport>,
    /// Kills of the manager.
    pub kills: u32,
    /// Times the manager ended on its own (a crash: capo's bug).
    pub crashes: Vec<String>,
    /// Wall time.
    pub wall: Duration,
}

impl Report {
    /// Cycles completed, over all clusters.
    pub fn cycles(&self) -> u32 {
        self.lanes.iter().map(|l| l.cycles).sum()
    }

    /// Faults injected, by kind, over all clusters.
    pub fn faults(&self) -> faults::Tally {
        let mut t = faults::Tally::default();
        for l in &self.lanes {
            t.add(&l.faults);
        }
        t
    }

    /// True when nothing leaked, nothing was duplicated, every deletion finished, every step
    /// settled and the manager never crashed.
    pub fn passed(&self) -> bool {
        self.crashes.is_empty()
            && self
                .lanes
                .iter()
                .all(|l| l.leaks.is_empty() && l.duplicates.is_empty() && l.failures.is_empty())
    }

    /// The summary the soak prints.
    pub fn summary(&self, settings: &Settings) -> String {
        let count = |f: fn(&LaneReport) -> usize| self.lanes.iter().map(f).sum::<usize>();
        let spikes: u64 = self.lanes.iter().map(|l| l.spikes).sum();
        let mut out = format!(
            "soak: seed {}, {} clusters x {} cycles, fault interval {}, kill interval {}\n\
             soak: cycles run {} in {:.0} s\n\
             soak: faults injected {} ({}), latency spikes {spikes}\n\
             soak: manager kills {}, crashes {}\n\
             soak: leaks {}, duplicates {}, unfinished deletions or unsettled steps {}\n",
            settings.seed,
            settings.clusters,
            settings.cycles,
            settings
                .fault_interval
                .map_or("off".to_owned(), |d| format!("{:.1} s", d.as_secs_f64())),
            settings
                .kill_interval
                .map_or("off".to_owned(), |d| format!("{:.0} s", d.as_secs_f64())),
            self.cycles(),
            self.wall.as_secs_f64(),
            self.faults().total(),
            self.faults(),
            self.kills,
            self.crashes.len(),
            count(|l| l.leaks.len()),
            count(|l| l.duplicates.len()),
            count(|l| l.failures.len()),
        );
        for l in &self.lanes {
            for (what, list) in [
                ("leak", &l.leaks),
                ("duplicate", &l.duplicates),
                ("failure", &l.failures),
            ] {
                for item in list {
                    out.push_str(&format!("soak: {} {what}: {item}\n", l.name));
                }
            }
        }
        for c in &self.crashes {
            out.push_str(&format!("soak: manager crash: {c}\n"));
        }
        out
    }
}

/// Starts a management cluster with capo's manager as a child process and runs the soak on it.
pub async fn run(settings: Settings) -> Result<Report, String> {
    let started = Instant::now();
    let mode = ManagerMode::Child(settings.manager.clone());
    let management: &'static Management = Box::leak(Box::new(
        tokio::task::spawn_blocking(move || Management::start_with("soak", mode))
            .await
            .map_err(|e| format!("starting the management cluster: {e}"))??,
    ));
    eprintln!(
        "soak: management cluster up in {:.0} s; capo's log {}",
        started.elapsed().as_secs_f64(),
        management.capo_log().display()
    );

    let stop = Arc::new(AtomicBool::new(false));
    let killer = tokio::spawn(kill_loop(
        management,
        settings.kill_interval,
        settings.seed,
        stop.clone(),
    ));
    let mut lanes = Vec::new();
    for i in 0..settings.clusters {
        let settings = settings.clone();
        let deadline = settings.duration.map(|d| started + d);
        lanes.push(tokio::spawn(async move {
            lane::run(management, i, &settings, deadline).await
        }));
    }
    let mut report = Report::default();
    for lane in lanes {
        match lane.await {
            Ok(l) => report.lanes.push(l),
            Err(e) => return Err(format!("a cluster's task failed: {e}")),
        }
    }
    stop.store(true, Ordering::SeqCst);
    report.crashes = killer
        .await
        .map_err(|e| format!("the kill task failed: {e}"))?;
    report.kills = management.manager_kills();
    report.wall = started.elapsed();
    if !report.passed() {
        eprintln!("{}", management.log_tails(60));
    }
    Ok(report)
}

/// Kills the manager every `interval` on average (uniformly 0.5 to 1.5 times it) and starts it
/// again 0 to 2 s later; also restarts it when it ended on its own, which is recorded as a
/// crash. Returns the crashes.
async fn kill_loop(
    management: &'static Management,
    interval: Option<Duration>,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut crashes = Vec::new();
    let mut next_kill = interval.map(|i| Instant::now() + i.mul_f64(rng.random_range(0.5..1.5)));
    while !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Some(status) = management.manager_exited() {
            crashes.push(format!(
                "capo-controller-manager exited on its own: {status}"
            ));
            eprintln!("soak: capo-controller-manager exited on its own ({status}); restarting");
            if let Err(e) = management.ensure_manager() {
                crashes.push(e);
            }
        }
        if let (Some(at), Some(i)) = (next_kill, interval)
            && Instant::now() >= at
        {
            if let Ok(true) = management.kill_manager() {
                eprintln!("soak: killed capo-controller-manager (SIGKILL)");
            }
            let down = Duration::from_millis(rng.random_range(0..2000));
            tokio::time::sleep(down).await;
            if let Err(e) = management.ensure_manager() {
                crashes.push(format!("restarting capo-controller-manager: {e}"));
            }
            next_kill = Some(Instant::now() + i.mul_f64(rng.random_range(0.5..1.5)));
        }
    }
    crashes
}

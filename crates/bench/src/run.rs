//! One manager's run: a fresh kube-apiserver (audit log on) and capo-sim, the manager as a
//! child process, create until every machine is Ready, a steady window, delete until every
//! object is gone, then the leak check and the figures.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use capo_testkit::{TestEnv, TestEnvOptions};
use chrono::Utc;

use crate::audit::{self, KubeRequests};
use crate::cloud::{Cloud, Requests};
use crate::cluster_api::{ClusterPlay, Objects};
use crate::manager::{Kind, Manager};
use crate::observer::{Infra, Observer};
use crate::procfs;
use crate::settings::Settings;

/// The Kubernetes user the manager runs as, to tell its requests apart in the audit log.
pub(crate) const MANAGER_USER: &str = "capo-bench-manager";

/// Everything measured in one run.
#[derive(Debug, Clone)]
pub struct Figures {
    /// The manager.
    pub kind: Kind,
    /// OpenStack requests from the manager's start until every machine is Ready.
    pub os_create: Requests,
    /// OpenStack requests in the steady window.
    pub os_steady: Requests,
    /// OpenStack requests from the first delete until every object is gone.
    pub os_delete: Requests,
    /// Kubernetes requests of the same three phases.
    pub kube: [KubeRequests; 3],
    /// The steady window's length.
    pub steady: Duration,
    /// From the first object created to the last machine Ready.
    pub time_to_ready: Duration,
    /// Per machine, from its OpenStackMachine's creation to Ready: p50 and p95.
    pub machine_p50: Duration,
    /// See `machine_p50`.
    pub machine_p95: Duration,
    /// From the first delete to the last object gone.
    pub delete_time: Duration,
    /// VmHWM at the end of the run, KiB.
    pub peak_rss_kib: u64,
    /// utime + stime at the end of the run.
    pub cpu_seconds: f64,
    /// Most established connections to the simulator seen during create, and during steady.
    pub connections: [usize; 2],
}

impl Figures {
    /// The steady window's requests extrapolated to one hour.
    pub fn per_hour(&self, n: u64) -> f64 {
        n as f64 * 3600.0 / self.steady.as_secs_f64().max(1.0)
    }
}

/// Runs `kind` through the scenario. A leak after delete is an error.
pub async fn run(kind: Kind, settings: &Settings) -> Result<Figures> {
    let mut options = TestEnvOptions::default().audit_log().user(MANAGER_USER);
    if let Some(crds) = kind.crds(settings) {
        options = options.infrastructure_crds(crds);
    }
    let env = TestEnv::start_with(options)
        .await
        .context("starting kube-apiserver")?;
    let dir = work_dir(kind.name())?;
    let result = measure(kind, settings, &env, &dir).await;
    let keep = settings.keep || result.is_err();
    if keep {
        if let Some(audit) = env.audit_log_path() {
            let _ = std::fs::copy(audit, dir.join("audit.log"));
        }
        eprintln!(
            "capo-bench: {} run's files kept in {}",
            kind.name(),
            dir.display()
        );
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

/// A fresh directory for the run's files (logs, kubeconfig), named after `what`.
pub(crate) fn work_dir(what: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "capo-bench-{}-{}-{}",
        what,
        std::process::id(),
        Utc::now().format("%H%M%S")
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

async fn measure(
    kind: Kind,
    s: &Settings,
    env: &TestEnv,
    dir: &std::path::Path,
) -> Result<Figures> {
    let cloud = Cloud::start(s).await?;
    let sim_port = cloud.port()?;
    let kubeconfig = dir.join("manager.kubeconfig");
    env.write_kubeconfig_as(MANAGER_USER, &kubeconfig)?;
    let objects = Objects::new(&env.client());
    let (observer, watches) = Observer::start(&objects);
    let timeout = Duration::from_secs(s.timeout_s);

    let started = Utc::now();
    let os_start = cloud.requests();
    let mut manager = Manager::start(kind, s, &kubeconfig, dir)?;
    eprintln!(
        "capo-bench: {} manager started (pid {}, log {})",
        kind.name(),
        manager.pid(),
        manager.log.display()
    );
    let phase = Arc::new(AtomicUsize::new(0));
    let peaks = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let sampler = tokio::spawn(sample_connections(
        manager.pid(),
        sim_port,
        phase.clone(),
        peaks.clone(),
    ));

    let plays = ClusterPlay::all(&objects, &observer, &cloud, s);

    // Create: every cluster at once, each adding its machines when its infrastructure is ready.
    let t0 = Instant::now();
    let created = guard(&mut manager, async {
        let created = futures::future::try_join_all(plays.iter().map(ClusterPlay::create)).await?;
        let mut per_machine = Vec::new();
        for (name, at) in created.into_iter().flatten() {
            let ready = observer.wait_ready(Infra::Machine, &name, timeout).await?;
            per_machine.push(ready.saturating_duration_since(at));
        }
        Ok(per_machine)
    })
    .await
    .context("create")?;
    let time_to_ready = t0.elapsed();
    let ready_at = Utc::now();
    let os_ready = cloud.requests();
    // Per route, for reading where the requests went (kept with the run's files on --keep).
    let by_route: String = cloud
        .counters()
        .iter()
        .map(|(route, n)| format!("{n}\t{route}\n"))
        .collect();
    let _ = std::fs::write(dir.join("openstack-requests-to-ready.tsv"), by_route);
    eprintln!(
        "capo-bench: {} all {} machines Ready after {:.1} s",
        kind.name(),
        created.len(),
        time_to_ready.as_secs_f64()
    );

    phase.store(1, Ordering::Relaxed);
    let steady_start = Instant::now();
    guard(&mut manager, async {
        tokio::time::sleep(Duration::from_secs(s.steady_s)).await;
        Ok(())
    })
    .await?;
    let steady = steady_start.elapsed();
    let steady_end = Utc::now();
    let os_steady_end = cloud.requests();
    phase.store(2, Ordering::Relaxed);

    let t_delete = Instant::now();
    guard(&mut manager, async {
        futures::future::try_join_all(plays.iter().map(ClusterPlay::delete)).await?;
        Ok(())
    })
    .await
    .context("delete")?;
    let delete_time = t_delete.elapsed();
    let deleted_at = Utc::now();
    let os_end = cloud.requests();
    eprintln!(
        "capo-bench: {} everything deleted after {:.1} s",
        kind.name(),
        delete_time.as_secs_f64()
    );

    let peak_rss_kib = procfs::peak_rss_kib(manager.pid())?;
    let cpu_seconds = procfs::cpu_seconds(manager.pid())?;
    sampler.abort();
    manager.stop().await?;
    for w in watches {
        w.abort();
    }
    cloud
        .check_empty()
        .with_context(|| format!("{} leaked", kind.name()))?;

    let audit_log = env
        .audit_log_path()
        .context("the environment has no audit log")?;
    let kube = audit::count(
        audit_log,
        MANAGER_USER,
        &[
            (started, ready_at),
            (ready_at, steady_end),
            (steady_end, deleted_at),
        ],
    )?;
    let mut sorted = created;
    sorted.sort();
    Ok(Figures {
        kind,
        os_create: os_ready - os_start,
        os_steady: os_steady_end - os_ready,
        os_delete: os_end - os_steady_end,
        kube: [kube[0], kube[1], kube[2]],
        steady,
        time_to_ready,
        machine_p50: percentile(&sorted, 50),
        machine_p95: percentile(&sorted, 95),
        delete_time,
        peak_rss_kib,
        cpu_seconds,
        connections: [
            peaks[0].load(Ordering::Relaxed),
            peaks[1].load(Ordering::Relaxed),
        ],
    })
}

/// Runs `work`, failing as soon as the manager exits.
pub(crate) async fn guard<T>(
    manager: &mut Manager,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    let watch = async {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            manager.check_alive()?;
        }
    };
    tokio::select! {
        result = work => result,
        died = watch => died,
    }
}

/// Samples the manager's connections to the simulator every second; keeps the highest count of
/// the create (0) and steady (1) phases.
async fn sample_connections(
    pid: u32,
    port: u16,
    phase: Arc<AtomicUsize>,
    peaks: Arc<[AtomicUsize; 2]>,
) {
    loop {
        let p = phase.load(Ordering::Relaxed);
        if let (Some(peak), Ok(n)) = (peaks.get(p), procfs::connections_to(pid, port)) {
            peak.fetch_max(n, Ordering::Relaxed);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The `p`th percentile (nearest rank) of sorted `values`.
fn percentile(values: &[Duration], p: usize) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * values.len()).div_ceil(100).clamp(1, values.len());
    values[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<Duration> = (1..=20).map(Duration::from_secs).collect();
        assert_eq!(percentile(&v, 50), Duration::from_secs(10));
        assert_eq!(percentile(&v, 95), Duration::from_secs(19));
        assert_eq!(percentile(&v[..1], 95), Duration::from_secs(1));
        assert_eq!(percentile(&[], 50), Duration::ZERO);
    }
}

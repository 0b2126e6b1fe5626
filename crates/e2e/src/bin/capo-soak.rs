//! `capo-soak`: the fault soak (docs/soak.md). Run it with `hack/soak.sh`, which builds it and
//! starts it in the end-to-end tier's loopback-only network namespace.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use capo_e2e::soak::{self, Settings};
use clap::Parser;

/// Create → scale → delete cycles of several clusters under the real Cluster API controllers,
/// with random OpenStack faults and SIGKILLs of capo's manager; exits non-zero on any leak,
/// duplicate, unsettled step, unfinished deletion or manager crash.
#[derive(Debug, Parser)]
#[command(name = "capo-soak")]
struct Args {
    /// The capo-controller-manager binary (hack/soak.sh builds it).
    #[arg(long, value_name = "PATH")]
    manager: PathBuf,
    /// Cycles per cluster.
    #[arg(long, default_value_t = 2)]
    cycles: u32,
    /// Clusters cycling concurrently, each on a capo-sim of its own.
    #[arg(long, default_value_t = 2)]
    clusters: u32,
    /// Seed of the kill and fault schedules (random when absent; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Mean seconds between two faults on one cluster's cloud; 0: no faults.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    fault_interval: f64,
    /// Mean seconds between two SIGKILLs of capo's manager; 0: no kills.
    #[arg(long, value_name = "SECONDS", default_value_t = 45.0)]
    kill_interval: f64,
    /// Seconds a create or scale step may take to settle.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    step_timeout: u64,
    /// Seconds a deletion may take.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    delete_timeout: u64,
    /// Start no cycle after this many seconds (cycles in progress finish); 0: no limit.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    duration: u64,
}

fn positive(seconds: f64) -> Option<Duration> {
    (seconds > 0.0).then(|| Duration::from_secs_f64(seconds))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    let settings = Settings {
        manager: args.manager,
        cycles: args.cycles,
        clusters: args.clusters,
        seed: args.seed.unwrap_or_else(rand::random),
        fault_interval: positive(args.fault_interval),
        kill_interval: positive(args.kill_interval),
        step_timeout: Duration::from_secs(args.step_timeout),
        delete_timeout: Duration::from_secs(args.delete_timeout),
        duration: positive(args.duration as f64),
    };
    eprintln!(
        "soak: seed {} (rerun with --seed {})",
        settings.seed, settings.seed
    );
    match soak::run(settings.clone()).await {
        Ok(report) => {
            print!("{}", report.summary(&settings));
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::from(2)
        }
    }
}

//! `capo-bench`: upstream CAPO v0.14.7 and capo side by side on capo-sim. See docs/bench.md.

mod audit;
mod cloud;
mod cluster_api;
mod manager;
mod observer;
mod procfs;
mod report;
mod run;
mod settings;
mod takeover;

use std::process::ExitCode;

use clap::Parser as _;

use crate::manager::Kind;
use crate::settings::Settings;

#[tokio::main]
async fn main() -> ExitCode {
    let settings = Settings::parse();
    capo_tls::ensure_crypto_provider();
    let kinds = match settings.only.as_deref() {
        None => vec![Kind::Upstream, Kind::Capo],
        Some("upstream") => vec![Kind::Upstream],
        Some("capo") => vec![Kind::Capo],
        Some(other) => {
            eprintln!("capo-bench: --only must be upstream or capo, not {other:?}");
            return ExitCode::from(2);
        }
    };
    println!("{}\n", settings.describe());
    if settings.takeover {
        return match takeover::run(&settings).await {
            Ok(report) => {
                println!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("capo-bench: takeover FAILED: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let mut runs = Vec::new();
    let mut failed = false;
    for kind in kinds {
        eprintln!("capo-bench: running {}", kind.name());
        match run::run(kind, &settings).await {
            Ok(figures) => runs.push(figures),
            Err(e) => {
                eprintln!("capo-bench: {} FAILED: {e:#}", kind.name());
                failed = true;
            }
        }
    }
    println!("{}", report::table(&runs, settings.credentials.is_some()));
    if failed {
        println!("FAILED: see the errors above; the table holds only the runs that finished");
        ExitCode::FAILURE
    } else {
        println!("after delete: capo-sim empty for every run (no leak)");
        ExitCode::SUCCESS
    }
}

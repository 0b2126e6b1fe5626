//! `capo-sim` binary: serve the simulator until SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;

use capo_sim::{Seed, Sim, SimConfig};
use clap::Parser;

/// OpenStack API simulator (Keystone, Nova, Neutron, Octavia, Glance, Cinder) on one port.
#[derive(Debug, Parser)]
#[command(name = "capo-sim", version)]
struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Persist state to this file at shutdown and load it at start.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Write a clouds.yaml for the running simulator here (ca.pem is written beside it with --tls).
    #[arg(long)]
    clouds_yaml: Option<PathBuf>,
    /// Replace the default seed with this YAML (or JSON) file; missing keys keep their defaults.
    #[arg(long)]
    seed: Option<PathBuf>,
    /// Serve HTTPS with a CA generated at start.
    #[arg(long)]
    tls: bool,
}

async fn terminated() {
    #[cfg(unix)]
    {
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

async fn run(args: Args) -> capo_sim::Result<()> {
    let seed = match &args.seed {
        Some(p) => Seed::from_yaml(&std::fs::read_to_string(p)?)?,
        None => Seed::default(),
    };
    let cfg = SimConfig {
        listen: args.listen,
        seed,
        tls: args.tls,
        state_file: args.state.clone(),
        ..SimConfig::default()
    };
    let sim = Sim::start(cfg).await?;
    if let Some(path) = &args.clouds_yaml {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let written = sim.write_clouds_yaml(&dir)?;
        if &written != path {
            std::fs::rename(&written, path)?;
        }
    }
    println!("capo-sim listening on {}", sim.base_url());
    terminated().await;
    sim.shutdown().await
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run(Args::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capo-sim: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

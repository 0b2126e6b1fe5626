//! `capo-demo`: capo end to end on one machine, driven by the real Cluster API controllers, no
//! cloud needed. See docs/demo.md; `hack/demo.sh` builds what it needs and runs it inside a
//! network namespace with only loopback.
//!
//! It starts the end-to-end tier's management cluster ([`capo_e2e::management::Management`]:
//! kube-apiserver + etcd with Cluster API v1.14's CRDs, Cluster API's core, kubeadm bootstrap and
//! KubeadmControlPlane managers, the workload-cluster emulator, capo's manager in-process) and a
//! capo-sim ([`capo_e2e::cloud::Cloud`]); generates a cluster with `clusterctl generate cluster`
//! from `templates/cluster-template.yaml` and applies it unchanged; prints what Cluster API and
//! capo make of it as it happens; prints the Available cluster; then deletes the Cluster through
//! Cluster API and checks the simulated cloud is empty (or, with `--keep`, keeps everything
//! running until Ctrl-C).

mod progress;
mod run;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// Runs capo end to end on this machine: the real Cluster API controllers bring a cluster up on
/// capo-sim, then delete it.
///
/// Starts kube-apiserver + etcd with Cluster API v1.14's CRDs, Cluster API's core, kubeadm
/// bootstrap and KubeadmControlPlane managers, the workload-cluster emulator, capo's manager and
/// capo-sim; applies `clusterctl generate cluster` of templates/cluster-template.yaml (a
/// KubeadmControlPlane behind an Octavia API load balancer and a MachineDeployment); shows it
/// become Available; deletes the Cluster and checks the cloud is empty. Must run in a network
/// namespace with only loopback: use hack/demo.sh.
#[derive(Debug, Parser)]
#[command(name = "capo-demo", version, about, long_about)]
struct Cli {
    /// Keep everything running once the cluster is Available (until Ctrl-C) instead of deleting
    /// it.
    #[arg(long)]
    keep: bool,
    /// Fail when the cluster is not Available, or not deleted, within this time (Go duration:
    /// 90s, 5m).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = capo_manager::duration::parse_go_duration)]
    timeout: Duration,
    /// Name of the cluster (`clusterctl generate cluster <NAME>`).
    #[arg(long, value_name = "NAME", default_value = "demo")]
    cluster_name: String,
    /// Control-plane machines (the KubeadmControlPlane's replicas).
    #[arg(long, value_name = "N", default_value_t = 1)]
    control_plane_machine_count: u32,
    /// Worker machines (the MachineDeployment's replicas).
    #[arg(long, value_name = "N", default_value_t = 2)]
    worker_machine_count: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let opts = run::Options {
        keep: cli.keep,
        timeout: cli.timeout,
        cluster: cli.cluster_name,
        control_planes: cli.control_plane_machine_count,
        workers: cli.worker_machine_count,
    };
    match run::run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capo-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

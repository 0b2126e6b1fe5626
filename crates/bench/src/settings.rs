//! The benchmark's settings: scenario size, the cloud's latencies and delays, the managers'
//! common flags, and where the binaries are.

use std::path::PathBuf;

use clap::Parser;

/// Runs upstream CAPO v0.14.7 and capo one after the other on fresh capo-sims and fresh
/// kube-apiservers, playing Cluster API the same way for both, and prints their costs side by side.
#[derive(Debug, Clone, Parser)]
#[command(name = "capo-bench")]
pub struct Settings {
    /// Clusters, each with a managed network, a router and an API load balancer.
    #[arg(long, default_value_t = 1)]
    pub clusters: usize,
    /// Machines per cluster (the first `--control-plane` of them are control plane machines).
    #[arg(long, default_value_t = 10)]
    pub machines: usize,
    /// Control plane machines per cluster.
    #[arg(long, default_value_t = 3)]
    pub control_plane: usize,
    /// Credentials mode: N clusters (overrides --clusters), each authenticating with its own
    /// application credential (its own clouds.yaml Secret); adds Keystone tokens and connections.
    #[arg(long, value_name = "N")]
    pub credentials: Option<usize>,
    /// Added latency of Keystone (identity), in ms.
    #[arg(long, default_value_t = 50)]
    pub keystone_ms: u64,
    /// Added latency of Neutron (network), in ms.
    #[arg(long, default_value_t = 30)]
    pub neutron_ms: u64,
    /// Added latency of Nova (compute), in ms.
    #[arg(long, default_value_t = 40)]
    pub nova_ms: u64,
    /// Added latency of Octavia (load-balancer), in ms.
    #[arg(long, default_value_t = 40)]
    pub octavia_ms: u64,
    /// Added latency of Glance (image), in ms.
    #[arg(long, default_value_t = 20)]
    pub glance_ms: u64,
    /// Added latency of Cinder (volume), in ms.
    #[arg(long, default_value_t = 30)]
    pub cinder_ms: u64,
    /// Nova BUILD -> ACTIVE, in ms.
    #[arg(long, default_value_t = 10_000)]
    pub server_build_ms: u64,
    /// Octavia load balancer PENDING_CREATE -> ACTIVE, in ms.
    #[arg(long, default_value_t = 8_000)]
    pub lb_provision_ms: u64,
    /// Octavia PENDING_UPDATE -> ACTIVE after a listener, pool, member or monitor changes, in ms.
    #[arg(long, default_value_t = 2_000)]
    pub lb_update_ms: u64,
    /// Octavia PENDING_DELETE -> gone, in ms.
    #[arg(long, default_value_t = 2_000)]
    pub lb_delete_ms: u64,
    /// Length of the steady window after all machines are Ready, in seconds (its counts are
    /// extrapolated to one hour).
    #[arg(long, default_value_t = 60)]
    pub steady_s: u64,
    /// Give up on a phase (create, delete) after this many seconds.
    #[arg(long, default_value_t = 1800)]
    pub timeout_s: u64,
    /// Both managers: --kube-api-qps (upstream's default).
    #[arg(long, default_value_t = 20)]
    pub kube_api_qps: u32,
    /// Both managers: --kube-api-burst (upstream's default).
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,
    /// Both managers: --openstackcluster-concurrency and --openstackmachine-concurrency.
    #[arg(long, default_value_t = 10)]
    pub concurrency: u32,
    /// Run only this manager (`upstream` or `capo`); both by default.
    #[arg(long)]
    pub only: Option<String>,
    /// Upstream's build directory (bin/capo-upstream, crds/), from `hack/upstream-capo.sh build`.
    #[arg(long, env = "CAPO_UPSTREAM_DIR")]
    pub upstream_dir: PathBuf,
    /// capo's manager binary.
    #[arg(long, env = "CAPO_MANAGER_BIN")]
    pub capo_manager: PathBuf,
    /// Instead of the side-by-side runs: upstream creates the clusters, then capo takes them over
    /// in place (capo's CRDs replace upstream's, storage migrated), and deletes them.
    #[arg(long)]
    pub takeover: bool,
    /// Keep each run's directory (manager log, audit log) and print where it is.
    #[arg(long)]
    pub keep: bool,
}

impl Settings {
    /// Clusters in this run.
    pub fn cluster_count(&self) -> usize {
        self.credentials.unwrap_or(self.clusters)
    }

    /// Added latency per capo-sim service name.
    pub fn latencies(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("identity", self.keystone_ms),
            ("network", self.neutron_ms),
            ("compute", self.nova_ms),
            ("load-balancer", self.octavia_ms),
            ("image", self.glance_ms),
            ("volume", self.cinder_ms),
        ]
    }

    /// The simulator's transition delays.
    pub fn delays(&self) -> capo_sim::Delays {
        capo_sim::Delays {
            server_build_ms: self.server_build_ms,
            lb_provision_ms: self.lb_provision_ms,
            lb_update_ms: self.lb_update_ms,
            lb_delete_ms: self.lb_delete_ms,
            ..capo_sim::Delays::default()
        }
    }

    /// The settings, as printed above the table.
    pub fn describe(&self) -> String {
        let latencies: Vec<String> = self
            .latencies()
            .iter()
            .map(|(svc, ms)| format!("{svc} {ms} ms"))
            .collect();
        let credentials = match self.credentials {
            Some(_) => "one application credential per cluster",
            None => "one password cloud, one clouds.yaml Secret per cluster",
        };
        format!(
            "scenario: {} cluster(s) x {} machines ({} control plane), managed network + router + API load balancer; {credentials}\n\
             capo-sim latency: {}\n\
             capo-sim delays: Nova BUILD {} ms, Octavia provisioning {} ms, update {} ms, delete {} ms\n\
             both managers: --kube-api-qps={} --kube-api-burst={} --openstackcluster-concurrency={c} --openstackmachine-concurrency={c}\n\
             steady window: {} s after all Ready (extrapolated to 1 h)",
            self.cluster_count(),
            self.machines,
            self.control_plane.min(self.machines),
            latencies.join(", "),
            self.server_build_ms,
            self.lb_provision_ms,
            self.lb_update_ms,
            self.lb_delete_ms,
            self.kube_api_qps,
            self.kube_api_burst,
            self.steady_s,
            c = self.concurrency,
        )
    }
}

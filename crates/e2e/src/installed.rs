//! The installed tier (docs/install.md, `hack/installed.sh`): capo as operators run it. A real
//! single-node management cluster (`hack/mgmt-cluster.sh`: a kubelet, containerd, kube-proxy)
//! on which `clusterctl init` installed cert-manager, Cluster API's core, kubeadm bootstrap and
//! control-plane providers and capo's release from a local provider repository; every
//! controller runs in a Pod from an image built here, under its own ServiceAccount and RBAC.
//!
//! This module is what the tier's Rust test needs beside that cluster: a kube client from its
//! kubeconfig, a capo-sim and a workload-cluster emulator listening in the namespace's routed
//! range (so the controllers' pods reach the cloud and the workload endpoints), and
//! `clusterctl generate cluster` from the installed release (not from `templates/`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;

use crate::cloud::Cloud;
use crate::cluster;

/// The management cluster's kubeconfig (`hack/mgmt-cluster.sh start` prints it).
pub const KUBECONFIG_VAR: &str = "CAPO_INSTALLED_KUBECONFIG";
/// The clusterctl configuration naming the local provider repository.
pub const CLUSTERCTL_CONFIG_VAR: &str = "CAPO_INSTALLED_CLUSTERCTL_CONFIG";
/// capo's installed release (`v0.2.0`), as `clusterctl init` was given it.
pub const VERSION_VAR: &str = "CAPO_INSTALLED_VERSION";
/// Where capo-sim listens: an address of the namespace's routed range (hack/mgmt-cluster.sh).
pub const SIM_LISTEN: &str = "10.253.0.1:0";
/// N of the next external network range 10.253.N.0/24 (floating IPs, so the control-plane
/// endpoints the emulator serves): each [`Installed`] of a process takes its own.
static NEXT_RANGE: AtomicU8 = AtomicU8::new(1);
/// What the emulator may serve: the whole routed range.
pub const SERVE_CIDR: &str = "10.253.0.0/16";
/// capo's namespace, as `config/default` names it.
pub const CAPO_NAMESPACE: &str = "capo-system";
/// capo's Deployment, as `config/default` names it.
pub const CAPO_DEPLOYMENT: &str = "capo-controller-manager";
/// The leader-election Lease (upstream's ID, docs/manager.md).
pub const CAPO_LEASE: &str = "controller-leader-election-capo";

/// The installed management cluster, a cloud and the workload emulator.
pub struct Installed {
    /// A client of the management cluster, as its admin.
    pub client: Client,
    /// The scenario's cloud.
    pub cloud: Cloud,
    kubeconfig: PathBuf,
    clusterctl_config: PathBuf,
    version: String,
    clusterctl: PathBuf,
    emulator: Child,
    emulator_log: PathBuf,
    _logs: tempfile::TempDir,
}

fn env_path(var: &str) -> Result<PathBuf, String> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{var} is unset: run the installed tier with hack/installed.sh"))
}

impl Installed {
    /// Connects to the cluster named by [`KUBECONFIG_VAR`], starts a capo-sim in the routed
    /// range and the workload emulator. Must run inside the cluster's network namespace.
    pub async fn start() -> Result<Installed, String> {
        let kubeconfig = env_path(KUBECONFIG_VAR)?;
        let clusterctl_config = env_path(CLUSTERCTL_CONFIG_VAR)?;
        let version = std::env::var(VERSION_VAR)
            .map_err(|_| format!("{VERSION_VAR} is unset: run hack/installed.sh"))?;
        let capi = capo_testkit::capi::CapiDir::from_env()
            .map_err(|e| e.to_string())?
            .ok_or("CAPO_CAPI_BUILD_DIR is unset: run hack/installed.sh")?;
        let kc = Kubeconfig::read_from(&kubeconfig)
            .map_err(|e| format!("reading {}: {e}", kubeconfig.display()))?;
        let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .map_err(|e| format!("kubeconfig {}: {e}", kubeconfig.display()))?;
        let client = Client::try_from(config).map_err(|e| format!("kube client: {e}"))?;
        let listen: SocketAddr = SIM_LISTEN
            .parse()
            .map_err(|e| format!("{SIM_LISTEN}: {e}"))?;
        let n = NEXT_RANGE.fetch_add(1, Ordering::SeqCst);
        if n == u8::MAX {
            return Err("no 10.253.N.0/24 left for another cloud".to_owned());
        }
        let cloud = Cloud::start_in(listen, format!("10.253.{n}.0/24")).await?;
        let logs = tempfile::tempdir().map_err(|e| format!("log directory: {e}"))?;
        let emulator_log = logs.path().join("emulator.log");
        let log = std::fs::File::create(&emulator_log).map_err(|e| e.to_string())?;
        let emulator = Command::new(capi.bin("capo-workload-emulator"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--serve-cidr", SERVE_CIDR])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting the workload emulator: {e}"))?;
        Ok(Installed {
            client,
            cloud,
            kubeconfig,
            clusterctl_config,
            version,
            clusterctl: capi.clusterctl(),
            emulator,
            emulator_log,
            _logs: logs,
        })
    }

    /// A new namespace named after `prefix`.
    pub async fn namespace(&self, prefix: &str) -> Result<String, String> {
        let ns: Namespace = serde_json::from_value(json!({
            "metadata": {"generateName": format!("{prefix}-")}
        }))
        .map_err(|e| e.to_string())?;
        let created = Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .map_err(|e| format!("creating a namespace: {e}"))?;
        created
            .metadata
            .name
            .ok_or_else(|| "the API server named no namespace".to_owned())
    }

    /// `clusterctl generate cluster` of the installed release's default flavor
    /// (`cluster-template.yaml` from the local repository), for this cloud.
    pub fn generate(
        &self,
        name: &str,
        ns: &str,
        control_planes: u32,
        workers: u32,
    ) -> Result<String, String> {
        let infra = format!("openstack:{}", self.version);
        self.generate_with(
            &self.clusterctl_config,
            &infra,
            name,
            ns,
            control_planes,
            workers,
        )
    }

    /// `clusterctl generate cluster` of `infra`'s (`openstack:<version>`) default flavor as
    /// the repository named by `config` holds it, for this cloud.
    pub fn generate_with(
        &self,
        config: &Path,
        infra: &str,
        name: &str,
        ns: &str,
        control_planes: u32,
        workers: u32,
    ) -> Result<String, String> {
        let cps = control_planes.to_string();
        let workers = workers.to_string();
        self.clusterctl(
            config,
            &[
                "generate",
                "cluster",
                name,
                "--infrastructure",
                infra,
                "--target-namespace",
                ns,
                "--kubernetes-version",
                cluster::KUBERNETES_VERSION,
                "--control-plane-machine-count",
                &cps,
                "--worker-machine-count",
                &workers,
            ],
        )
    }

    /// `clusterctl upgrade apply` of the installed openstack provider to capo's release (the
    /// repository of [`CLUSTERCTL_CONFIG_VAR`]), waiting for it to be Available.
    pub fn upgrade_to_capo(&self) -> Result<String, String> {
        let target = format!("{CAPO_NAMESPACE}/openstack:{}", self.version);
        self.clusterctl(
            &self.clusterctl_config,
            &[
                "upgrade",
                "apply",
                "--infrastructure",
                &target,
                "--wait-providers",
            ],
        )
    }

    /// Runs clusterctl with `args`, the repository of `config`, this cluster's kubeconfig and
    /// the cloud's template variables; its standard output.
    fn clusterctl(&self, config: &Path, args: &[&str]) -> Result<String, String> {
        let (mut cmd, _home) = cluster::clusterctl_command(&self.clusterctl)?;
        let out = cmd
            .args(args)
            .arg("--config")
            .arg(config)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .envs(cluster::template_env(&self.cloud))
            .output()
            .map_err(|e| format!("running clusterctl: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "clusterctl {} failed ({}): {}",
                args.iter().take(2).copied().collect::<Vec<_>>().join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        String::from_utf8(out.stdout).map_err(|e| format!("clusterctl output: {e}"))
    }

    /// Server-side apply of `yaml` in `ns`, as `kubectl apply --server-side` would. An object
    /// whose admission or conversion webhook could not be reached or is not trusted yet (a
    /// provider's pod just restarted, its Service's rules not yet updated, the caBundle not yet
    /// injected) is applied again for up to a minute, as an operator would; a webhook's refusal
    /// is returned at once.
    pub async fn apply(&self, ns: &str, yaml: &str) -> Result<(), String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            match capo_testkit::apply_yaml(&self.client, ns, yaml, false).await {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(rejected)) => {
                    let text = format!("{rejected:?}");
                    // Right after an install the API server may not trust capo's webhooks
                    // yet (cert-manager's CA injector has not written the caBundle): admission
                    // and conversion both fail then, and both pass a few seconds later.
                    let untrusted = text.contains("failed calling webhook")
                        || text.contains("conversion webhook for");
                    if !untrusted || std::time::Instant::now() >= deadline {
                        return Err(format!("rejected: {text}"));
                    }
                    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                }
                Err(e) => return Err(format!("applying: {e}")),
            }
        }
    }

    /// capo's running pods (the Deployment's, by its provider label).
    pub async fn capo_pods(&self) -> Result<Vec<Pod>, String> {
        let pods = Api::<Pod>::namespaced(self.client.clone(), CAPO_NAMESPACE)
            .list(
                &ListParams::default().labels("cluster.x-k8s.io/provider=infrastructure-openstack"),
            )
            .await
            .map_err(|e| format!("listing capo's pods: {e}"))?;
        Ok(pods.items)
    }

    /// The openstack infrastructure provider's resident memory and CPU time so far (capo's, or
    /// upstream CAPO's while it is installed: both pods carry the provider label), read from the
    /// kernel for the first ready pod's container (the process whose cgroup names the
    /// container's ID). The test runs as root on the node, so it reads every process's `/proc`.
    pub async fn provider_usage(&self) -> Result<Usage, String> {
        let pods = self.capo_pods().await?;
        let id = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref()?.first())
            .find(|c| c.ready)
            .and_then(|c| c.container_id.clone())
            .ok_or("no ready capo container")?;
        let id = id.rsplit("://").next().unwrap_or(&id).to_owned();
        process_usage(&id)
    }

    /// Sets the replicas of capo's Deployment (as `kubectl scale` would).
    pub async fn scale_capo(&self, replicas: i32) -> Result<(), String> {
        Api::<Deployment>::namespaced(self.client.clone(), CAPO_NAMESPACE)
            .patch(
                CAPO_DEPLOYMENT,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .map(|_| ())
            .map_err(|e| format!("scaling {CAPO_DEPLOYMENT} to {replicas}: {e}"))
    }

    /// The pod holding capo's leader Lease (the identity is `<pod>_<uuid>`), if any.
    pub async fn leader_pod(&self) -> Result<Option<String>, String> {
        let lease = Api::<Lease>::namespaced(self.client.clone(), CAPO_NAMESPACE)
            .get_opt(CAPO_LEASE)
            .await
            .map_err(|e| format!("reading the Lease {CAPO_LEASE}: {e}"))?;
        Ok(lease
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .and_then(|h| h.rsplit_once('_').map(|(pod, _)| pod.to_owned()))
            .filter(|pod| !pod.is_empty()))
    }

    /// Deletes one of capo's pods as `kubectl delete pod` would (its grace period: the manager
    /// stops its controllers and releases the Lease on SIGTERM).
    pub async fn delete_capo_pod(&self, name: &str) -> Result<(), String> {
        Api::<Pod>::namespaced(self.client.clone(), CAPO_NAMESPACE)
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ())
            .map_err(|e| format!("deleting pod {name}: {e}"))
    }

    /// Resources of the cloud that share a name within their collection (what a controller
    /// that created something twice leaves): `collection/name xN`. Empty when none.
    pub fn duplicates(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (collection, items) in self.cloud.resources() {
            let mut seen: BTreeMap<String, usize> = BTreeMap::new();
            for item in &items {
                if let Some(name) = item["name"].as_str().filter(|n| !n.is_empty()) {
                    *seen.entry(name.to_owned()).or_default() += 1;
                }
            }
            found.extend(
                seen.into_iter()
                    .filter(|(_, n)| *n > 1)
                    .map(|(name, n)| format!("{collection}/{name} x{n}")),
            );
        }
        found
    }

    /// `clusterctl generate cluster` of the release's default flavor ([`Installed::generate`]),
    /// then a server-side apply of it unchanged, as `kubectl apply` would.
    pub async fn create_default(
        &self,
        name: &str,
        ns: &str,
        control_planes: u32,
        workers: u32,
    ) -> Result<(), String> {
        let manifest = self.generate(name, ns, control_planes, workers)?;
        self.apply(ns, &manifest)
            .await
            .map_err(|e| format!("the default flavor: {e}"))
    }

    /// Panics with `msg` and the tail of the emulator's log.
    pub fn fail(&self, msg: &str) -> ! {
        panic!(
            "{msg}\n--- workload emulator (last 30 lines) ---\n{}",
            tail(&self.emulator_log, 30)
        )
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = self.emulator.kill();
        let _ = self.emulator.wait();
    }
}

/// A process's resident memory and CPU time (user + system).
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// VmRSS, MiB.
    pub rss_mib: f64,
    /// utime + stime, seconds.
    pub cpu_s: f64,
}

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RSS {:.1} MiB, CPU {:.1} s", self.rss_mib, self.cpu_s)
    }
}

/// The usage of the process whose cgroup path holds the container `id`.
fn process_usage(id: &str) -> Result<Usage, String> {
    let procs = std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?;
    let pid = procs
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| c.contains(id))
        })
        .ok_or_else(|| format!("no process in container {id}"))?;
    let rss = capo_manager::process_metrics::resident_bytes(&pid)
        .ok_or_else(|| format!("/proc/{pid}/status: no VmRSS"))?;
    let cpu_s = capo_manager::process_metrics::cpu_seconds(&pid)
        .ok_or_else(|| format!("/proc/{pid}/stat: no utime/stime"))?;
    Ok(Usage {
        // Bytes of resident memory, far below f64's exact-integer range.
        rss_mib: rss as f64 / (1024.0 * 1024.0),
        cpu_s,
    })
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// What a pod's security settings fall short of the installed tier's promise (docs/install.md):
/// non-root uid 65532, read-only root, no privilege escalation, every capability dropped,
/// seccomp RuntimeDefault. Empty when all hold.
pub fn security_gaps(pod: &Pod) -> Vec<String> {
    let mut gaps = Vec::new();
    let Some(spec) = &pod.spec else {
        return vec!["no spec".to_owned()];
    };
    let pod_sc = spec.security_context.clone().unwrap_or_default();
    if pod_sc.run_as_non_root != Some(true) {
        gaps.push("pod securityContext.runAsNonRoot is not true".to_owned());
    }
    let seccomp = pod_sc.seccomp_profile.map(|p| p.type_);
    if seccomp.as_deref() != Some("RuntimeDefault") {
        gaps.push(format!(
            "pod seccompProfile is {seccomp:?}, not RuntimeDefault"
        ));
    }
    for c in &spec.containers {
        let sc = c.security_context.clone().unwrap_or_default();
        let name = &c.name;
        if sc.read_only_root_filesystem != Some(true) {
            gaps.push(format!("{name}: readOnlyRootFilesystem is not true"));
        }
        if sc.allow_privilege_escalation != Some(false) {
            gaps.push(format!("{name}: allowPrivilegeEscalation is not false"));
        }
        let drop = sc.capabilities.and_then(|c| c.drop).unwrap_or_default();
        if !drop.iter().any(|d| d == "ALL") {
            gaps.push(format!("{name}: capabilities drop {drop:?}, not ALL"));
        }
        if sc.run_as_user.or(pod_sc.run_as_user) != Some(65532) {
            gaps.push(format!("{name}: runAsUser is not 65532"));
        }
        if c.readiness_probe.is_none() || c.liveness_probe.is_none() {
            gaps.push(format!("{name}: a readiness or liveness probe is missing"));
        }
    }
    gaps
}

//! The demo's run: start the management cluster and capo-sim, generate and apply the cluster,
//! print progress until it is Available, then delete it through Cluster API and check the cloud
//! (or keep everything running until Ctrl-C).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use capo_e2e::cloud::{Cloud, KEY_NAME, PROJECT};
use capo_e2e::cluster::{self, KUBERNETES_VERSION, capi, infra, kcp};
use capo_e2e::management::{Management, NETNS_VAR};
use capo_testkit::capi::{CapiDir, loopback_only_network};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};

use crate::progress::{self, Printer};

/// Namespace of the demo's cluster (the management cluster is the demo's own).
pub const NAMESPACE: &str = "capo-demo";

/// The template the cluster is generated from, relative to the repository.
const TEMPLATE: &str = "templates/cluster-template.yaml";

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Keep everything running after the cluster is Available, until Ctrl-C.
    pub keep: bool,
    /// Give up when the cluster is not Available (or not deleted) by then.
    pub timeout: Duration,
    /// Name of the cluster.
    pub cluster: String,
    /// KubeadmControlPlane replicas.
    pub control_planes: u32,
    /// MachineDeployment replicas.
    pub workers: u32,
}

/// Runs the demo to its end.
pub fn run(opts: &Options) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))?;
    let outcome = rt.block_on(run_async(opts));
    // A management cluster interrupted while starting is still on its thread: do not wait for
    // it. Everything it started ends with this process (the test kit's watchdog).
    rt.shutdown_background();
    outcome
}

async fn run_async(opts: &Options) -> Result<(), String> {
    // Listen for Ctrl-C (and SIGTERM) from the start: a signal that arrives before a listener
    // exists would be lost, and `--keep` would then wait forever.
    let mut stop = Stop::listen()?;
    check_network()?;
    let mut p = Printer::new();
    p.line(
        "starting the management cluster: kube-apiserver + etcd, Cluster API's core, kubeadm \
         bootstrap and KubeadmControlPlane managers, the workload-cluster emulator, \
         capo-controller-manager",
    );
    let mgmt = tokio::select! {
        r = start_management() => r?,
        () = stop.recv() => return Err("interrupted while starting".into()),
    };
    print_management(&mgmt, &p);
    let cloud = Cloud::start().await?;
    p.line(format!(
        "capo-sim (Keystone, Nova, Neutron, Octavia, Glance, Cinder) on {}: project {PROJECT}, \
         external network {} with floating IPs from {}, key pair {KEY_NAME}",
        cloud.sim.base_url(),
        short(&cloud.external_network_id),
        cloud.external_cidr,
    ));
    let demo = Demo {
        kube_at_start: mgmt.kube_requests().await,
        client: mgmt.client(),
        mgmt,
        cloud,
        opts,
    };
    let outcome = tokio::select! {
        r = demo.bring_up(&mut p) => r,
        () = stop.recv() => Err("interrupted".into()),
    };
    let outcome = match outcome {
        Ok(()) if opts.keep => {
            p.raw(demo.keep_message());
            stop.recv().await;
            p.line("signal received: stopping everything the demo started");
            return Ok(());
        }
        Ok(()) => tokio::select! {
            r = demo.delete(&mut p) => r,
            () = stop.recv() => Err("interrupted".into()),
        },
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => {
            p.line(
                "stopping capo-controller-manager, the Cluster API managers, the emulator, \
                 kube-apiserver, etcd and capo-sim",
            );
            Ok(())
        }
        Err(e) => Err(format!(
            "{e}\n--- last lines of the logs ---\n{}",
            demo.mgmt.log_tails(25)
        )),
    }
}

/// The management cluster's own check, with the demo's advice.
fn check_network() -> Result<(), String> {
    if !loopback_only_network() {
        return Err(
            "this is not a network namespace with only loopback: Cluster API's managers listen \
             on every interface, so the demo runs in one of its own. Run hack/demo.sh, which \
             makes it (unshare --net)"
                .into(),
        );
    }
    if std::env::var_os(NETNS_VAR).is_none() {
        return Err(format!(
            "{NETNS_VAR} is unset: set it inside the loopback-only network namespace, as \
             hack/demo.sh does"
        ));
    }
    Ok(())
}

/// Starts the management cluster on a thread of its own (its start blocks) without blocking
/// this runtime, so that Ctrl-C still works meanwhile.
async fn start_management() -> Result<Management, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("demo-start".into())
        .spawn(move || {
            let _ = tx.send(Management::start("demo"));
        })
        .map_err(|e| format!("starting a thread: {e}"))?;
    rx.await
        .map_err(|_| "the management cluster's start ended without a result".to_owned())?
}

fn print_management(mgmt: &Management, p: &Printer) {
    let version = CapiDir::from_env()
        .ok()
        .flatten()
        .and_then(|d| d.version().ok())
        .unwrap_or_else(|| "v1.14".to_owned());
    let dir = mgmt
        .capo_log()
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    p.line("management cluster up:");
    let rows = [
        (
            "kube-apiserver + etcd".to_owned(),
            format!("with Cluster API {version}'s CRDs, capo's and ORC's"),
        ),
        (
            format!("Cluster API {version}"),
            "core, kubeadm bootstrap (CABPK) and KubeadmControlPlane (KCP) managers, with their \
             webhooks"
                .to_owned(),
        ),
        (
            "workload-cluster emulator".to_owned(),
            "plays kubeadm, the kubelets and the cloud-controller-manager at each cluster's \
             endpoint"
                .to_owned(),
        ),
        (
            "capo-controller-manager".to_owned(),
            format!(
                "in-process: controllers {}; its admission webhooks registered",
                capo_manager::controllers::CONTROLLERS.join(", ")
            ),
        ),
        ("logs".to_owned(), format!("{dir}/")),
    ];
    let text: Vec<String> = rows
        .iter()
        .map(|(what, how)| format!("            {what:<26} {how}"))
        .collect();
    p.raw(text.join("\n"));
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// SIGINT (Ctrl-C) and SIGTERM, listened to for the whole run.
struct Stop {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Stop {
    fn listen() -> Result<Self, String> {
        use tokio::signal::unix::{SignalKind, signal};
        let err = |e: std::io::Error| format!("installing signal handlers: {e}");
        Ok(Self {
            int: signal(SignalKind::interrupt()).map_err(err)?,
            term: signal(SignalKind::terminate()).map_err(err)?,
        })
    }

    /// The next SIGINT or SIGTERM (cancel-safe: a signal is not lost when a select drops this).
    async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

/// What one look at the namespace found.
#[derive(Default)]
struct Seen {
    cluster: Option<Value>,
    osc: Option<Value>,
    machines: Vec<Value>,
    /// Objects of the cluster still present (all kinds), for the deletion's end.
    left: Vec<String>,
    /// Whether every list succeeded (a failed one says nothing about what is left).
    complete: bool,
}

struct Demo<'a> {
    opts: &'a Options,
    mgmt: Management,
    cloud: Cloud,
    client: Client,
    kube_at_start: u64,
}

/// The kinds followed, in printing order: (label, API).
fn followed(c: &Client) -> Vec<(&'static str, Api<DynamicObject>)> {
    vec![
        ("Cluster", capi(c, NAMESPACE, "Cluster")),
        ("KubeadmControlPlane", kcp(c, NAMESPACE)),
        ("MachineDeployment", capi(c, NAMESPACE, "MachineDeployment")),
        ("Machine", capi(c, NAMESPACE, "Machine")),
        ("OpenStackCluster", infra(c, NAMESPACE, "OpenStackCluster")),
        ("OpenStackMachine", infra(c, NAMESPACE, "OpenStackMachine")),
        (
            "OpenStackServer",
            cluster::api(
                c,
                NAMESPACE,
                "infrastructure.cluster.x-k8s.io",
                "v1alpha1",
                "OpenStackServer",
            ),
        ),
    ]
}

impl Demo<'_> {
    /// Figures so far: OpenStack requests (all, writes) by capo, Kubernetes API requests by capo.
    async fn counts(&self) -> (usize, usize, u64) {
        let (os, writes) = self.cloud.requests();
        let kube = self
            .mgmt
            .kube_requests()
            .await
            .saturating_sub(self.kube_at_start);
        (os, writes, kube)
    }

    /// Lists every followed kind once, printing what changed.
    async fn observe(&self, p: &mut Printer) -> Seen {
        let mut seen = Seen {
            complete: true,
            ..Seen::default()
        };
        for (kind, api) in followed(&self.client) {
            let Ok(list) = api.list(&ListParams::default()).await else {
                seen.complete = false;
                continue;
            };
            let items: Vec<Value> = list
                .items
                .iter()
                .filter_map(|o| serde_json::to_value(o).ok())
                .collect();
            let mut names = BTreeSet::new();
            for item in &items {
                let name = item["metadata"]["name"].as_str().unwrap_or("?").to_owned();
                seen.left.push(format!("{kind} {name}"));
                names.insert(name);
                p.facts(match kind {
                    "Cluster" => progress::capi_cluster_facts(item),
                    "KubeadmControlPlane" => progress::kcp_facts(item),
                    "MachineDeployment" => progress::machine_deployment_facts(item),
                    "Machine" => progress::capi_machine_facts(item),
                    "OpenStackCluster" => progress::cluster_facts(item),
                    "OpenStackMachine" => progress::machine_facts(item),
                    _ => Vec::new(),
                });
            }
            // capo's OpenStackServers follow their OpenStackMachines one to one: not printed.
            if kind != "OpenStackServer" {
                p.present(kind, names);
            }
            match kind {
                "Cluster" => {
                    seen.cluster = items
                        .into_iter()
                        .find(|c| c["metadata"]["name"] == self.opts.cluster.as_str());
                }
                "OpenStackCluster" => {
                    seen.osc = items
                        .into_iter()
                        .find(|c| c["metadata"]["name"] == self.opts.cluster.as_str());
                }
                "Machine" => seen.machines = items,
                _ => {}
            }
        }
        seen
    }

    /// `clusterctl generate cluster` from the default template, applied unchanged; then waits,
    /// printing progress, until every Machine is Running and the Cluster is Available.
    async fn bring_up(&self, p: &mut Printer) -> Result<(), String> {
        let opts = self.opts;
        let c = &opts.cluster;
        create_namespace(&self.client).await?;
        let template = capo_testkit::paths::repo_root().join(TEMPLATE);
        let manifest = tokio::task::block_in_place(|| {
            cluster::generate(
                &self.mgmt.clusterctl(),
                &template,
                c,
                NAMESPACE,
                opts.control_planes,
                opts.workers,
                &cluster::template_env(&self.cloud),
            )
        })?;
        p.line(format!(
            "clusterctl generate cluster {c} --from {TEMPLATE} --target-namespace {NAMESPACE} \
             --kubernetes-version {KUBERNETES_VERSION} --control-plane-machine-count {} \
             --worker-machine-count {} (variables: capo-sim's clouds.yaml, external network, \
             flavors, image, key pair)",
            opts.control_planes, opts.workers
        ));
        let applied = capo_testkit::apply_yaml(&self.client, NAMESPACE, &manifest, false)
            .await
            .map_err(|e| format!("applying the generated manifest: {e}"))?
            .map_err(|r| format!("the API server rejected the generated manifest: {r:?}"))?;
        let start = Instant::now();
        let names: Vec<String> = applied
            .iter()
            .map(|o| {
                let kind = o.types.as_ref().map_or("?", |t| t.kind.as_str());
                format!("{kind} {}", o.metadata.name.as_deref().unwrap_or("?"))
            })
            .collect();
        p.line(format!(
            "applied unchanged (server-side apply): {}",
            names.join(", ")
        ));

        let want = (opts.control_planes + opts.workers) as usize;
        let deadline = start + opts.timeout;
        let (mut running, mut available) = (false, false);
        loop {
            let seen = self.observe(p).await;
            let all_running = seen.machines.len() == want
                && seen.machines.iter().all(cluster::machine_running)
                && seen
                    .machines
                    .iter()
                    .all(|m| m["metadata"]["deletionTimestamp"].is_null());
            if all_running && !running {
                running = true;
                p.line(format!(
                    "figures: apply to all {want} Machines Running: {:.1} s",
                    start.elapsed().as_secs_f64()
                ));
            }
            let is_available = seen
                .cluster
                .as_ref()
                .is_some_and(|c| cluster::condition(c, "Available").as_deref() == Some("True"));
            if is_available && !available {
                available = true;
                p.line(format!(
                    "figures: apply to Cluster Available: {:.1} s",
                    start.elapsed().as_secs_f64()
                ));
            }
            if all_running && is_available {
                let (os, writes, kube) = self.counts().await;
                p.line(format!(
                    "figures: up (all Machines Running, Cluster Available): {:.1} s, OpenStack \
                     {os} requests ({writes} writes), Kubernetes API {kube} requests by capo",
                    start.elapsed().as_secs_f64()
                ));
                self.print_summary(p, &seen);
                return Ok(());
            }
            if Instant::now() > deadline {
                let available = seen.cluster.as_ref().map_or_else(
                    || "no Cluster".to_owned(),
                    |c| cluster::condition_text(c, "Available"),
                );
                let osc = seen
                    .osc
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), progress::pending_reasons);
                return Err(format!(
                    "timed out after {:.0} s waiting for {want} Machines Running and the Cluster \
                     Available:\n  Cluster {c} Available: {available}\n  OpenStackCluster {c}: \
                     {osc}\n  {} Machines:\n  {}",
                    opts.timeout.as_secs_f64(),
                    seen.machines.len(),
                    cluster::describe_machines(&seen.machines),
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The Available cluster: endpoint, machines with nodes and providerIDs, the cloud.
    fn print_summary(&self, p: &Printer, seen: &Seen) {
        let c = &self.opts.cluster;
        let cluster = seen.cluster.clone().unwrap_or_default();
        let ep = &cluster["spec"]["controlPlaneEndpoint"];
        let lb = seen
            .osc
            .as_ref()
            .and_then(|o| o["status"]["apiServerLoadBalancer"]["name"].as_str())
            .unwrap_or("-");
        let mut out = format!(
            "\n=== Cluster {c} is Available ===\n\
             control-plane endpoint: https://{}:{} (floating IP of the API load balancer {lb})\n\
             \x20 {:<32} {:<13} {:<8} {:<32} {:<50} ADDRESSES",
            ep["host"].as_str().unwrap_or("?"),
            ep["port"].as_i64().unwrap_or(6443),
            "MACHINE",
            "ROLE",
            "PHASE",
            "NODE",
            "PROVIDER ID",
        );
        let mut machines = seen.machines.clone();
        machines.sort_by_key(|m| {
            (
                !progress::is_control_plane(m),
                m["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        });
        for m in &machines {
            out.push_str(&format!(
                "\n  {:<32} {:<13} {:<8} {:<32} {:<50} {}",
                m["metadata"]["name"].as_str().unwrap_or("?"),
                if progress::is_control_plane(m) {
                    "control plane"
                } else {
                    "worker"
                },
                m["status"]["phase"].as_str().unwrap_or("-"),
                m["status"]["nodeRef"]["name"].as_str().unwrap_or("-"),
                m["spec"]["providerID"].as_str().unwrap_or("-"),
                progress::ip_addresses(m).join(", "),
            ));
        }
        out.push_str(&format!(
            "\ncloud (project {PROJECT}): {}\n",
            cloud_summary(&self.cloud)
        ));
        p.raw(out);
    }

    /// Deletes the Cluster through Cluster API, prints progress until every object of the
    /// cluster is gone, then checks that the cloud holds nothing of it.
    async fn delete(&self, p: &mut Printer) -> Result<(), String> {
        let c = &self.opts.cluster;
        p.line(format!(
            "deleting Cluster {c} (as kubectl delete cluster {c} does): Cluster API deletes the \
             MachineDeployment, the KubeadmControlPlane and their Machines, then the \
             OpenStackCluster; capo deletes each server, then the load balancer, router, network \
             and security groups"
        ));
        let start = Instant::now();
        let (os0, writes0, kube0) = self.counts().await;
        capi(&self.client, NAMESPACE, "Cluster")
            .delete(c, &DeleteParams::default())
            .await
            .map_err(|e| format!("deleting Cluster {c}: {e}"))?;
        let deadline = start + self.opts.timeout;
        loop {
            let seen = self.observe(p).await;
            if seen.complete && seen.left.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "timed out after {:.0} s waiting for the deletion; left: {}",
                    self.opts.timeout.as_secs_f64(),
                    seen.left.join(", ")
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let (os, writes, kube) = self.counts().await;
        p.line(format!(
            "figures: delete to every object gone: {:.1} s, OpenStack {} requests ({} writes), \
             Kubernetes API {} requests by capo",
            start.elapsed().as_secs_f64(),
            os.saturating_sub(os0),
            writes.saturating_sub(writes0),
            kube.saturating_sub(kube0),
        ));
        p.line(format!(
            "figures: in total: OpenStack {os} requests ({writes} writes), Kubernetes API {kube} \
             requests by capo"
        ));
        p.line(format!(
            "cloud after deletion (project {PROJECT}): {}",
            cloud_summary(&self.cloud)
        ));
        let left = self.cloud.leftovers();
        if left.is_empty() {
            p.line(format!(
                "cloud check: nothing of the cluster is left (the project's default security \
                 group and the key pair {KEY_NAME} were there before)"
            ));
            Ok(())
        } else {
            Err(format!(
                "resources left in the cloud after deletion: {left:?}"
            ))
        }
    }

    /// `--keep`: how to look around from outside the network namespace.
    fn keep_message(&self) -> String {
        let c = &self.opts.cluster;
        let enter = nsenter_prefix();
        let kubectl = std::env::var(capo_testkit::paths::ENV_DIR_VAR)
            .map(|d| format!("{d}/bin/kubectl"))
            .unwrap_or_else(|_| "kubectl".to_owned());
        let kc = self.mgmt.kubeconfig().display();
        // Its version check would wait for GitHub, which the namespace cannot reach.
        let clusterctl = format!(
            "env CLUSTERCTL_DISABLE_VERSIONCHECK=true {}",
            self.mgmt.clusterctl().display()
        );
        let logs = self
            .mgmt
            .capo_log()
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        format!(
            "\nEverything keeps running until Ctrl-C. The demo runs in a network namespace of its own \
             (loopback only); from another terminal, enter it with nsenter:\n\
             \x20 {enter} {kubectl} --kubeconfig {kc} -n {NAMESPACE} get cluster,kubeadmcontrolplane,machinedeployment,machine,openstackcluster,openstackmachine\n\
             \x20 {enter} {clusterctl} describe cluster {c} -n {NAMESPACE} --kubeconfig {kc}\n\
             the workload cluster's API (as the emulator plays it), at the control-plane endpoint:\n\
             \x20 {enter} {clusterctl} get kubeconfig {c} -n {NAMESPACE} --kubeconfig {kc} > {c}.kubeconfig\n\
             \x20 {enter} {kubectl} --kubeconfig {c}.kubeconfig get nodes\n\
             capo-sim: {} (clouds.yaml in the Secret {NAMESPACE}/{c}-cloud-config)\n\
             logs: {logs}/ (capo-controller-manager.log, capi-*.log, capo-workload-emulator.log; \
             removed on exit unless CAPO_TEST_KEEP_DIR is set)",
            self.cloud.sim.base_url(),
        )
    }
}

/// `nsenter` into this process's network namespace (and its user namespace when the demo runs
/// in one, as `unshare --map-root-user` makes for a user other than root).
fn nsenter_prefix() -> String {
    let pid = std::process::id();
    // The initial user namespace maps every ID onto itself; `--map-root-user` maps one.
    let own_userns = std::fs::read_to_string("/proc/self/uid_map")
        .map(|m| !m.split_whitespace().eq(["0", "0", "4294967295"]))
        .unwrap_or(false);
    if own_userns {
        format!("nsenter --user=/proc/{pid}/ns/user --net=/proc/{pid}/ns/net --")
    } else {
        format!("nsenter --net=/proc/{pid}/ns/net --")
    }
}

/// `<count> <collection>` for each non-empty collection of the project.
fn cloud_summary(cloud: &Cloud) -> String {
    let all: Vec<String> = cloud
        .resources()
        .iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(k, items)| format!("{} {k}", items.len()))
        .collect();
    if all.is_empty() {
        "empty".to_owned()
    } else {
        all.join(", ")
    }
}

async fn create_namespace(client: &Client) -> Result<(), String> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))
        .map_err(|e| e.to_string())?;
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(format!("creating namespace {NAMESPACE}: {e}")),
    }
}

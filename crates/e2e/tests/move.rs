//! Scenario 6 of the end-to-end tier (docs/testing.md): `clusterctl move` of a running cluster
//! to a second management cluster, mid-life. Its own test binary, so that its two management
//! clusters (the shared [`World`] as the source, a second [`Management`] as the target) are its
//! own. Run with `hack/e2e.sh clusterctl_move`.
//!
//! The target's capo and Cluster API take the cluster over from objects whose status clusterctl
//! did not carry (it creates each object from its source copy, and the status subresource is
//! not written by a create): nothing may be created or deleted in the cloud, every ID stays.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use capo_e2e::cloud::Cloud;
use capo_e2e::cluster::{self, api, capi, wait_cluster_condition, wait_machines_running};
use capo_e2e::management::Management;
use capo_e2e::scenario::Scenario;
use kube::Client;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{Value, json};

const CLUSTER: &str = "e2e-move";
const UP: Duration = Duration::from_secs(240);
/// How long the target may take to have every Machine Running again after the move.
const TAKEOVER: Duration = Duration::from_secs(60);

static TARGET: OnceLock<Result<Management, String>> = OnceLock::new();

/// The move's target management cluster, started on first use.
fn target() -> &'static Management {
    match TARGET.get_or_init(|| Management::start("target")) {
        Ok(m) => m,
        Err(e) => panic!("the target management cluster did not start: {e}"),
    }
}

/// The kinds of Cluster API, its kubeadm providers and capo that a cluster of the default
/// template is made of (group, version, kind).
const KINDS: [(&str, &str, &str); 12] = [
    ("cluster.x-k8s.io", "v1beta2", "Cluster"),
    ("cluster.x-k8s.io", "v1beta2", "MachineDeployment"),
    ("cluster.x-k8s.io", "v1beta2", "MachineSet"),
    ("cluster.x-k8s.io", "v1beta2", "Machine"),
    ("cluster.x-k8s.io", "v1beta2", "MachineHealthCheck"),
    ("bootstrap.cluster.x-k8s.io", "v1beta2", "KubeadmConfig"),
    (
        "bootstrap.cluster.x-k8s.io",
        "v1beta2",
        "KubeadmConfigTemplate",
    ),
    (
        "controlplane.cluster.x-k8s.io",
        "v1beta2",
        "KubeadmControlPlane",
    ),
    (
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "OpenStackCluster",
    ),
    (
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "OpenStackMachine",
    ),
    (
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "OpenStackMachineTemplate",
    ),
    (
        "infrastructure.cluster.x-k8s.io",
        "v1alpha1",
        "OpenStackServer",
    ),
];

/// Every object of [`KINDS`] and every Secret in `ns`, keyed `Kind/name`, as JSON.
async fn objects(client: &Client, ns: &str) -> Result<BTreeMap<String, Value>, String> {
    let mut out = BTreeMap::new();
    let secrets = [("", "v1", "Secret")];
    for (group, version, kind) in KINDS.iter().chain(secrets.iter()) {
        let list = api(client, ns, group, version, kind)
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing {kind} in {ns}: {e}"))?;
        for o in list.items {
            let v = serde_json::to_value(&o).map_err(|e| e.to_string())?;
            let name = v["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            out.insert(format!("{kind}/{name}"), v);
        }
    }
    Ok(out)
}

/// Every OpenStack resource ID of the scenario's project, by collection (key pairs by name).
fn cloud_ids(cloud: &Cloud) -> BTreeMap<String, BTreeSet<String>> {
    cloud
        .resources()
        .into_iter()
        .map(|(collection, items)| {
            let ids = items
                .iter()
                .filter_map(|i| i["id"].as_str().or(i["name"].as_str()).map(str::to_owned))
                .collect();
            (collection, ids)
        })
        .collect()
}

/// Every string under an `id`-like key (`id`, `instanceID`, `providerID`, ...) anywhere in `v`:
/// the OpenStack resources an object's status and spec point at.
fn referenced_ids(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let id_key = k == "id" || k.ends_with("ID") || k.ends_with("Id");
                match x {
                    Value::String(s) if id_key && !s.is_empty() => {
                        out.insert(format!("{k}={s}"));
                    }
                    _ => referenced_ids(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| referenced_ids(x, out)),
        _ => {}
    }
}

/// The cloud IDs capo's objects refer to (spec and status), keyed `Kind/name`.
fn capo_references(objs: &BTreeMap<String, Value>) -> BTreeMap<String, BTreeSet<String>> {
    objs.iter()
        .filter(|(k, _)| k.starts_with("OpenStack"))
        .map(|(k, v)| {
            let mut ids = BTreeSet::new();
            referenced_ids(&v["spec"], &mut ids);
            referenced_ids(&v["status"], &mut ids);
            (k.clone(), ids)
        })
        .collect()
}

/// The control-plane endpoint `host:port` of the Cluster.
async fn endpoint(client: &Client, ns: &str) -> Result<String, String> {
    let c = capi(client, ns, "Cluster")
        .get(CLUSTER)
        .await
        .map_err(|e| format!("get Cluster: {e}"))?;
    let v = serde_json::to_value(&c).map_err(|e| e.to_string())?;
    let ep = &v["spec"]["controlPlaneEndpoint"];
    match (ep["host"].as_str(), ep["port"].as_i64()) {
        (Some(h), Some(p)) if !h.is_empty() => Ok(format!("{h}:{p}")),
        _ => Err(format!("the Cluster has no control-plane endpoint: {ep}")),
    }
}

/// `clusterctl move` of `ns` from `from` to `to`; its combined output.
async fn clusterctl_move(from: &Management, to: &Management, ns: &str) -> Result<String, String> {
    let (cmd, _home) = cluster::clusterctl_command(&from.clusterctl())?;
    let out = tokio::process::Command::from(cmd)
        .args(["move", "--kubeconfig"])
        .arg(from.kubeconfig())
        .arg("--to-kubeconfig")
        .arg(to.kubeconfig())
        .args(["--namespace", ns, "-v", "1"])
        .output()
        .await
        .map_err(|e| format!("running clusterctl move: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("clusterctl move failed ({}):\n{text}", out.status))
    }
}

/// The requests of capo-sim's log from `from` on: (all, writes, the writes that create or
/// delete something, i.e. every POST but a token request and every DELETE, as
/// `METHOD path -> status`).
fn requests_since(cloud: &Cloud, from: usize) -> (usize, usize, Vec<String>) {
    let log = cloud.sim.control().requests();
    let new = log.get(from..).unwrap_or_default();
    let writes = new.iter().filter(|r| r.method != "GET").count();
    let creating_or_deleting = new
        .iter()
        .filter(|r| {
            (r.method == "POST" && !r.path.ends_with("/auth/tokens")) || r.method == "DELETE"
        })
        .map(|r| format!("{} {} -> {}", r.method, r.path, r.status))
        .collect();
    (new.len(), writes, creating_or_deleting)
}

/// The lines of a log that contain `needle`.
fn log_lines(path: &std::path::Path, needle: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_owned)
        .collect()
}

struct Move {
    s: Scenario,
    target: &'static Management,
    tclient: Client,
}

impl Move {
    /// Panics with `msg` and the tails of both management clusters' logs.
    fn fail(&self, msg: &str) -> ! {
        panic!(
            "{msg}\n===== source =====\n{}\n===== target =====\n{}",
            self.s.world.log_tails(40),
            self.target.log_tails(40)
        )
    }

    /// Prints one line of figures: wall time, OpenStack requests (all, writes) and Kubernetes
    /// API requests by the source's capo (when it matters) and by the target's.
    fn figures(
        &self,
        phase: &str,
        wall: Duration,
        os: (usize, usize),
        source_kube: Option<u64>,
        target_kube: u64,
    ) {
        let source = source_kube
            .map(|n| format!("{n} requests by the source's capo, "))
            .unwrap_or_default();
        println!(
            "e2e figures: {} / {phase}: {:.1} s, OpenStack {} requests ({} writes), Kubernetes API {source}{target_kube} requests by the target's capo",
            self.s.name,
            wall.as_secs_f64(),
            os.0,
            os.1,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusterctl_move_mid_life_recreates_nothing_in_the_cloud() {
    let s = Scenario::start("move").await;
    let target = tokio::task::block_in_place(target);
    let m = Move {
        tclient: target.client(),
        target,
        s,
    };
    let s = &m.s;
    let ns = s.ns.clone();

    // What `clusterctl init` would have left in both management clusters.
    for mgmt in [s.world.management(), target] {
        mgmt.record_clusterctl_init(&ns)
            .await
            .unwrap_or_else(|e| m.fail(&e));
    }

    // Up in the source.
    let t0 = Instant::now();
    s.create_cluster(CLUSTER, "cluster-template.yaml", 1, 1)
        .await;
    wait_machines_running(&s.client, &ns, CLUSTER, 2, UP)
        .await
        .unwrap_or_else(|e| m.fail(&e));
    wait_cluster_condition(&s.client, &ns, CLUSTER, "Available", UP)
        .await
        .unwrap_or_else(|e| m.fail(&e));
    println!(
        "e2e figures: {} / up in the source (Cluster Available): {:.1} s",
        s.name,
        t0.elapsed().as_secs_f64()
    );
    s.report("up in the source").await;

    // What the cloud and the source hold before the move.
    let ids_before = cloud_ids(&s.cloud);
    let objects_before = objects(&s.client, &ns).await.unwrap_or_else(|e| m.fail(&e));
    let refs_before = capo_references(&objects_before);
    let endpoint_before = endpoint(&s.client, &ns)
        .await
        .unwrap_or_else(|e| m.fail(&e));
    let log_at_move = s.cloud.sim.control().requests().len();
    let src_kube0 = s.world.kube_requests().await;
    let dst_kube0 = target.kube_requests().await;
    let count: usize = ids_before.values().map(BTreeSet::len).sum();
    println!(
        "e2e: {} OpenStack resources before the move ({}); {} objects in {ns}; endpoint {endpoint_before}",
        count,
        ids_before
            .iter()
            .map(|(k, v)| format!("{k} {}", v.len()))
            .collect::<Vec<_>>()
            .join(", "),
        objects_before.len()
    );

    // The move.
    let t_move = Instant::now();
    let output = clusterctl_move(s.world.management(), target, &ns)
        .await
        .unwrap_or_else(|e| m.fail(&e));
    let move_wall = t_move.elapsed();
    println!("e2e: clusterctl move output:\n{}", output.trim_end());
    let during = requests_since(&s.cloud, log_at_move);
    m.figures(
        "clusterctl move",
        move_wall,
        (during.0, during.1),
        Some(s.world.kube_requests().await - src_kube0),
        target.kube_requests().await - dst_kube0,
    );

    // The source is empty of the cluster's objects; the target holds every one of them.
    let left = objects(&s.client, &ns).await.unwrap_or_else(|e| m.fail(&e));
    assert!(
        left.is_empty(),
        "the source namespace still holds {:?}",
        left.keys().collect::<Vec<_>>()
    );
    let moved = objects(&m.tclient, &ns)
        .await
        .unwrap_or_else(|e| m.fail(&e));
    let missing: Vec<&String> = objects_before
        .keys()
        .filter(|k| !moved.contains_key(*k))
        .collect();
    assert!(missing.is_empty(), "not moved to the target: {missing:?}");

    // The target's Cluster API and capo take over.
    let t_after = Instant::now();
    // Nothing touches the servers: the Cluster resumed by clusterctl is what wakes them (capo
    // once left servers created while the Cluster was paused waiting forever).
    let ms = match wait_machines_running(&m.tclient, &ns, CLUSTER, 2, TAKEOVER).await {
        Ok(ms) => ms,
        Err(e) => {
            let stuck = servers_left_paused(&m.tclient, &ns)
                .await
                .unwrap_or_else(|e| m.fail(&e));
            m.fail(&format!(
                "after the move: {e}\nOpenStackServers still Paused although the Cluster was \
                 resumed: {stuck:?}"
            ))
        }
    };
    wait_cluster_condition(&m.tclient, &ns, CLUSTER, "Available", UP)
        .await
        .unwrap_or_else(|e| m.fail(&format!("after the move: {e}")));
    // capo's own readiness in the target (not only Cluster API's view of it).
    let osms = objects(&m.tclient, &ns)
        .await
        .unwrap_or_else(|e| m.fail(&e));
    for (k, v) in osms
        .iter()
        .filter(|(k, _)| k.starts_with("OpenStackCluster/") || k.starts_with("OpenStackMachine/"))
    {
        assert_eq!(
            v["status"]["ready"], true,
            "{k} is not ready in the target: {}",
            v["status"]
        );
    }
    let after = requests_since(&s.cloud, log_at_move);
    m.figures(
        "taken over by the target (every Machine Running, Cluster Available)",
        t_after.elapsed(),
        (after.0 - during.0, after.1 - during.1),
        Some(s.world.kube_requests().await - src_kube0),
        target.kube_requests().await - dst_kube0,
    );

    // Nothing recreated: same IDs, no create or delete request, same endpoint, and capo's
    // objects in the target refer to the very resources they referred to in the source.
    let ids_after = cloud_ids(&s.cloud);
    assert_eq!(
        ids_before, ids_after,
        "the move changed the cloud's resources"
    );
    assert!(
        after.2.is_empty(),
        "OpenStack resources were created or deleted after the move started:\n  {}",
        after.2.join("\n  ")
    );
    let endpoint_after = endpoint(&m.tclient, &ns)
        .await
        .unwrap_or_else(|e| m.fail(&e));
    assert_eq!(endpoint_before, endpoint_after, "the endpoint changed");
    let refs_after = capo_references(&osms);
    for (k, before) in &refs_before {
        let after = refs_after.get(k).cloned().unwrap_or_default();
        let lost: Vec<_> = before.difference(&after).collect();
        let new: Vec<_> = after.difference(before).collect();
        assert!(
            lost.is_empty() && new.is_empty(),
            "{k} refers to other resources in the target: lost {lost:?}, new {new:?}"
        );
    }
    for machine in &ms {
        let name = machine["metadata"]["name"].as_str().unwrap_or_default();
        let pid_before = &objects_before[&format!("Machine/{name}")]["spec"]["providerID"];
        assert_eq!(
            &machine["spec"]["providerID"], pid_before,
            "Machine {name}'s providerID changed"
        );
    }
    // The workload cluster's endpoint changed hands between the emulators.
    let group = format!("{ns}/{CLUSTER}");
    let stopped = log_lines(
        s.world.emulator_log(),
        "Workload cluster API server stopped",
    );
    let serving = log_lines(
        target.emulator_log(),
        "Workload cluster API server listening",
    );
    assert!(
        stopped.iter().any(|l| l.contains(&group)),
        "the source's emulator never stopped serving {group}"
    );
    assert!(
        serving.iter().any(|l| l.contains(&group)),
        "the target's emulator never served {group}"
    );
    let refused = log_lines(target.emulator_log(), "address already in use");
    let time = |lines: &[String]| {
        lines
            .iter()
            .find(|l| l.contains(&group))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_default()
            .to_owned()
    };
    println!(
        "e2e: endpoint handover: the source's emulator stopped serving at {}, the target's served from {} (refused the address {} times before)",
        time(&stopped),
        time(&serving),
        refused.len()
    );

    // The target manages the cluster: a MachineDeployment scale-up works.
    let t_scale = Instant::now();
    let kube_scale = target.kube_requests().await;
    let log_at_scale = s.cloud.sim.control().requests().len();
    capi(&m.tclient, &ns, "MachineDeployment")
        .patch(
            &format!("{CLUSTER}-md-0"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap_or_else(|e| m.fail(&format!("scaling the MachineDeployment: {e}")));
    wait_machines_running(&m.tclient, &ns, CLUSTER, 3, UP)
        .await
        .unwrap_or_else(|e| m.fail(&format!("scaling in the target: {e}")));
    let scaled = requests_since(&s.cloud, log_at_scale);
    m.figures(
        "MachineDeployment 1→2 in the target",
        t_scale.elapsed(),
        (scaled.0, scaled.1),
        None,
        target.kube_requests().await - kube_scale,
    );

    // Deleted from the target: the cloud is left empty.
    let t_delete = Instant::now();
    let log_at_delete = s.cloud.sim.control().requests().len();
    let kube_delete = target.kube_requests().await;
    cluster::delete_cluster(&m.tclient, &ns, CLUSTER, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| m.fail(&e));
    let leftovers = s.cloud.leftovers();
    assert!(
        leftovers.is_empty(),
        "deleting {CLUSTER} in the target leaked: {leftovers:#?}"
    );
    let deleted = requests_since(&s.cloud, log_at_delete);
    m.figures(
        "deleted in the target, cloud empty",
        t_delete.elapsed(),
        (deleted.0, deleted.1),
        None,
        target.kube_requests().await - kube_delete,
    );
}

/// The OpenStackServers of `ns` whose Paused condition is True although the Cluster is not
/// paused.
async fn servers_left_paused(client: &Client, ns: &str) -> Result<Vec<String>, String> {
    let c = capi(client, ns, "Cluster")
        .get(CLUSTER)
        .await
        .map_err(|e| format!("get Cluster: {e}"))?;
    let c = serde_json::to_value(&c).map_err(|e| e.to_string())?;
    if c["spec"]["paused"] == true {
        return Ok(Vec::new());
    }
    let list = api(
        client,
        ns,
        "infrastructure.cluster.x-k8s.io",
        "v1alpha1",
        "OpenStackServer",
    )
    .list(&ListParams::default())
    .await
    .map_err(|e| format!("listing OpenStackServers: {e}"))?;
    Ok(list
        .items
        .iter()
        .filter_map(|o| serde_json::to_value(o).ok())
        .filter(|v| cluster::condition(v, "Paused").as_deref() == Some("True"))
        .filter_map(|v| v["metadata"]["name"].as_str().map(str::to_owned))
        .collect())
}

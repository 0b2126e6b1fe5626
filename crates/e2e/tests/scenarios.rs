//! The scenarios of the end-to-end tier (docs/testing.md): each generates its cluster with
//! `clusterctl` from `templates/`, lets the real Cluster API controllers and capo bring it up,
//! changes it the way an operator would, and ends with Cluster API deleting it and an empty
//! cloud. Run with `hack/e2e.sh [filter]`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use capo_e2e::cluster::{self, capi, wait_cluster_condition, wait_machines_running};
use capo_e2e::scenario::Scenario;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

const UP: Duration = Duration::from_secs(240);

/// The control-plane endpoint host of `cluster` (set by capo, copied by Cluster API).
async fn endpoint_host(s: &Scenario, cluster: &str) -> String {
    let c = capi(&s.client, &s.ns, "Cluster")
        .get(cluster)
        .await
        .unwrap_or_else(|e| s.fail(&format!("get Cluster: {e}")));
    let v = serde_json::to_value(&c).unwrap_or_default();
    v["spec"]["controlPlaneEndpoint"]["host"]
        .as_str()
        .unwrap_or_else(|| s.fail("the Cluster has no control-plane endpoint"))
        .to_owned()
}

/// Comes up from the generated manifest: every Machine Running with a Node, Cluster Available.
async fn bring_up(
    s: &Scenario,
    cluster: &str,
    template: &str,
    cps: u32,
    workers: u32,
) -> Vec<Value> {
    let t0 = Instant::now();
    s.create_cluster(cluster, template, cps, workers).await;
    let ms = wait_machines_running(&s.client, &s.ns, cluster, (cps + workers) as usize, UP)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    println!(
        "e2e figures: {} / apply to all {} Machines Running: {:.1} s",
        s.name,
        cps + workers,
        t0.elapsed().as_secs_f64()
    );
    wait_cluster_condition(&s.client, &s.ns, cluster, "Available", UP)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    s.report("up (Cluster Available)").await;
    ms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_template_comes_up_and_is_deleted() {
    let s = Scenario::start("default").await;
    let ms = bring_up(&s, "e2e-default", "cluster-template.yaml", 1, 2).await;
    for m in &ms {
        let pid = m["spec"]["providerID"].as_str().unwrap_or_default();
        assert!(pid.starts_with("openstack:///"), "providerID {pid}");
        assert!(
            m["status"]["addresses"]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
            "Machine without addresses: {m}"
        );
    }
    let c = capi(&s.client, &s.ns, "Cluster").get("e2e-default").await;
    let c = serde_json::to_value(c.unwrap_or_else(|e| s.fail(&e.to_string()))).unwrap_or_default();
    let fds = c["status"]["failureDomains"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        fds.iter()
            .any(|f| f["name"] == "nova" && f["controlPlane"] == true),
        "failure domains on the Cluster: {fds:?}"
    );
    s.delete_and_check_empty("e2e-default").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_lb_template_comes_up_and_is_deleted() {
    let s = Scenario::start("without-lb").await;
    bring_up(&s, "e2e-nolb", "cluster-template-without-lb.yaml", 1, 1).await;
    let host = endpoint_host(&s, "e2e-nolb").await;
    assert!(
        s.cloud.floating_ip(&host).is_some(),
        "the endpoint {host} is not a floating IP of the cloud"
    );
    s.delete_and_check_empty("e2e-nolb").await;
}

/// Samples the endpoint's floating IP every 100 ms while the control plane scales and records
/// every moment it is missing, unattached, or attached to anything but a live control-plane
/// server of `cluster`.
fn watch_endpoint_fip(
    s: &Scenario,
    cluster: &str,
    host: String,
) -> (Arc<AtomicBool>, tokio::task::JoinHandle<Vec<String>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let sim_state = s.cloud.sim.control().clone();
    let project = sim_state.project_id("capo").unwrap_or_default();
    let prefix = format!("{cluster}-control-plane");
    let task = tokio::spawn(async move {
        let mut faults = Vec::new();
        let mut fip_id: Option<String> = None;
        while !stop2.load(Ordering::SeqCst) {
            let state = sim_state.state(Some(&project));
            let arr = |k: &str| state[k].as_array().cloned().unwrap_or_default();
            let fip = arr("floatingips")
                .into_iter()
                .find(|f| f["floating_ip_address"] == host.as_str());
            let verdict = match &fip {
                None => Some(format!("no floating IP {host}")),
                Some(f) => {
                    let id = f["id"].as_str().unwrap_or_default().to_owned();
                    if fip_id.get_or_insert(id.clone()) != &id {
                        Some(format!("floating IP {host} was reallocated"))
                    } else {
                        match f["port_id"].as_str() {
                            None => Some(format!("{host} unattached")),
                            Some(port) => {
                                let device = arr("ports")
                                    .into_iter()
                                    .find(|p| p["id"] == port)
                                    .and_then(|p| p["device_id"].as_str().map(str::to_owned));
                                let server = device.and_then(|d| {
                                    arr("servers").into_iter().find(|sv| sv["id"] == d.as_str())
                                });
                                match server {
                                    None => Some(format!("{host} on a port of no server")),
                                    Some(sv) if sv["status"] != "ACTIVE" => Some(format!(
                                        "{host} on server {} in {}",
                                        sv["name"], sv["status"]
                                    )),
                                    Some(sv)
                                        if !sv["name"]
                                            .as_str()
                                            .unwrap_or_default()
                                            .starts_with(&prefix) =>
                                    {
                                        Some(format!(
                                            "{host} on non-control-plane server {}",
                                            sv["name"]
                                        ))
                                    }
                                    Some(_) => None,
                                }
                            }
                        }
                    }
                }
            };
            if let Some(v) = verdict
                && faults.last() != Some(&v)
            {
                faults.push(v);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        faults
    });
    (stop, task)
}

/// KCP 1→3→1→3: every replica comes up each time.
async fn scale_1_3_1_3(s: &Scenario, cluster: &str, workers: u32) {
    let kcp_name = format!("{cluster}-control-plane");
    for (step, replicas) in [3u32, 1, 3].into_iter().enumerate() {
        let t0 = Instant::now();
        cluster::scale_control_plane(&s.client, &s.ns, &kcp_name, replicas)
            .await
            .unwrap_or_else(|e| s.fail(&e));
        wait_machines_running(&s.client, &s.ns, cluster, (replicas + workers) as usize, UP)
            .await
            .unwrap_or_else(|e| s.fail(&format!("step {} (to {replicas}): {e}", step + 1)));
        poll_kcp_ready(s, &kcp_name, replicas).await;
        println!(
            "e2e figures: {} / KCP to {replicas}: {:.1} s",
            s.name,
            t0.elapsed().as_secs_f64()
        );
    }
}

/// Waits until the KubeadmControlPlane reports `replicas` ready, up-to-date replicas.
async fn poll_kcp_ready(s: &Scenario, kcp_name: &str, replicas: u32) {
    let api = cluster::kcp(&s.client, &s.ns);
    cluster::poll(&format!("{kcp_name} {replicas} ready"), UP, || async {
        let k = api.get(kcp_name).await.map_err(|e| e.to_string())?;
        let v = serde_json::to_value(&k).map_err(|e| e.to_string())?;
        let st = &v["status"];
        let want = u64::from(replicas);
        if st["replicas"] == want && st["readyReplicas"] == want && st["upToDateReplicas"] == want {
            Ok(())
        } else {
            Err(format!("status {st}"))
        }
    })
    .await
    .unwrap_or_else(|e| s.fail(&e));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_scaling_without_lb_keeps_the_endpoint_on_a_live_control_plane() {
    let s = Scenario::start("kcp-nolb").await;
    let cluster = "e2e-kcp-nolb";
    bring_up(&s, cluster, "cluster-template-without-lb.yaml", 1, 1).await;
    let host = endpoint_host(&s, cluster).await;
    let (stop, sampler) = watch_endpoint_fip(&s, cluster, host.clone());
    scale_1_3_1_3(&s, cluster, 1).await;
    stop.store(true, Ordering::SeqCst);
    let faults = sampler.await.unwrap_or_default();
    assert_eq!(endpoint_host(&s, cluster).await, host, "the endpoint moved");
    assert!(
        faults.is_empty(),
        "the API floating IP {host} while scaling: {faults:#?}"
    );
    s.report("KCP 1→3→1→3").await;
    s.delete_and_check_empty(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_scaling_with_lb_keeps_members_in_step() {
    let s = Scenario::start("kcp-lb").await;
    let cluster = "e2e-kcp-lb";
    bring_up(&s, cluster, "cluster-template.yaml", 1, 1).await;
    scale_1_3_1_3(&s, cluster, 1).await;
    // The API load balancer's pool holds exactly the control-plane servers' addresses.
    let res = s.cloud.resources();
    let cps: Vec<Value> = res
        .get("servers")
        .into_iter()
        .flatten()
        .filter(|sv| {
            sv["name"]
                .as_str()
                .unwrap_or_default()
                .starts_with(&format!("{cluster}-control-plane"))
        })
        .cloned()
        .collect();
    let members: Vec<Value> = res.get("members").cloned().unwrap_or_default();
    assert_eq!(cps.len(), 3, "control-plane servers: {cps:?}");
    assert_eq!(members.len(), 3, "API pool members: {members:?}");
    s.report("KCP 1→3→1→3").await;
    s.delete_and_check_empty(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_cluster_is_left_alone_until_resumed() {
    let s = Scenario::start("paused").await;
    let cluster = "e2e-paused";
    bring_up(&s, cluster, "cluster-template-without-lb.yaml", 1, 1).await;
    let clusters = capi(&s.client, &s.ns, "Cluster");
    let pause = |paused: bool| json!({"spec": {"paused": paused}});
    clusters
        .patch(cluster, &PatchParams::default(), &Patch::Merge(pause(true)))
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    // Wait for capo to see it (its Paused condition), then ask for a second worker.
    let osc = cluster::infra(&s.client, &s.ns, "OpenStackCluster");
    cluster::poll("OpenStackCluster Paused", UP, || async {
        let o = osc.get(cluster).await.map_err(|e| e.to_string())?;
        let v = serde_json::to_value(&o).map_err(|e| e.to_string())?;
        match cluster::condition(&v, "Paused").as_deref() {
            Some("True") => Ok(()),
            _ => Err(cluster::condition_text(&v, "Paused")),
        }
    })
    .await
    .unwrap_or_else(|e| s.fail(&e));
    let md = capi(&s.client, &s.ns, "MachineDeployment");
    md.patch(
        &format!("{cluster}-md-0"),
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await
    .unwrap_or_else(|e| s.fail(&e.to_string()));
    let before = s.cloud.requests();
    tokio::time::sleep(Duration::from_secs(8)).await;
    let after = s.cloud.requests();
    assert_eq!(
        after.1,
        before.1,
        "capo wrote to the cloud while the Cluster was paused ({} writes)",
        after.1 - before.1
    );
    clusters
        .patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(pause(false)),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    wait_machines_running(&s.client, &s.ns, cluster, 3, UP)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    s.report("paused, resumed, scaled").await;
    s.delete_and_check_empty(cluster).await;
}

/// The names of `cluster`'s Machines (control plane or workers).
async fn machine_names(s: &Scenario, cluster: &str, control_plane: bool) -> Vec<String> {
    let mut names: Vec<String> = cluster::machines(&s.client, &s.ns, cluster)
        .await
        .iter()
        .filter(|m| {
            m["metadata"]["labels"]["cluster.x-k8s.io/control-plane"].is_null() != control_plane
        })
        .filter_map(|m| m["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Deletes the server of Machine `name` through Nova, behind capo's back (as an operator or a
/// failing hypervisor would).
async fn delete_server_out_of_band(s: &Scenario, name: &str) {
    let m = capi(&s.client, &s.ns, "Machine")
        .get(name)
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let v = serde_json::to_value(&m).unwrap_or_default();
    let id = v["spec"]["providerID"]
        .as_str()
        .and_then(|p| p.strip_prefix("openstack:///"))
        .unwrap_or_else(|| s.fail(&format!("Machine {name} has no providerID")))
        .to_owned();
    s.cloud
        .delete_server(&id)
        .await
        .unwrap_or_else(|e| s.fail(&e));
}

/// A MachineHealthCheck as an operator writes it: a Node gone or not Ready for 10 s is unhealthy.
fn machine_health_check(cluster: &str, name: &str, selector: &str) -> String {
    format!(
        "apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineHealthCheck
metadata:
  name: {name}
spec:
  clusterName: {cluster}
  selector:
    matchLabels:
      {selector}
  checks:
    nodeStartupTimeoutSeconds: 600
    unhealthyNodeConditions:
    - type: Ready
      status: Unknown
      timeoutSeconds: 10
    - type: Ready
      status: \"False\"
      timeoutSeconds: 10
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_health_check_replaces_a_worker_whose_server_was_deleted() {
    let s = Scenario::start("mhc").await;
    let cluster = "e2e-mhc";
    bring_up(&s, cluster, "cluster-template-without-lb.yaml", 1, 2).await;
    s.apply(&machine_health_check(
        cluster,
        "workers",
        &format!("cluster.x-k8s.io/deployment-name: {cluster}-md-0"),
    ))
    .await;
    let before = machine_names(&s, cluster, false).await;
    let victim = before[0].clone();
    let t0 = Instant::now();
    delete_server_out_of_band(&s, &victim).await;
    // capo reports the server gone, the emulated cloud-controller-manager deletes the Node, the
    // MachineHealthCheck remediates, the MachineSet replaces the Machine.
    cluster::poll(&format!("{victim} replaced"), UP, || async {
        let ms = cluster::machines(&s.client, &s.ns, cluster).await;
        let gone = !ms.iter().any(|m| m["metadata"]["name"] == victim.as_str());
        let running = ms.iter().filter(|m| cluster::machine_running(m)).count();
        if gone && running == 3 && ms.len() == 3 {
            Ok(())
        } else {
            Err(cluster::describe_machines(&ms))
        }
    })
    .await
    .unwrap_or_else(|e| s.fail(&e));
    println!(
        "e2e figures: {} / worker server deleted to replacement Running: {:.1} s",
        s.name,
        t0.elapsed().as_secs_f64()
    );
    s.report("remediated").await;
    s.delete_and_check_empty(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_upgrade_and_machine_deployment_rollout_leave_nothing_behind() {
    let s = Scenario::start("rollout").await;
    let cluster = "e2e-rollout";
    bring_up(&s, cluster, "cluster-template.yaml", 1, 1).await;
    let old_cps = machine_names(&s, cluster, true).await;
    let old_workers = machine_names(&s, cluster, false).await;

    // Control plane: a version bump rolls every control-plane Machine.
    let t0 = Instant::now();
    cluster::kcp(&s.client, &s.ns)
        .patch(
            &format!("{cluster}-control-plane"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"version": cluster::UPGRADE_VERSION}})),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    // Workers: a new infrastructure template (another flavor) rolls the MachineDeployment.
    let osmt = cluster::infra(&s.client, &s.ns, "OpenStackMachineTemplate");
    let old = osmt
        .get(&format!("{cluster}-md-0"))
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let spec = serde_json::to_value(&old).unwrap_or_default()["spec"].clone();
    let mut new_spec = spec.clone();
    new_spec["template"]["spec"]["flavor"] = json!("m1.medium");
    s.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: OpenStackMachineTemplate\nmetadata:\n  name: {cluster}-md-1\nspec: {new_spec}\n"
    ))
    .await;
    capi(&s.client, &s.ns, "MachineDeployment")
        .patch(
            &format!("{cluster}-md-0"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"infrastructureRef": {"name": format!("{cluster}-md-1")}}}}})),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));

    cluster::poll("rollout done", UP, || async {
        let ms = cluster::machines(&s.client, &s.ns, cluster).await;
        let old_left = ms.iter().any(|m| {
            let n = m["metadata"]["name"].as_str().unwrap_or_default();
            old_cps.iter().chain(&old_workers).any(|o| o == n)
        });
        let upgraded = ms
            .iter()
            .filter(|m| !m["metadata"]["labels"]["cluster.x-k8s.io/control-plane"].is_null())
            .all(|m| m["spec"]["version"] == cluster::UPGRADE_VERSION);
        if !old_left && upgraded && ms.len() == 2 && ms.iter().all(cluster::machine_running) {
            Ok(())
        } else {
            Err(cluster::describe_machines(&ms))
        }
    })
    .await
    .unwrap_or_else(|e| s.fail(&e));
    poll_kcp_ready(&s, &format!("{cluster}-control-plane"), 1).await;
    println!(
        "e2e figures: {} / upgrade + rollout: {:.1} s",
        s.name,
        t0.elapsed().as_secs_f64()
    );
    // Nothing of the old machines is left in the cloud, and the API pool follows.
    let res = s.cloud.resources();
    let servers: Vec<String> = res
        .get("servers")
        .into_iter()
        .flatten()
        .filter_map(|sv| sv["name"].as_str().map(str::to_owned))
        .collect();
    for old in old_cps.iter().chain(&old_workers) {
        assert!(
            !servers.iter().any(|n| n.contains(old.as_str())),
            "server of {old} left: {servers:?}"
        );
    }
    assert_eq!(servers.len(), 2, "servers: {servers:?}");
    assert_eq!(
        res.get("members").map_or(0, Vec::len),
        1,
        "API pool members"
    );
    s.report("upgraded and rolled out").await;
    s.delete_and_check_empty(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_control_plane_server_is_replaced_and_the_endpoint_stays_up() {
    let s = Scenario::start("cp-deleted").await;
    let cluster = "e2e-cp-deleted";
    // The without-lb flavor pins one control-plane replica (as upstream's); the operator
    // scales it to three afterwards.
    bring_up(&s, cluster, "cluster-template-without-lb.yaml", 1, 0).await;
    let kcp_name = format!("{cluster}-control-plane");
    cluster::scale_control_plane(&s.client, &s.ns, &kcp_name, 3)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    wait_machines_running(&s.client, &s.ns, cluster, 3, UP)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    poll_kcp_ready(&s, &kcp_name, 3).await;
    s.apply(&machine_health_check(
        cluster,
        "control-plane",
        "cluster.x-k8s.io/control-plane: \"\"",
    ))
    .await;
    let host = endpoint_host(&s, cluster).await;
    // The worst case: the server that holds the API floating IP.
    let holder = s
        .cloud
        .floating_ip(&host)
        .and_then(|f| {
            f["port_id"]
                .as_str()
                .and_then(|p| s.cloud.server_of_port(p))
        })
        .and_then(|sv| sv["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| s.fail(&format!("{host} is on no server")));
    let victim = machine_names(&s, cluster, true)
        .await
        .into_iter()
        .find(|m| holder.contains(m.as_str()) || m.contains(holder.as_str()))
        .unwrap_or_else(|| s.fail(&format!("no control-plane Machine for server {holder}")));
    let t0 = Instant::now();
    delete_server_out_of_band(&s, &victim).await;
    cluster::poll(&format!("{victim} replaced"), UP, || async {
        let ms = cluster::machines(&s.client, &s.ns, cluster).await;
        let gone = !ms.iter().any(|m| m["metadata"]["name"] == victim.as_str());
        if gone && ms.len() == 3 && ms.iter().all(cluster::machine_running) {
            Ok(())
        } else {
            Err(cluster::describe_machines(&ms))
        }
    })
    .await
    .unwrap_or_else(|e| s.fail(&e));
    poll_kcp_ready(&s, &format!("{cluster}-control-plane"), 3).await;
    println!(
        "e2e figures: {} / control-plane server deleted to replacement Running: {:.1} s",
        s.name,
        t0.elapsed().as_secs_f64()
    );
    // The endpoint kept its address and is back on a live control-plane server.
    assert_eq!(endpoint_host(&s, cluster).await, host, "the endpoint moved");
    let (stop, sampler) = watch_endpoint_fip(&s, cluster, host.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    let faults = sampler.await.unwrap_or_default();
    assert!(
        faults.is_empty(),
        "the API floating IP {host} after remediation: {faults:#?}"
    );
    s.report("control plane remediated").await;
    s.delete_and_check_empty(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topology_flavor_reconciles_through_the_cluster_class() {
    let s = Scenario::start("topology").await;
    let cluster = "e2e-topology";
    let class = cluster::generate_yaml(
        &s.world.clusterctl(),
        &Scenario::template("clusterclass-capo-default.yaml"),
        &cluster::template_env(&s.cloud),
    )
    .unwrap_or_else(|e| s.fail(&e));
    s.apply(&class).await;
    bring_up(&s, cluster, "cluster-template-topology.yaml", 1, 1).await;
    // A topology change reaches capo through the topology controller: two workers.
    let clusters = capi(&s.client, &s.ns, "Cluster");
    let current = clusters
        .get(cluster)
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let mut workers =
        serde_json::to_value(&current).unwrap_or_default()["spec"]["topology"]["workers"].clone();
    workers["machineDeployments"][0]["replicas"] = json!(2);
    clusters
        .patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"topology": {"workers": workers}}})),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    wait_machines_running(&s.client, &s.ns, cluster, 3, UP)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    s.report("topology scaled").await;

    // The bastion through the class's `bastion` and `bastionFlavor` patches (v1beta2 selectors),
    // applied by the topology controller to the v1beta2 OpenStackCluster, and built by capo.
    let current = clusters
        .get(cluster)
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let mut variables =
        serde_json::to_value(&current).unwrap_or_default()["spec"]["topology"]["variables"].clone();
    let Some(bastion) = variables
        .as_array_mut()
        .and_then(|vs| vs.iter_mut().find(|v| v["name"] == "bastion"))
    else {
        s.fail("the topology Cluster has no bastion variable")
    };
    bastion["value"]["enabled"] = json!(true);
    bastion["value"]["spec"]["image"]["filter"]["name"] = json!("ubuntu-2404-kube-v1.34");
    clusters
        .patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"topology": {"variables": variables}}})),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let oscs = cluster::infra(&s.client, &s.ns, "OpenStackCluster");
    let deadline = Instant::now() + UP;
    let osc = loop {
        let list = oscs
            .list(&Default::default())
            .await
            .unwrap_or_else(|e| s.fail(&e.to_string()));
        let osc = list
            .items
            .into_iter()
            .next()
            .map(|o| serde_json::to_value(o).unwrap_or_default());
        if let Some(osc) = osc.filter(|o| o["status"]["bastion"]["state"] == "ACTIVE") {
            break osc;
        }
        if Instant::now() > deadline {
            s.fail("the bastion was not ACTIVE in time");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(osc["spec"]["bastion"]["spec"]["flavor"], json!("m1.small"));
    let name = osc["metadata"]["name"].as_str().unwrap_or_default();
    let as_v1beta2 = cluster::infra_v1beta2(&s.client, &s.ns, "OpenStackCluster")
        .get(name)
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    assert_eq!(
        serde_json::to_value(as_v1beta2).unwrap_or_default()["spec"]["bastion"]["spec"]["flavor"],
        json!({"filter": {"name": "m1.small"}})
    );
    s.report("bastion up").await;
    s.delete_and_check_empty(cluster).await;
}

/// The message of the Machine's InfrastructureReady condition (Cluster API mirrors capo's).
fn infrastructure_message(m: &Value) -> String {
    cluster::condition_text(m, "InfrastructureReady")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_reported_on_machines_and_converges_once_fixed() {
    let s = Scenario::start("bad-input").await;
    let cluster = "e2e-bad";

    // A template variable left out: clusterctl names it and nothing is applied.
    let mut vars = cluster::template_env(&s.cloud);
    vars.remove("OPENSTACK_IMAGE_NAME");
    let generated = cluster::generate(
        &s.world.clusterctl(),
        &Scenario::template("cluster-template-without-lb.yaml"),
        cluster,
        &s.ns,
        1,
        1,
        &vars,
    );
    let Err(err) = generated else {
        s.fail("clusterctl generated a manifest although OPENSTACK_IMAGE_NAME was missing")
    };
    assert!(err.contains("OPENSTACK_IMAGE_NAME"), "{err}");

    // Invalid input is refused at admission by capo's webhook, naming the field.
    let invalid = "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata:
  name: e2e-bad-invalid
spec:
  template:
    spec:
      flavor: m1.small
      image:
        filter:
          name: ubuntu-2404-kube-v1.34
      providerID: openstack:///set-by-hand
";
    match capo_testkit::apply_yaml(&s.client, &s.ns, invalid, false).await {
        Ok(Err(rejected)) => {
            let text = format!("{rejected:?}");
            assert!(
                text.contains("spec.template.spec.providerID"),
                "refused without naming the field: {text}"
            );
        }
        Ok(Ok(_)) => s.fail("an OpenStackMachineTemplate with a providerID was admitted"),
        Err(e) => s.fail(&format!("applying the invalid template: {e}")),
    }

    bring_up(&s, cluster, "cluster-template-without-lb.yaml", 1, 1).await;

    // A flavor, then an image, that does not exist: the new worker says so, nothing is created
    // for it; pointing the MachineDeployment back at the good template converges.
    let osmt = cluster::infra(&s.client, &s.ns, "OpenStackMachineTemplate");
    let good = osmt
        .get(&format!("{cluster}-md-0"))
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let good_spec = serde_json::to_value(&good).unwrap_or_default()["spec"].clone();
    let md = capi(&s.client, &s.ns, "MachineDeployment");
    let point_at = |template: String| json!({"spec": {"template": {"spec": {"infrastructureRef": {"name": template}}}}});
    for (field, value, needle) in [
        ("flavor", json!("m1.nonexistent"), "m1.nonexistent"),
        (
            "image",
            json!({"filter": {"name": "no-such-image"}}),
            "no-such-image",
        ),
    ] {
        let mut spec = good_spec.clone();
        spec["template"]["spec"][field] = value;
        s.apply(&format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: OpenStackMachineTemplate\nmetadata:\n  name: {cluster}-md-bad-{field}\nspec: {spec}\n"
        ))
        .await;
        md.patch(
            &format!("{cluster}-md-0"),
            &PatchParams::default(),
            &Patch::Merge(point_at(format!("{cluster}-md-bad-{field}"))),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
        let servers_before = s.cloud.resources().get("servers").map_or(0, Vec::len);
        let said = cluster::poll(
            &format!("the bad {field} named on a Machine"),
            UP,
            || async {
                let ms = cluster::machines(&s.client, &s.ns, cluster).await;
                ms.iter()
                    .map(infrastructure_message)
                    .find(|msg| msg.contains(needle))
                    .ok_or_else(|| cluster::describe_machines(&ms))
            },
        )
        .await
        .unwrap_or_else(|e| s.fail(&e));
        println!("e2e figures: {} / unknown {field} reported: {said}", s.name);
        assert_eq!(
            s.cloud.resources().get("servers").map_or(0, Vec::len),
            servers_before,
            "a server was created with an {field} that does not exist"
        );
        md.patch(
            &format!("{cluster}-md-0"),
            &PatchParams::default(),
            &Patch::Merge(point_at(format!("{cluster}-md-0"))),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
        wait_machines_running(&s.client, &s.ns, cluster, 2, UP)
            .await
            .unwrap_or_else(|e| s.fail(&e));
    }

    // Quota exhausted mid-scale: room for one more port only, two more workers asked for.
    let ports = s.cloud.resources().get("ports").map_or(0, Vec::len) as i64;
    s.cloud
        .set_network_quota("port", ports + 1)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    md.patch(
        &format!("{cluster}-md-0"),
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap_or_else(|e| s.fail(&e.to_string()));
    let said = cluster::poll("the quota named on a Machine", UP, || async {
        let ms = cluster::machines(&s.client, &s.ns, cluster).await;
        ms.iter()
            .map(infrastructure_message)
            .find(|msg| msg.to_lowercase().contains("quota"))
            .ok_or_else(|| cluster::describe_machines(&ms))
    })
    .await
    .unwrap_or_else(|e| s.fail(&e));
    println!("e2e figures: {} / quota reported: {said}", s.name);
    s.cloud
        .set_network_quota("port", -1)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    wait_machines_running(&s.client, &s.ns, cluster, 4, UP)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    s.report("bad input reported and fixed").await;
    s.delete_and_check_empty(cluster).await;
}

/// The pool the floating-IP scenario's workers take their addresses from.
const POOL: &str = "workers-public";

/// `ipam.cluster.x-k8s.io/v1beta2 IPAddress` in the scenario's namespace, as JSON.
async fn ip_addresses(client: &kube::Client, ns: &str) -> Result<Vec<Value>, String> {
    cluster::api(client, ns, "ipam.cluster.x-k8s.io", "v1beta2", "IPAddress")
        .list(&Default::default())
        .await
        .map_err(|e| format!("listing IPAddresses: {e}"))
        .map(|l| {
            l.items
                .into_iter()
                .filter_map(|a| serde_json::to_value(a).ok())
                .collect()
        })
}

/// The OpenStackFloatingIPPool kind in the scenario's namespace.
fn pool_api(s: &Scenario) -> kube::Api<kube::api::DynamicObject> {
    cluster::api(
        &s.client,
        &s.ns,
        "infrastructure.cluster.x-k8s.io",
        "v1alpha1",
        "OpenStackFloatingIPPool",
    )
}

/// The pool as JSON, or None once it is gone.
async fn pool(s: &Scenario) -> Option<Value> {
    match pool_api(s).get_opt(POOL).await {
        Ok(p) => p.and_then(|p| serde_json::to_value(p).ok()),
        Err(e) => s.fail(&format!("get pool: {e}")),
    }
}

/// Sorted strings of a JSON array.
fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_owned))
        .collect();
    out.sort();
    out
}

/// Samples the IPAddresses and the cloud every 100 ms and records every moment an address is
/// held by two IPAddresses, or a floating IP of the pool sits on a control-plane server; returns
/// those faults and how many samples read the IPAddresses.
fn watch_pool_addresses(
    s: &Scenario,
    cluster: &str,
) -> (
    Arc<AtomicBool>,
    tokio::task::JoinHandle<(Vec<String>, usize)>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let sim_state = s.cloud.sim.control().clone();
    let project = sim_state.project_id("capo").unwrap_or_default();
    let client = s.client.clone();
    let ns = s.ns.clone();
    let cp_prefix = format!("{cluster}-control-plane");
    let tag = capo_api::names::floating_ip_pool_tag(POOL);
    let task = tokio::spawn(async move {
        let mut faults: Vec<String> = Vec::new();
        let mut samples = 0;
        while !stop2.load(Ordering::SeqCst) {
            let mut seen = std::collections::BTreeMap::<String, String>::new();
            let addresses = ip_addresses(&client, &ns).await;
            samples += usize::from(addresses.is_ok());
            for a in addresses.unwrap_or_default() {
                let addr = a["spec"]["address"].as_str().unwrap_or_default().to_owned();
                let name = a["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(other) = seen.insert(addr.clone(), name.clone()) {
                    let v = format!("{addr} held by IPAddresses {other} and {name}");
                    if !faults.contains(&v) {
                        faults.push(v);
                    }
                }
            }
            let state = sim_state.state(Some(&project));
            let arr = |k: &str| state[k].as_array().cloned().unwrap_or_default();
            for f in arr("floatingips") {
                let ours = f["tags"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|x| x == tag.as_str()));
                let Some(port) = f["port_id"].as_str().filter(|_| ours) else {
                    continue;
                };
                let device = arr("ports")
                    .into_iter()
                    .find(|p| p["id"] == port)
                    .and_then(|p| p["device_id"].as_str().map(str::to_owned));
                let server = device
                    .and_then(|d| arr("servers").into_iter().find(|sv| sv["id"] == d.as_str()));
                let name = server
                    .as_ref()
                    .and_then(|sv| sv["name"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                if name.starts_with(&cp_prefix) {
                    let v = format!(
                        "{} on control-plane server {name}",
                        f["floating_ip_address"]
                    );
                    if !faults.contains(&v) {
                        faults.push(v);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (faults, samples)
    });
    (stop, task)
}

/// Checks that every worker Machine holds one IPAddress of the pool whose floating IP sits on
/// that worker's server, and that the pool's status agrees; returns the claimed addresses.
async fn check_pool_serves_workers(s: &Scenario, cluster: &str, workers: usize) -> Vec<String> {
    let tag = capo_api::names::floating_ip_pool_tag(POOL);
    cluster::poll(
        &format!("{workers} workers on pool addresses"),
        UP,
        || async {
            let addrs = ip_addresses(&s.client, &s.ns).await?;
            let live: Vec<&Value> = addrs
                .iter()
                .filter(|a| a["metadata"]["deletionTimestamp"].is_null())
                .collect();
            let mut held: Vec<String> = live
                .iter()
                .filter_map(|a| a["spec"]["address"].as_str().map(str::to_owned))
                .collect();
            held.sort();
            let p = pool(s).await.ok_or("the pool is gone")?;
            let claimed = sorted(&p["status"]["claimedIPs"]);
            if live.len() != workers || addrs.len() != workers || claimed != held {
                return Err(format!(
                    "IPAddresses {held:?} ({} in all), pool claimedIPs {claimed:?}",
                    addrs.len()
                ));
            }
            for a in &live {
                let pool_ref = &a["spec"]["poolRef"];
                let owned_by_claim = a["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|o| o.iter().any(|r| r["kind"] == "IPAddressClaim"));
                if pool_ref["name"] != POOL || !owned_by_claim || a["spec"]["prefix"] != 32 {
                    return Err(format!("IPAddress not the pool's: {a}"));
                }
            }
            let workers_now: Vec<Value> = cluster::machines(&s.client, &s.ns, cluster)
                .await
                .into_iter()
                .filter(|m| m["metadata"]["labels"]["cluster.x-k8s.io/control-plane"].is_null())
                .collect();
            let mut servers = Vec::new();
            for m in &workers_now {
                let external: Vec<&str> = m["status"]["addresses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|a| a["type"] == "ExternalIP")
                    .filter_map(|a| a["address"].as_str())
                    .collect();
                let [ip] = external[..] else {
                    return Err(format!(
                        "{} ExternalIPs {external:?}",
                        m["metadata"]["name"]
                    ));
                };
                if !held.iter().any(|h| h == ip) {
                    return Err(format!(
                        "{} has {ip}, not an address of the pool",
                        m["metadata"]["name"]
                    ));
                }
                let fip = s
                    .cloud
                    .floating_ip(ip)
                    .ok_or(format!("no floating IP {ip}"))?;
                let reserved =
                    sorted(&p["spec"]["preAllocatedFloatingIPs"]).contains(&ip.to_owned());
                let tagged = fip["tags"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|x| x == tag.as_str()));
                if !reserved && !tagged {
                    return Err(format!("{ip} lacks the pool's tag: {}", fip["tags"]));
                }
                let port = fip["port_id"].as_str().ok_or(format!("{ip} unattached"))?;
                let server = s
                    .cloud
                    .server_of_port(port)
                    .ok_or(format!("{ip}: port of no server"))?;
                let pid = m["spec"]["providerID"].as_str().unwrap_or_default();
                if !pid.ends_with(server["id"].as_str().unwrap_or("-")) {
                    return Err(format!("{ip} on server {}, not on {pid}", server["name"]));
                }
                servers.push(pid.to_owned());
            }
            servers.sort();
            servers.dedup();
            if servers.len() != workers || workers_now.len() != workers {
                return Err(format!("worker servers with pool addresses: {servers:?}"));
            }
            // Every floating IP of the pool in the cloud is a held or an available address.
            let available = sorted(&p["status"]["availableIPs"]);
            for f in s.cloud.resources().get("floatingips").into_iter().flatten() {
                let tagged = f["tags"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|x| x == tag.as_str()));
                let addr = f["floating_ip_address"].as_str().unwrap_or_default();
                if tagged && !held.iter().chain(&available).any(|a| a == addr) {
                    return Err(format!(
                        "pool floating IP {addr} neither claimed nor available"
                    ));
                }
            }
            Ok(held)
        },
    )
    .await
    .unwrap_or_else(|e| s.fail(&e))
}

/// Scales the workers' MachineDeployment to `replicas`.
async fn scale_workers(s: &Scenario, cluster: &str, replicas: u32) {
    capi(&s.client, &s.ns, "MachineDeployment")
        .patch(
            &format!("{cluster}-md-0"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
}

/// Waits for one control plane and three workers Running on pool addresses, the reserved address
/// among them (unclaimed addresses are handed out before new ones); returns the addresses.
async fn workers_up(s: &Scenario, cluster: &str, reserved: &str, phase: &str) -> Vec<String> {
    let t0 = Instant::now();
    wait_machines_running(&s.client, &s.ns, cluster, 4, UP)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    let held = check_pool_serves_workers(s, cluster, 3).await;
    assert!(
        held.iter().any(|a| a == reserved),
        "the reserved {reserved} was not handed out first: {held:?}"
    );
    println!(
        "e2e figures: {} / {phase}: 3 workers Running on pool addresses: {:.1} s",
        s.name,
        t0.elapsed().as_secs_f64()
    );
    s.report(&format!("{phase}: 3 workers on the pool")).await;
    held
}

/// Scales the workers 3→1 and waits for the pool to settle: the addresses the two removed
/// workers held are deleted from the cloud (Delete) or kept and available (Retain), the reserved
/// one is never deleted and is available when released. Returns the remaining worker's address.
async fn workers_down(
    s: &Scenario,
    cluster: &str,
    held: &[String],
    reserved: &str,
    retain: bool,
) -> Vec<String> {
    let t0 = Instant::now();
    scale_workers(s, cluster, 1).await;
    wait_machines_running(&s.client, &s.ns, cluster, 2, UP)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    let kept = check_pool_serves_workers(s, cluster, 1).await;
    let released: Vec<&String> = held.iter().filter(|a| !kept.contains(a)).collect();
    assert_eq!(released.len(), 2, "held {held:?}, kept {kept:?}");
    cluster::poll("released addresses settled", UP, || async {
        let p = pool(s).await.ok_or("the pool is gone")?;
        let available = sorted(&p["status"]["availableIPs"]);
        let mut want: Vec<String> = released
            .iter()
            .filter(|a| retain || a.as_str() == reserved)
            .map(|a| a.to_string())
            .collect();
        want.sort();
        let in_cloud: Vec<&String> = released
            .iter()
            .filter(|a| s.cloud.floating_ip(a).is_some())
            .copied()
            .collect();
        let cloud_ok = released
            .iter()
            .all(|a| s.cloud.floating_ip(a).is_some() == (retain || a.as_str() == reserved));
        if available == want && cloud_ok && s.cloud.floating_ip(reserved).is_some() {
            Ok(())
        } else {
            Err(format!(
                "availableIPs {available:?} (want {want:?}); released, in the cloud: {in_cloud:?}"
            ))
        }
    })
    .await
    .unwrap_or_else(|e| s.fail(&e));
    let policy = if retain { "Retain" } else { "Delete" };
    println!(
        "e2e figures: {} / {policy}, 3→1: released addresses settled: {:.1} s",
        s.name,
        t0.elapsed().as_secs_f64()
    );
    s.report(&format!("{policy}, scaled 3→1")).await;
    kept
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_deployment_on_a_floating_ip_pool_scales_up_and_down() {
    let s = Scenario::start("fip-pool").await;
    let cluster = "e2e-fip-pool";
    bring_up(&s, cluster, "cluster-template.yaml", 1, 1).await;

    // The operator reserves one address for the pool and creates it with the cluster's
    // credentials; released addresses go back to the cloud (Delete), the reserved one stays.
    let reserved = s
        .cloud
        .allocate_floating_ip()
        .await
        .unwrap_or_else(|e| s.fail(&e));
    let osc = cluster::infra(&s.client, &s.ns, "OpenStackCluster")
        .get(cluster)
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let identity = serde_json::to_value(&osc).unwrap_or_default()["spec"]["identityRef"].clone();
    s.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: OpenStackFloatingIPPool
metadata:
  name: {POOL}
spec:
  identityRef: {identity}
  reclaimPolicy: Delete
  preAllocatedFloatingIPs: [\"{reserved}\"]
"
    ))
    .await;

    // A new worker template naming the pool; the MachineDeployment rolls to it and scales to 3.
    let (stop, watcher) = watch_pool_addresses(&s, cluster);
    let old = cluster::infra(&s.client, &s.ns, "OpenStackMachineTemplate")
        .get(&format!("{cluster}-md-0"))
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let mut spec = serde_json::to_value(&old).unwrap_or_default()["spec"].clone();
    spec["template"]["spec"]["floatingIPPoolRef"] = json!({
        "apiGroup": "infrastructure.cluster.x-k8s.io",
        "kind": "OpenStackFloatingIPPool",
        "name": POOL,
    });
    s.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: OpenStackMachineTemplate\nmetadata:\n  name: {cluster}-md-pool\nspec: {spec}\n"
    ))
    .await;
    capi(&s.client, &s.ns, "MachineDeployment")
        .patch(
            &format!("{cluster}-md-0"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {
                "replicas": 3,
                "template": {"spec": {"infrastructureRef": {"name": format!("{cluster}-md-pool")}}},
            }})),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    let held = workers_up(
        &s,
        cluster,
        &reserved,
        "rollout to the pool template and 1→3",
    )
    .await;
    let kept = workers_down(&s, cluster, &held, &reserved, false).await;

    // The operator switches the pool to Retain and scales again: released addresses now stay
    // allocated and are handed out again.
    pool_api(&s)
        .patch(
            POOL,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"reclaimPolicy": "Retain"}})),
        )
        .await
        .unwrap_or_else(|e| s.fail(&e.to_string()));
    scale_workers(&s, cluster, 3).await;
    let held = workers_up(&s, cluster, &reserved, "Retain, 1→3").await;
    assert!(
        held.iter().any(|a| *a == kept[0]),
        "the remaining worker's {} changed: {held:?}",
        kept[0]
    );
    let kept = workers_down(&s, cluster, &held, &reserved, true).await;
    stop.store(true, Ordering::SeqCst);
    let (faults, samples) = watcher.await.unwrap_or_default();
    assert!(faults.is_empty(), "pool addresses misassigned: {faults:#?}");
    assert!(samples > 100, "only {samples} samples of the IPAddresses");
    println!(
        "e2e figures: {} / IPAddresses sampled {samples} times, no address held twice",
        s.name
    );

    // The pool is deleted while a worker still holds an address: it waits for the Cluster.
    pool_api(&s)
        .delete(POOL, &Default::default())
        .await
        .unwrap_or_else(|e| s.fail(&format!("deleting the pool: {e}")));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let p = pool(&s)
        .await
        .unwrap_or_else(|| s.fail("the pool went while a worker held its address"));
    assert!(!p["metadata"]["deletionTimestamp"].is_null(), "pool: {p}");
    assert_eq!(
        ip_addresses(&s.client, &s.ns)
            .await
            .unwrap_or_default()
            .len(),
        1
    );
    assert!(
        s.cloud.floating_ip(&kept[0]).is_some(),
        "{} released under a worker",
        kept[0]
    );

    cluster::delete_cluster(&s.client, &s.ns, cluster, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| s.fail(&e));
    cluster::poll("pool gone", UP, || async {
        match pool(&s).await {
            None => Ok(()),
            Some(p) => Err(format!("pool status {}", p["status"])),
        }
    })
    .await
    .unwrap_or_else(|e| s.fail(&e));
    assert!(
        s.cloud.floating_ip(&reserved).is_some(),
        "the reserved {reserved} was released by the pool"
    );
    s.cloud
        .release_floating_ip(&reserved)
        .await
        .unwrap_or_else(|e| s.fail(&e));
    let left = s.cloud.leftovers();
    assert!(
        left.is_empty(),
        "deleting {cluster} and the pool leaked: {left:#?}"
    );
    s.report("Cluster and pool deleted, cloud empty").await;
}

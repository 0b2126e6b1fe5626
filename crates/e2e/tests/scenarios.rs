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

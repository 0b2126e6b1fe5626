//! The installed tier's scenarios (docs/install.md): capo installed by `clusterctl init` on a
//! real management cluster, in a Pod from the release's image, creates clusterctl's default
//! flavor with the real Cluster API providers (also installed by clusterctl), scales it and
//! deletes it, leaving the cloud empty; then, with two replicas, the leader's pod is deleted
//! while it creates a cluster and the other replica finishes it with nothing created twice;
//! then the drop-in path (upstream's cluster taken over by `clusterctl upgrade apply`). Each
//! prints capo's pod's memory and CPU, read from the kernel; `many_clusters_resident_memory`
//! (ignored: `hack/installed.sh --clusters N` runs it) measures them with many clusters.
//! Run by `hack/installed.sh`, never by plain `cargo test` (it needs that cluster); the
//! scenarios run one after the other (`--test-threads 1`), the first on a fresh installation.

use std::time::{Duration, Instant};

use capo_e2e::cluster::{self, capi, wait_cluster_condition, wait_machines_running};
use capo_e2e::installed::{Installed, security_gaps};
use kube::api::{Patch, PatchParams};
use serde_json::json;

const UP: Duration = Duration::from_secs(300);

/// Scales the cluster's MachineDeployment from one worker to two, as an operator would, and
/// waits for all three Machines (with the control plane) to run.
async fn scale_workers_to_two(t: &Installed, ns: &str, name: &str) {
    capi(&t.client, ns, "MachineDeployment")
        .patch(
            &format!("{name}-md-0"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap_or_else(|e| t.fail(&format!("scaling the MachineDeployment: {e}")));
    wait_machines_running(&t.client, ns, name, 3, UP)
        .await
        .unwrap_or_else(|e| t.fail(&e));
}

/// Waits until the cluster has `machines` Machines running and is Available.
async fn wait_up(t: &Installed, ns: &str, name: &str, machines: usize) {
    wait_machines_running(&t.client, ns, name, machines, UP)
        .await
        .unwrap_or_else(|e| t.fail(&e));
    wait_cluster_condition(&t.client, ns, name, "Available", UP)
        .await
        .unwrap_or_else(|e| t.fail(&e));
}

async fn start() -> Installed {
    Installed::start()
        .await
        .unwrap_or_else(|e| panic!("starting the installed tier: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_flavor_through_the_installed_providers() {
    let t = start().await;

    // The manager as clusterctl installed it: running, ready (its readiness probe answered
    // through the kubelet), never restarted, with the promised security settings.
    let pods = t.capo_pods().await.unwrap_or_else(|e| t.fail(&e));
    assert!(!pods.is_empty(), "capo has no pod in capo-system");
    for pod in &pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let gaps = security_gaps(pod);
        assert!(gaps.is_empty(), "pod {name}: {gaps:?}");
        let status = pod.status.clone().unwrap_or_default();
        let statuses = status.container_statuses.unwrap_or_default();
        assert!(
            statuses.iter().all(|c| c.ready && c.restart_count == 0),
            "pod {name} is not ready or restarted: {statuses:?}"
        );
    }
    println!(
        "installed: capo's pods {} ready, none restarted, security context as promised",
        pods.len()
    );
    let idle = t.provider_usage().await.unwrap_or_else(|e| t.fail(&e));
    println!("installed figures: capo's pod at idle after clusterctl init: {idle}");

    let ns = t
        .namespace("installed")
        .await
        .unwrap_or_else(|e| t.fail(&e));

    // Bad input is refused at admission by capo's own webhook (the rule is not in the CRD's
    // schema), reached through its Service with cert-manager's certificate, naming the field.
    let bad = r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata: {name: bad}
spec:
  template:
    spec:
      flavor: m1.small
      image: {filter: {name: ubuntu-2404-kube-v1.34}}
      providerID: openstack:///bad
"#;
    // Right after `clusterctl init` the webhook's Service may not route yet (its endpoints and
    // kube-proxy's rules follow the pod's readiness): `apply` retries an unreachable webhook.
    match t.apply(&ns, bad).await {
        Err(text) => {
            assert!(
                text.contains("providerID") && text.contains("cannot be set in a template"),
                "not capo's webhook refusal naming the field: {text}"
            );
            println!("installed: bad OpenStackMachineTemplate refused at admission: {text}");
        }
        Ok(()) => t.fail("an OpenStackMachineTemplate with a providerID was accepted"),
    }

    let name = "installed";
    let t0 = Instant::now();
    t.create_default(name, &ns, 1, 1)
        .await
        .unwrap_or_else(|e| t.fail(&e));
    wait_up(&t, &ns, name, 2).await;
    let (os_all, os_writes) = t.cloud.requests();
    println!(
        "installed figures: apply to Cluster Available: {:.1} s, OpenStack {os_all} requests ({os_writes} writes)",
        t0.elapsed().as_secs_f64()
    );

    // Scale the workers out through the MachineDeployment, as an operator would.
    let t1 = Instant::now();
    scale_workers_to_two(&t, &ns, name).await;
    let servers = t.cloud.resources().get("servers").map_or(0, Vec::len);
    assert_eq!(servers, 3, "3 Machines but {servers} servers in the cloud");
    println!(
        "installed figures: scaled to 2 workers in {:.1} s",
        t1.elapsed().as_secs_f64()
    );

    let t2 = Instant::now();
    cluster::delete_cluster(&t.client, &ns, name, UP)
        .await
        .unwrap_or_else(|e| t.fail(&e));
    let left = t.cloud.leftovers();
    assert!(left.is_empty(), "deleting {name} leaked: {left:#?}");
    println!(
        "installed figures: deleted, cloud empty, in {:.1} s",
        t2.elapsed().as_secs_f64()
    );
    let after = t.provider_usage().await.unwrap_or_else(|e| t.fail(&e));
    println!("installed figures: capo's pod after one cluster created, scaled, deleted: {after}");
}

/// How many clusters [`many_clusters_resident_memory`] creates (`hack/installed.sh --clusters N`).
const CLUSTERS_VAR: &str = "CAPO_INSTALLED_CLUSTERS";

/// capo's pod with many clusters (ten unless [`CLUSTERS_VAR`] says otherwise), each of
/// clusterctl's default flavor with one control-plane machine and one worker, all created at
/// once: its memory and CPU at idle, with every cluster Available, a minute later (steady state:
/// only resyncs), and after all are deleted with nothing left in the cloud. A figure for the
/// operator, not a timed assertion: run by `hack/installed.sh --clusters N`, not in CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: hack/installed.sh --clusters N runs it"]
async fn many_clusters_resident_memory() {
    let t = start().await;
    let n: usize = std::env::var(CLUSTERS_VAR)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| t.fail(&format!("{CLUSTERS_VAR}={v} is not a number")))
        })
        .unwrap_or(10);
    let idle = t.provider_usage().await.unwrap_or_else(|e| t.fail(&e));
    println!("installed figures: capo's pod before {n} clusters: {idle}");
    let ns = t.namespace("many").await.unwrap_or_else(|e| t.fail(&e));
    let names: Vec<String> = (0..n).map(|i| format!("many-{i}")).collect();
    let t0 = Instant::now();
    for name in &names {
        t.create_default(name, &ns, 1, 1)
            .await
            .unwrap_or_else(|e| t.fail(&e));
    }
    for name in &names {
        wait_up(&t, &ns, name, 2).await;
    }
    let (os_all, os_writes) = t.cloud.requests();
    let up = t.provider_usage().await.unwrap_or_else(|e| t.fail(&e));
    println!(
        "installed figures: {n} clusters ({} machines) Available {:.1} s after the first apply, \
         OpenStack {os_all} requests ({os_writes} writes); capo's pod: {up}",
        2 * n,
        t0.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    let steady = t.provider_usage().await.unwrap_or_else(|e| t.fail(&e));
    let (os_later, _) = t.cloud.requests();
    println!(
        "installed figures: {n} clusters a minute later: capo's pod {steady}, {} more OpenStack requests",
        os_later - os_all
    );

    let t1 = Instant::now();
    let mut deletes = tokio::task::JoinSet::new();
    for name in names {
        let (client, ns) = (t.client.clone(), ns.clone());
        deletes.spawn(async move { cluster::delete_cluster(&client, &ns, &name, UP).await });
    }
    while let Some(done) = deletes.join_next().await {
        done.unwrap_or_else(|e| t.fail(&format!("a delete task: {e}")))
            .unwrap_or_else(|e| t.fail(&e));
    }
    let left = t.cloud.leftovers();
    assert!(left.is_empty(), "deleting {n} clusters leaked: {left:#?}");
    let after = t.provider_usage().await.unwrap_or_else(|e| t.fail(&e));
    println!(
        "installed figures: {n} clusters deleted, cloud empty, in {:.1} s; capo's pod: {after}",
        t1.elapsed().as_secs_f64()
    );
}

/// Ready capo pods not being deleted.
async fn ready_capo_pods(t: &Installed) -> Result<Vec<String>, String> {
    let pods = t.capo_pods().await?;
    Ok(pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .is_some_and(|cs| !cs.is_empty() && cs.iter().all(|c| c.ready))
        })
        .filter_map(|p| p.metadata.name.clone())
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_the_leader_deleted_mid_create() {
    let t = start().await;
    t.scale_capo(2).await.unwrap_or_else(|e| t.fail(&e));
    let pods = cluster::poll("2 ready capo pods", UP, || async {
        let ready = ready_capo_pods(&t).await?;
        if ready.len() == 2 {
            Ok(ready)
        } else {
            Err(format!("ready: {ready:?}"))
        }
    })
    .await
    .unwrap_or_else(|e| t.fail(&e));
    let leader = cluster::poll("a capo leader", UP, || async {
        match t.leader_pod().await? {
            Some(p) if pods.contains(&p) => Ok(p),
            other => Err(format!("Lease holder {other:?}")),
        }
    })
    .await
    .unwrap_or_else(|e| t.fail(&e));
    println!("installed: two replicas ready, {leader} leads");

    let ns = t.namespace("failover").await.unwrap_or_else(|e| t.fail(&e));
    let name = "failover";
    t.create_default(name, &ns, 1, 2)
        .await
        .unwrap_or_else(|e| t.fail(&e));
    // The leader goes while it is creating: as soon as the first server exists.
    cluster::poll("the first server", UP, || async {
        let n = t.cloud.resources().get("servers").map_or(0, Vec::len);
        if n >= 1 {
            Ok(())
        } else {
            Err("no server yet".to_owned())
        }
    })
    .await
    .unwrap_or_else(|e| t.fail(&e));
    let deleted = Instant::now();
    t.delete_capo_pod(&leader)
        .await
        .unwrap_or_else(|e| t.fail(&e));
    let next = cluster::poll("another capo leader", UP, || async {
        match t.leader_pod().await? {
            Some(p) if p != leader => Ok(p),
            other => Err(format!("Lease holder {other:?}")),
        }
    })
    .await
    .unwrap_or_else(|e| t.fail(&e));
    println!(
        "installed figures: {leader} deleted mid-create, {next} leads {:.1} s later",
        deleted.elapsed().as_secs_f64()
    );

    wait_up(&t, &ns, name, 3).await;
    let servers = t.cloud.resources().get("servers").map_or(0, Vec::len);
    assert_eq!(servers, 3, "3 Machines but {servers} servers in the cloud");
    let dups = t.duplicates();
    assert!(
        dups.is_empty(),
        "created twice across the failover: {dups:?}"
    );
    println!("installed: Available after the failover, nothing created twice");

    cluster::delete_cluster(&t.client, &ns, name, UP)
        .await
        .unwrap_or_else(|e| t.fail(&e));
    let left = t.cloud.leftovers();
    assert!(left.is_empty(), "deleting {name} leaked: {left:#?}");
    t.scale_capo(1).await.unwrap_or_else(|e| t.fail(&e));
}

/// Every resource's ID in the cloud, by collection (what a takeover must leave as it is).
fn ids(t: &Installed) -> std::collections::BTreeMap<String, Vec<String>> {
    t.cloud
        .resources()
        .into_iter()
        .map(|(collection, items)| {
            let mut ids: Vec<String> = items
                .iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect();
            ids.sort();
            (collection, ids)
        })
        .collect()
}

/// Run by hack/installed.sh once upstream CAPO v0.14.7 replaced capo on the management cluster
/// (`clusterctl init --infrastructure openstack:v0.14.7`, ORC beside it): upstream creates a
/// cluster, `clusterctl upgrade apply` puts capo's release in its place, capo adopts the
/// cluster without creating or deleting anything in the cloud, scales it and deletes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_cluster_taken_over_by_clusterctl_upgrade() {
    let t = start().await;
    let upstream_config = std::env::var_os("CAPO_INSTALLED_UPSTREAM_CONFIG")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            t.fail("CAPO_INSTALLED_UPSTREAM_CONFIG is unset: run hack/installed.sh")
        });
    let ns = t.namespace("upstream").await.unwrap_or_else(|e| t.fail(&e));
    let name = "upstream";
    let manifest = t
        .generate_with(&upstream_config, "openstack:v0.14.7", name, &ns, 1, 1)
        .unwrap_or_else(|e| t.fail(&e));
    let t0 = Instant::now();
    t.apply(&ns, &manifest)
        .await
        .unwrap_or_else(|e| t.fail(&format!("upstream's default flavor: {e}")));
    wait_up(&t, &ns, name, 2).await;
    println!(
        "installed figures: upstream CAPO v0.14.7's cluster Available in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let upstream = t.provider_usage().await.unwrap_or_else(|e| t.fail(&e));
    println!("installed figures: upstream CAPO v0.14.7's pod with this cluster: {upstream}");
    let before = ids(&t);

    let t1 = Instant::now();
    t.upgrade_to_capo().unwrap_or_else(|e| t.fail(&e));
    println!(
        "installed figures: clusterctl upgrade apply to capo, providers Available, in {:.1} s",
        t1.elapsed().as_secs_f64()
    );
    // capo adopts upstream's network: its ownership tag appears (docs/migrating-from-upstream.md).
    cluster::poll("capo adopting upstream's network", UP, || async {
        let nets = t.cloud.resources().remove("networks").unwrap_or_default();
        let tagged = nets.iter().any(|n| {
            n["tags"].as_array().is_some_and(|tags| {
                tags.iter().any(|tag| {
                    tag.as_str()
                        .is_some_and(|s| s.starts_with("capo-cluster-uid="))
                })
            })
        });
        if tagged {
            Ok(())
        } else {
            Err(format!("networks: {nets:?}"))
        }
    })
    .await
    .unwrap_or_else(|e| t.fail(&e));
    wait_cluster_condition(&t.client, &ns, name, "Available", UP)
        .await
        .unwrap_or_else(|e| t.fail(&e));
    let after = ids(&t);
    assert_eq!(
        before, after,
        "the takeover created or deleted something in the cloud"
    );
    println!("installed: capo took the cluster over, nothing created or deleted in the cloud");
    let capo = t.provider_usage().await.unwrap_or_else(|e| t.fail(&e));
    println!(
        "installed figures: capo's pod with the same cluster: {capo}; RSS {:.2}x upstream's",
        capo.rss_mib / upstream.rss_mib
    );

    scale_workers_to_two(&t, &ns, name).await;
    cluster::delete_cluster(&t.client, &ns, name, UP)
        .await
        .unwrap_or_else(|e| t.fail(&e));
    let left = t.cloud.leftovers();
    assert!(left.is_empty(), "deleting {name} leaked: {left:#?}");
    println!("installed: the taken-over cluster scaled and deleted by capo, cloud empty");
}

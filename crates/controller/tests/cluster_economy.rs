//! Request economy of the OpenStackCluster controller (managed network + API load balancer):
//! the ordered OpenStack requests of create, of one steady reconcile and of delete are
//! compared with golden traces (`tests/golden/cluster_*.trace`), and their counts printed.
//! Upstream CAPO v0.14.7 spends about 61–71 requests to create such a cluster and 16 per
//! steady reconcile (`shared/reference/capo-v0.14.7/costs-and-faults.md`).
//!
//! Set `CAPO_UPDATE_GOLDEN=1` to rewrite the traces after an intended change.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::Harness;
use kube::api::ListParams;

const SPEC: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.6.0.0/24
apiServerLoadBalancer:
  enabled: true
managedSecurityGroups:
  allowAllInClusterTraffic: false
";

fn golden(name: &str, lines: &[String]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    if std::env::var_os("CAPO_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        text, want,
        "trace {name} differs (CAPO_UPDATE_GOLDEN=1 to accept)"
    );
}

/// Only the writes are compared for create and delete: the number of GETs while Octavia is
/// busy depends on timing. Steady reconciles are compared in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_steady_delete_request_counts() {
    let mut h = Harness::new("economy").await;
    // Warm the session (token, catalog, version discovery) as a running manager would have it.
    h.start();
    h.sim().control().clear_requests();
    h.create_cluster("c1", SPEC).await;
    h.wait_ready("c1").await;
    // Let the reconciles triggered by our own writes (status, endpoint) settle.
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    let create = h.requests();
    let create_writes = h.writes();
    let create_gets = create.len() - create_writes.len();
    if std::env::var_os("CAPO_PRINT_TRACE").is_some() {
        println!("{create:#?}");
    }

    // One steady reconcile, driven directly with the running context.
    h.sim().control().clear_requests();
    let ctx: Arc<capo_controller::Context> = h.ctx().unwrap();
    let osc = h.clusters().get("c1").await.unwrap();
    // The running controller's memo; the kind's own state (its inventory index) is new.
    let r = capo_controller::lifecycle::Reconciler::new(ctx);
    capo_controller::cluster::reconcile(Arc::new(capo_controller::stored::Stored(osc)), r)
        .await
        .unwrap();
    let steady = h.requests();

    h.sim().control().clear_requests();
    h.delete_cluster("c1").await;
    h.wait_gone("c1", 60).await;
    let delete_writes = h.writes();
    let delete = h.requests();
    println!(
        "cluster create: {} requests ({} writes, {} reads incl. re-reads while Octavia is busy); upstream ≈61–71",
        create.len(),
        create_writes.len(),
        create_gets
    );
    println!(
        "cluster steady reconcile: {} requests; upstream 16",
        steady.len()
    );
    println!(
        "cluster delete: {} requests ({} writes)",
        delete.len(),
        delete_writes.len()
    );
    golden("cluster_create_writes.trace", &create_writes);
    golden("cluster_steady.trace", &steady);
    golden("cluster_delete_writes.trace", &delete_writes);
    assert!(
        steady.len() <= 3,
        "steady reconcile costs {}: {steady:#?}",
        steady.len()
    );
    let left = h
        .clusters()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(left, 0);
    assert!(h.inventory().await.is_empty(), "{:?}", h.inventory().await);
}

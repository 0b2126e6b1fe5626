//! What a ready machine's reconcile reads besides its own spec (its OpenStackCluster, above
//! all `spec.extensions`) reaches it within one sync period, not one verify period: the
//! steady-state memo must not hide it.

use std::time::Duration;

use crate::common::Harness;
use crate::machines::*;

/// The sync period of these tests; the verify period is an hour.
const SYNC: Duration = Duration::from_secs(2);

/// A worker made ready on a cluster without extensions gets `status.extensions.nodeResources`
/// (the machine side of the extension) once `spec.extensions` is added to its cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extensions_added_to_the_cluster_reach_a_ready_machine_within_a_sync_period() {
    let mut h = Harness::new("mext").await;
    h.options.sync_period = SYNC;
    h.options.verify_period = Duration::from_secs(3600);
    let _c = start(&h);
    h.create_cluster("c1", CLUSTER_FIP).await;
    h.wait_ready("c1").await;
    create_machine(&h, "c1", "w1", false, MACHINE).await;
    let m = wait_machine_ready(&h, "w1").await;
    assert!(
        m.status.unwrap().extensions.is_none(),
        "no extension, no nodeResources"
    );
    let ext = "extensions:\n  networking:\n    kubeNetworkPlugin: calico\n";
    h.create_cluster("c1", &format!("{CLUSTER_FIP}{ext}")).await;
    let m = wait_machine(
        &h,
        "w1",
        2 * SYNC.as_secs(),
        "nodeResources from the cluster's new spec.extensions",
        |o| {
            o.status
                .as_ref()
                .and_then(|s| s.extensions.as_ref())
                .and_then(|e| e.node_resources.as_ref())
                .is_some_and(|n| n.reserved.is_some())
        },
    )
    .await;
    assert_eq!(m.status.unwrap().ready, Some(true));
}

//! The shape operators run: a cluster with the API load balancer, three control-plane and
//! two worker machines; workers scaled 2→3→1; everything deleted with nothing left behind.
//! Portable: runs on capo-sim and, with `CAPO_CLOUD=real`, on the real services.
use crate::common::Harness;
use crate::machines::*;

async fn member_count(h: &Harness) -> usize {
    items(h, "members").await.len()
}

async fn server_names(h: &Harness) -> Vec<String> {
    let mut names: Vec<String> = items(h, "servers")
        .await
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_control_plane_two_workers_scaled_and_deleted_leave_nothing() {
    let (h, _c) = ready_cluster("three2", CLUSTER_LB).await;
    add_machines(&h, &["cp-0", "cp-1", "cp-2"], true).await;
    add_machines(&h, &["md-0", "md-1"], false).await;
    assert_eq!(
        member_count(&h).await,
        3,
        "one member per control-plane machine"
    );
    assert_eq!(
        server_names(&h).await,
        ["cp-0", "cp-1", "cp-2", "md-0", "md-1"],
        "one server per machine, none duplicated"
    );
    for m in ["cp-0", "md-0"] {
        let st = machines(&h).get(m).await.unwrap().status.unwrap();
        assert_eq!(st.instance_state.as_deref(), Some("ACTIVE"), "{m}");
        assert!(!st.addresses.is_empty(), "{m}: no addresses");
    }

    add_machines(&h, &["md-2"], false).await;
    remove_machines(&h, &["md-0", "md-1"]).await;
    assert_eq!(
        server_names(&h).await,
        ["cp-0", "cp-1", "cp-2", "md-2"],
        "scaled workers 2→3→1"
    );
    assert_eq!(member_count(&h).await, 3, "workers are never API members");

    remove_machines(&h, &["cp-0", "cp-1", "cp-2", "md-2"]).await;
    h.delete_cluster_leaving_nothing("c1").await;
}

//! Scaling the control plane 1→3→1→3: with the API load balancer, members always equal the
//! live control-plane machines; without it, the API floating IP stays allocated (same address)
//! and on a live control-plane machine. Deleting everything leaves nothing.
use crate::common::Harness;
use crate::machines::*;
use serde_json::Value;

async fn first_port(h: &Harness, machine: &str) -> String {
    let oss = servers(h).get(machine).await.unwrap();
    oss.status.unwrap().resources.unwrap().ports[0].id.clone()
}

async fn fips(h: &Harness) -> Vec<Value> {
    items(h, "floatingips").await
}

/// The API endpoint's host of cluster `c1`.
async fn api_host(h: &Harness) -> Option<String> {
    let o = h.clusters().get("c1").await.unwrap();
    o.spec.control_plane_endpoint.unwrap().host
}

async fn members(h: &Harness) -> usize {
    items(h, "members").await.len()
}

async fn delete_all(h: &Harness, names: &[&str]) {
    remove_machines(h, names).await;
    h.delete_cluster_leaving_nothing("c1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_scaling_keeps_lb_members_equal_to_live_machines() {
    let (h, _c) = ready_cluster("scalelb", CLUSTER_LB).await;
    let endpoint = api_host(&h).await;
    add_machines(&h, &["cp-0"], true).await;
    assert_eq!(members(&h).await, 1);
    add_machines(&h, &["cp-1", "cp-2"], true).await;
    assert_eq!(members(&h).await, 3);
    remove_machines(&h, &["cp-0", "cp-1"]).await;
    assert_eq!(members(&h).await, 1);
    let names: Vec<String> = items(&h, "members")
        .await
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names[0].ends_with("-6443-cp-2"), "{names:?}");
    add_machines(&h, &["cp-3", "cp-4"], true).await;
    assert_eq!(members(&h).await, 3);
    let f = fips(&h).await;
    assert_eq!(f.len(), 1, "only the LB's API floating IP: {f:?}");
    assert_eq!(f[0]["floating_ip_address"].as_str(), endpoint.as_deref());
    delete_all(&h, &["cp-2", "cp-3", "cp-4"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_scaling_without_lb_keeps_the_api_floating_ip() {
    let (h, _c) = ready_cluster("scalefip", CLUSTER_FIP).await;
    let endpoint = api_host(&h).await.unwrap();
    let api_fip = async |h: &Harness| {
        let f = fips(h).await;
        assert_eq!(f.len(), 1, "exactly the API floating IP: {f:?}");
        assert_eq!(
            f[0]["floating_ip_address"].as_str(),
            Some(endpoint.as_str())
        );
        f[0]["port_id"].as_str().map(str::to_owned)
    };
    add_machines(&h, &["cp-0"], true).await;
    assert_eq!(
        api_fip(&h).await,
        Some(first_port(&h, "cp-0").await),
        "first machine gets the FIP"
    );
    let cp0 = machines(&h).get("cp-0").await.unwrap();
    let kinds: Vec<String> = cp0
        .status
        .unwrap()
        .addresses
        .iter()
        .map(|a| a.r#type.clone())
        .collect();
    assert!(kinds.contains(&"InternalIP".to_owned()), "{kinds:?}");
    add_machines(&h, &["cp-1", "cp-2"], true).await;
    assert_eq!(
        api_fip(&h).await,
        Some(first_port(&h, "cp-0").await),
        "the holder keeps it"
    );
    let survivor = first_port(&h, "cp-2").await;
    remove_machines(&h, &["cp-0", "cp-1"]).await;
    assert_eq!(
        api_fip(&h).await,
        Some(survivor.clone()),
        "moved to the live machine, not deleted"
    );
    add_machines(&h, &["cp-3", "cp-4"], true).await;
    assert_eq!(api_fip(&h).await, Some(survivor), "still in place");
    delete_all(&h, &["cp-2", "cp-3", "cp-4"]).await;
}

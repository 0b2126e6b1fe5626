//! The bastion: created as an OpenStackServer with a floating IP, replaced when the operator
//! changes its spec, removed (with its floating IP) when disabled and with the cluster.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use capo_api::v1beta1::OpenStackCluster;
use common::Harness;

fn spec(enabled: bool, flavor: &str) -> String {
    format!(
        "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.5.0.0/24
managedSecurityGroups: {{}}
bastion:
  enabled: {enabled}
  spec:
    flavor: {flavor}
    image:
      filter:
        name: ubuntu-2404-kube-v1.34
"
    )
}

fn bastion_ready(o: &OpenStackCluster) -> bool {
    o.status
        .as_ref()
        .and_then(|s| s.bastion.as_ref())
        .is_some_and(|b| b.floating_ip.is_some() && b.state.as_deref() == Some("ACTIVE"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bastion_enable_change_disable_and_delete() {
    let mut h = Harness::new("bastion").await;
    h.start_all();
    h.create_cluster("b1", &spec(true, "m1.small")).await;
    let o = h
        .wait_cluster("b1", 60, "bastion ready", bastion_ready)
        .await;
    let b = o.status.clone().unwrap().bastion.unwrap();
    let first_id = b.id.clone().unwrap();
    assert!(b.floating_ip.as_deref().unwrap().starts_with("172.24.4."));
    assert!(o.status.as_ref().unwrap().bastion_security_group.is_some());
    assert_eq!(h.inventory().await.get("servers"), Some(&1));
    // The operator changes the bastion's flavor: replaced.
    h.create_cluster("b1", &spec(true, "m1.medium")).await;
    let o = h
        .wait_cluster("b1", 60, "bastion replaced", |o| {
            bastion_ready(o)
                && o.status
                    .as_ref()
                    .unwrap()
                    .bastion
                    .as_ref()
                    .unwrap()
                    .id
                    .as_deref()
                    != Some(first_id.as_str())
        })
        .await;
    assert_eq!(
        h.inventory().await.get("servers"),
        Some(&1),
        "{:?}",
        h.inventory().await
    );
    assert!(o.status.unwrap().bastion.unwrap().floating_ip.is_some());
    // Disabled: server and its floating IP go.
    h.create_cluster("b1", &spec(false, "m1.medium")).await;
    h.wait_cluster("b1", 60, "bastion removed", |o| {
        o.status.as_ref().is_some_and(|s| s.bastion.is_none())
    })
    .await;
    let inv = h.inventory().await;
    assert_eq!(inv.get("servers"), None, "{inv:?}");
    assert_eq!(
        inv.get("floatingips"),
        Some(&1),
        "only the API server's: {:?}",
        h.items().await.get("floatingips")
    );
    h.create_cluster("b1", &spec(true, "m1.small")).await;
    h.wait_cluster("b1", 60, "bastion back", bastion_ready)
        .await;
    h.delete_cluster("b1").await;
    h.wait_gone("b1", 90).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
}

//! The bastion is an OpenStackServer: with the server controller running, a cluster with a
//! bastion gets it ACTIVE with a floating IP, and deleting the cluster removes it all.
use crate::common::{BASTION, Harness, open_spec};
use crate::machines::*;
use capo_controller::conditions::is_true;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bastion_server_comes_up_and_goes_away_with_the_cluster() {
    let h = Harness::new("bastion").await;
    let _c = start(&h);
    h.create_cluster("c1", &open_spec("10.9.0.0/24", BASTION))
        .await;
    let o = h
        .wait_cluster("c1", 60, "bastion ready", |o| {
            o.status
                .as_ref()
                .is_some_and(|s| is_true(&s.conditions, "BastionReady"))
        })
        .await;
    let b = o.status.unwrap().bastion.unwrap();
    assert_eq!(b.state.as_deref(), Some("ACTIVE"));
    assert!(
        b.ip.as_deref().is_some_and(|ip| ip.starts_with("10.9.0.")),
        "{b:?}"
    );
    assert!(b.floating_ip.is_some(), "{b:?}");
    let oss = servers(&h).get("c1-bastion").await.unwrap();
    assert!(oss.status.unwrap().ready);
    let port = port(&h, "c1-bastion-0").await;
    let bastion_sg = h.cluster_status("c1").await.bastion_security_group.unwrap();
    let bastion_sg = bastion_sg.id;
    assert_eq!(port["security_groups"], serde_json::json!([bastion_sg]));
    h.delete_cluster("c1").await;
    h.wait_gone("c1", 60).await;
    assert!(servers(&h).get_opt("c1-bastion").await.unwrap().is_none());
    let inv = h.inventory().await;
    assert!(inv.is_empty(), "left behind: {inv:?}");
}

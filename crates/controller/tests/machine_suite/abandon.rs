//! The abandon annotation on the OpenStackCluster lets a cluster whose project is gone go with
//! its machines: a worker's server and a control-plane machine (its load balancer member cannot
//! be removed) follow the cluster's annotation, and each abandoned object lists its IDs.
use std::time::Duration;

use crate::common::{Harness, poll};
use crate::machines::*;
use capo_controller::abandon::ABANDON_ANNOTATION;
use kube::api::{Patch, PatchParams};

async fn wait_warning(h: &Harness, name: &str, reason: &str) -> String {
    poll(
        20,
        || async { h.event_messages(name, reason).await.into_iter().next() },
        || async { format!("no {reason} event about {name}") },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_gone_cluster_annotation_lets_the_machines_go() {
    let mut h = Harness::new("mabandon").await;
    // The Secret changed by the test is read again at once (60 s by default).
    h.options.identity_read_max_age = Duration::from_millis(100);
    let _c = start(&h);
    h.create_cluster("c1", CLUSTER_LB).await;
    h.wait_ready("c1").await;
    create_machine(&h, "c1", "c1-cp-0", true, MACHINE).await;
    create_machine(&h, "c1", "c1-md-0", false, MACHINE).await;
    let cp = wait_machine_ready(&h, "c1-cp-0").await;
    let md = wait_machine_ready(&h, "c1-md-0").await;
    // Both machines and the worker's server authenticated (the worker mirrors its server).
    for m in [&cp, &md] {
        let c = m.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.r#type == "OpenStackAuthenticationSucceeded")
        });
        assert_eq!(
            c.map(|c| (c.status.as_str(), c.reason.as_deref())),
            Some(("True", Some("Ready"))),
            "{c:?}"
        );
    }
    assert_eq!(
        server_authentication(&h, "c1-md-0").await.map(|c| c.0),
        Some("True".to_owned())
    );
    let cp_id = cp.status.unwrap().instance_id.unwrap();
    let md_id = md.status.unwrap().instance_id.unwrap();

    // The project is gone: the Secret's clouds.yaml names one that does not exist.
    h.remove_project().await;
    delete_machine(&h, "c1-cp-0").await;
    delete_machine(&h, "c1-md-0").await;
    h.delete_cluster("c1").await;
    let want = format!(
        "annotate OpenStackCluster {}/c1 with {ABANDON_ANNOTATION}=true",
        h.ns
    );
    // The worker's server and the control-plane machine say what to do.
    let m = server_ready_message(&h, "c1-md-0").await;
    assert!(m.contains(&want), "server c1-md-0: {m}");
    let m = machine_ready_message(&h, "c1-cp-0").await;
    assert!(m.contains(&want), "machine c1-cp-0: {m}");
    // Keystone refuses the credentials: the authentication condition says so on both.
    let (status, reason, message) = server_authentication(&h, "c1-md-0")
        .await
        .unwrap_or_default();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "OpenStackAuthenticationFailed"),
        "{message}"
    );
    assert!(message.contains("401"), "{message}");
    let m = machines(&h).get("c1-cp-0").await.unwrap();
    let c = m.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.r#type == "OpenStackAuthenticationSucceeded")
    });
    assert_eq!(
        c.map(|c| (c.status.as_str(), c.reason.as_deref())),
        Some(("False", Some("OpenStackAuthenticationFailed"))),
        "{c:?}"
    );

    let patch = serde_json::json!({"metadata": {"annotations": {ABANDON_ANNOTATION: "true"}}});
    h.clusters()
        .patch("c1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    wait_machine_gone(&h, "c1-md-0", 30).await;
    h.wait_gone("c1", 30).await;
    let ev = wait_warning(&h, "c1-md-0", "Abandoned").await;
    assert!(ev.contains(&md_id), "{ev}");
    let ev = wait_warning(&h, "c1-cp-0", "Abandoned").await;
    assert!(ev.contains(&cp_id), "{ev}");
    // The control-plane machine's server, left to garbage collection (none runs here), was
    // annotated on the way and follows once deleted.
    servers(&h)
        .delete("c1-cp-0", &Default::default())
        .await
        .unwrap();
    wait_machine_gone(&h, "c1-cp-0", 30).await;
    let ev = wait_warning(&h, "c1-cp-0", "Abandoned").await;
    assert!(ev.contains(&cp_id), "{ev}");
}

/// `OpenStackAuthenticationSucceeded` of OpenStackServer `name`: (status, reason, message).
async fn server_authentication(h: &Harness, name: &str) -> Option<(String, String, String)> {
    let s = servers(h).get_opt(name).await.unwrap()?;
    let c = s
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == "OpenStackAuthenticationSucceeded")?;
    Some((c.status, c.reason, c.message))
}

/// Ready's message of OpenStackServer `name` once it names the abandon annotation.
async fn server_ready_message(h: &Harness, name: &str) -> String {
    poll(
        30,
        || async {
            let s = servers(h).get_opt(name).await.unwrap()?;
            let c = s
                .status?
                .conditions
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            c.message.contains(ABANDON_ANNOTATION).then_some(c.message)
        },
        || async { format!("server {name}: Ready never named the annotation") },
    )
    .await
}

/// Ready's message of OpenStackMachine `name` once it names the abandon annotation.
async fn machine_ready_message(h: &Harness, name: &str) -> String {
    poll(
        30,
        || async {
            let m = machines(h).get_opt(name).await.unwrap()?;
            let c = m
                .status?
                .conditions
                .into_iter()
                .find(|c| c.r#type == "Ready")?;
            let msg = c.message.unwrap_or_default();
            msg.contains(ABANDON_ANNOTATION).then_some(msg)
        },
        || async { format!("machine {name}: Ready never named the annotation") },
    )
    .await
}

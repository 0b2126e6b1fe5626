//! A port's `allowedAddressPairs` changed on a running machine, or on the template it was
//! made from, reach its Neutron port (upstream's v0.15 line): template → OpenStackMachine
//! (template controller) → OpenStackServer (machine controller) → port (server controller).

use std::time::Duration;

use capo_api::v1beta1::OpenStackMachine;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::common::Harness;
use crate::machines::*;

/// The addresses port `name` accepts besides its own.
async fn pairs(h: &Harness, name: &str) -> Vec<String> {
    let p = port(h, name).await;
    let list = p["allowed_address_pairs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter()
        .filter_map(|a| a["ip_address"].as_str().map(str::to_owned))
        .collect()
}

/// Wait until port `name` accepts exactly `want`.
async fn wait_pairs(h: &Harness, name: &str, want: &[&str]) {
    let deadline =
        std::time::Instant::now() + Duration::from_secs(if h.cloud.is_real() { 120 } else { 30 });
    loop {
        let got = pairs(h, name).await;
        if got == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "port {name} accepts {got:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn ports(addresses: &[&str]) -> Value {
    let pairs: Vec<Value> = addresses.iter().map(|a| json!({"ipAddress": a})).collect();
    json!([{"allowedAddressPairs": pairs}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn address_pairs_changed_on_a_machine_or_its_template_reach_the_port() {
    let mut h = Harness::new("mpairs").await;
    h.options.sync_period = Duration::from_secs(2);
    let _c = start(&h);
    h.create_cluster("c1", CLUSTER_FIP).await;
    h.wait_ready("c1").await;
    let with_pair = format!("{MACHINE}ports:\n- allowedAddressPairs:\n  - ipAddress: 10.7.0.200\n");
    create_machine(&h, "c1", "w1", false, &with_pair).await;
    wait_machine_ready(&h, "w1").await;
    assert_eq!(pairs(&h, "w1-0").await, ["10.7.0.200"]);

    // Edited on the machine (the only change its admission allows on a port).
    let api = machines(&h);
    let edit = json!({"spec": {"ports": ports(&["10.7.0.200", "10.7.0.201"])}});
    api.patch("w1", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    wait_pairs(&h, "w1-0", &["10.7.0.200", "10.7.0.201"]).await;

    // Edited on the template the machine was cloned from: the template controller (which
    // runs with the AutoScaleFromZero gate, as upstream's) carries it to the machine.
    let uid = h.uid("Cluster", "c1").await;
    let template_spec = crate::common::indent(
        &format!("{MACHINE}identityRef:\n  name: cloud-config\n  cloudName: openstack\n"),
        6,
    );
    let template = |addresses: &[&str]| {
        let pairs: String = addresses
            .iter()
            .map(|a| format!("        - ipAddress: {a}\n"))
            .collect();
        format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata:
  name: t1
  ownerReferences:
  - apiVersion: cluster.x-k8s.io/v1beta2
    kind: Cluster
    name: c1
    uid: {uid}
spec:
  template:
    spec:
{template_spec}      ports:
      - allowedAddressPairs:
{pairs}"
        )
    };
    h.apply(&template(&["10.7.0.200", "10.7.0.201"])).await;
    let cloned = json!({"metadata": {"annotations": {
        "cluster.x-k8s.io/cloned-from-name": "t1",
        "cluster.x-k8s.io/cloned-from-groupkind": "OpenStackMachineTemplate.infrastructure.cluster.x-k8s.io",
    }}});
    api.patch("w1", &PatchParams::default(), &Patch::Merge(&cloned))
        .await
        .unwrap();
    let ctx = capo_controller::context::Context::new(
        h.client.clone(),
        h.sessions.clone(),
        h.options.clone(),
    );
    let (stop, mut rx) = tokio::sync::watch::channel(false);
    let templates = tokio::spawn(capo_controller::machine_template::run(ctx, async move {
        let _ = rx.wait_for(|v| *v).await;
    }));
    h.apply(&template(&["10.7.0.202"])).await;
    wait_pairs(&h, "w1-0", &["10.7.0.202"]).await;
    let m: OpenStackMachine = api.get("w1").await.unwrap();
    assert_eq!(
        m.annotations()
            .get(capo_controller::machine_template::APPLIED_ANNOTATION)
            .map(String::as_str),
        Some(r#"[[{"ipAddress":"10.7.0.202"}]]"#)
    );
    assert_eq!(m.spec.ports[0].allowed_address_pairs.len(), 1);
    let _ = stop.send(true);
    templates.abort();
    delete_machine(&h, "w1").await;
    wait_machine_gone(&h, "w1", 60).await;
    h.delete_cluster_leaving_nothing("c1").await;
}

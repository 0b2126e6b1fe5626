//! OpenStackMachine lifecycle against a real kube-apiserver and capo-sim: worker and
//! control-plane machines with and without the API load balancer, scaling the control plane,
//! deleting everything.
use crate::common::Harness;
use crate::machines::*;
use capo_controller::conditions::is_true;

async fn members(h: &Harness) -> usize {
    items(h, "members").await.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_and_control_plane_with_load_balancer() {
    let (h, _c) = ready_cluster("mlb", CLUSTER_LB).await;
    create_machine(&h, "c1", "c1-cp-0", true, MACHINE).await;
    create_machine(&h, "c1", "c1-md-0", false, MACHINE).await;
    for name in ["c1-cp-0", "c1-md-0"] {
        let m = wait_machine_ready(&h, name).await;
        let st = m.status.clone().unwrap();
        let id = st.instance_id.clone().unwrap();
        assert_eq!(m.spec.provider_id, None.or(m.spec.provider_id.clone()));
        let m = wait_machine(&h, name, 10, "providerID", |m| m.spec.provider_id.is_some()).await;
        assert_eq!(
            m.spec.provider_id.as_deref(),
            Some(format!("openstack:///{id}").as_str())
        );
        assert_eq!(st.instance_state.as_deref(), Some("ACTIVE"));
        assert_eq!(
            st.initialization.as_ref().and_then(|i| i.provisioned),
            Some(true)
        );
        let kinds: Vec<&str> = st.addresses.iter().map(|a| a.r#type.as_str()).collect();
        assert!(
            kinds.contains(&"InternalIP") && kinds.contains(&"InternalDNS"),
            "{kinds:?}"
        );
        assert!(
            st.addresses
                .iter()
                .any(|a| a.address.starts_with("10.6.0.")),
            "{:?}",
            st.addresses
        );
        assert!(
            is_true(&st.conditions, "Ready") && is_true(&st.conditions, "InstanceReady"),
            "{:?}",
            st.conditions
        );
        assert!(st.resolved.is_some() && st.resources.is_some());
    }
    let cp = machines(&h).get("c1-cp-0").await.unwrap();
    assert!(is_true(
        &cp.status.unwrap().conditions,
        "APIServerIngressReadyCondition"
    ));
    assert_eq!(
        members(&h).await,
        1,
        "one member per API port and control-plane machine"
    );
    // The bootstrap data reached Nova, and never the status.
    let server = items(&h, "servers")
        .await
        .into_iter()
        .find(|s| s["name"] == "c1-md-0")
        .unwrap();
    let port = port(&h, "c1-md-0-0").await;
    let worker_sg = h.cluster_status("c1").await.worker_security_group.unwrap();
    let worker_sg = worker_sg.id;
    assert_eq!(port["security_groups"], serde_json::json!([worker_sg]));
    assert!(
        server["metadata"]["capo-server-uid"].is_string(),
        "{server}"
    );
    let oss = servers(&h).get("c1-md-0").await.unwrap();
    assert!(
        !serde_json::to_string(&oss)
            .unwrap()
            .contains("not-a-real-secret")
    );

    for name in ["c1-cp-0", "c1-md-0"] {
        delete_machine(&h, name).await;
    }
    for name in ["c1-cp-0", "c1-md-0"] {
        wait_machine_gone(&h, name, 60).await;
    }
    assert_eq!(members(&h).await, 0);
    for col in ["servers", "ports", "trunks", "volumes"] {
        assert!(
            items(&h, col)
                .await
                .iter()
                .all(|p| !p["name"].as_str().unwrap_or_default().starts_with("c1-")),
            "{col} left"
        );
    }
    h.delete_cluster_leaving_nothing("c1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_for_cluster_infrastructure_then_bootstrap_data() {
    let h = Harness::new("mwait").await;
    let _c = start(&h);
    // The machine exists before its cluster, and its bootstrap data is not there yet.
    create_machine(&h, "c1", "w-0", false, MACHINE).await;
    let capi: kube::Api<capo_controller::capi::Machine> =
        kube::Api::namespaced(h.client.clone(), &h.ns);
    let pp = kube::api::PatchParams::default();
    let no_data = serde_json::json!({"spec": {"bootstrap": {"dataSecretName": null}}});
    capi.patch("w-0", &pp, &kube::api::Patch::Merge(no_data))
        .await
        .unwrap();
    let reason = |m: &capo_api::v1beta1::OpenStackMachine| {
        let st = m.status.clone().unwrap_or_default();
        capo_controller::conditions::get(&st.conditions, "Ready").and_then(|c| c.reason.clone())
    };
    wait_machine(&h, "w-0", 30, "WaitingForClusterInfrastructure", |m| {
        reason(m).as_deref() == Some("WaitingForClusterInfrastructure")
    })
    .await;
    h.create_cluster("c1", CLUSTER_FIP).await;
    // The cluster becoming ready wakes the machine (no periodic resync needed).
    wait_machine(&h, "w-0", 60, "WaitingForBootstrapData", |m| {
        reason(m).as_deref() == Some("WaitingForBootstrapData")
    })
    .await;
    assert!(servers(&h).get_opt("w-0").await.unwrap().is_none());
    let data = serde_json::json!({"spec": {"bootstrap": {"dataSecretName": "w-0-bootstrap"}}});
    capi.patch("w-0", &pp, &kube::api::Patch::Merge(data))
        .await
        .unwrap();
    wait_machine_ready(&h, "w-0").await;
    delete_machine(&h, "w-0").await;
    wait_machine_gone(&h, "w-0", 60).await;
}

//! An OpenStackServer in the form upstream v0.14 and capo 0.1 wrote it (a bastion is created
//! once and never re-applied): its port's `disablePortSecurity` is kept by the schema and
//! honoured, its unset `identityRef.type` is a Secret, and the standard conditions capo writes
//! pass the schema's validation with the object's generation.
use crate::common::poll;
use crate::machines::*;
use capo_api::conversion::NO_REASON;
use kube::api::DeleteParams;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_port_security_and_default_identity_type_are_honoured() {
    let (h, _c) = ready_cluster("legacy", CLUSTER_FIP).await;
    let net = h.cluster_status("c1").await.network.unwrap().id;
    h.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: OpenStackServer
metadata:
  name: old-bastion
  labels:
    cluster.x-k8s.io/cluster-name: c1
spec:
  flavor: m1.small
  image:
    filter:
      name: ubuntu-2404-kube-v1.34
  identityRef:
    name: cloud-config
    cloudName: openstack
  sshKeyName: ''
  ports:
  - network:
      id: {net}
    disablePortSecurity: true
"
    ))
    .await;
    let oss = poll(
        60,
        || async {
            let o = servers(&h).get("old-bastion").await.expect("get");
            o.status.as_ref().is_some_and(|s| s.ready).then_some(o)
        },
        || async { "timed out waiting for the server to be ready".to_owned() },
    )
    .await;
    // The legacy field survived the API server (no pruning) and was honoured.
    assert_eq!(oss.spec.ports[0].disable_port_security, Some(true));
    let p = port(&h, "old-bastion-0").await;
    assert_eq!(p["port_security_enabled"], false, "{p:#}");
    assert_eq!(p["security_groups"], serde_json::json!([]), "{p:#}");
    let st = oss.status.unwrap();
    let resolved = st.resolved.unwrap();
    assert_eq!(resolved.ports[0].spec.enable_port_security, Some(false));
    assert_eq!(resolved.ports[0].disable_port_security, None);
    let generation = oss.metadata.generation;
    assert!(!st.conditions.is_empty());
    for c in &st.conditions {
        assert!(!c.reason.is_empty(), "{c:?}");
        assert_eq!(c.observed_generation, generation, "{c:?}");
    }
    let ready = st.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", NO_REASON)
    );

    servers(&h)
        .delete("old-bastion", &DeleteParams::default())
        .await
        .unwrap();
    poll(
        60,
        || async {
            let o = servers(&h).get_opt("old-bastion").await.expect("get");
            o.is_none().then_some(())
        },
        || async { "timed out waiting for the server to go".to_owned() },
    )
    .await;
    // Read through the cloud's API, so the test also runs on the real services.
    assert!(
        !items(&h, "ports")
            .await
            .iter()
            .any(|p| p["name"] == "old-bastion-0")
    );
}

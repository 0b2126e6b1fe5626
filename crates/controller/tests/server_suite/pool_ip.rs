//! A machine with `floatingIPPoolRef`: the server claims an address from the pool (Cluster API
//! IPAM), associates the pool's floating IP with its first port, reports it as ExternalIP, and
//! releases the claim on delete. The test plays the pool controller.
use std::time::{Duration, Instant};

use crate::common::Harness;
use crate::machines::*;
use capo_controller::conditions::is_true;
use capo_openstack::network::{self as net, FLOATING_IP, FloatingIp, FloatingIpCreate};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::json;

const WITH_POOL: &str = "flavor: m1.small
image:
  filter:
    name: ubuntu-2404-kube-v1.34
floatingIPPoolRef:
  apiGroup: infrastructure.cluster.x-k8s.io
  kind: OpenStackFloatingIPPool
  name: pool-a
";

fn ipam(h: &Harness, kind: &str, plural: &str) -> kube::Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("ipam.cluster.x-k8s.io", "v1beta2", kind);
    let ar = ApiResource::from_gvk_with_plural(&gvk, plural);
    kube::Api::namespaced_with(h.client.clone(), &h.ns, &ar)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floating_ip_from_a_pool_claim() {
    let h = Harness::new("pool").await;
    let _c = start(&h);
    h.create_cluster("c1", CLUSTER_FIP).await;
    let osc = h.wait_ready("c1").await;
    create_machine(&h, "c1", "w-p", false, WITH_POOL).await;
    let claims = ipam(&h, "IPAddressClaim", "ipaddressclaims");
    let claim_name = "w-p-floating-ip-address";
    let deadline = Instant::now() + Duration::from_secs(30);
    let claim = loop {
        if let Some(c) = claims.get_opt(claim_name).await.unwrap() {
            break c;
        }
        assert!(Instant::now() < deadline, "no IPAddressClaim");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(claim.data["spec"]["poolRef"]["name"], "pool-a");
    assert_eq!(
        claim.metadata.finalizers.as_deref(),
        Some(&["openstackmachine.infrastructure.cluster.x-k8s.io/ip-claim".to_owned()][..])
    );
    let m = machines(&h).get("w-p").await.unwrap();
    assert_ne!(
        m.status.unwrap().ready,
        Some(true),
        "not ready without its address"
    );

    // The pool: allocate a floating IP, publish it as an IPAddress, fulfil the claim.
    let s = session(&h).await;
    let ext = osc.status.unwrap().external_network.unwrap().id;
    let body = FloatingIpCreate {
        floating_network_id: ext,
        description: Some("pool-a".into()),
        ..Default::default()
    };
    let fip: FloatingIp = net::create(&s, FLOATING_IP, &body).await.unwrap();
    let address: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2",
        "kind": "IPAddress",
        "metadata": {"name": "pool-a-1", "namespace": h.ns},
        "spec": {
            "address": fip.floating_ip_address,
            "prefix": 32,
            "claimRef": {"name": claim_name},
            "poolRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackFloatingIPPool", "name": "pool-a"},
        },
    }))
    .unwrap();
    ipam(&h, "IPAddress", "ipaddresses")
        .create(&Default::default(), &address)
        .await
        .unwrap();
    claims
        .patch_status(
            claim_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"addressRef": {"name": "pool-a-1"}}})),
        )
        .await
        .unwrap();

    let m = wait_machine_ready(&h, "w-p").await;
    let st = m.status.unwrap();
    assert!(
        st.addresses
            .iter()
            .any(|a| a.r#type == "ExternalIP" && a.address == fip.floating_ip_address),
        "{:?}",
        st.addresses
    );
    let oss = servers(&h).get("w-p").await.unwrap().status.unwrap();
    assert!(is_true(&oss.conditions, "FloatingAddressFromPoolReady"));
    let port = &oss.resources.unwrap().ports[0].id;
    let now: FloatingIp = net::get(&s, FLOATING_IP, &fip.id).await.unwrap();
    assert_eq!(now.port_id.as_deref(), Some(port.as_str()));

    delete_machine(&h, "w-p").await;
    wait_machine_gone(&h, "w-p", 60).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while claims.get_opt(claim_name).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "claim not released");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after: FloatingIp = net::get(&s, FLOATING_IP, &fip.id).await.unwrap();
    assert_eq!(
        after.port_id, None,
        "the pool's floating IP is free again, and still the pool's"
    );
}

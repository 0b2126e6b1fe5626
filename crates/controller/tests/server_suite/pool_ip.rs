//! A machine with `floatingIPPoolRef`: the server claims an address from the pool (Cluster API
//! IPAM), associates the pool's floating IP with its first port, reports it as ExternalIP, and
//! releases the claim on delete; the pool controller answers the claim and, with
//! `reclaimPolicy: Delete`, releases the floating IP once the claim is gone.
use std::time::{Duration, Instant};

use crate::common::Harness;
use crate::floating_ip_pool::{apply_pool, start_pool};
use crate::machines::*;
use capo_controller::conditions::is_true;
use capo_controller::ipam;
use capo_openstack::network::{self as net, FLOATING_IP, FloatingIp};

const WITH_POOL: &str = "flavor: m1.small
image:
  filter:
    name: ubuntu-2404-kube-v1.34
floatingIPPoolRef:
  apiGroup: infrastructure.cluster.x-k8s.io
  kind: OpenStackFloatingIPPool
  name: pool-a
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floating_ip_from_a_pool_claim() {
    let h = Harness::new("pool").await;
    let _c = start(&h);
    h.create_cluster("c1", CLUSTER_FIP).await;
    h.wait_ready("c1").await;
    create_machine(&h, "c1", "w-p", false, WITH_POOL).await;
    let claims = ipam::claims(&h.client, &h.ns);
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
        m.status.and_then(|st| st.ready),
        Some(true),
        "not ready without its address"
    );

    // The pool controller answers the claim with a floating IP it allocates.
    let _pool = start_pool(&h);
    apply_pool(&h, "pool-a", "reclaimPolicy: Delete\n").await;
    let s = session(&h).await;
    let m = wait_machine_ready(&h, "w-p").await;
    let address = ipam::addresses(&h.client, &h.ns)
        .get(claim_name)
        .await
        .unwrap();
    let ip = address.data["spec"]["address"].as_str().unwrap().to_owned();
    let f = net::ListFilter::default().with("floating_ip_address", ip.as_str());
    let fip: FloatingIp = net::list(&s, FLOATING_IP, &f).await.unwrap().remove(0);
    assert!(
        fip.description.contains("OpenStackFloatingIPPool"),
        "{fip:?}"
    );
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
    // reclaimPolicy Delete: the floating IP goes with the claim's IPAddress.
    let deadline = Instant::now() + Duration::from_secs(10);
    while net::get::<FloatingIp>(&s, FLOATING_IP, &fip.id)
        .await
        .is_ok()
    {
        assert!(Instant::now() < deadline, "floating IP not released");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The address a machine got from a pool: its IPAddress's.
async fn pool_address(h: &Harness, machine: &str) -> String {
    let name = format!("{machine}-floating-ip-address");
    let ip = ipam::addresses(&h.client, &h.ns).get(&name).await.unwrap();
    ip.data["spec"]["address"].as_str().unwrap().to_owned()
}

fn external_ip(m: &capo_api::v1beta1::OpenStackMachine) -> Option<String> {
    let st = m.status.as_ref()?;
    st.addresses
        .iter()
        .find(|a| a.r#type == "ExternalIP")
        .map(|a| a.address.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retained_pool_address_goes_to_the_next_machine() {
    let h = Harness::new("pool-retain-m").await;
    let _c = start(&h);
    let _pool = start_pool(&h);
    apply_pool(&h, "pool-a", "reclaimPolicy: Retain\n").await;
    h.create_cluster("c1", CLUSTER_FIP).await;
    h.wait_ready("c1").await;
    create_machine(&h, "c1", "w-1", false, WITH_POOL).await;
    let m = wait_machine_ready(&h, "w-1").await;
    let first = pool_address(&h, "w-1").await;
    assert_eq!(external_ip(&m).as_deref(), Some(first.as_str()));

    delete_machine(&h, "w-1").await;
    wait_machine_gone(&h, "w-1", 60).await;
    let addresses = ipam::addresses(&h.client, &h.ns);
    let deadline = Instant::now() + Duration::from_secs(10);
    while addresses
        .get_opt("w-1-floating-ip-address")
        .await
        .unwrap()
        .is_some()
    {
        assert!(Instant::now() < deadline, "IPAddress not released");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = session(&h).await;
    let f = net::ListFilter::default().with("floating_ip_address", first.as_str());
    let kept: Vec<FloatingIp> = net::list(&s, FLOATING_IP, &f).await.unwrap();
    assert_eq!(kept.len(), 1, "Retain keeps the floating IP");
    assert_eq!(kept[0].port_id, None, "free once its server is gone");

    create_machine(&h, "c1", "w-2", false, WITH_POOL).await;
    let m = wait_machine_ready(&h, "w-2").await;
    assert_eq!(
        external_ip(&m).as_deref(),
        Some(first.as_str()),
        "reused, not allocated"
    );
    let fips = h
        .items()
        .await
        .get("floatingips")
        .cloned()
        .unwrap_or_default();
    // The cluster's API floating IP and the pool's one.
    assert_eq!(fips.len(), 2, "{fips:?}");
}

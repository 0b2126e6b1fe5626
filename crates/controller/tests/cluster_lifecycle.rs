//! OpenStackCluster lifecycle against a real kube-apiserver and capo-sim: create, steady,
//! delete, for the main network layouts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Harness;

const MANAGED_LB: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.6.0.0/24
  dnsNameservers: [10.0.0.2]
apiServerLoadBalancer:
  enabled: true
managedSecurityGroups:
  allowAllInClusterTraffic: false
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_network_with_load_balancer_create_steady_delete() {
    let mut h = Harness::new("lb").await;
    h.start();
    h.create_cluster("c1", MANAGED_LB).await;
    let o = h.wait_ready("c1").await;
    let st = o.status.clone().unwrap();
    let ep = o.spec.control_plane_endpoint.clone().unwrap();
    let lb = st.api_server_load_balancer.clone().unwrap();
    assert_eq!(
        ep.host.as_deref(),
        Some(lb.ip.as_str()),
        "endpoint is the LB floating IP"
    );
    assert_eq!(ep.port, Some(6443));
    assert!(lb.ip.starts_with("172.24.4."), "{lb:?}");
    assert_eq!(st.network.as_ref().unwrap().subnets.len(), 1);
    assert!(st.router.is_some());
    assert!(st.control_plane_security_group.is_some() && st.worker_security_group.is_some());
    assert_eq!(
        st.initialization.as_ref().and_then(|i| i.provisioned),
        Some(true)
    );
    for c in [
        "Ready",
        "NetworkReady",
        "RouterReady",
        "SecurityGroupsReady",
        "APIEndpointReady",
    ] {
        assert!(
            capo_controller::conditions::is_true(&st.conditions, c),
            "{c}: {:?}",
            st.conditions
        );
    }
    assert_eq!(st.failure_domains.len(), 2, "{:?}", st.failure_domains);
    let inv = h.inventory().await;
    assert_eq!(inv.get("networks"), Some(&1), "{inv:?}");
    assert_eq!(inv.get("loadbalancers"), Some(&1), "{inv:?}");
    assert_eq!(inv.get("floatingips"), Some(&1), "{inv:?}");

    assert_eq!(
        o.metadata.finalizers.as_deref(),
        Some(&["openstackcluster.infrastructure.cluster.x-k8s.io".to_owned()][..])
    );
    h.delete_cluster("c1").await;
    h.wait_gone("c1", 60).await;
    let inv = h.inventory().await;
    assert!(inv.is_empty(), "left behind: {inv:?}");
}

/// A cluster with no load balancer and a non-default API port.
fn no_lb() -> String {
    common::open_spec("10.7.0.0/24", "apiServerPort: 8443\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_load_balancer_the_endpoint_is_a_floating_ip_deleted_with_the_cluster() {
    let mut h = Harness::new("nolb").await;
    h.start();
    h.create_cluster("c2", &no_lb()).await;
    let o = h.wait_ready("c2").await;
    let ep = o.spec.control_plane_endpoint.clone().unwrap();
    assert!(
        ep.host.as_deref().unwrap().starts_with("172.24.4."),
        "{ep:?}"
    );
    assert_eq!(ep.port, Some(8443), "apiServerPort is the endpoint port");
    assert!(
        o.status
            .as_ref()
            .unwrap()
            .api_server_load_balancer
            .is_none()
    );
    let inv = h.inventory().await;
    assert_eq!(inv.get("floatingips"), Some(&1), "{inv:?}");
    assert_eq!(inv.get("loadbalancers"), None, "{inv:?}");
    // The API rule follows apiServerPort (upstream hard-codes 6443).
    let items = h.items().await;
    let api_rule = items["security_group_rules"]
        .iter()
        .any(|r| r["port_range_min"] == 8443 && r["direction"] == "ingress");
    assert!(api_rule, "no ingress rule for 8443");
    h.delete_cluster("c2").await;
    h.wait_gone("c2", 60).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_existing_network_by_id_and_by_filter_dual_stack_and_byo_router_are_never_deleted() {
    use capo_openstack::network::{self as net, Network, Subnet};
    let mut h = Harness::new("byo").await;
    let s = h.session();
    let netw: Network = net::create(&s, net::NETWORK, &serde_json::json!({"name": "user-net"}))
        .await
        .unwrap();
    let v4: Subnet = net::create(
        &s,
        net::SUBNET,
        &serde_json::json!({"name": "user-v4", "network_id": netw.id, "cidr": "10.9.0.0/24", "ip_version": 4}),
    )
    .await
    .unwrap();
    let _v6: Subnet = net::create(
        &s,
        net::SUBNET,
        &serde_json::json!({"name": "user-v6", "network_id": netw.id, "cidr": "fd00:9::/64", "ip_version": 6, "ipv6_address_mode": "slaac", "ipv6_ra_mode": "slaac"}),
    )
    .await
    .unwrap();
    let router: serde_json::Value =
        net::create(&s, net::ROUTER, &serde_json::json!({"name": "user-router"}))
            .await
            .unwrap();
    let before = h.inventory().await;
    h.start();
    // By network id, both subnets by filter (dual stack), BYO router by name.
    h.create_cluster(
        "by-id",
        &format!(
            "identityRef:
  name: cloud-config
  cloudName: openstack
network:
  id: {}
subnets:
- filter:
    name: user-v4
- filter:
    name: user-v6
router:
  filter:
    name: user-router
disableAPIServerFloatingIP: true
apiServerFixedIP: 10.9.0.10
",
            netw.id
        ),
    )
    .await;
    let o = h.wait_ready("by-id").await;
    let st = o.status.clone().unwrap();
    assert_eq!(st.network.as_ref().unwrap().id, netw.id);
    assert_eq!(st.network.as_ref().unwrap().subnets.len(), 2);
    assert_eq!(
        st.router.as_ref().unwrap().id,
        router["id"].as_str().unwrap()
    );
    assert_eq!(
        o.spec.control_plane_endpoint.unwrap().host.as_deref(),
        Some("10.9.0.10")
    );
    // The network inferred from a subnet (no spec.network).
    h.create_cluster(
        "by-filter",
        &format!(
            "identityRef:
  name: cloud-config
  cloudName: openstack
subnets:
- id: {}
disableAPIServerFloatingIP: true
apiServerFixedIP: 10.9.0.11
managedSecurityGroups: {{}}
",
            v4.id
        ),
    )
    .await;
    let o2 = h.wait_ready("by-filter").await;
    assert_eq!(o2.status.unwrap().network.unwrap().id, netw.id);
    for name in ["by-id", "by-filter"] {
        h.delete_cluster(name).await;
        h.wait_gone(name, 60).await;
    }
    assert_eq!(
        h.inventory().await,
        before,
        "user resources must survive, ours must go"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_cluster_makes_no_cloud_call_until_unpaused() {
    let mut h = Harness::new("paused").await;
    h.start();
    h.sim().control().clear_requests();
    h.create_cluster_paused("p1", &no_lb(), true).await;
    let o = h
        .wait_cluster("p1", 30, "Paused condition", |o| {
            o.status
                .as_ref()
                .is_some_and(|s| capo_controller::conditions::is_true(&s.conditions, "Paused"))
        })
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        h.requests().is_empty(),
        "paused cluster called OpenStack: {:?}",
        h.requests()
    );
    assert!(o.metadata.finalizers.is_none(), "no finalizer while paused");
    h.set_cluster_paused("p1", false).await;
    let o = h.wait_ready("p1").await;
    let paused = capo_controller::conditions::get(&o.status.as_ref().unwrap().conditions, "Paused")
        .map(|c| c.status.clone());
    assert_eq!(
        paused.as_deref(),
        Some("False"),
        "Paused=False after unpause"
    );
    h.delete_cluster("p1").await;
    h.wait_gone("p1", 60).await;
}

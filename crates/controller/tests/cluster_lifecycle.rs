//! OpenStackCluster lifecycle against a real kube-apiserver and capo-sim: create, steady,
//! delete, for the main network layouts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Harness;

const MANAGED_LB: &str = "identityRef:
  name: cloud-config
  cloudName: capo-sim
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
    let inv = h.inventory();
    assert_eq!(inv.get("networks"), Some(&1), "{inv:?}");
    assert_eq!(inv.get("loadbalancers"), Some(&1), "{inv:?}");
    assert_eq!(inv.get("floatingips"), Some(&1), "{inv:?}");

    assert_eq!(
        o.metadata.finalizers.as_deref(),
        Some(&["openstackcluster.infrastructure.cluster.x-k8s.io".to_owned()][..])
    );
    h.delete_cluster("c1").await;
    h.wait_gone("c1", 60).await;
    let inv = h.inventory();
    assert!(inv.is_empty(), "left behind: {inv:?}");
}

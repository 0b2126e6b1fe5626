//! `spec.primarySubnet` on a pre-existing network with two IPv4 subnets: the API VIP, the
//! control-plane member and new machines' addresses come from the primary subnet, and changing
//! it moves new machines only. Without one, machines' addresses come from the listed subnets.
use capo_openstack::network::{
    self as net, NETWORK, Network, NetworkCreate, SUBNET, Subnet, SubnetCreate,
};

use crate::common::Harness;
use crate::machines::*;

/// The first fixed IP of machine `name`'s port.
async fn address(h: &Harness, name: &str) -> String {
    let p = port(h, &format!("{name}-0")).await;
    p["fixed_ips"][0]["ip_address"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_primary_subnet_carries_the_vip_and_new_machines() {
    let h = Harness::new("mps").await;
    let _c = start(&h);
    let s = session(&h).await;
    let network: Network = net::create(
        &s,
        NETWORK,
        &NetworkCreate {
            name: format!("{}-nodes", h.ns),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut subnets = Vec::new();
    for (name, cidr) in [("nodes-a", "10.50.0.0/24"), ("nodes-b", "10.51.0.0/24")] {
        let body = SubnetCreate {
            name: format!("{}-{name}", h.ns),
            network_id: network.id.clone(),
            cidr: cidr.into(),
            ip_version: 4,
            ..Default::default()
        };
        let sn: Subnet = net::create(&s, SUBNET, &body).await.unwrap();
        subnets.push(sn);
    }
    let spec = |primary: &str| {
        format!(
            "identityRef:
  name: cloud-config
  cloudName: openstack
network:
  id: {net}
subnets:
- id: {a}
- id: {b}
primarySubnet:
  filter:
    name: {ns}-{primary}
apiServerLoadBalancer:
  enabled: true
disableAPIServerFloatingIP: true
managedSecurityGroups: {{}}
",
            net = network.id,
            a = subnets[0].id,
            b = subnets[1].id,
            ns = h.ns,
        )
    };
    h.create_cluster("c1", &spec("nodes-b")).await;
    let ready = h.wait_ready("c1").await;
    let st = h.cluster_status("c1").await;
    let listed: Vec<String> = (st.network.as_ref().unwrap().subnets.iter())
        .map(|sn| sn.id.clone())
        .collect();
    assert_eq!(listed, vec![subnets[1].id.clone(), subnets[0].id.clone()]);
    let vip = st
        .api_server_load_balancer
        .as_ref()
        .unwrap()
        .internal_ip
        .clone();
    assert!(vip.starts_with("10.51.0."), "API VIP {vip}");
    // As upstream: `ip` holds only the floating IP, so with none it stays empty and the
    // control-plane endpoint is the VIP.
    assert_eq!(st.api_server_load_balancer.as_ref().unwrap().ip, "");
    let endpoint = ready.spec.control_plane_endpoint.unwrap();
    assert_eq!(endpoint.host.as_deref(), Some(vip.as_str()));

    create_machine(&h, "c1", "c1-cp-0", true, MACHINE).await;
    wait_machine_ready(&h, "c1-cp-0").await;
    let cp = address(&h, "c1-cp-0").await;
    assert!(cp.starts_with("10.51.0."), "control plane address {cp}");
    let members = items(&h, "members").await;
    assert_eq!(members.len(), 1, "{members:?}");
    assert_eq!(members[0]["address"].as_str(), Some(cp.as_str()));

    // A new primary subnet: new machines take their address from it, the rest stays.
    h.apply_osc("c1", &h.uid("Cluster", "c1").await, &spec("nodes-a"))
        .await;
    h.wait_cluster("c1", 30, "the new primary subnet listed first", |o| {
        (o.status.as_ref())
            .and_then(|st| st.network.as_ref())
            .and_then(|n| n.subnets.first())
            .is_some_and(|sn| sn.id == subnets[0].id)
    })
    .await;
    create_machine(&h, "c1", "c1-md-0", false, MACHINE).await;
    wait_machine_ready(&h, "c1-md-0").await;
    let worker = address(&h, "c1-md-0").await;
    assert!(worker.starts_with("10.50.0."), "worker address {worker}");
    assert_eq!(address(&h, "c1-cp-0").await, cp);
    let st = h.cluster_status("c1").await;
    assert_eq!(st.api_server_load_balancer.unwrap().internal_ip, vip);
}

/// Without `spec.primarySubnet`, machines take their address from the subnets the cluster lists
/// in `spec.subnets`, never from another subnet of that network (Neutron would pick the first
/// one with room: here the unlisted one, made first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machines_take_their_address_from_the_listed_subnet_only() {
    let h = Harness::new("mls").await;
    let _c = start(&h);
    let s = session(&h).await;
    let network: Network = net::create(
        &s,
        NETWORK,
        &NetworkCreate {
            name: format!("{}-nodes", h.ns),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut subnets = Vec::new();
    for (name, cidr) in [("unlisted", "10.52.0.0/24"), ("listed", "10.53.0.0/24")] {
        let body = SubnetCreate {
            name: format!("{}-{name}", h.ns),
            network_id: network.id.clone(),
            cidr: cidr.into(),
            ip_version: 4,
            ..Default::default()
        };
        let sn: Subnet = net::create(&s, SUBNET, &body).await.unwrap();
        subnets.push(sn);
    }
    let spec = format!(
        "identityRef:
  name: cloud-config
  cloudName: openstack
network:
  id: {net}
subnets:
- id: {listed}
disableAPIServerFloatingIP: true
apiServerFixedIP: 10.53.0.250
managedSecurityGroups: {{}}
",
        net = network.id,
        listed = subnets[1].id,
    );
    h.create_cluster("c1", &spec).await;
    h.wait_ready("c1").await;
    create_machine(&h, "c1", "c1-md-0", false, MACHINE).await;
    wait_machine_ready(&h, "c1-md-0").await;
    let worker = address(&h, "c1-md-0").await;
    assert!(worker.starts_with("10.53.0."), "worker address {worker}");
}

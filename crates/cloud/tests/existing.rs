//! Pre-existing network/subnets, BYO router, and security-group rule reconciliation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use capo_api::v1beta1::{
    Bastion, ManagedSecurityGroups, NetworkParam, NeutronFilter, RuleDirection,
    SecurityGroupRuleSpec, SubnetFilter, SubnetParam,
};
use capo_cloud::networking;
use capo_openstack::network::{
    self as net, ExternalGateway, NETWORK, Network, NetworkCreate, ROUTER, Router, RouterCreate,
    SECURITY_GROUP_RULE, SUBNET, SecurityGroupRule, Subnet, SubnetCreate,
};
use common::*;

async fn user_network(env: &Env, name: &str, cidrs: &[&str]) -> (Network, Vec<Subnet>) {
    let n: Network = net::create(
        &env.s,
        NETWORK,
        &NetworkCreate {
            name: name.into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut subnets = Vec::new();
    for (i, cidr) in cidrs.iter().enumerate() {
        let body = SubnetCreate {
            name: format!("{name}-{i}"),
            network_id: n.id.clone(),
            cidr: (*cidr).into(),
            ip_version: if cidr.contains(':') { 6 } else { 4 },
            ..Default::default()
        };
        subnets.push(net::create(&env.s, SUBNET, &body).await.unwrap());
    }
    (n, subnets)
}

#[tokio::test]
async fn pre_existing_network_by_id_and_by_filter() {
    let env = env().await;
    let (n, sn) = user_network(&env, "user-net", &["10.20.0.0/24"]).await;
    let o = owner("uid-1");
    env.sim.control().clear_requests();
    for param in [
        NetworkParam {
            id: Some(n.id.clone()),
            filter: None,
        },
        NetworkParam {
            id: None,
            filter: Some(NeutronFilter {
                name: Some("user-net".into()),
                ..Default::default()
            }),
        },
    ] {
        let mut spec = managed_spec();
        spec.managed_subnets.clear();
        spec.network = Some(param);
        let rec = reconcile_fresh(&env, &o, &spec).await.unwrap();
        let got = rec.network.as_ref().unwrap();
        assert_eq!(got.id, n.id);
        assert_eq!(got.subnets.len(), 1);
        assert_eq!(got.subnets[0].id, sn[0].id);
        assert!(rec.router.is_none(), "no router for a pre-existing network");
        delete(&env, &o, &spec, &rec).await.unwrap();
    }
    assert!(
        writes(&env).iter().all(|w| w.contains("security-group")),
        "{:?}",
        writes(&env)
    );
    // A pre-existing router is reported, not modified.
    let byo: Router = net::create(
        &env.s,
        ROUTER,
        &RouterCreate {
            name: "user-router".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut spec = managed_spec();
    spec.managed_subnets.clear();
    spec.network = Some(NetworkParam {
        id: Some(n.id.clone()),
        filter: None,
    });
    spec.router = Some(NetworkParam {
        id: Some(byo.id.clone()),
        filter: None,
    });
    env.sim.control().clear_requests();
    let rec = reconcile_fresh(&env, &o, &spec).await.unwrap();
    assert_eq!(rec.router.as_ref().unwrap().id, byo.id);
    delete(&env, &o, &spec, &rec).await.unwrap();
    assert_eq!(items(&env, "routers").len(), 1);
    // Only security groups were written; the user's network was never tagged or deleted.
    assert!(
        writes(&env).iter().all(|w| w.contains("security-group")),
        "{:?}",
        writes(&env)
    );
    let net_now = items(&env, "networks")
        .into_iter()
        .find(|x| x["id"] == n.id.as_str())
        .unwrap();
    assert_eq!(net_now["tags"], serde_json::json!([]));
}

#[tokio::test]
async fn dual_stack_subnets_infer_the_network() {
    let env = env().await;
    let (n, sn) = user_network(
        &env,
        "dual",
        &["10.30.0.0/24", "fd00:30::/64", "10.31.0.0/24"],
    )
    .await;
    let mut spec = managed_spec();
    spec.managed_subnets.clear();
    spec.subnets = vec![
        SubnetParam {
            id: None,
            filter: Some(SubnetFilter {
                name: Some("dual-0".into()),
                ip_version: Some(4),
                ..Default::default()
            }),
        },
        SubnetParam {
            id: Some(sn[1].id.clone()),
            filter: None,
        },
    ];
    let got = networking::ensure_cluster_network(&env.s, &owner("uid-1"), &spec, None)
        .await
        .unwrap();
    assert_eq!(got.id, n.id);
    let ids: Vec<&str> = got.subnets.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec![sn[0].id.as_str(), sn[1].id.as_str()]);
    // Two IPv4 subnets listed: accepted in the order given, as upstream (the first carries the
    // VIP when no spec.primarySubnet names one).
    spec.subnets[1] = SubnetParam {
        id: Some(sn[2].id.clone()),
        filter: None,
    };
    let got = networking::ensure_cluster_network(&env.s, &owner("uid-1"), &spec, None)
        .await
        .unwrap();
    let ids: Vec<&str> = got.subnets.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec![sn[0].id.as_str(), sn[2].id.as_str()]);
    // Found on the network rather than listed, several subnets are a guess: refused.
    spec.subnets.clear();
    spec.network = Some(NetworkParam {
        id: Some(n.id.clone()),
        filter: None,
    });
    let err = networking::ensure_cluster_network(&env.s, &owner("uid-1"), &spec, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("list the ones to use"), "{err}");
}

#[tokio::test]
async fn byo_router_is_used_and_never_deleted() {
    let env = env().await;
    let ext: Vec<Network> = net::list(
        &env.s,
        NETWORK,
        &net::ListFilter::default().with("router:external", "true"),
    )
    .await
    .unwrap();
    let body = RouterCreate {
        name: "user-router".into(),
        description: None,
        external_gateway_info: Some(ExternalGateway {
            network_id: ext[0].id.clone(),
            external_fixed_ips: vec![],
        }),
    };
    let byo: Router = net::create(&env.s, ROUTER, &body).await.unwrap();
    let mut spec = managed_spec();
    spec.router = Some(NetworkParam {
        id: Some(byo.id.clone()),
        filter: None,
    });
    let o = owner("uid-1");
    let rec = reconcile_fresh(&env, &o, &spec).await.unwrap();
    assert_eq!(rec.router.as_ref().unwrap().id, byo.id);
    let subnet = rec.network.as_ref().unwrap().subnets[0].id.clone();
    let attached = |env: &Env| {
        items(env, "ports").iter().any(|p| {
            p["device_id"] == byo.id.as_str() && p["fixed_ips"].to_string().contains(&subnet)
        })
    };
    assert!(attached(&env), "our subnet is attached to the BYO router");
    assert_eq!(items(&env, "routers").len(), 1, "no router created");
    delete(&env, &o, &spec, &rec).await.unwrap();
    let routers = items(&env, "routers");
    assert_eq!(routers.len(), 1);
    assert_eq!(routers[0]["id"], byo.id.as_str());
    assert_eq!(
        routers[0]["tags"],
        serde_json::json!([]),
        "BYO router never tagged"
    );
    assert!(!attached(&env));
    assert!(
        items(&env, "networks")
            .iter()
            .all(|n| n["name"] != o.cluster_resource_name().as_str())
    );
    // The user deletes their router: with it gone (recorded or not), deleting the cluster
    // again has nothing to detach and succeeds.
    net::delete(&env.s, ROUTER, &byo.id).await.unwrap();
    delete(&env, &o, &spec, &rec).await.unwrap();
    delete(&env, &o, &spec, &Recorded::default()).await.unwrap();
}

fn user_rule(name: &str, port: i32) -> SecurityGroupRuleSpec {
    SecurityGroupRuleSpec {
        description: None,
        direction: RuleDirection::Ingress,
        ether_type: None,
        name: name.into(),
        port_range_max: Some(port),
        port_range_min: Some(port),
        protocol: Some("tcp".into()),
        remote_group_id: None,
        remote_ip_prefix: None,
        remote_managed_groups: vec![
            capo_api::v1beta1::ManagedSecurityGroupName::Controlplane,
            capo_api::v1beta1::ManagedSecurityGroupName::Worker,
        ],
    }
}

#[tokio::test]
async fn security_group_rules_reconcile_and_hand_added_rules_stay() {
    let env = env().await;
    let o = owner("uid-1");
    let mut spec = managed_spec();
    spec.bastion = Some(Bastion::default());
    spec.managed_security_groups = Some(ManagedSecurityGroups {
        all_nodes_security_group_rules: vec![user_rule("bgp", 179)],
        ..Default::default()
    });
    let rec = reconcile_fresh(&env, &o, &spec).await.unwrap();
    assert!(rec.groups.bastion.is_some());
    env.sim.control().clear_requests();
    reconcile(&env, &o, &spec, &rec, false).await.unwrap();
    assert!(
        writes(&env).is_empty(),
        "second reconcile wrote {:?}",
        writes(&env)
    );

    // A rule added by hand (no marker) is left alone...
    let cp = rec.groups.control_plane.clone().unwrap();
    let by_hand = SecurityGroupRule {
        security_group_id: cp.id.clone(),
        direction: "ingress".into(),
        ethertype: "IPv4".into(),
        protocol: Some("tcp".into()),
        port_range_min: Some(9100),
        port_range_max: Some(9100),
        description: Some("node exporter".into()),
        ..Default::default()
    };
    let by_hand: SecurityGroupRule = net::create(&env.s, SECURITY_GROUP_RULE, &by_hand)
        .await
        .unwrap();
    // ...while one of ours that is no longer wanted goes: the API port moves to 8443.
    spec.api_server_port = Some(8443);
    env.sim.control().clear_requests();
    reconcile(&env, &o, &spec, &rec, false).await.unwrap();
    let w = writes(&env);
    assert_eq!(
        w.iter().filter(|l| l.starts_with("POST")).count(),
        1,
        "{w:?}"
    );
    assert_eq!(
        w.iter().filter(|l| l.starts_with("DELETE")).count(),
        1,
        "{w:?}"
    );
    let rules = items(&env, "security_group_rules");
    let port_of = |p: i64| {
        rules
            .iter()
            .filter(|r| r["security_group_id"] == cp.id.as_str() && r["port_range_min"] == p)
            .count()
    };
    assert_eq!((port_of(8443), port_of(6443), port_of(9100)), (1, 0, 1));

    // Strict mode removes it.
    env.sim.control().clear_requests();
    reconcile(&env, &o, &spec, &rec, true).await.unwrap();
    assert_eq!(
        writes(&env),
        vec!["DELETE /network/v2.0/security-group-rules/{id}".to_string()]
    );
    assert!(
        items(&env, "security_group_rules")
            .iter()
            .all(|r| r["id"] != by_hand.id.as_str())
    );
}

#[tokio::test]
async fn external_network_explicit_auto_disabled() {
    let env = env().await;
    let mut spec = managed_spec();
    let auto = networking::ensure_external_network(&env.s, &spec)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(auto.name, "public");
    spec.external_network = Some(NetworkParam {
        id: None,
        filter: Some(NeutronFilter {
            name: Some("public".into()),
            ..Default::default()
        }),
    });
    let by_filter = networking::ensure_external_network(&env.s, &spec)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_filter.id, auto.id);
    let (internal, _) = user_network(&env, "internal", &[]).await;
    spec.external_network = Some(NetworkParam {
        id: Some(internal.id),
        filter: None,
    });
    let err = networking::ensure_external_network(&env.s, &spec)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not an external network"), "{err}");
    spec.disable_external_network = Some(true);
    assert!(
        networking::ensure_external_network(&env.s, &spec)
            .await
            .unwrap()
            .is_none()
    );
    // Without an external network a managed network gets no router.
    let rec = reconcile_fresh(&env, &owner("uid-1"), &spec).await.unwrap();
    assert!(rec.router.is_none());
    assert!(items(&env, "routers").is_empty());
}

#[tokio::test]
async fn failure_domains_from_nova() {
    let env = env().await;
    let mut spec = managed_spec();
    let fd = capo_cloud::compute::ensure_failure_domains(&env.s, &spec)
        .await
        .unwrap();
    assert!(
        fd.len() >= 2 && fd.values().all(|f| f.control_plane == Some(true)),
        "{fd:?}"
    );
    spec.control_plane_availability_zones = vec!["az2".into()];
    let fd = capo_cloud::compute::ensure_failure_domains(&env.s, &spec)
        .await
        .unwrap();
    assert_eq!(fd["az2"].control_plane, Some(true));
    assert_eq!(fd["nova"].control_plane, Some(false));
}

#[tokio::test]
async fn a_primary_subnet_is_listed_first_and_carries_the_api_vip() {
    use capo_api::v1beta1::APIServerLoadBalancer;
    use capo_cloud::loadbalancer::{self as lb, LbInputs};
    let env = env().await;
    let (n, sn) = user_network(
        &env,
        "multi",
        &["10.40.0.0/24", "10.41.0.0/24", "fd00:40::/64"],
    )
    .await;
    let by_id = |s: &Subnet| SubnetParam {
        id: Some(s.id.clone()),
        filter: None,
    };
    let mut spec = managed_spec();
    spec.managed_subnets.clear();
    spec.network = Some(NetworkParam {
        id: Some(n.id.clone()),
        filter: None,
    });
    spec.subnets = vec![by_id(&sn[0]), by_id(&sn[1])];
    // Two IPv4 subnets listed without a primary one: the first listed leads, as upstream.
    let got = networking::ensure_cluster_network(&env.s, &owner("uid-1"), &spec, None)
        .await
        .unwrap();
    let ids: Vec<&str> = got.subnets.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec![sn[0].id.as_str(), sn[1].id.as_str()]);

    spec.primary_subnet = Some(SubnetParam {
        id: None,
        filter: Some(SubnetFilter {
            name: Some("multi-1".into()),
            ..Default::default()
        }),
    });
    let got = networking::ensure_cluster_network(&env.s, &owner("uid-1"), &spec, None)
        .await
        .unwrap();
    let ids: Vec<&str> = got.subnets.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec![sn[1].id.as_str(), sn[0].id.as_str()]);
    assert_eq!(
        networking::node_subnet(&spec, &got).map(|s| s.id.as_str()),
        Some(sn[1].id.as_str())
    );
    // With all subnets of the network (none listed), the primary one may be IPv6.
    let mut all = spec.clone();
    all.subnets.clear();
    all.primary_subnet = Some(by_id(&sn[2]));
    let got_all = networking::ensure_cluster_network(&env.s, &owner("uid-1"), &all, None)
        .await
        .unwrap();
    assert_eq!(got_all.subnets.len(), 3);
    assert_eq!(got_all.subnets[0].id, sn[2].id);
    assert_eq!(
        networking::node_subnet(&all, &got_all).map(|s| s.id.as_str()),
        Some(sn[2].id.as_str())
    );
    // A primary subnet outside the cluster's subnets is named.
    let mut outside = spec.clone();
    outside.primary_subnet = Some(by_id(&sn[2]));
    let err = networking::ensure_cluster_network(&env.s, &owner("uid-1"), &outside, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("spec.primarySubnet") && err.to_string().contains(&sn[2].id),
        "{err}"
    );

    // The API load balancer's VIP is taken from the primary subnet.
    spec.api_server_load_balancer = Some(APIServerLoadBalancer {
        enabled: true,
        ..Default::default()
    });
    let cidrs: Vec<String> = got.subnets.iter().map(|s| s.cidr.clone()).collect();
    let o = owner("uid-1");
    let inputs = LbInputs {
        spec: &spec,
        lb_network: &got,
        subnet_cidrs: &cidrs,
        bastion_ips: &[],
        router_ips: &[],
        recorded_id: None,
        vip_address: None,
        name: None,
    };
    let created = lb::ensure_api_load_balancer(&env.s, &o, inputs)
        .await
        .unwrap();
    assert!(
        created.vip_address.starts_with("10.41.0."),
        "VIP {} is not on the primary subnet",
        created.vip_address
    );
}

#[tokio::test]
async fn unnamed_pre_existing_network_subnet_and_router_are_recorded_by_id() {
    // Neutron allows resources without a name; the v1beta2 status capo stores requires one.
    let env = env().await;
    let n: Network = net::create(&env.s, NETWORK, &NetworkCreate::default())
        .await
        .unwrap();
    let body = SubnetCreate {
        network_id: n.id.clone(),
        cidr: "10.23.0.0/24".into(),
        ip_version: 4,
        ..Default::default()
    };
    let sn: Subnet = net::create(&env.s, SUBNET, &body).await.unwrap();
    let r: Router = net::create(&env.s, ROUTER, &RouterCreate::default())
        .await
        .unwrap();
    assert!(n.name.is_empty() && sn.name.is_empty() && r.name.is_empty());
    let o = owner("uid-unnamed");
    let mut spec = managed_spec();
    spec.managed_subnets.clear();
    spec.network = Some(NetworkParam {
        id: Some(n.id.clone()),
        filter: None,
    });
    spec.router = Some(NetworkParam {
        id: Some(r.id.clone()),
        filter: None,
    });
    let rec = reconcile_fresh(&env, &o, &spec).await.unwrap();
    let got = rec.network.as_ref().unwrap();
    assert_eq!(
        (got.id.as_str(), got.name.as_str()),
        (n.id.as_str(), n.id.as_str())
    );
    assert_eq!(got.subnets[0].name, sn.id);
    let router = rec.router.as_ref().unwrap();
    assert_eq!(router.name, r.id);
    delete(&env, &o, &spec, &rec).await.unwrap();
}

#[tokio::test]
async fn external_network_by_id_unknown_selectors_and_auto_detection_counts() {
    use capo_cloud::Error;
    use capo_sim::SimConfig;
    use capo_sim::seed::SeedExtNet;
    let env = env().await;
    let mut spec = managed_spec();
    let auto = networking::ensure_external_network(&env.s, &spec)
        .await
        .unwrap()
        .unwrap();
    // By ID: that network, named in the status.
    spec.external_network = Some(NetworkParam {
        id: Some(auto.id.clone()),
        filter: None,
    });
    let by_id = networking::ensure_external_network(&env.s, &spec)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (by_id.id.as_str(), by_id.name.as_str()),
        (auto.id.as_str(), "public")
    );
    // An ID or a name that matches nothing is an error.
    let unknown = "0b7c6a34-4f6a-4a35-9d59-4f0e2a0b1c2d";
    spec.external_network = Some(NetworkParam {
        id: Some(unknown.into()),
        filter: None,
    });
    let err = networking::ensure_external_network(&env.s, &spec)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    spec.external_network = Some(NetworkParam {
        id: None,
        filter: Some(NeutronFilter {
            name: Some("no-such-network".into()),
            ..Default::default()
        }),
    });
    let err = networking::ensure_external_network(&env.s, &spec)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");

    // Nothing asked for: no external network in the cloud is none, two are ambiguous.
    spec.external_network = None;
    let mut none = SimConfig::default();
    none.seed.external_networks.clear();
    let env0 = env_with(none).await;
    assert!(
        networking::ensure_external_network(&env0.s, &spec)
            .await
            .unwrap()
            .is_none()
    );
    let mut two = SimConfig::default();
    two.seed.external_networks.push(SeedExtNet {
        name: "public-2".into(),
        cidr: "172.24.5.0/24".into(),
        mtu: 1500,
    });
    let env2 = env_with(two).await;
    let err = networking::ensure_external_network(&env2.s, &spec)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Ambiguous { count: 2, .. }), "{err}");
}

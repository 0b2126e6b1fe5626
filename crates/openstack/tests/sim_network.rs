//! Every Neutron call against capo-sim.

mod common;

use capo_openstack::TagFilter;
use capo_openstack::network::{self as net, *};
use serde_json::json;

#[tokio::test]
async fn neutron_calls() {
    let env = common::env().await;
    let s = env.session("capo-sim");

    let exts = list_extensions(&s).await.unwrap();
    assert!(exts.iter().any(|e| e.alias == "trunk"), "{exts:?}");

    let ext: Vec<Network> = net::list(
        &s,
        NETWORK,
        &ListFilter::default().with("router:external", "true"),
    )
    .await
    .unwrap();
    let ext = ext.first().expect("seeded external network").clone();
    assert!(ext.external);

    // network + tags
    let n: Network = create(
        &s,
        NETWORK,
        &NetworkCreate {
            name: "k8s-net".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    replace_tags(&s, NETWORK, &n.id, &["capo-cluster=u1".into()])
        .await
        .unwrap();
    add_tag(&s, NETWORK, &n.id, "extra").await.unwrap();
    let tagged: Vec<Network> = net::list(
        &s,
        NETWORK,
        &ListFilter {
            tags: TagFilter::all(&["capo-cluster=u1"]),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(tagged.len(), 1);
    assert_eq!(tagged[0].id, n.id);
    let got: Network = get(&s, NETWORK, &n.id).await.unwrap();
    assert!(got.tags.contains(&"extra".to_string()));
    let none: Vec<Network> = net::list(
        &s,
        NETWORK,
        &ListFilter {
            tags: TagFilter {
                not_tags_any: vec!["extra".into()],
                ..Default::default()
            },
            name: Some("k8s-net".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(none.is_empty());

    // subnet
    let sn: Subnet = create(
        &s,
        SUBNET,
        &SubnetCreate {
            name: "k8s-subnet".into(),
            network_id: n.id.clone(),
            cidr: "10.6.0.0/24".into(),
            ip_version: 4,
            dns_nameservers: vec!["8.8.8.8".into()],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(sn.cidr, "10.6.0.0/24");
    let upd: Subnet = update(&s, SUBNET, &sn.id, json!({"dns_nameservers": ["1.1.1.1"]}))
        .await
        .unwrap();
    assert_eq!(upd.dns_nameservers, vec!["1.1.1.1".to_string()]);

    // router, gateway, interface
    let r: Router = create(
        &s,
        ROUTER,
        &RouterCreate {
            name: "k8s-router".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let gw = ExternalGateway {
        network_id: ext.id.clone(),
        external_fixed_ips: vec![],
    };
    let r2: Router = s
        .fetch(&set_router_gateway_request(&r.id, Some(&gw)), "router")
        .await
        .unwrap();
    assert_eq!(
        r2.external_gateway_info.map(|g| g.network_id),
        Some(ext.id.clone())
    );
    let itf = add_router_interface(&s, &r.id, &sn.id).await.unwrap();
    assert_eq!(itf.subnet_id, sn.id);

    // security group + rule
    let sg: SecurityGroup = create(
        &s,
        SECURITY_GROUP,
        &SecurityGroupCreate {
            name: "k8s-sg".into(),
            description: None,
        },
    )
    .await
    .unwrap();
    // Neutron takes no tags in a create body (only ports may carry them): the tags call sets
    // them, replacing all.
    assert!(sg.tags.is_empty());
    net::replace_tags(&s, SECURITY_GROUP, &sg.id, &["made-by-put".to_owned()])
        .await
        .unwrap();
    let tagged: SecurityGroup = net::get(&s, SECURITY_GROUP, &sg.id).await.unwrap();
    assert_eq!(tagged.tags, vec!["made-by-put".to_owned()]);
    let rule: SecurityGroupRule = create(
        &s,
        SECURITY_GROUP_RULE,
        &SecurityGroupRule {
            security_group_id: sg.id.clone(),
            direction: "ingress".into(),
            ethertype: "IPv4".into(),
            protocol: Some("tcp".into()),
            port_range_min: Some(6443),
            port_range_max: Some(6443),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let rules: Vec<SecurityGroupRule> = net::list(
        &s,
        SECURITY_GROUP_RULE,
        &ListFilter::default().with("security_group_id", sg.id.clone()),
    )
    .await
    .unwrap();
    assert!(rules.iter().any(|x| x.id == rule.id));

    // port, trunk, floating IP
    let p: Port = create(
        &s,
        PORT,
        &PortCreate {
            name: "m-0".into(),
            network_id: n.id.clone(),
            security_groups: Some(vec![sg.id.clone()]),
            allowed_address_pairs: vec![AddressPair {
                ip_address: "10.6.0.250".into(),
                mac_address: None,
            }],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(p.fixed_ips.len(), 1);
    let ports: Vec<Port> = net::list(
        &s,
        PORT,
        &ListFilter::by_name("m-0").with("network_id", n.id.clone()),
    )
    .await
    .unwrap();
    assert_eq!(ports.len(), 1);
    let t: Trunk = create(
        &s,
        TRUNK,
        &TrunkCreate {
            name: "m-0".into(),
            port_id: p.id.clone(),
            description: None,
        },
    )
    .await
    .unwrap();
    let fip: FloatingIp = create(
        &s,
        FLOATING_IP,
        &FloatingIpCreate {
            floating_network_id: ext.id.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let fip2: FloatingIp = s
        .fetch(
            &set_floating_ip_port_request(&fip.id, Some(&p.id), None),
            "floatingip",
        )
        .await
        .unwrap();
    assert_eq!(fip2.port_id.as_deref(), Some(p.id.as_str()));
    let fip3: FloatingIp = s
        .fetch(
            &set_floating_ip_port_request(&fip.id, None, None),
            "floatingip",
        )
        .await
        .unwrap();
    assert_eq!(fip3.port_id, None);

    // pagination: limit=1 pages through every network via the `networks_links` next marker
    let all: Vec<Network> = net::list(&s, NETWORK, &ListFilter::default())
        .await
        .unwrap();
    assert!(all.len() >= 2);
    let before = env.logged("GET", "/network/v2.0/networks");
    let paged: Vec<Network> = net::list(&s, NETWORK, &ListFilter::default().with("limit", "1"))
        .await
        .unwrap();
    assert_eq!(
        paged.iter().map(|n| &n.id).collect::<Vec<_>>(),
        all.iter().map(|n| &n.id).collect::<Vec<_>>()
    );
    assert!(
        env.logged("GET", "/network/v2.0/networks") - before >= all.len(),
        "one GET per page"
    );

    // teardown in dependency order
    net::delete(&s, FLOATING_IP, &fip.id).await.unwrap();
    net::delete(&s, TRUNK, &t.id).await.unwrap();
    net::delete(&s, PORT, &p.id).await.unwrap();
    net::delete(&s, SECURITY_GROUP_RULE, &rule.id)
        .await
        .unwrap();
    net::delete(&s, SECURITY_GROUP, &sg.id).await.unwrap();
    remove_router_interface(&s, &r.id, &sn.id).await.unwrap();
    net::delete(&s, ROUTER, &r.id).await.unwrap();
    net::delete(&s, SUBNET, &sn.id).await.unwrap();
    net::delete(&s, NETWORK, &n.id).await.unwrap();
    let gone = get::<Network>(&s, NETWORK, &n.id).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");
    // one token for all of it
    assert_eq!(s.token_requests(), 1);
}

//! Neutron over HTTP: IPAM, routers, floating IPs, security groups, tags, filters, 409s, isolation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn subnet_defaults_and_port_allocation() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (net, sub) = c.net_with_subnet("n1", "10.0.0.0/24").await;
    let (_, s) = c.get(&format!("/network/v2.0/subnets/{sub}")).await;
    assert_eq!(s["subnet"]["gateway_ip"], "10.0.0.1");
    assert_eq!(
        s["subnet"]["allocation_pools"],
        json!([{"start": "10.0.0.2", "end": "10.0.0.254"}])
    );
    let (st, p) = c.post("/network/v2.0/ports", json!({"port": {"network_id": net, "allowed_address_pairs": [{"ip_address": "10.0.0.100"}]}})).await;
    assert_eq!(st, StatusCode::CREATED);
    let port = &p["port"];
    assert_eq!(port["fixed_ips"][0]["ip_address"], "10.0.0.2");
    assert!(
        port["mac_address"]
            .as_str()
            .unwrap()
            .starts_with("fa:16:3e:")
    );
    assert_eq!(
        port["allowed_address_pairs"][0]["mac_address"],
        port["mac_address"]
    );
    assert_eq!(port["security_groups"].as_array().unwrap().len(), 1);
    assert_eq!(port["status"], "DOWN");
    let (st, e) = c
        .post(
            "/network/v2.0/ports",
            json!({"port": {"network_id": net, "fixed_ips": [{"ip_address": "10.0.0.2"}]}}),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT);
    assert_eq!(e["NeutronError"]["type"], "IpAddressAlreadyAllocated");
    let (_, l) = c
        .get("/network/v2.0/ports?fixed_ips=ip_address%3D10.0.0.2")
        .await;
    assert_eq!(l["ports"].as_array().unwrap().len(), 1);
    // Deleting a subnet or network with allocations is refused.
    assert_eq!(
        c.delete(&format!("/network/v2.0/subnets/{sub}")).await.0,
        StatusCode::CONFLICT
    );
    let (st, e) = c.delete(&format!("/network/v2.0/networks/{net}")).await;
    assert_eq!(
        (st, e["NeutronError"]["type"].as_str()),
        (StatusCode::CONFLICT, Some("NetworkInUse"))
    );
}

#[tokio::test]
async fn ipv6_slaac_uses_eui64() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (_, n) = c
        .post("/network/v2.0/networks", json!({"network": {"name": "v6"}}))
        .await;
    let net = n["network"]["id"].as_str().unwrap();
    let (st, _) = c.post("/network/v2.0/subnets", json!({"subnet": {"network_id": net, "cidr": "2001:db8::/64", "ip_version": 6, "ipv6_ra_mode": "slaac", "ipv6_address_mode": "slaac"}})).await;
    assert_eq!(st, StatusCode::CREATED);
    let (_, p) = c
        .post(
            "/network/v2.0/ports",
            json!({"port": {"network_id": net, "mac_address": "fa:16:3e:11:22:33"}}),
        )
        .await;
    assert_eq!(
        p["port"]["fixed_ips"][0]["ip_address"],
        "2001:db8::f816:3eff:fe11:2233"
    );
    let (st, _) = c.post("/network/v2.0/subnets", json!({"subnet": {"network_id": net, "cidr": "10.1.0.0/24", "ip_version": 4, "ipv6_address_mode": "slaac"}})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn router_gateway_interface_and_floating_ip() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let public = c.public_net().await;
    let (net, sub) = c.net_with_subnet("n1", "10.0.0.0/24").await;
    let (st, r) = c
        .post(
            "/network/v2.0/routers",
            json!({"router": {"name": "r1", "external_gateway_info": {"network_id": public}}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    let router = r["router"]["id"].as_str().unwrap().to_string();
    assert!(
        r["router"]["external_gateway_info"]["external_fixed_ips"][0]["ip_address"]
            .as_str()
            .unwrap()
            .starts_with("172.24.4.")
    );
    let (st, i) = c
        .put(
            &format!("/network/v2.0/routers/{router}/add_router_interface"),
            json!({"subnet_id": sub}),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(i["subnet_ids"], json!([sub]));
    let (_, p) = c
        .post("/network/v2.0/ports", json!({"port": {"network_id": net}}))
        .await;
    let port = p["port"]["id"].as_str().unwrap().to_string();
    let (st, f) = c
        .post(
            "/network/v2.0/floatingips",
            json!({"floatingip": {"floating_network_id": public, "port_id": port}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{f}");
    let fip = f["floatingip"]["id"].as_str().unwrap().to_string();
    assert_eq!(f["floatingip"]["router_id"], router.as_str());
    assert_eq!(f["floatingip"]["status"], "ACTIVE");
    // The router is in use while interfaces and floating IPs remain.
    assert_eq!(
        c.delete(&format!("/network/v2.0/routers/{router}")).await.0,
        StatusCode::CONFLICT
    );
    let (_, f) = c
        .put(
            &format!("/network/v2.0/floatingips/{fip}"),
            json!({"floatingip": {"port_id": null}}),
        )
        .await;
    assert_eq!(f["floatingip"]["status"], "DOWN");
    assert_eq!(
        c.delete(&format!("/network/v2.0/floatingips/{fip}"))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        c.put(
            &format!("/network/v2.0/routers/{router}/remove_router_interface"),
            json!({"subnet_id": sub})
        )
        .await
        .0,
        StatusCode::OK
    );
    assert_eq!(
        c.delete(&format!("/network/v2.0/routers/{router}")).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        c.delete(&format!("/network/v2.0/ports/{port}")).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        c.delete(&format!("/network/v2.0/networks/{net}")).await.0,
        StatusCode::NO_CONTENT
    );
    let state = sim.control().state(Some(&c.project));
    let left: Vec<&String> = state
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !k.starts_with("security_group"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn security_groups_rules_duplicates_and_in_use() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (st, g) = c
        .post(
            "/network/v2.0/security-groups",
            json!({"security_group": {"name": "sg1"}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    let sg = g["security_group"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        g["security_group"]["security_group_rules"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let rule = json!({"security_group_rule": {"security_group_id": sg, "direction": "ingress", "protocol": "tcp", "port_range_min": 22, "port_range_max": 22, "remote_ip_prefix": "0.0.0.0/0"}});
    assert_eq!(
        c.post("/network/v2.0/security-group-rules", rule.clone())
            .await
            .0,
        StatusCode::CREATED
    );
    let (st, e) = c.post("/network/v2.0/security-group-rules", rule).await;
    assert_eq!(
        (st, e["NeutronError"]["type"].as_str()),
        (StatusCode::CONFLICT, Some("SecurityGroupRuleExists"))
    );
    let (net, _) = c.net_with_subnet("n", "10.2.0.0/24").await;
    let (_, p) = c
        .post(
            "/network/v2.0/ports",
            json!({"port": {"network_id": net, "security_groups": [sg]}}),
        )
        .await;
    let (st, e) = c
        .delete(&format!("/network/v2.0/security-groups/{sg}"))
        .await;
    assert_eq!(
        (st, e["NeutronError"]["type"].as_str()),
        (StatusCode::CONFLICT, Some("SecurityGroupInUse"))
    );
    c.delete(&format!(
        "/network/v2.0/ports/{}",
        p["port"]["id"].as_str().unwrap()
    ))
    .await;
    assert_eq!(
        c.delete(&format!("/network/v2.0/security-groups/{sg}"))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn security_group_rules_bulk_create_is_all_or_nothing() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (_, g) = c
        .post(
            "/network/v2.0/security-groups",
            json!({"security_group": {"name": "bulk"}}),
        )
        .await;
    let sg = g["security_group"]["id"].as_str().unwrap().to_string();
    let rule = |port: u16| json!({"security_group_id": sg, "direction": "ingress", "protocol": "tcp", "port_range_min": port, "port_range_max": port});
    let (st, out) = c
        .post(
            "/network/v2.0/security-group-rules",
            json!({"security_group_rules": [rule(22), rule(80)]}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{out}");
    assert_eq!(out["security_group_rules"].as_array().unwrap().len(), 2);
    // A batch with a duplicate (of an existing rule, or within itself) creates nothing.
    for (batch, kind) in [
        (vec![rule(443), rule(22)], "SecurityGroupRuleExists"),
        (
            vec![rule(8080), rule(8080)],
            "DuplicateSecurityGroupRuleInPost",
        ),
    ] {
        let (st, e) = c
            .post(
                "/network/v2.0/security-group-rules",
                json!({"security_group_rules": batch}),
            )
            .await;
        assert_eq!(
            (st, e["NeutronError"]["type"].as_str()),
            (StatusCode::CONFLICT, Some(kind))
        );
    }
    let (_, list) = c
        .get(&format!(
            "/network/v2.0/security-group-rules?security_group_id={sg}"
        ))
        .await;
    // Two default egress rules plus the two created in bulk.
    assert_eq!(list["security_group_rules"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn tags_filters_and_pagination() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let mut ids = vec![];
    for (i, tags) in [vec!["a", "b"], vec!["a"], vec!["c"]].iter().enumerate() {
        let (_, n) = c
            .post(
                "/network/v2.0/networks",
                json!({"network": {"name": format!("t{i}")}}),
            )
            .await;
        let id = n["network"]["id"].as_str().unwrap().to_string();
        let (st, t) = c
            .put(
                &format!("/network/v2.0/networks/{id}/tags"),
                json!({"tags": tags}),
            )
            .await;
        assert_eq!((st, &t["tags"]), (StatusCode::OK, &json!(tags)));
        ids.push(id);
    }
    let count = |v: &serde_json::Value| v["networks"].as_array().unwrap().len();
    assert_eq!(count(&c.get("/network/v2.0/networks?tags=a,b").await.1), 1);
    assert_eq!(
        count(&c.get("/network/v2.0/networks?tags-any=b,c").await.1),
        2
    );
    assert_eq!(
        count(&c.get("/network/v2.0/networks?tags=a&not-tags=b").await.1),
        1
    );
    assert_eq!(
        count(&c.get("/network/v2.0/networks?not-tags-any=a").await.1),
        2
    ); // t2 and the public network
    assert_eq!(
        c.put(
            &format!("/network/v2.0/networks/{}/tags/z", ids[2]),
            json!({})
        )
        .await
        .0,
        StatusCode::CREATED
    );
    assert_eq!(
        c.get(&format!("/network/v2.0/networks/{}/tags/z", ids[2]))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        c.delete(&format!("/network/v2.0/networks/{}/tags/z", ids[2]))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        c.get(&format!("/network/v2.0/networks/{}/tags/z", ids[2]))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    let (_, page) = c.get("/network/v2.0/networks?limit=2").await;
    assert_eq!(count(&page), 2);
    let next = page["networks_links"][0]["href"].as_str().unwrap();
    assert!(next.contains("marker="));
    let (_, byname) = c
        .get("/network/v2.0/networks?name=t1&admin_state_up=True")
        .await;
    assert_eq!(byname["networks"][0]["id"], ids[1].as_str());
}

#[tokio::test]
async fn projects_are_isolated_and_errors_are_neutron_shaped() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let o = common::login(&sim, "capo-other-user", "capo-other-password", "capo-other").await;
    let (net, _) = c.net_with_subnet("private", "10.9.0.0/24").await;
    let (st, e) = o.get(&format!("/network/v2.0/networks/{net}")).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(e["NeutronError"]["type"], "NetworkNotFound");
    let (_, l) = o.get("/network/v2.0/networks").await;
    assert!(
        l["networks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["id"] != net.as_str())
    );
    assert_eq!(
        o.delete(&format!("/network/v2.0/networks/{net}")).await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn trunks_and_quotas() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (net, _) = c.net_with_subnet("n", "10.3.0.0/24").await;
    let (_, p) = c
        .post("/network/v2.0/ports", json!({"port": {"network_id": net}}))
        .await;
    let (_, s) = c
        .post("/network/v2.0/ports", json!({"port": {"network_id": net}}))
        .await;
    let parent = p["port"]["id"].as_str().unwrap();
    let sub = s["port"]["id"].as_str().unwrap();
    let (st, t) = c.post("/network/v2.0/trunks", json!({"trunk": {"port_id": parent, "sub_ports": [{"port_id": sub, "segmentation_type": "vlan", "segmentation_id": 100}]}})).await;
    assert_eq!(st, StatusCode::CREATED, "{t}");
    let (_, pp) = c.get(&format!("/network/v2.0/ports/{parent}")).await;
    assert_eq!(
        pp["port"]["trunk_details"]["sub_ports"][0]["segmentation_id"],
        100
    );
    let (_, q) = c
        .get(&format!("/network/v2.0/quotas/{}/details.json", c.project))
        .await;
    assert_eq!(q["quota"]["port"]["used"], 2);
    let (_, ext) = c.get("/network/v2.0/extensions/standard-attr-tag").await;
    assert_eq!(ext["extension"]["alias"], "standard-attr-tag");
}

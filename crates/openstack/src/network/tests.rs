use super::*;
use crate::request::TagFilter;
use http::Method;

#[test]
fn generic_shapes() {
    let r = create_request(
        PORT,
        &PortCreate {
            name: "m-0".into(),
            network_id: "n".into(),
            fixed_ips: vec![FixedIp {
                subnet_id: Some("s".into()),
                ip_address: None,
            }],
            security_groups: Some(vec![]),
            ..Default::default()
        },
    );
    assert_eq!(
        (r.method.clone(), r.path.as_str(), r.label),
        (Method::POST, "ports", "port_create")
    );
    assert_eq!(
        r.body.unwrap(),
        json!({"port": {"name": "m-0", "network_id": "n", "fixed_ips": [{"subnet_id": "s"}], "security_groups": []}})
    );
    let f = ListFilter {
        name: Some("k8s".into()),
        tags: TagFilter {
            tags_any: vec!["a".into(), "b".into()],
            ..Default::default()
        },
        ..Default::default()
    }
    .with("network_id", "n");
    let l = list_request(SUBNET, &f);
    assert_eq!(l.path, "subnets");
    assert_eq!(
        l.query,
        vec![
            ("name".into(), "k8s".into()),
            ("tags-any".into(), "a,b".into()),
            ("network_id".into(), "n".into())
        ]
    );
    assert_eq!(get_request(SECURITY_GROUP, "x").path, "security-groups/x");
    assert_eq!(
        delete_request(SECURITY_GROUP_RULE, "x").label,
        "security_group_rule_delete"
    );
    assert_eq!(
        update_request(FLOATING_IP, "f", json!({"description": "d"})).path,
        "floatingips/f"
    );
}

#[test]
fn router_fip_tag_shapes() {
    let r = add_router_interface_request("r", "s");
    assert_eq!(
        (r.method.clone(), r.path.as_str()),
        (Method::PUT, "routers/r/add_router_interface")
    );
    assert_eq!(r.body.unwrap(), json!({"subnet_id": "s"}));
    let g = set_router_gateway_request(
        "r",
        Some(&ExternalGateway {
            network_id: "ext".into(),
            external_fixed_ips: vec![],
        }),
    );
    assert_eq!(
        g.body.unwrap(),
        json!({"router": {"external_gateway_info": {"network_id": "ext"}}})
    );
    let d = set_floating_ip_port_request("f", None, None);
    assert_eq!(d.body.unwrap(), json!({"floatingip": {"port_id": null}}));
    let t = replace_tags_request(NETWORK, "n", &["a".into()]);
    assert_eq!(
        (t.path.as_str(), t.body.unwrap()),
        ("networks/n/tags", json!({"tags": ["a"]}))
    );
    assert_eq!(add_tag_request(PORT, "p", "x").path, "ports/p/tags/x");
    assert_eq!(list_extensions_request().path, "extensions");
    let rule = create_request(
        SECURITY_GROUP_RULE,
        &SecurityGroupRule {
            security_group_id: "sg".into(),
            direction: "ingress".into(),
            ethertype: "IPv4".into(),
            protocol: Some("tcp".into()),
            port_range_min: Some(6443),
            port_range_max: Some(6443),
            ..Default::default()
        },
    );
    assert_eq!(
        rule.body.unwrap(),
        json!({"security_group_rule": {"security_group_id": "sg", "direction": "ingress", "ethertype": "IPv4",
            "protocol": "tcp", "port_range_min": 6443, "port_range_max": 6443}})
    );
}

#[test]
fn replies_decode() {
    let n: Network = serde_json::from_value(
        json!({"id": "n", "name": "ext", "router:external": true, "mtu": 1500}),
    )
    .unwrap();
    assert!(n.external);
    let p: Port = serde_json::from_value(json!({"id": "p", "network_id": "n",
        "fixed_ips": [{"subnet_id": "s", "ip_address": "10.0.0.5"}], "binding:vnic_type": "normal"})).unwrap();
    assert_eq!(p.fixed_ips[0].ip_address.as_deref(), Some("10.0.0.5"));
}

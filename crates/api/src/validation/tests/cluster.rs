//! Cluster specs, cluster templates, extensions, pools and identities.

use super::*;

#[test]
fn remote_fields_are_exclusive_in_every_rule_list() {
    for list in [
        "allNodesSecurityGroupRules",
        "controlPlaneNodesSecurityGroupRules",
        "workerNodesSecurityGroupRules",
    ] {
        let rule = json!({"name": "r", "direction": "ingress", "remoteIPPrefix": "10.0.0.0/8", "remoteManagedGroups": ["worker"]});
        let patch =
            json!({"managedSecurityGroups": {"allowAllInClusterTraffic": false, list: [rule]}});
        assert_eq!(
            cluster_errors(patch),
            one(
                &format!("spec.managedSecurityGroups.{list}[0]"),
                "Forbidden"
            ),
            "{list}"
        );
    }
}

#[test]
fn security_group_rule_ports_and_families() {
    let rules = json!([
        {"name": "a", "direction": "ingress", "portRangeMin": 100, "portRangeMax": 90},
        {"name": "b", "direction": "ingress", "etherType": "IPv6", "remoteIPPrefix": "10.0.0.0/8"},
        {"name": "c", "direction": "ingress", "remoteGroupID": "worker"},
    ]);
    let errors = cluster_errors(
        json!({"managedSecurityGroups": {"allowAllInClusterTraffic": false, "allNodesSecurityGroupRules": rules}}),
    );
    let path = "spec.managedSecurityGroups.allNodesSecurityGroupRules";
    assert_eq!(
        errors,
        vec![
            (format!("{path}[0].portRangeMax"), "Invalid"),
            (format!("{path}[1].remoteIPPrefix"), "Invalid"),
            (format!("{path}[2].remoteGroupID"), "Invalid"),
        ]
    );
}

#[test]
fn external_network_rules_match_upstream_cel() {
    let bastion = json!({"disableExternalNetwork": true, "bastion": {"enabled": false, "floatingIP": "1.2.3.4"}});
    assert_eq!(
        cluster_errors(bastion),
        one("spec.bastion.floatingIP", "Forbidden")
    );
    let fip = json!({"disableExternalNetwork": true, "disableAPIServerFloatingIP": false});
    assert_eq!(
        cluster_errors(fip),
        one("spec.disableAPIServerFloatingIP", "Forbidden")
    );
}

#[test]
fn bastion_needs_a_valid_spec_when_enabled() {
    assert_eq!(
        cluster_errors(json!({"bastion": {"enabled": true}})),
        one("spec.bastion.spec", "Required")
    );
    assert_eq!(
        cluster_errors(json!({"bastion": {}})),
        one("spec.bastion.spec", "Required")
    );
    assert_eq!(
        cluster_errors(json!({"bastion": {"enabled": false}})),
        vec![]
    );
    let bad_spec = json!({"bastion": {"spec": {"image": {"filter": {"name": "u"}}}}});
    assert_eq!(
        cluster_errors(bad_spec),
        one("spec.bastion.spec.flavor", "Required")
    );
}

#[test]
fn managed_subnet_is_consistent() {
    let subnet = json!({"managedSubnets": [{
        "cidr": "10.6.0.0/24",
        "dnsNameservers": ["dns.example"],
        "allocationPools": [{"start": "10.6.0.10", "end": "10.6.1.20"}, {"start": "10.6.0.50", "end": "10.6.0.40"}],
    }]});
    assert_eq!(
        cluster_errors(subnet),
        vec![
            (
                "spec.managedSubnets[0].dnsNameservers[0]".to_owned(),
                "Invalid"
            ),
            (
                "spec.managedSubnets[0].allocationPools[0].end".to_owned(),
                "Invalid"
            ),
            (
                "spec.managedSubnets[0].allocationPools[1].end".to_owned(),
                "Invalid"
            ),
        ]
    );
    assert_eq!(
        cluster_errors(json!({"managedSubnets": [{"cidr": "10.6.0.0/33"}]})),
        one("spec.managedSubnets[0].cidr", "Invalid")
    );
}

#[test]
fn load_balancer_fields() {
    let lb = json!({"apiServerLoadBalancer": {"enabled": true, "additionalPorts": [8443, 8443, 70000], "allowedCIDRs": ["192.168.0.0/16", "2001:db8::/32", "nope"]}});
    assert_eq!(
        cluster_errors(lb),
        vec![
            (
                "spec.apiServerLoadBalancer.additionalPorts[2]".to_owned(),
                "Invalid"
            ),
            (
                "spec.apiServerLoadBalancer.additionalPorts[1]".to_owned(),
                "Duplicate"
            ),
            (
                "spec.apiServerLoadBalancer.allowedCIDRs[2]".to_owned(),
                "Invalid"
            ),
        ]
    );
}

#[test]
fn cluster_templates_are_immutable() {
    let make = |spec: Value| -> OpenStackClusterTemplate {
        object(
            "OpenStackClusterTemplate",
            "infrastructure.cluster.x-k8s.io/v1beta1",
            json!({"template": {"spec": spec}}),
        )
    };
    let (old, new) = (
        make(cluster_spec()),
        make(merged(cluster_spec(), json!({"networkMTU": 1400}))),
    );
    assert_eq!(
        summary(new.validate_update(&old, &CTX)),
        one("spec.template.spec.networkMTU", "Immutable")
    );
}

fn updated_cluster(old: OpenStackCluster, new_patch: Value) -> Vec<(String, &'static str)> {
    let mut new_spec = serde_json::to_value(&old.spec).unwrap_or(Value::Null);
    new_spec = merged(new_spec, new_patch);
    let new = cluster(new_spec);
    summary(new.validate_update(&old, &CTX))
}

#[test]
fn cluster_update_rules() {
    let base = cluster(cluster_spec());
    assert_eq!(
        updated_cluster(base.clone(), json!({"network": {"id": NET_ID}})),
        one("spec.network", "Immutable")
    );
    let identity = json!({"identityRef": {"name": "rotated"}});
    assert_eq!(updated_cluster(base.clone(), identity), vec![]);
    let region = json!({"identityRef": {"region": "RegionTwo"}});
    assert_eq!(
        updated_cluster(base.clone(), region),
        one("spec.identityRef.region", "Immutable")
    );
    let cidrs = json!({"apiServerLoadBalancer": {"allowedCIDRs": ["10.0.0.0/8"], "monitor": {"delay": 20}}});
    assert_eq!(updated_cluster(base.clone(), cidrs), vec![]);
    let azs = json!({"controlPlaneAvailabilityZones": ["az1", "az2"]});
    assert_eq!(updated_cluster(base.clone(), azs), vec![]);
    let dns = json!({"managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["1.1.1.1"]}]});
    assert_eq!(updated_cluster(base.clone(), dns), vec![]);
    let cidr = json!({"managedSubnets": [{"cidr": "10.7.0.0/24", "dnsNameservers": ["8.8.8.8"]}]});
    assert_eq!(
        updated_cluster(base, cidr),
        one("spec.managedSubnets[0].cidr", "Immutable")
    );
}

#[test]
fn control_plane_endpoint_is_set_once() {
    let base = cluster(cluster_spec());
    let endpoint = json!({"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443}});
    assert_eq!(updated_cluster(base, endpoint.clone()), vec![]);
    let set = cluster(merged(cluster_spec(), endpoint));
    let moved = json!({"controlPlaneEndpoint": {"host": "10.0.0.2"}});
    assert_eq!(
        updated_cluster(set, moved),
        one("spec.controlPlaneEndpoint.host", "Immutable")
    );
}

#[test]
fn bastion_cannot_be_removed_while_enabled() {
    let with_bastion = cluster(merged(
        cluster_spec(),
        json!({"bastion": {"enabled": true, "spec": machine_spec()}}),
    ));
    let mut removed = with_bastion.clone();
    removed.spec.bastion = None;
    assert_eq!(
        summary(removed.validate_update(&with_bastion, &CTX)),
        one("spec.bastion", "Forbidden")
    );
    let disabled = json!({"bastion": {"enabled": false}});
    assert_eq!(updated_cluster(with_bastion, disabled), vec![]);
}

#[test]
fn managed_security_groups_cannot_be_disabled() {
    let with_groups = cluster(merged(
        cluster_spec(),
        json!({"managedSecurityGroups": {"allowAllInClusterTraffic": true}}),
    ));
    let mut removed = with_groups.clone();
    removed.spec.managed_security_groups = None;
    assert_eq!(
        summary(removed.validate_update(&with_groups, &CTX)),
        one("spec.managedSecurityGroups", "Forbidden")
    );
    let rules = json!({"managedSecurityGroups": {"allowAllInClusterTraffic": false, "workerNodesSecurityGroupRules": [{"name": "ssh", "direction": "ingress", "protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22}]}});
    assert_eq!(updated_cluster(with_groups, rules), vec![]);
}

#[test]
fn network_filter_may_be_pinned_to_its_resolved_id() {
    let mut by_filter = cluster(merged(
        cluster_spec(),
        json!({"network": {"filter": {"name": "net"}}}),
    ));
    let status = json!({"ready": false, "network": {"id": NET_ID, "name": "net"}});
    by_filter.status = serde_json::from_value(status).ok();
    let mut pinned = by_filter.clone();
    pinned.spec.network = serde_json::from_value(json!({"id": NET_ID})).ok();
    assert_eq!(summary(pinned.validate_update(&by_filter, &CTX)), vec![]);
    let mut other = by_filter.clone();
    other.spec.network = serde_json::from_value(json!({"id": SUBNET_ID})).ok();
    assert!(!summary(other.validate_update(&by_filter, &CTX)).is_empty());
}

#[test]
fn extension_rules() {
    let keepalived_with_lb =
        json!({"extensions": {"loadBalancers": {"controlPlane": {"mode": "Keepalived"}}}});
    assert_eq!(
        cluster_errors(keepalived_with_lb),
        one(
            "spec.extensions.loadBalancers.controlPlane.mode",
            "Forbidden"
        )
    );
    let keepalived = json!({"apiServerLoadBalancer": {"enabled": false}, "extensions": {"loadBalancers": {"controlPlane": {"mode": "Keepalived", "vipAddress": "10.6.0.5"}}}});
    assert_eq!(cluster_errors(keepalived), vec![]);
    let plugin = json!({"extensions": {"networking": {"kubeNetworkPlugin": "weave"}}});
    assert_eq!(
        cluster_errors(plugin),
        one("spec.extensions.networking.kubeNetworkPlugin", "Invalid")
    );
    let flannel =
        json!({"extensions": {"networkInterfaces": {"flannel": "a-very-long-interface-name"}}});
    assert_eq!(
        cluster_errors(flannel),
        one("spec.extensions.networkInterfaces.flannel", "Invalid")
    );
    let ingress = json!({"extensions": {"loadBalancers": {"ingress": {"mode": "Octavia", "ports": [80, 0]}}}});
    assert_eq!(
        cluster_errors(ingress),
        one("spec.extensions.loadBalancers.ingress.ports[1]", "Invalid")
    );
    let reserved = json!({"extensions": {"networkInterfaces": {"keepalived": "eth0"}, "nodeResources": {"reserved": {"kubeMemoryReserved": "lots"}}}});
    assert_eq!(
        machine_errors(reserved),
        one(
            "spec.extensions.nodeResources.reserved.kubeMemoryReserved",
            "Invalid"
        )
    );
}

#[test]
fn control_plane_vip_mode_is_immutable_but_other_extensions_are_not() {
    let spec = merged(
        cluster_spec(),
        json!({"extensions": {"loadBalancers": {"controlPlane": {"mode": "Octavia"}}, "platform": {"ntp": {"server": "ntp1"}}}}),
    );
    let base = cluster(spec);
    let ntp = json!({"extensions": {"platform": {"ntp": {"server": "ntp2"}}}});
    assert_eq!(updated_cluster(base.clone(), ntp), vec![]);
    let mode = json!({"apiServerLoadBalancer": {"enabled": false}, "extensions": {"loadBalancers": {"controlPlane": {"mode": "Keepalived"}}}});
    let errors = updated_cluster(base, mode);
    assert!(
        errors.contains(&(
            "spec.extensions.loadBalancers.controlPlane.mode".to_owned(),
            "Immutable"
        )),
        "{errors:?}"
    );
}

#[test]
fn server_pool_and_identity() {
    let server: OpenStackServer = object(
        "OpenStackServer",
        "infrastructure.cluster.x-k8s.io/v1alpha1",
        merged(
            machine_spec(),
            json!({"identityRef": identity(), "sshKeyName": "k", "ports": [{"network": {"id": "x"}}]}),
        ),
    );
    assert_eq!(
        summary(server.validate_create()),
        one("spec.ports[0].network.id", "Invalid")
    );
    let pool: OpenStackFloatingIPPool = object(
        "OpenStackFloatingIPPool",
        "infrastructure.cluster.x-k8s.io/v1alpha1",
        json!({"identityRef": identity(), "reclaimPolicy": "Delete", "preAllocatedFloatingIPs": ["1.2.3.4", "1.2.3.4", "x"]}),
    );
    assert_eq!(
        summary(pool.validate_create()),
        vec![
            ("spec.preAllocatedFloatingIPs[2]".to_owned(), "Invalid"),
            ("spec.preAllocatedFloatingIPs[1]".to_owned(), "Duplicate"),
        ]
    );
    let identity: OpenStackClusterIdentity = object(
        "OpenStackClusterIdentity",
        "infrastructure.cluster.x-k8s.io/v1alpha1",
        json!({"secretRef": {"name": "s", "namespace": "capo-system"}, "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Has"}]}}),
    );
    assert_eq!(
        summary(identity.validate_create()),
        one(
            "spec.namespaceSelector.matchExpressions[0].operator",
            "Invalid"
        )
    );
}

fn server(ports: Value) -> OpenStackServer {
    object(
        "OpenStackServer",
        "infrastructure.cluster.x-k8s.io/v1alpha1",
        merged(
            machine_spec(),
            json!({"identityRef": {"name": "c", "cloudName": "o"}, "sshKeyName": "k", "ports": ports}),
        ),
    )
}

#[test]
fn server_port_security_legacy_field_must_agree_with_enable() {
    let net = json!({"id": NET_ID});
    // Either field alone, or both agreeing, is accepted (a stored v0.14 server has the legacy
    // one; the identity's type may be left to its default).
    for port in [
        json!({"network": net, "disablePortSecurity": true}),
        json!({"network": net, "enablePortSecurity": false}),
        json!({"network": net, "enablePortSecurity": false, "disablePortSecurity": true}),
        json!({"network": net, "enablePortSecurity": true, "disablePortSecurity": false}),
    ] {
        assert_eq!(summary(server(json!([port])).validate_create()), vec![]);
    }
    let contradiction = server(
        json!([{"network": net}, {"network": net, "enablePortSecurity": true, "disablePortSecurity": true}]),
    );
    let result = contradiction.validate_create();
    let message = result
        .clone()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        summary(result),
        one("spec.ports[1].enablePortSecurity", "Invalid")
    );
    assert!(
        message.contains("contradicts the deprecated disablePortSecurity: true"),
        "{message}"
    );
    // Port security off by either field forbids the port's security groups.
    for port in [
        json!({"network": net, "disablePortSecurity": true, "securityGroups": [{"id": NET_ID}]}),
        json!({"network": net, "enablePortSecurity": false, "securityGroups": [{"id": NET_ID}]}),
    ] {
        assert_eq!(
            summary(server(json!([port])).validate_create()),
            one("spec.ports[0].securityGroups", "Forbidden")
        );
    }
}

#[test]
fn messages_name_the_field_and_the_reason() {
    let m = machine(merged(
        machine_spec(),
        json!({"ports": [{"disablePortSecurity": true, "securityGroups": [{"id": NET_ID}]}]}),
    ));
    let message = m
        .validate_create()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        message,
        "spec.ports[0].securityGroups: Forbidden: cannot have security groups when disablePortSecurity is true"
    );
    let bad = machine(merged(
        machine_spec(),
        json!({"securityGroups": [{"id": "sg"}]}),
    ));
    let message = bad
        .validate_create()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        message,
        "spec.securityGroups[0].id: Invalid value: \"sg\": must be a UUID"
    );
}

/// A v1beta2 cluster (spec fields in v1beta2 shape) as the v1beta1 webhook sees it: converted.
fn converted_v1beta2(kind: &str, spec: Value) -> Value {
    let v1beta2 = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": kind,
        "metadata": {"name": "test", "namespace": "default"},
        "spec": spec,
    });
    match crate::conversion::convert("infrastructure.cluster.x-k8s.io/v1beta1", v1beta2) {
        Ok(v1beta1) => v1beta1,
        Err(e) => panic!("fixture does not convert: {e}"),
    }
}

#[test]
fn the_primary_subnet_is_one_of_the_subnets_and_may_change() {
    const OTHER: &str = "1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
    const ELSEWHERE: &str = "9f8e7d6c-5b4a-4c3d-8e2f-1a0b9c8d7e6f";
    let spec = |primary: Value| {
        json!({
            "identityRef": identity(),
            "network": {"id": NET_ID},
            "subnets": [{"id": SUBNET_ID}, {"id": OTHER}],
            "primarySubnet": primary,
        })
    };
    // A v1beta2 object reaches the v1beta1 webhook converted: the field is the same in both.
    let parse = |primary: Value| -> OpenStackCluster {
        let v1beta1 = converted_v1beta2("OpenStackCluster", spec(primary));
        serde_json::from_value(v1beta1).unwrap_or_else(|e| panic!("{e}"))
    };
    let first = parse(json!({"id": SUBNET_ID}));
    assert_eq!(summary(first.validate_create()), vec![]);
    let other = parse(json!({"id": OTHER}));
    assert_eq!(summary(other.validate_create()), vec![]);
    let by_filter = parse(json!({"filter": {"name": "nodes-b"}}));
    assert_eq!(summary(by_filter.validate_create()), vec![]);
    // As upstream, a new primary subnet is accepted on update (new machines move to it).
    assert_eq!(
        summary(other.validate_update(&first, &UpdateContext::default())),
        vec![]
    );
    let unlisted = parse(json!({"id": ELSEWHERE}));
    assert_eq!(
        summary(unlisted.validate_create()),
        one("spec.primarySubnet.id", "Invalid")
    );
    let not_a_uuid = parse(json!({"id": "nodes"}));
    assert!(
        summary(not_a_uuid.validate_create())
            .iter()
            .any(|(f, _)| f == "spec.primarySubnet.id"),
        "{:?}",
        summary(not_a_uuid.validate_create())
    );

    let template = converted_v1beta2(
        "OpenStackClusterTemplate",
        json!({"template": {"spec": spec(json!({"id": ELSEWHERE}))}}),
    );
    let template: OpenStackClusterTemplate =
        serde_json::from_value(template).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        summary(template.validate_create()),
        one("spec.template.spec.primarySubnet.id", "Invalid")
    );
}

#[test]
fn subnet_filters_may_be_pinned_whatever_the_status_order() {
    const OTHER: &str = "1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
    let mut by_filter = cluster(merged(
        cluster_spec(),
        json!({
            "network": {"id": NET_ID},
            "subnets": [{"filter": {"name": "a"}}, {"filter": {"name": "b"}}],
            "primarySubnet": {"filter": {"name": "b"}},
        }),
    ));
    // The network step lists the primary subnet first.
    let status = json!({"ready": false, "network": {"id": NET_ID, "name": "net", "subnets": [
        {"id": OTHER, "cidr": "10.7.0.0/24", "name": "b"},
        {"id": SUBNET_ID, "cidr": "10.6.0.0/24", "name": "a"},
    ]}});
    by_filter.status = serde_json::from_value(status).ok();
    let pin = |subnets: Value| {
        let mut pinned = by_filter.clone();
        pinned.spec.subnets = serde_json::from_value(subnets).unwrap_or_default();
        summary(pinned.validate_update(&by_filter, &CTX))
    };
    assert_eq!(pin(json!([{"id": SUBNET_ID}, {"id": OTHER}])), vec![]);
    assert_eq!(
        pin(json!([{"id": SUBNET_ID}, {"filter": {"name": "b"}}])),
        vec![]
    );
    // Two entries pinned to one subnet, or to a subnet not resolved, are changes.
    assert!(!pin(json!([{"id": SUBNET_ID}, {"id": SUBNET_ID}])).is_empty());
    assert!(!pin(json!([{"id": NET_ID}, {"id": OTHER}])).is_empty());
}

#[test]
fn the_cloud_provider_volumes_annotation_takes_keep_or_delete() {
    let key = crate::constants::CLOUD_PROVIDER_VOLUMES_ANNOTATION;
    let with = |value: &str| {
        let mut osc = cluster(cluster_spec());
        osc.metadata.annotations = Some([(key.to_owned(), value.to_owned())].into());
        summary(osc.validate_create())
    };
    assert!(with("keep").is_empty());
    assert!(with("delete").is_empty());
    assert_eq!(
        with("yes"),
        one(&format!("metadata.annotations[{key}]"), "Invalid")
    );
}

/// A server's ports keep their settings but for their address pairs, which the machine
/// controller may change (the server controller then updates the Neutron port).
#[test]
fn a_servers_port_address_pairs_may_change_and_nothing_else() {
    let net = json!({"id": NET_ID});
    let old = server(json!([{"network": net}]));
    let pairs =
        server(json!([{"network": net, "allowedAddressPairs": [{"ipAddress": "10.0.0.7"}]}]));
    assert_eq!(summary(pairs.validate_update(&old, &CTX)), vec![]);
    let other = server(json!([{"network": net, "description": "d"}]));
    assert_eq!(
        summary(other.validate_update(&old, &CTX)),
        one("spec.ports[0].description", "Immutable")
    );
}

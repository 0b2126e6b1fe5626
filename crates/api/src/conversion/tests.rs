//! Unit tests of whole-object conversion: what travels in the annotation and when it comes
//! back.

use crate::conversion::{CONVERSION_DATA_ANNOTATION, ConversionError, convert};
use serde_json::{Value, json};

const V1: &str = "infrastructure.cluster.x-k8s.io/v1beta1";
const V2: &str = "infrastructure.cluster.x-k8s.io/v1beta2";

fn ok(r: Result<Value, ConversionError>) -> Value {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn annotation(obj: &Value) -> Option<Value> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(CONVERSION_DATA_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
}

fn machine_v1() -> Value {
    json!({
        "apiVersion": V1, "kind": "OpenStackMachine",
        "metadata": {"name": "m", "generation": 3},
        "spec": {"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}}},
        "status": {
            "ready": true,
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-02T03:04:05Z"},
                {"type": "InstanceReady", "status": "False", "severity": "Warning", "reason": "Boot",
                 "lastTransitionTime": "2024-01-02T03:04:05Z"}
            ]
        }
    })
}

#[test]
fn nothing_to_carry_means_no_annotation() {
    let mut m = machine_v1();
    m["status"]["conditions"][1]
        .as_object_mut()
        .map(|c| c.remove("severity"));
    let up = ok(convert(V2, m.clone()));
    assert_eq!(
        up.pointer("/spec/flavor"),
        Some(&json!({"filter": {"name": "m1.small"}}))
    );
    assert_eq!(
        up.pointer("/status/conditions/0/reason"),
        Some(&json!("NoReasonReported"))
    );
    assert_eq!(
        up.pointer("/status/conditions/0/observedGeneration"),
        Some(&json!(3))
    );
    assert!(up.pointer("/metadata/annotations").is_none(), "{up}");
    assert_eq!(ok(convert(V1, up)), m);
}

#[test]
fn severity_travels_and_comes_back_then_the_annotation_goes() {
    let m = machine_v1();
    let up = ok(convert(V2, m.clone()));
    let data = annotation(&up).unwrap_or_default();
    assert_eq!(data["apiVersion"], V1);
    assert_eq!(data["kind"], "OpenStackMachine");
    assert_eq!(
        data["status"]["conditions"],
        json!([m["status"]["conditions"][1]])
    );
    assert!(
        data["spec"].is_null(),
        "only what differs is carried: {data}"
    );
    assert_eq!(ok(convert(V1, up)), m);
}

#[test]
fn data_about_a_changed_condition_is_dropped_the_rest_restored() {
    let mut m = machine_v1();
    m["status"]["failureReason"] = json!("UpdateError");
    let mut up = ok(convert(V2, m.clone()));
    // A v1beta2 client updates InstanceReady.
    up["status"]["conditions"][1]["status"] = json!("True");
    let down = ok(convert(V1, up));
    assert!(down.pointer("/metadata/annotations").is_none());
    assert_eq!(down["status"]["failureReason"], "UpdateError");
    assert!(down["status"]["conditions"][1].get("severity").is_none());
}

#[test]
fn both_flavor_fields_keep_the_name_in_the_annotation() {
    let mut m = machine_v1();
    m["spec"]["flavorID"] = json!("42");
    m.as_object_mut().map(|o| o.remove("status"));
    let up = ok(convert(V2, m.clone()));
    assert_eq!(up["spec"]["flavor"], json!({"id": "42"}));
    assert_eq!(
        annotation(&up).map(|d| d["spec"].clone()),
        Some(json!({"flavor": "m1.small", "flavorID": "42"}))
    );
    assert_eq!(ok(convert(V1, up.clone())), m);
    // The flavor changed in v1beta2: the old name no longer applies.
    let mut changed = up;
    changed["spec"]["flavor"] = json!({"id": "43"});
    let down = ok(convert(V1, changed));
    assert_eq!(down["spec"].get("flavor"), None);
    assert_eq!(down["spec"]["flavorID"], "43");
}

#[test]
fn template_metadata_travels_down_and_back() {
    let t = json!({
        "apiVersion": V2, "kind": "OpenStackClusterTemplate", "metadata": {"name": "t"},
        "spec": {"template": {
            "metadata": {"labels": {"env": "prod"}},
            "spec": {"identityRef": {"cloudName": "c", "name": "n", "type": "Secret"}, "primarySubnet": {"id": "s"}}
        }}
    });
    let down = ok(convert(V1, t.clone()));
    let data = annotation(&down).unwrap_or_default();
    assert_eq!(data["apiVersion"], V2);
    assert_eq!(
        data["spec"],
        json!({"template": {"metadata": {"labels": {"env": "prod"}}}})
    );
    assert_eq!(ok(convert(V2, down)), t);
}

#[test]
fn primary_subnet_is_a_field_in_both_versions() {
    let c = json!({
        "apiVersion": V2, "kind": "OpenStackCluster", "metadata": {"name": "c"},
        "spec": {
            "identityRef": {"cloudName": "c", "name": "n", "type": "Secret"},
            "subnets": [{"id": "a"}, {"filter": {"name": "b"}}],
            "primarySubnet": {"filter": {"name": "b", "ipVersion": 4}}
        }
    });
    let down = ok(convert(V1, c.clone()));
    assert_eq!(annotation(&down), None);
    assert_eq!(
        down["spec"]["primarySubnet"],
        json!({"filter": {"name": "b", "ipVersion": 4}})
    );
    assert_eq!(ok(convert(V2, down)), c);
}

#[test]
fn unset_defaulted_fields_of_v1beta2_come_back_unset() {
    let c = json!({
        "apiVersion": V2, "kind": "OpenStackCluster", "metadata": {"name": "c"},
        "spec": {
            "identityRef": {"cloudName": "c", "name": "n"},
            "managedSecurityGroups": {},
            "apiServer": {"managedLoadBalancer": {}}
        }
    });
    let down = ok(convert(V1, c.clone()));
    assert_eq!(down["spec"]["identityRef"]["type"], "Secret");
    assert_eq!(
        down["spec"]["managedSecurityGroups"]["allowAllInClusterTraffic"],
        false
    );
    assert_eq!(down["spec"]["apiServerLoadBalancer"]["enabled"], true);
    assert_eq!(ok(convert(V2, down)), c);
}

#[test]
fn a_foreign_annotation_is_kept_or_carried() {
    let foreign = r#"{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha7","spec":{}}"#;
    let mut m = machine_v1();
    m["metadata"]["annotations"] = json!({CONVERSION_DATA_ANNOTATION: foreign});
    // Ours must be written (severity), so the foreign one rides inside it.
    let up = ok(convert(V2, m.clone()));
    let data = annotation(&up).unwrap_or_default();
    assert_eq!(
        data["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION],
        foreign
    );
    assert_eq!(ok(convert(V1, up)), m);
    // Nothing to carry: it stays where it is.
    m["status"]["conditions"][1]
        .as_object_mut()
        .map(|c| c.remove("severity"));
    let up = ok(convert(V2, m.clone()));
    assert_eq!(
        up["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION],
        foreign
    );
    assert_eq!(ok(convert(V1, up)), m);
}

#[test]
fn a_stale_annotation_of_the_source_version_is_not_taken_for_ours_later() {
    let own = format!(
        r#"{{"apiVersion":"{V1}","kind":"OpenStackMachine","status":{{"failureReason":"Old"}}}}"#
    );
    let mut m = machine_v1();
    m["status"]["conditions"][1]
        .as_object_mut()
        .map(|c| c.remove("severity"));
    m["metadata"]["annotations"] = json!({CONVERSION_DATA_ANNOTATION: own});
    let up = ok(convert(V2, m.clone()));
    assert_eq!(ok(convert(V1, up)), m);
}

#[test]
fn upstream_snapshots_restore_what_still_agrees() {
    // Upstream CAPO stores the whole v1beta1 object on the v1beta2 one.
    let snapshot = json!({
        "apiVersion": V1, "kind": "OpenStackMachine",
        "spec": {"flavor": "m1.small", "flavorID": "42", "image": {"filter": {"name": "ubuntu"}}},
        "status": {"ready": false, "failureMessage": "gone"}
    });
    let up = json!({
        "apiVersion": V2, "kind": "OpenStackMachine",
        "metadata": {"name": "m", "annotations": {CONVERSION_DATA_ANNOTATION: snapshot.to_string()}},
        "spec": {"flavor": {"id": "42"}, "image": {"filter": {"name": "ubuntu"}}},
        "status": {}
    });
    let down = ok(convert(V1, up));
    assert_eq!(down["spec"]["flavor"], "m1.small");
    assert_eq!(down["status"]["failureMessage"], "gone");
    assert_eq!(down["status"]["ready"], false);
    assert!(down.pointer("/metadata/annotations").is_none());
}

#[test]
fn refusals_name_the_field() {
    let bad = json!({"apiVersion": V2, "kind": "OpenStackMachine", "metadata": {},
        "spec": {"flavor": {"id": "1", "filter": {"name": "n"}}, "image": {"id": "i"}}});
    assert_eq!(
        convert(V1, bad).err().map(|e| e.path).as_deref(),
        Some("spec.flavor")
    );
    let wrong_type = json!({"apiVersion": V1, "kind": "OpenStackMachine", "metadata": {},
        "spec": {"flavor": "f", "image": {"id": "i"}, "ports": [{"tags": "t"}]}});
    let err = convert(V2, wrong_type).err().map(|e| e.path);
    assert_eq!(err.as_deref(), Some("spec.ports[0].tags"));
}

/// Upstream's `TestOpenStackMachineConversion_NeitherFlavorNorFlavorID`: an object without a
/// flavor (admission refuses one, but it may be stored from before, or partial) converts to an
/// empty v1beta2 flavor and comes back as it was; refusing would make it unreadable in v1beta2.
#[test]
fn a_machine_with_neither_flavor_nor_flavor_id_converts_both_ways() {
    let mut m = machine_v1();
    m["spec"].as_object_mut().map(|s| s.remove("flavor"));
    let up = ok(convert(V2, m.clone()));
    assert_eq!(up.pointer("/spec/flavor"), Some(&json!({})));
    let back = ok(convert(V1, up));
    assert_eq!(back["spec"], m["spec"]);
    assert_eq!(back.pointer("/spec/flavor"), None);
    assert_eq!(back.pointer("/spec/flavorID"), None);
}

#[test]
fn same_version_is_the_identity_and_strangers_are_refused() {
    let m = json!({"apiVersion": V1, "kind": "OpenStackMachine", "anything": [1]});
    assert_eq!(ok(convert(V1, m.clone())), m);
    assert!(convert(V2, json!({"apiVersion": V1, "kind": "Secret"})).is_err());
    assert!(convert("v1", machine_v1()).is_err());
    assert!(convert(V2, json!([1, 2])).is_err());
    assert!(convert(V2, json!({"apiVersion": 1, "kind": "OpenStackMachine"})).is_err());
}

#[test]
fn load_balancer_ip_is_the_floating_ip_in_v1beta1_and_never_empty_in_v1beta2() {
    let cluster = |ip: &str| {
        json!({
            "apiVersion": V1, "kind": "OpenStackCluster",
            "metadata": {"name": "c", "generation": 1},
            "spec": {"identityRef": {"name": "creds", "cloudName": "openstack"}},
            "status": {"ready": false, "apiServerLoadBalancer": {
                "name": "lb", "id": "1", "internalIP": "10.6.0.2", "ip": ip}}
        })
    };
    let lb = |o: &Value, key: &str| o["status"][key].clone();
    // Before the floating IP (and for good without one): empty in v1beta1, as upstream v0.14
    // writes it; the VIP in v1beta2, whose schema requires an address.
    let up = ok(convert(V2, cluster("")));
    assert_eq!(lb(&up, "apiServerManagedLoadBalancer")["ip"], "10.6.0.2");
    // Status reaches storage through the status subresource, which cannot write the
    // conversion-data annotation: the way back must not need it.
    let mut stored = up;
    if let Some(meta) = stored["metadata"].as_object_mut() {
        meta.remove("annotations");
    }
    let down = ok(convert(V1, stored));
    assert_eq!(lb(&down, "apiServerLoadBalancer")["ip"], "");
    assert_eq!(lb(&down, "apiServerLoadBalancer")["internalIP"], "10.6.0.2");
    // With the floating IP: the same in both.
    let up = ok(convert(V2, cluster("172.24.4.3")));
    assert_eq!(lb(&up, "apiServerManagedLoadBalancer")["ip"], "172.24.4.3");
    let down = ok(convert(V1, up));
    assert_eq!(lb(&down, "apiServerLoadBalancer")["ip"], "172.24.4.3");
}

// ---------------------------------------------------------------------------------------------
// Field mappings that upstream's conversion tests pin down, one case per row of theirs.

fn cluster_v1(spec: Value, status: Option<Value>) -> Value {
    let mut c = json!({
        "apiVersion": V1, "kind": "OpenStackCluster", "metadata": {"name": "c"},
        "spec": merged_spec(json!({"identityRef": {"type": "Secret", "name": "n", "cloudName": "c"}}), spec),
    });
    if let Some(status) = status {
        c["status"] = status;
    }
    c
}

fn merged_spec(mut base: Value, patch: Value) -> Value {
    if let (Some(b), Value::Object(p)) = (base.as_object_mut(), patch) {
        b.extend(p);
    }
    base
}

/// The object as its typed struct reads it (how the API server's defaulting leaves it).
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) -> Value {
    let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"));
    serde_json::to_value(t).unwrap_or_default()
}

/// Converts a v1beta1 cluster up, checks `expected` (pointer, value; `Null` = absent) on the
/// v1beta2 form, and checks it comes back as it was.
fn cluster_case(name: &str, v1: Value, expected: &[(&str, Value)]) {
    use crate::v1beta1::OpenStackCluster;
    let up = ok(convert(V2, v1.clone()));
    for (pointer, value) in expected {
        assert_eq!(
            up.pointer(pointer).unwrap_or(&Value::Null),
            value,
            "{name}: {pointer} in {up}"
        );
    }
    let back = ok(convert(V1, up));
    assert_eq!(
        typed::<OpenStackCluster>(&back),
        typed::<OpenStackCluster>(&v1),
        "{name}"
    );
}

#[test]
fn network_mtu_and_port_security_become_the_managed_network() {
    let cases = [
        (
            "both fields set",
            json!({"networkMTU": 1500, "disablePortSecurity": true}),
            json!({"mtu": 1500, "enablePortSecurity": false}),
        ),
        (
            "only MTU set",
            json!({"networkMTU": 1500}),
            json!({"mtu": 1500}),
        ),
        (
            "only DisablePortSecurity set to true",
            json!({"disablePortSecurity": true}),
            json!({"enablePortSecurity": false}),
        ),
        (
            "DisablePortSecurity explicitly false",
            json!({"disablePortSecurity": false}),
            json!({"enablePortSecurity": true}),
        ),
        ("neither set", json!({}), Value::Null),
    ];
    for (name, spec, managed) in cases {
        cluster_case(
            name,
            cluster_v1(spec, None),
            &[("/spec/managedNetwork", managed)],
        );
    }
}

#[test]
fn external_router_ips_become_the_managed_router() {
    let ip = |fixed: &str, subnet: Value| json!({"fixedIP": fixed, "subnet": subnet});
    let cases = [
        (
            "single IP with subnet filter name",
            json!([ip("10.0.0.1", json!({"filter": {"name": "my-subnet"}}))]),
        ),
        (
            "multiple IPs",
            json!([
                ip("10.0.0.1", json!({"filter": {"name": "subnet-a"}})),
                ip("10.0.0.2", json!({"filter": {"name": "subnet-b"}}))
            ]),
        ),
        (
            "subnet by ID",
            json!([ip(
                "10.0.0.1",
                json!({"id": "9f8e7d6c-5b4a-4c3d-8e2f-1a0b9c8d7e6f"})
            )]),
        ),
    ];
    for (name, ips) in cases {
        let v1 = cluster_v1(json!({"externalRouterIPs": ips.clone()}), None);
        cluster_case(name, v1, &[("/spec/managedRouter/externalIPs", ips)]);
    }
    cluster_case(
        "no ExternalRouterIPs",
        cluster_v1(json!({}), None),
        &[("/spec/managedRouter", Value::Null)],
    );
}

#[test]
fn all_nodes_rules_become_cluster_nodes_rules() {
    let r = |name: &str, direction: &str| json!({"name": name, "direction": direction});
    let groups = |extra: Value| merged_spec(json!({"allowAllInClusterTraffic": false}), extra);
    let cases = [
        (
            "single rule",
            groups(json!({"allNodesSecurityGroupRules": [r("allow-http", "ingress")]})),
            json!([r("allow-http", "ingress")]),
        ),
        (
            "multiple rules",
            groups(
                json!({"allNodesSecurityGroupRules": [r("allow-http", "ingress"), r("allow-https", "ingress")]}),
            ),
            json!([r("allow-http", "ingress"), r("allow-https", "ingress")]),
        ),
        (
            "mixed with other node rules",
            groups(json!({
                "allNodesSecurityGroupRules": [r("all-nodes-rule", "ingress")],
                "controlPlaneNodesSecurityGroupRules": [r("cp-rule", "egress")],
                "workerNodesSecurityGroupRules": [r("worker-rule", "ingress")],
            })),
            json!([r("all-nodes-rule", "ingress")]),
        ),
        (
            "no AllNodesSecurityGroupRules",
            json!({"allowAllInClusterTraffic": true}),
            Value::Null,
        ),
    ];
    for (name, msg, cluster_nodes) in cases {
        let v1 = cluster_v1(json!({"managedSecurityGroups": msg}), None);
        cluster_case(
            name,
            v1,
            &[
                (
                    "/spec/managedSecurityGroups/clusterNodesSecurityGroupRules",
                    cluster_nodes,
                ),
                (
                    "/spec/managedSecurityGroups/allNodesSecurityGroupRules",
                    Value::Null,
                ),
            ],
        );
    }
    cluster_case(
        "no ManagedSecurityGroups at all",
        cluster_v1(json!({}), None),
        &[("/spec/managedSecurityGroups", Value::Null)],
    );
}

#[test]
fn api_server_fields_group_under_api_server() {
    let cases = [
        (
            "all fields set",
            json!({"apiServerFloatingIP": "203.0.113.10", "apiServerFixedIP": "10.0.0.5",
                "apiServerPort": 6443, "disableAPIServerFloatingIP": true,
                "apiServerLoadBalancer": {"enabled": true}}),
            json!({"floatingIP": "203.0.113.10", "fixedIP": "10.0.0.5", "port": 6443,
                "enableFloatingIP": false, "managedLoadBalancer": {"enabled": true}}),
        ),
        (
            "only floatingIP set",
            json!({"apiServerFloatingIP": "203.0.113.10"}),
            json!({"floatingIP": "203.0.113.10"}),
        ),
        (
            "only fixedIP set",
            json!({"apiServerFixedIP": "10.0.0.5"}),
            json!({"fixedIP": "10.0.0.5"}),
        ),
        (
            "only port set",
            json!({"apiServerPort": 6443}),
            json!({"port": 6443}),
        ),
        (
            "DisableAPIServerFloatingIP explicitly true",
            json!({"disableAPIServerFloatingIP": true}),
            json!({"enableFloatingIP": false}),
        ),
        (
            "DisableAPIServerFloatingIP explicitly false",
            json!({"disableAPIServerFloatingIP": false}),
            json!({"enableFloatingIP": true}),
        ),
        (
            "only loadBalancer set",
            json!({"apiServerLoadBalancer": {"enabled": true}}),
            json!({"managedLoadBalancer": {"enabled": true}}),
        ),
        (
            "loadBalancer disabled explicitly",
            json!({"apiServerLoadBalancer": {"enabled": false}}),
            json!({"managedLoadBalancer": {"enabled": false}}),
        ),
        (
            "disableFloatingIP with fixedIP",
            json!({"disableAPIServerFloatingIP": true, "apiServerFixedIP": "10.0.0.5"}),
            json!({"enableFloatingIP": false, "fixedIP": "10.0.0.5"}),
        ),
        ("no APIServer fields set", json!({}), Value::Null),
    ];
    for (name, spec, api_server) in cases {
        cluster_case(
            name,
            cluster_v1(spec, None),
            &[("/spec/apiServer", api_server)],
        );
    }
}

#[test]
fn disable_external_network_becomes_enable_external_network() {
    for (name, spec, enable) in [
        (
            "explicitly true",
            json!({"disableExternalNetwork": true}),
            json!(false),
        ),
        (
            "explicitly false",
            json!({"disableExternalNetwork": false}),
            json!(true),
        ),
        ("unset", json!({}), Value::Null),
    ] {
        cluster_case(
            name,
            cluster_v1(spec, None),
            &[("/spec/enableExternalNetwork", enable)],
        );
    }
}

#[test]
fn the_api_server_load_balancer_status_is_renamed() {
    let lb = json!({"name": "test-lb", "id": "lb-id-123", "ip": "192.168.1.100",
        "internalIP": "10.0.0.10"});
    let status = json!({"ready": false, "apiServerLoadBalancer": lb.clone()});
    cluster_case(
        "load balancer",
        cluster_v1(json!({}), Some(status)),
        &[
            ("/status/apiServerManagedLoadBalancer", lb),
            ("/status/apiServerLoadBalancer", Value::Null),
        ],
    );
    cluster_case(
        "no load balancer",
        cluster_v1(json!({}), Some(json!({"ready": false}))),
        &[("/status/apiServerManagedLoadBalancer", Value::Null)],
    );
}

#[test]
fn port_disable_port_security_becomes_enable_port_security() {
    use crate::v1beta1::OpenStackMachine;
    for (name, port, enable) in [
        (
            "explicitly true",
            json!({"disablePortSecurity": true}),
            json!(false),
        ),
        (
            "explicitly false",
            json!({"disablePortSecurity": false}),
            json!(true),
        ),
        ("unset", json!({}), Value::Null),
    ] {
        let mut m = machine_v1();
        m.as_object_mut().map(|o| o.remove("status"));
        m["spec"]["ports"] = json!([port]);
        let up = ok(convert(V2, m.clone()));
        assert_eq!(
            up.pointer("/spec/ports/0/enablePortSecurity")
                .unwrap_or(&Value::Null),
            &enable,
            "{name}: {up}"
        );
        let back = ok(convert(V1, up));
        assert_eq!(
            typed::<OpenStackMachine>(&back),
            typed::<OpenStackMachine>(&m),
            "{name}"
        );
    }
}

#[test]
fn ready_follows_the_ready_condition_of_v1beta2() {
    let cluster = |conditions: Value| {
        json!({"apiVersion": V2, "kind": "OpenStackCluster", "metadata": {"name": "c"},
            "spec": {"identityRef": {"name": "n", "cloudName": "c"}},
            "status": {"conditions": conditions}})
    };
    let condition = |t: &str, status: &str| {
        json!({"type": t, "status": status, "reason": "R", "message": "",
            "lastTransitionTime": "2024-01-02T03:04:05Z"})
    };
    for (conditions, ready) in [
        (json!([condition("Ready", "True")]), true),
        (json!([condition("Ready", "False")]), false),
        (json!([condition("Ready", "Unknown")]), false),
        (json!([condition("NetworkReady", "True")]), false),
        (
            json!([
                condition("NetworkReady", "False"),
                condition("Ready", "True")
            ]),
            true,
        ),
        (json!([]), false),
    ] {
        let down = ok(convert(V1, cluster(conditions.clone())));
        assert_eq!(down["status"]["ready"], json!(ready), "{conditions}");
    }
    let machine = json!({"apiVersion": V2, "kind": "OpenStackMachine", "metadata": {"name": "m"},
        "spec": {"flavor": {"filter": {"name": "m1.small"}}, "image": {"filter": {"name": "ubuntu"}}},
        "status": {"conditions": [condition("Ready", "True")]}});
    assert_eq!(ok(convert(V1, machine))["status"]["ready"], json!(true));
}

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
    let mut m = machine_v1();
    m["spec"].as_object_mut().map(|s| s.remove("flavor"));
    let err = convert(V2, m).err().map(|e| e.path);
    assert_eq!(err.as_deref(), Some("spec.flavor"));
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

//! Conversion behind a real kube-apiserver: OpenStackCluster, OpenStackClusterTemplate,
//! OpenStackMachine and OpenStackMachineTemplate serve `v1beta1` and `v1beta2` (stored), and the
//! API server calls capo's conversion webhook (the test environment runs it on 127.0.0.1, see
//! `capo_testkit`) for every request in the version not stored.
//!
//! - A v1beta1 object read as v1beta2 and written back unchanged (spec and status) is stored
//!   byte for byte as it was: the API server skips the write, so `resourceVersion` does not
//!   move.
//! - Every document of upstream main's templates (all v1beta2) is created unchanged, and reads
//!   back the same in v1beta2 and converted in v1beta1.
//! - A v1beta1 write with no faithful v1beta2 form is refused, the field named, and nothing is
//!   written. (An object stored in v1beta1 before the upgrade that has none stops the storage
//!   migration instead: `crates/controller/tests/storage_migration.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde::Deserialize;
use serde_json::{Value, json};

const GROUP: &str = "infrastructure.cluster.x-k8s.io";

fn resource(kind: &str, version: &str) -> ApiResource {
    let plural = format!("{}s", kind.to_lowercase());
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, version, kind), &plural)
}

fn api(client: &Client, ns: &str, kind: &str, version: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &resource(kind, version))
}

async fn get(client: &Client, ns: &str, kind: &str, version: &str, name: &str) -> Value {
    let object = api(client, ns, kind, version).get(name).await;
    serde_json::to_value(object.unwrap_or_else(|e| panic!("{kind} {name} in {version}: {e}")))
        .unwrap()
}

/// The version part of an object's `apiVersion`.
fn version_of(object: &Value) -> &str {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    api_version.rsplit('/').next().unwrap_or_default()
}

async fn create(client: &Client, ns: &str, doc: &Value) -> Value {
    let kind = doc["kind"].as_str().unwrap();
    let version = version_of(doc);
    let mut object: DynamicObject = serde_json::from_value(doc.clone()).unwrap();
    object.metadata.namespace = Some(ns.to_owned());
    let created = api(client, ns, kind, version)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating {kind} in {version}: {e}"));
    serde_json::to_value(created).unwrap()
}

/// Writes `object` back in its own version: the main resource, then (where it has one) the
/// status subresource.
async fn write_back(client: &Client, ns: &str, object: &Value) -> Value {
    let kind = object["kind"].as_str().unwrap();
    let version = version_of(object);
    let name = object["metadata"]["name"].as_str().unwrap();
    let api = api(client, ns, kind, version);
    let typed: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    let mut written = api
        .replace(name, &PostParams::default(), &typed)
        .await
        .unwrap_or_else(|e| panic!("replacing {kind} {name} in {version}: {e}"));
    if object.get("status").is_some() {
        let mut with_status: Value = serde_json::to_value(&written).unwrap();
        with_status["status"] = object["status"].clone();
        written = api
            .replace_status(
                name,
                &PostParams::default(),
                &serde_json::from_value(with_status).unwrap(),
            )
            .await
            .unwrap_or_else(|e| panic!("replacing the status of {kind} {name}: {e}"));
    }
    serde_json::to_value(written).unwrap()
}

/// Sets `status` through the status subresource, in the object's version.
async fn set_status(client: &Client, ns: &str, object: &Value, status: Value) -> Value {
    let mut object = object.clone();
    object["status"] = status;
    let kind = object["kind"].as_str().unwrap();
    let version = version_of(&object);
    let name = object["metadata"]["name"].as_str().unwrap().to_owned();
    let updated = api(client, ns, kind, version)
        .replace_status(
            &name,
            &PostParams::default(),
            &serde_json::from_value(object.clone()).unwrap(),
        )
        .await
        .unwrap_or_else(|e| panic!("status of {kind} {name}: {e}"));
    serde_json::to_value(updated).unwrap()
}

/// What a version change may not alter: everything but `apiVersion` and the bookkeeping
/// the API server itself keeps.
fn content(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("apiVersion");
    }
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    object
}

const UUID_A: &str = "7f8e1d2c-3b4a-4c5d-9e6f-0a1b2c3d4e5f";
const UUID_B: &str = "0c7d6e5f-4a3b-4c2d-8e1f-9a8b7c6d5e4f";

/// v1beta1 objects that use the fields v1beta2 renames or regroups, with a status where the
/// kind has one.
fn v1beta1_objects() -> Vec<(Value, Option<Value>)> {
    let v1 = format!("{GROUP}/v1beta1");
    let condition = |t: &str, status: &str, severity: Option<&str>| {
        let mut c =
            json!({"type": t, "status": status, "lastTransitionTime": "2026-11-25T10:00:00Z"});
        if let Some(severity) = severity {
            c["severity"] = json!(severity);
            c["reason"] = json!("Waiting");
            c["message"] = json!("the load balancer is provisioning");
        }
        c
    };
    let cluster_spec = json!({
        "identityRef": {"name": "cloud-config", "cloudName": "openstack"},
        "managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["10.0.0.2"]}],
        "externalNetwork": {"id": UUID_A},
        "disableExternalNetwork": false,
        "apiServerLoadBalancer": {"enabled": true, "allowedCIDRs": ["10.0.0.0/8"]},
        "apiServerFixedIP": "10.6.0.10",
        "apiServerPort": 6443,
        "managedSecurityGroups": {
            "allowAllInClusterTraffic": true,
            "allNodesSecurityGroupRules": [{
                "name": "bgp", "direction": "ingress", "etherType": "IPv4",
                "protocol": "tcp", "portRangeMin": 179, "portRangeMax": 179,
                "remoteManagedGroups": ["controlplane", "worker"]
            }]
        },
        "bastion": {"enabled": true, "spec": {"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}}}},
        "controlPlaneAvailabilityZones": ["az1", "az2"],
        "tags": ["capo"]
    });
    let machine_spec = json!({
        "flavor": "m1.medium",
        "image": {"id": UUID_B},
        "sshKeyName": "ops",
        "ports": [{"network": {"id": UUID_A}, "disablePortSecurity": true}],
        "rootVolume": {"sizeGiB": 30, "type": "ssd"},
        "securityGroups": [{"filter": {"name": "extra"}}]
    });
    vec![
        (
            json!({"apiVersion": v1, "kind": "OpenStackCluster",
                   "metadata": {"name": "osc", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
                   "spec": cluster_spec}),
            Some(json!({
                "ready": false,
                "failureReason": "InvalidConfiguration",
                "failureMessage": "external network not found",
                "conditions": [condition("Ready", "False", Some("Warning")), condition("NetworkReady", "True", None)],
                "failureDomains": {"az2": {"controlPlane": true}, "az1": {"controlPlane": true, "attributes": {"rack": "r1"}}},
                "network": {"id": UUID_A, "name": "k8s-clusterapi-cluster-ns-c1"},
                "initialization": {"provisioned": false}
            })),
        ),
        (
            json!({"apiVersion": v1, "kind": "OpenStackClusterTemplate",
                   "metadata": {"name": "osct"},
                   "spec": {"template": {"spec": cluster_spec}}}),
            None,
        ),
        (
            json!({"apiVersion": v1, "kind": "OpenStackMachine",
                   "metadata": {"name": "osm"}, "spec": machine_spec}),
            Some(json!({
                "ready": true,
                "conditions": [condition("Ready", "True", None), condition("InstanceReady", "True", None)],
                "addresses": [{"type": "InternalIP", "address": "10.6.0.7"}],
                "instanceState": "ACTIVE",
                "initialization": {"provisioned": true}
            })),
        ),
        (
            json!({"apiVersion": v1, "kind": "OpenStackMachineTemplate",
            "metadata": {"name": "osmt"},
            "spec": {"template": {"spec": {
                "flavor": "m1.large", "flavorID": UUID_A, "image": {"filter": {"name": "ubuntu"}}
            }}}}),
            None,
        ),
    ]
}

#[tokio::test]
async fn v1beta1_objects_read_and_written_as_v1beta2_stay_byte_for_byte_the_same() {
    let env = capo_testkit::shared_env().await.unwrap();
    let _logs = env.logs_on_failure();
    let client = env.client();
    let ns = env.new_namespace("conversion").await.unwrap();
    for (doc, status) in v1beta1_objects() {
        let kind = doc["kind"].as_str().unwrap().to_owned();
        let name = doc["metadata"]["name"].as_str().unwrap().to_owned();
        let mut stored = create(&client, &ns, &doc).await;
        if let Some(status) = status {
            stored = set_status(&client, &ns, &stored, status).await;
        }
        let as_v1beta2 = get(&client, &ns, &kind, "v1beta2", &name).await;
        assert_eq!(
            as_v1beta2["apiVersion"],
            json!(format!("{GROUP}/v1beta2")),
            "{kind}"
        );
        assert_eq!(
            as_v1beta2["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"],
            "{kind}"
        );
        let written = write_back(&client, &ns, &as_v1beta2).await;
        assert_eq!(
            written["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"],
            "{kind}: writing the v1beta2 form back changed the stored object"
        );
        let after = get(&client, &ns, &kind, "v1beta1", &name).await;
        assert_eq!(content(&after), content(&stored), "{kind}");
    }

    // What v1beta2 shows: the regrouped fields, and no v1beta1 leftovers.
    let cluster = get(&client, &ns, "OpenStackCluster", "v1beta2", "osc").await;
    assert_eq!(cluster["spec"]["apiServer"]["fixedIP"], json!("10.6.0.10"));
    assert_eq!(
        cluster["spec"]["apiServer"]["managedLoadBalancer"]["enabled"],
        json!(true)
    );
    assert_eq!(
        cluster["status"]["failureDomains"],
        json!([{"name": "az1", "controlPlane": true, "attributes": {"rack": "r1"}},
               {"name": "az2", "controlPlane": true}])
    );
    assert!(cluster["status"].get("ready").is_none());
    assert!(cluster["status"].get("failureReason").is_none());
    let machine = get(&client, &ns, "OpenStackMachine", "v1beta2", "osm").await;
    assert_eq!(
        machine["spec"]["flavor"],
        json!({"filter": {"name": "m1.medium"}})
    );
    assert_eq!(
        machine["spec"]["ports"][0]["enablePortSecurity"],
        json!(false)
    );
    assert_eq!(
        machine["status"]["initialization"]["provisioned"],
        json!(true)
    );
    let ready = machine["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], json!("True"));
    assert!(ready["reason"].as_str().is_some_and(|r| !r.is_empty()));
}

fn upstream_templates() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/capo-main-2026-08-21/templates");
    assert!(
        dir.is_dir(),
        "upstream templates not found at {}: this test needs ../shared/reference next to the \
         workspace",
        dir.display()
    );
    dir
}

/// A value for every variable upstream main's templates use without a default.
fn template_vars() -> std::collections::BTreeMap<&'static str, &'static str> {
    [
        ("CLUSTER_NAME", "upstream"),
        ("CONTROL_PLANE_MACHINE_COUNT", "1"),
        ("WORKER_MACHINE_COUNT", "1"),
        ("KUBERNETES_VERSION", "v1.34.1"),
        ("COREOS_OPENSTACK_HOSTNAME", "node.example"),
        ("COREOS_OPENSTACK_INSTANCE_UUID", UUID_B),
        ("FLATCAR_IMAGE_NAME", "flatcar"),
        ("OPENSTACK_CLOUD", "openstack"),
        ("OPENSTACK_CLOUD_CACERT_B64", ""),
        ("OPENSTACK_CLOUD_YAML_B64", ""),
        ("OPENSTACK_CONTROL_PLANE_MACHINE_FLAVOR", "m1.medium"),
        ("OPENSTACK_NODE_MACHINE_FLAVOR", "m1.small"),
        ("OPENSTACK_DNS_NAMESERVERS", "10.0.0.2"),
        ("OPENSTACK_EXTERNAL_NETWORK_ID", UUID_A),
        ("OPENSTACK_FAILURE_DOMAIN", "nova"),
        ("OPENSTACK_FLATCAR_IMAGE_NAME", "flatcar"),
        ("OPENSTACK_IMAGE_NAME", "ubuntu"),
        ("OPENSTACK_IMAGE_NAME_UPGRADE_FROM", "ubuntu-old"),
        ("OPENSTACK_SSH_KEY_NAME", "ops"),
    ]
    .into_iter()
    .collect()
}

/// Whether every value of `wanted` is in `actual` (objects may have more keys); the first path
/// that differs otherwise.
fn contains(actual: &Value, wanted: &Value, path: &str) -> Result<(), String> {
    match (actual, wanted) {
        (Value::Object(a), Value::Object(w)) => w.iter().try_for_each(|(k, v)| {
            contains(a.get(k).unwrap_or(&Value::Null), v, &format!("{path}.{k}"))
        }),
        (Value::Array(a), Value::Array(w)) if a.len() == w.len() => a
            .iter()
            .zip(w)
            .enumerate()
            .try_for_each(|(i, (a, w))| contains(a, w, &format!("{path}[{i}]"))),
        (a, w) if a == w => Ok(()),
        _ => Err(path.to_owned()),
    }
}

#[tokio::test]
async fn upstream_mains_v1beta2_templates_apply_unchanged_and_read_back_in_both_versions() {
    let env = capo_testkit::shared_env().await.unwrap();
    let _logs = env.logs_on_failure();
    let client = env.client();
    let kinds = [
        "OpenStackCluster",
        "OpenStackClusterTemplate",
        "OpenStackMachine",
        "OpenStackMachineTemplate",
    ];
    let mut files: Vec<PathBuf> = std::fs::read_dir(upstream_templates())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut applied = 0;
    for file in files {
        let ns = env.new_namespace("upstream-templates").await.unwrap();
        let text =
            capo_testkit::envsubst(&std::fs::read_to_string(&file).unwrap(), &template_vars())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for doc in yaml_serde::Deserializer::from_str(&text) {
            let doc = Value::deserialize(doc).unwrap();
            let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
            if !kinds.contains(&kind.as_str()) || doc["apiVersion"] != format!("{GROUP}/v1beta2") {
                continue;
            }
            let created = create(&client, &ns, &doc).await;
            let name = created["metadata"]["name"].as_str().unwrap().to_owned();
            // The server adds the schema's defaults, nothing else.
            if let Err(path) = contains(&created["spec"], &doc["spec"], "spec") {
                panic!("{}: {kind} {name}: {path} changed", file.display());
            }
            let v1beta1 = get(&client, &ns, &kind, "v1beta1", &name).await;
            assert_eq!(v1beta1["apiVersion"], json!(format!("{GROUP}/v1beta1")));
            let v1beta2 = get(&client, &ns, &kind, "v1beta2", &name).await;
            assert_eq!(
                content(&v1beta2),
                content(&created),
                "{}: {kind} {name}",
                file.display()
            );
            applied += 1;
        }
    }
    println!("upstream main v1beta2 documents applied: {applied}");
    assert_eq!(
        applied, 15,
        "every v1beta2 document of upstream main's templates"
    );
}

#[tokio::test]
async fn a_v1beta1_write_without_a_v1beta2_form_is_refused_naming_the_field() {
    let env = capo_testkit::shared_env().await.unwrap();
    let client = env.client();
    let ns = env.new_namespace("conversion-refused").await.unwrap();
    // v1beta1's conditions are a plain list, which may repeat a type; v1beta2's are a map
    // keyed by type. Stored in v1beta2, such a status cannot be written at all.
    let doc = json!({"apiVersion": format!("{GROUP}/v1beta1"), "kind": "OpenStackMachine",
                     "metadata": {"name": "twice-ready"},
                     "spec": {"flavor": "m1.small", "image": {"id": UUID_B}}});
    let mut created = create(&client, &ns, &doc).await;
    let ready =
        json!({"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-25T10:00:00Z"});
    created["status"] = json!({"conditions": [ready.clone(), ready]});
    let err = api(&client, &ns, "OpenStackMachine", "v1beta1")
        .replace_status(
            "twice-ready",
            &PostParams::default(),
            &serde_json::from_value(created).unwrap(),
        )
        .await
        .expect_err("no v1beta2 form");
    let message = err.to_string();
    assert!(message.contains("status.conditions[1].type"), "{message}");
    assert!(message.contains("OpenStackMachine"), "{message}");
    // Nothing was written: the object reads as before in both versions.
    for version in ["v1beta1", "v1beta2"] {
        let now = get(&client, &ns, "OpenStackMachine", version, "twice-ready").await;
        assert!(now["status"]["conditions"].is_null(), "{now}");
    }
}

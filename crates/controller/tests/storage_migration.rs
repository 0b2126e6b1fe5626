//! Upgrading a management cluster from upstream CAPO v0.14 (or capo 0.2), whose CRDs store
//! `v1beta1`, to capo's CRDs, which store `v1beta2`: on a real kube-apiserver with upstream
//! v0.14.7's CRDs (`../shared/reference/capo-v0.14.7/crds`), objects written in v0.14's form are
//! still read unchanged after capo's CRDs replace upstream's, the storage-version migration
//! rewrites each of them in `v1beta2` (checked in etcd itself) and trims the CRDs'
//! `status.storedVersions`, and every object reads back through `v1beta1` as it was before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use capo_controller::storage_migration::{Migrated, migrate};
use capo_testkit::{TestEnv, TestEnvOptions};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const GROUP: &str = "infrastructure.cluster.x-k8s.io";

fn upstream_crds() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/capo-v0.14.7/crds");
    assert!(dir.is_dir(), "{} not found", dir.display());
    dir
}

fn resource(kind: &str, version: &str) -> ApiResource {
    ApiResource {
        group: GROUP.to_owned(),
        version: version.to_owned(),
        api_version: format!("{GROUP}/{version}"),
        kind: kind.to_owned(),
        plural: format!("{}s", kind.to_lowercase()),
    }
}

/// The objects as upstream v0.14 writes them: (kind, body, status).
fn v0_14_objects() -> Vec<(&'static str, Value, Option<Value>)> {
    let cluster_spec = json!({
        "identityRef": {"name": "c1-cloud-config", "cloudName": "openstack"},
        "externalNetwork": {"id": "8a7ad3b6-3f0e-4a2c-9d57-4bd2b1e3c0a1"},
        "managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["10.0.0.2"]}],
        "apiServerLoadBalancer": {"enabled": true},
        "disableAPIServerFloatingIP": true,
        "managedSecurityGroups": {"allowAllInClusterTraffic": true},
    });
    let machine_spec = json!({
        "flavor": "m1.small",
        "image": {"filter": {"name": "ubuntu-2404-kube-v1.34.3"}},
        "sshKeyName": "ops",
    });
    let at = "2026-11-01T10:00:00Z";
    vec![
        (
            "OpenStackCluster",
            json!({"metadata": {"name": "c1", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
                   "spec": cluster_spec}),
            // A cluster without an API floating IP: v0.14 leaves `ip` empty, which v1beta2
            // cannot hold (required, minLength 1).
            Some(json!({
                "ready": true,
                "network": {"id": "0b9a6a3e-0000-4000-8000-000000000001", "name": "k8s-clusterapi-cluster-ns-c1",
                            "subnets": [{"id": "0b9a6a3e-0000-4000-8000-000000000002", "name": "k8s-clusterapi-cluster-ns-c1", "cidr": "10.6.0.0/24"}]},
                "apiServerLoadBalancer": {"id": "0b9a6a3e-0000-4000-8000-000000000003", "name": "k8s-clusterapi-cluster-ns-c1-kubeapi",
                                          "ip": "", "internalIP": "10.6.0.10"},
                "failureDomains": {"nova": {"controlPlane": true}},
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at}],
            })),
        ),
        (
            "OpenStackMachine",
            json!({"metadata": {"name": "c1-md-0-x"},
                   "spec": machine_spec.clone().as_object().unwrap().clone().into_iter()
                       .chain([("providerID".to_owned(), json!("openstack:///5d7e0c3e-0000-4000-8000-000000000004"))])
                       .collect::<serde_json::Map<_, _>>()}),
            // A machine whose server was deleted behind its back: failureReason and a
            // condition severity, which v1beta2 has no field for.
            Some(json!({
                "ready": false,
                "instanceID": "5d7e0c3e-0000-4000-8000-000000000004",
                "instanceState": "ERROR",
                "failureReason": "UpdateError",
                "failureMessage": "server 5d7e0c3e-0000-4000-8000-000000000004 was deleted",
                "conditions": [
                    {"type": "Ready", "status": "False", "severity": "Error", "reason": "InstanceDeleted",
                     "message": "server 5d7e0c3e-0000-4000-8000-000000000004 was deleted", "lastTransitionTime": at},
                ],
            })),
        ),
        (
            "OpenStackMachineTemplate",
            json!({"metadata": {"name": "c1-md-0"}, "spec": {"template": {"spec": machine_spec}}}),
            None,
        ),
        (
            "OpenStackClusterTemplate",
            json!({"metadata": {"name": "c1-class"}, "spec": {"template": {"spec": cluster_spec}}}),
            None,
        ),
    ]
}

/// What a reader sees of an object: everything but what the API server maintains.
fn seen(o: &DynamicObject) -> Value {
    let mut v = serde_json::to_value(o).unwrap();
    let meta = v["metadata"].as_object_mut().unwrap();
    for k in [
        "resourceVersion",
        "managedFields",
        "generation",
        "creationTimestamp",
    ] {
        meta.remove(k);
    }
    v
}

async fn stored_api_version(env: &TestEnv, kind: &str, ns: &str, name: &str) -> String {
    let plural = format!("{}s", kind.to_lowercase());
    let o = env
        .stored_object(GROUP, &plural, Some(ns), name)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{kind} {ns}/{name} not in etcd"));
    o["apiVersion"].as_str().unwrap_or_default().to_owned()
}

async fn stored_versions(client: &Client, kind: &str) -> Vec<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds
        .get(&format!("{}s.{GROUP}", kind.to_lowercase()))
        .await
        .unwrap();
    crd.status.unwrap().stored_versions.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_stored_by_upstream_v0_14_are_migrated_to_v1beta2_without_loss() {
    let env = TestEnv::start_with(TestEnvOptions::default().infrastructure_crds(upstream_crds()))
        .await
        .unwrap();
    let _logs = env.logs_on_failure();
    let client = env.client();
    let ns = env.new_namespace("upgrade").await.unwrap();
    let objects = v0_14_objects();

    // Written by "upstream v0.14": stored in v1beta1.
    for (kind, body, status) in &objects {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &ns, &resource(kind, "v1beta1"));
        let mut body = body.clone();
        body["apiVersion"] = json!(format!("{GROUP}/v1beta1"));
        body["kind"] = json!(kind);
        let o: DynamicObject = serde_json::from_value(body).unwrap();
        let created = api.create(&PostParams::default(), &o).await.unwrap();
        if let Some(status) = status {
            let name = created.metadata.name.clone().unwrap();
            api.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": status})),
            )
            .await
            .unwrap();
        }
        assert_eq!(
            stored_api_version(&env, kind, &ns, o.metadata.name.as_deref().unwrap()).await,
            format!("{GROUP}/v1beta1")
        );
    }

    // capo's CRDs replace upstream's: v1beta2 becomes the storage version, and the API server
    // still holds every object in v1beta1 (reads convert it).
    env.install_our_crds().await.unwrap();
    let mut before = Vec::new();
    for (kind, body, _) in &objects {
        let name = body["metadata"]["name"].as_str().unwrap();
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &ns, &resource(kind, "v1beta1"));
        before.push(seen(&api.get(name).await.unwrap()));
        assert_eq!(
            stored_versions(&client, kind).await,
            ["v1beta1", "v1beta2"],
            "{kind}"
        );
        assert_eq!(
            stored_api_version(&env, kind, &ns, name).await,
            format!("{GROUP}/v1beta1")
        );
    }

    let names = our_crd_names();
    let report = migrate(&client, &names).await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let mut migrated = report.migrated;
    migrated.sort_by(|a, b| a.crd.cmp(&b.crd));
    let expected: Vec<Migrated> = {
        let mut e: Vec<Migrated> = objects
            .iter()
            .map(|(kind, _, _)| Migrated {
                crd: format!("{}s.{GROUP}", kind.to_lowercase()),
                from: vec!["v1beta1".to_owned(), "v1beta2".to_owned()],
                to: "v1beta2".to_owned(),
                rewritten: 1,
            })
            .collect();
        e.sort_by(|a, b| a.crd.cmp(&b.crd));
        e
    };
    assert_eq!(
        migrated, expected,
        "the four two-version CRDs, one object each; the v1alpha1 kinds kept their storage version"
    );

    for ((kind, body, _), before) in objects.iter().zip(&before) {
        let name = body["metadata"]["name"].as_str().unwrap();
        assert_eq!(stored_versions(&client, kind).await, ["v1beta2"], "{kind}");
        assert_eq!(
            stored_api_version(&env, kind, &ns, name).await,
            format!("{GROUP}/v1beta2"),
            "{kind} rewritten in the storage version"
        );
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &ns, &resource(kind, "v1beta1"));
        let after = seen(&api.get(name).await.unwrap());
        assert_eq!(
            &after, before,
            "{kind} reads back through v1beta1 as it was"
        );
    }

    // Done once: a second pass finds nothing to do.
    let again = migrate(&client, &names).await;
    assert!(
        again.migrated.is_empty() && again.failures.is_empty(),
        "{again:?}"
    );
}

fn our_crd_names() -> Vec<String> {
    capo_api::crds::all()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_without_a_v1beta2_form_stops_its_crds_migration_and_names_the_field() {
    let env = TestEnv::start_with(TestEnvOptions::default().infrastructure_crds(upstream_crds()))
        .await
        .unwrap();
    let _logs = env.logs_on_failure();
    let client = env.client();
    let ns = env.new_namespace("upgrade-bad").await.unwrap();
    let machines: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &resource("OpenStackMachine", "v1beta1"),
    );
    let spec = json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}}});
    // v1beta1 allows a condition type twice; v1beta2's conditions are keyed by type. The good
    // machines are listed before and after the bad one.
    for name in ["a-good", "b-twice-ready", "c-good"] {
        let o: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/v1beta1"), "kind": "OpenStackMachine",
            "metadata": {"name": name}, "spec": spec}))
        .unwrap();
        machines.create(&PostParams::default(), &o).await.unwrap();
    }
    let ready =
        json!({"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T10:00:00Z"});
    machines
        .patch_status(
            "b-twice-ready",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"conditions": [ready.clone(), ready]}})),
        )
        .await
        .unwrap();
    let templates: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &resource("OpenStackMachineTemplate", "v1beta1"),
    );
    let t: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1beta1"), "kind": "OpenStackMachineTemplate",
        "metadata": {"name": "t"}, "spec": {"template": {"spec": spec}}}))
    .unwrap();
    templates.create(&PostParams::default(), &t).await.unwrap();
    env.install_our_crds().await.unwrap();

    let report = migrate(&client, &our_crd_names()).await;
    let failures: Vec<String> = report.failures.iter().map(ToString::to_string).collect();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].contains(&format!("{ns}/b-twice-ready"))
            && failures[0].contains("status.conditions[1].type"),
        "the object and the field are named: {}",
        failures[0]
    );
    // The machine CRD keeps both stored versions; the good machines were rewritten anyway, the
    // refused one is untouched and still reads in v1beta1. Other CRDs are not held up.
    assert_eq!(
        stored_versions(&client, "OpenStackMachine").await,
        ["v1beta1", "v1beta2"]
    );
    for (name, version) in [
        ("a-good", "v1beta2"),
        ("b-twice-ready", "v1beta1"),
        ("c-good", "v1beta2"),
    ] {
        assert_eq!(
            stored_api_version(&env, "OpenStackMachine", &ns, name).await,
            format!("{GROUP}/{version}"),
            "{name}"
        );
    }
    let bad = machines.get("b-twice-ready").await.unwrap();
    assert_eq!(
        bad.data["status"]["conditions"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        stored_versions(&client, "OpenStackMachineTemplate").await,
        ["v1beta2"]
    );
    let migrated: Vec<&str> = report.migrated.iter().map(|m| m.crd.as_str()).collect();
    assert!(
        !migrated.contains(&format!("openstackmachines.{GROUP}").as_str())
            && migrated.contains(&format!("openstackmachinetemplates.{GROUP}").as_str()),
        "{migrated:?}"
    );

    // While v1beta2 is the storage version, the API server converts the stored object on
    // every write, so it cannot be fixed, or even deleted.
    let stuck = machines
        .delete("b-twice-ready", &Default::default())
        .await
        .expect_err("the stored object has no v1beta2 form");
    assert!(
        stuck.to_string().contains("status.conditions[1].type"),
        "{stuck}"
    );
    // The documented remedy (docs/v1beta2.md): store v1beta1 for a moment, fix the object in
    // v1beta1, re-apply capo's CRDs; the next pass completes.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = format!("openstackmachines.{GROUP}");
    let mut crd = crds.get(&name).await.unwrap();
    for version in &mut crd.spec.versions {
        version.storage = version.name == "v1beta1";
    }
    crds.replace(&name, &PostParams::default(), &crd)
        .await
        .unwrap();
    // The API server picks up a CRD's new storage version shortly after the CRD changes.
    let fixed = json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T10:00:00Z"}]}});
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while let Err(e) = machines
        .patch_status(
            "b-twice-ready",
            &PatchParams::default(),
            &Patch::Merge(&fixed),
        )
        .await
    {
        assert!(std::time::Instant::now() < deadline, "{e}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    env.install_our_crds().await.unwrap();
    let report = migrate(&client, &our_crd_names()).await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(
        stored_versions(&client, "OpenStackMachine").await,
        ["v1beta2"]
    );
    assert_eq!(
        stored_api_version(&env, "OpenStackMachine", &ns, "b-twice-ready").await,
        format!("{GROUP}/v1beta2")
    );
}

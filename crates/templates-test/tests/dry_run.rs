//! Every template's objects pass a server-side dry-run against a real kube-apiserver with the
//! capo, Cluster API (core, kubeadm bootstrap and control plane) and ORC CRDs installed, and the
//! server keeps every field we sent (a field the CRD schema does not know would be pruned and
//! only warned about, so a typo would otherwise pass unnoticed).
//!
//! The Cluster API objects use `cluster.x-k8s.io/v1beta2` (and the kubeadm groups' v1beta2),
//! the version CAPI v1.12 stores, as upstream CAPO's templates do; CAPI's conversion webhook is
//! not involved. The `capi-v1beta1` flavor is the exception: its CAPI objects are checked against
//! the v1beta1 schema only (see [`try_dry_run`]).
//!
//! capo's infrastructure objects use `infrastructure.cluster.x-k8s.io/v1beta2` (v1beta1 in the
//! `capi-v1beta1` flavor), which capo's CRDs serve but do not store: the server converts them
//! to v1beta1 through capo's conversion webhook, which the test environment runs, and converts
//! its answer back, so the comparison of what was sent with what came back covers that round
//! trip too. `v1beta2.rs` checks offline that the conversion gives the v1beta1 documents the
//! templates had before.
//!
//! The test server runs no admission webhooks, so CAPI's and capo's webhook rules are not
//! exercised here; capo's are checked in `templates.rs` by calling the same validation
//! functions the webhook calls.

mod common;

use std::collections::BTreeMap;

use capo_testkit::{TestEnv, apply_yaml, parse_objects, shared_env};
use common::required_values;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

/// The first path at which `sent` has a value that `got` lacks or differs in, if any. Empty maps
/// and lists count as absent (the server may drop them).
fn missing_in(sent: &Value, got: &Value, path: &str) -> Option<String> {
    match (sent, got) {
        (Value::Object(s), _) if s.is_empty() => None,
        (Value::Array(s), _) if s.is_empty() => None,
        (Value::Null, _) => None,
        (Value::Object(s), Value::Object(g)) => s.iter().find_map(|(k, v)| {
            let child = format!("{path}.{k}");
            match g.get(k) {
                Some(gv) => missing_in(v, gv, &child),
                None if matches!(v, Value::Null) => None,
                None if v.as_object().is_some_and(|o| o.is_empty()) => None,
                None => Some(child),
            }
        }),
        (Value::Array(s), Value::Array(g)) if s.len() == g.len() => s
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(i, (sv, gv))| missing_in(sv, gv, &format!("{path}[{i}]"))),
        (s, g) if s == g => None,
        _ => Some(path.to_owned()),
    }
}

/// Dry-runs `yaml` in a fresh namespace. `Err` carries the server's message on a rejection, or
/// the first field the server dropped or changed.
async fn try_dry_run(env: &TestEnv, yaml: &str) -> Result<(), String> {
    let ns = env.new_namespace("tmpl").await.map_err(|e| e.to_string())?;
    let applied = apply_yaml(&env.client(), &ns, yaml, true)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|rejected| format!("rejected: {rejected}"))?;
    let sent = parse_objects(yaml).map_err(|e| e.to_string())?;
    if sent.len() != applied.len() {
        return Err(format!(
            "sent {} objects, got {}",
            sent.len(),
            applied.len()
        ));
    }
    for (s, g) in sent.iter().zip(&applied) {
        let kind = s
            .types
            .as_ref()
            .map(|t| t.kind.as_str())
            .unwrap_or_default();
        let name = s.metadata.name.as_deref().unwrap_or_default();
        if kind == "Secret" {
            // stringData is write-only: the server folds it into data.
            continue;
        }
        if is_capi_v1beta1(s) {
            // Accepted means valid against the CRD's v1beta1 schema (server-side apply checks
            // the request version's schema). What comes back, though, went through the CRD's
            // conversion strategy, which is `None` here (CAPI's conversion webhook does not run
            // in the test environment): v1beta1 bytes relabelled v1beta2 and pruned by the
            // v1beta2 schema. Comparing it with what was sent would test that artefact.
            continue;
        }
        if let Some(path) = missing_in(&s.data, &g.data, "") {
            return Err(format!(
                "{kind} {name}: the server dropped or changed {path}"
            ));
        }
        let labels = s.metadata.labels.clone().unwrap_or_default();
        let got = g.metadata.labels.clone().unwrap_or_default();
        if !labels.iter().all(|(k, v)| got.get(k) == Some(v)) {
            return Err(format!("{kind} {name}: labels changed"));
        }
    }
    Ok(())
}

/// [`try_dry_run`], panicking with `label` on failure.
async fn dry_run(env: &TestEnv, label: &str, yaml: &str) {
    if let Err(e) = try_dry_run(env, yaml).await {
        panic!("{label}: {e}");
    }
}

/// A Cluster API object in a v1beta1 API (not capo's `infrastructure.cluster.x-k8s.io/v1beta1`).
fn is_capi_v1beta1(object: &kube::api::DynamicObject) -> bool {
    object.types.as_ref().is_some_and(|t| {
        t.api_version.ends_with("cluster.x-k8s.io/v1beta1")
            && !t.api_version.starts_with("infrastructure.")
    })
}

async fn env() -> &'static TestEnv {
    shared_env()
        .await
        .unwrap_or_else(|e| panic!("test environment: {e}"))
}

#[tokio::test]
async fn default_without_lb_and_flatcar_flavors_pass_dry_run() {
    let env = env().await;
    let _logs = env.logs_on_failure();
    for file in [
        "cluster-template.yaml",
        "cluster-template-without-lb.yaml",
        "cluster-template-flatcar.yaml",
        "cluster-template-flatcar-sysext.yaml",
    ] {
        dry_run(env, file, &common::render(file, &required_values("demo"))).await;
    }
}

#[tokio::test]
async fn capi_v1beta1_flavor_passes_the_v1beta1_schema() {
    let env = env().await;
    let _logs = env.logs_on_failure();
    let file = "cluster-template-capi-v1beta1.yaml";
    dry_run(env, file, &common::render(file, &required_values("demo"))).await;
}

#[tokio::test]
async fn a_v1beta1_object_is_checked_against_the_v1beta1_schema() {
    // The v1beta2 list form of extraArgs inside a v1beta1 object must be refused: proof
    // that accepting the capi-v1beta1 flavor means its objects match the v1beta1 schema.
    let env = env().await;
    let yaml = common::render(
        "cluster-template-capi-v1beta1.yaml",
        &required_values("demo"),
    )
    .replacen(
        "          cloud-provider: external\n",
        "          - name: cloud-provider\n            value: external\n",
        1,
    );
    let err = try_dry_run(env, &yaml).await.err().unwrap_or_default();
    assert!(err.starts_with("rejected: "), "{err}");
    assert!(err.contains("controllerManager.extraArgs"), "{err}");
}

#[tokio::test]
async fn topology_flavor_and_its_cluster_class_pass_dry_run() {
    let env = env().await;
    let _logs = env.logs_on_failure();
    let vars = required_values("demo");
    let both = format!(
        "{}\n---\n{}",
        common::render("clusterclass-capo-default.yaml", &vars),
        common::render("cluster-template-topology.yaml", &vars)
    );
    dry_run(env, "topology", &both).await;

    // The same with every optional variable set: typed topology values (booleans, lists).
    let mut vars = vars;
    for (k, v) in [
        ("ADD_IMAGE_VERSION", "true"),
        ("IMAGE_REF", "node-image"),
        (
            "OPENSTACK_API_SERVER_ALLOWED_CIDRS",
            "[\"198.51.100.0/24\"]",
        ),
        ("OPENSTACK_BASTION_ENABLED", "true"),
        ("OPENSTACK_BASTION_FLAVOR", "m1.tiny"),
        ("OPENSTACK_BASTION_IMAGE_NAME", "debian-12"),
    ] {
        vars.insert(k.to_owned(), v.to_owned());
    }
    let yaml = common::render("cluster-template-topology.yaml", &vars);
    dry_run(env, "topology with options", &yaml).await;
    let cluster = &parse_objects(&yaml).unwrap_or_default()[0];
    let values: BTreeMap<String, Value> = cluster.data["spec"]["topology"]["variables"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default().to_owned(),
                v["value"].clone(),
            )
        })
        .collect();
    assert_eq!(values["addImageVersion"], Value::Bool(true));
    assert_eq!(values["allowedCIDRs"][0], "198.51.100.0/24");
    assert_eq!(values["bastion"]["enabled"], Value::Bool(true));
}

#[tokio::test]
async fn ansible_flavor_passes_dry_run_with_defaults_and_overrides() {
    let env = env().await;
    let _logs = env.logs_on_failure();
    let file = "cluster-template-ansible.yaml";
    dry_run(env, file, &common::render(file, &required_values("demo"))).await;

    let mut vars = required_values("demo");
    for (k, v) in [
        ("ANSIBLE_KUBE_NETWORK_PLUGIN", "cilium"),
        ("ANSIBLE_INGRESS_MODE", "Octavia"),
        ("ANSIBLE_KEEPALIVED_INTERFACE", "ens3"),
        ("ANSIBLE_FLANNEL_INTERFACE", "ens4"),
        ("ANSIBLE_NTP_SERVER", "ntp.example.org"),
        ("ANSIBLE_SSH_USER", "core"),
    ] {
        vars.insert(k.to_owned(), v.to_owned());
    }
    dry_run(env, "ansible with overrides", &common::render(file, &vars)).await;
}

/// The infrastructure documents of `yaml` rendered with `vars`, as one YAML text.
fn infra_documents(yaml: &str, vars: &BTreeMap<String, String>) -> String {
    let rendered = common::envsubst::render(yaml, vars).unwrap_or_else(|e| panic!("{e}"));
    common::documents(&rendered)
        .into_iter()
        .filter(common::infra::is_infra)
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Each object of `objects`, read back from namespace `ns` in `version` of its kind.
async fn read_back(env: &TestEnv, ns: &str, objects: &[Value], version: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for object in objects {
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let gvk = GroupVersionKind::gvk(common::infra::GROUP, version, kind);
        let resource =
            ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", kind.to_lowercase()));
        let api: Api<DynamicObject> = Api::namespaced_with(env.client(), ns, &resource);
        let got = api
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("reading {kind} {name} as {version}: {e}"));
        out.push(serde_json::to_value(got).unwrap_or_default());
    }
    out
}

#[tokio::test]
async fn v1beta2_documents_store_what_the_previous_v1beta1_documents_stored() {
    // Through the real API server and conversion webhook: each template's infrastructure
    // objects and the ones it had before the move to v1beta2 (tests/data/v1beta1/), created in
    // two namespaces, read back the same in either version, and nothing is carried in the
    // conversion-data annotation.
    let env = env().await;
    let _logs = env.logs_on_failure();
    let vars = required_values("demo");
    let mut compared = 0;
    for (file, previous) in common::previous_v1beta1() {
        let mut namespaces = Vec::new();
        let mut sent = Vec::new();
        for yaml in [previous, common::template(&file)] {
            let yaml = infra_documents(&yaml, &vars);
            let ns = env
                .new_namespace("tmpl")
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            apply_yaml(&env.client(), &ns, &yaml, false)
                .await
                .unwrap_or_else(|e| panic!("{file}: {e}"))
                .unwrap_or_else(|rejected| panic!("{file}: rejected: {rejected}"));
            sent.push(common::documents(&yaml));
            namespaces.push(ns);
        }
        let (old, new) = (&sent[0], &sent[1]);
        assert_eq!(old.len(), new.len(), "{file}");
        for version in ["v1beta1", "v1beta2"] {
            let old = read_back(env, &namespaces[0], old, version).await;
            let new = read_back(env, &namespaces[1], new, version).await;
            for (o, n) in old.iter().zip(&new) {
                let what = format!(
                    "{file}: {} {} as {version}",
                    n["kind"].as_str().unwrap_or_default(),
                    n["metadata"]["name"].as_str().unwrap_or_default()
                );
                assert_eq!(
                    o["spec"], n["spec"],
                    "{what}: previous (left), current (right)"
                );
                assert_eq!(o["metadata"]["labels"], n["metadata"]["labels"], "{what}");
                for got in [o, n] {
                    assert!(
                        got["metadata"]["annotations"]
                            .get(capo_api::conversion::CONVERSION_DATA_ANNOTATION)
                            .is_none(),
                        "{what}: {}",
                        got["metadata"]["annotations"]
                    );
                }
                compared += 1;
            }
        }
    }
    // (4 kubeadm flavors × 3 + ansible 5 + the class's 3) objects, in two versions.
    assert_eq!(compared, 2 * (4 * 3 + 5 + 3));
}

#[tokio::test]
async fn dry_run_rejects_a_value_the_crd_does_not_allow() {
    // Proves the dry-run validates the extension fields rather than accepting anything.
    let env = env().await;
    let ns = env
        .new_namespace("tmpl")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut vars = required_values("demo");
    vars.insert("ANSIBLE_KUBE_NETWORK_PLUGIN".into(), "weave".into());
    let yaml = common::render("cluster-template-ansible.yaml", &vars);
    let verdict = apply_yaml(&env.client(), &ns, &yaml, true)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let rejected = verdict
        .err()
        .unwrap_or_else(|| panic!("weave was accepted"));
    assert_eq!(rejected.kind, "OpenStackCluster");
    assert!(
        rejected
            .message
            .contains("spec.extensions.networking.kubeNetworkPlugin"),
        "{}",
        rejected.message
    );
}

#[tokio::test]
async fn a_field_the_schema_does_not_know_is_detected() {
    // Server-side apply refuses a field the CRD schema does not declare ("field not declared in
    // schema"); the comparison with what was sent is a second guard against pruning. Either way
    // a misspelt field in a template must fail.
    let env = env().await;
    let yaml = common::render("cluster-template.yaml", &required_values("demo")).replacen(
        "  kubeadmConfigSpec:\n",
        "  kubeadmConfigSpec:\n    notAField: true\n",
        1,
    );
    let err = try_dry_run(env, &yaml).await.err().unwrap_or_default();
    assert!(
        err.contains("KubeadmControlPlane demo-control-plane")
            && err.contains(".spec.kubeadmConfigSpec.notAField"),
        "{err}"
    );
}

#[test]
fn the_comparison_finds_dropped_and_changed_fields() {
    let sent = serde_json::json!({"spec": {"a": 1, "b": {"c": "x"}, "empty": {}, "list": [1, 2]}});
    assert_eq!(missing_in(&sent, &sent, ""), None);
    let dropped = serde_json::json!({"spec": {"a": 1, "b": {}, "list": [1, 2]}});
    assert_eq!(
        missing_in(&sent, &dropped, "").as_deref(),
        Some(".spec.b.c")
    );
    let changed = serde_json::json!({"spec": {"a": 2, "b": {"c": "x"}, "list": [1, 2]}});
    assert_eq!(missing_in(&sent, &changed, "").as_deref(), Some(".spec.a"));
    let shorter = serde_json::json!({"spec": {"a": 1, "b": {"c": "x"}, "list": [1]}});
    assert_eq!(
        missing_in(&sent, &shorter, "").as_deref(),
        Some(".spec.list")
    );
}

//! Round trip of upstream CAPO main's v1beta2 manifests through `capo_api::v1beta2`.
//!
//! Inputs are read at test time from `../shared/reference/capo-main-2026-08-21/` next to the
//! workspace (never copied into the repository): the clusterctl templates in `templates/`
//! (every document of a v1beta2 OpenStack kind) and the CRDs in `crds/` (their `v1beta2`
//! schemas). Each document must deserialize into our type and serialize back to the same JSON
//! value, both as written and after the API server's defaulting. A field our types do not know
//! would be dropped by serde and shows up as a difference naming its path. clusterctl
//! placeholders (`${VAR}`) are left as they are: every one of them sits in a string field.
//!
//! Besides the templates, one object per kind with every schema property set (upstream's
//! schema, then ours with the BA/ACP extensions) must round-trip as well.

mod common;

use capo_api::v1beta2::{
    OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine, OpenStackMachineTemplate,
};
use common::json_values::{apply_defaults, differences, maximal};
use common::schema_diff::load_yaml;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

const API_VERSION: &str = "infrastructure.cluster.x-k8s.io/v1beta2";

fn reference_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/capo-main-2026-08-21");
    assert!(
        dir.is_dir(),
        "upstream reference not found at {}: this test needs ../shared/reference/\
         capo-main-2026-08-21 next to the workspace",
        dir.display()
    );
    dir
}

/// Upstream's v1beta2 schema of a kind.
fn upstream_schema(kind: &str) -> Value {
    let file = format!(
        "infrastructure.cluster.x-k8s.io_{}s.yaml",
        kind.to_lowercase()
    );
    let crd = load_yaml(&reference_dir().join("crds").join(file));
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["name"] == "v1beta2"))
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .cloned()
        .unwrap_or_else(|| panic!("{kind}: no v1beta2 schema upstream"))
}

fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    yaml_serde::Deserializer::from_str(&text)
        .map(|doc| {
            Value::deserialize(doc).unwrap_or_else(|e| panic!("{}: bad YAML: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// Every document of an OpenStack kind in the upstream templates, with a label for messages.
fn template_documents() -> Vec<(String, Value)> {
    let dir = reference_dir().join("templates");
    let files = common::files::yaml_files(&dir);
    let mut docs = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (i, doc) in yaml_documents(&file).into_iter().enumerate() {
            let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
            if kind.starts_with("OpenStack") {
                docs.push((format!("{name}#{i} ({kind} {})", doc["apiVersion"]), doc));
            }
        }
    }
    docs
}

fn through<K: Serialize + DeserializeOwned>(input: &Value) -> Result<Value, String> {
    let typed: K =
        serde_json::from_value(input.clone()).map_err(|e| format!("does not parse: {e}"))?;
    serde_json::to_value(&typed).map_err(|e| format!("does not serialize: {e}"))
}

/// Round-trips one document as written and once defaulted; `Err` says what changed.
fn round_trip(doc: &Value) -> Result<(), String> {
    if doc["apiVersion"] != API_VERSION {
        return Err(format!("apiVersion is {}", doc["apiVersion"]));
    }
    let kind = doc["kind"].as_str().unwrap_or_default();
    let mut defaulted = doc.clone();
    apply_defaults(&upstream_schema(kind), &mut defaulted);
    let mut diffs = Vec::new();
    for (stage, input) in [("as written", doc), ("defaulted", &defaulted)] {
        let output = match kind {
            "OpenStackCluster" => through::<OpenStackCluster>(input),
            "OpenStackClusterTemplate" => through::<OpenStackClusterTemplate>(input),
            "OpenStackMachine" => through::<OpenStackMachine>(input),
            "OpenStackMachineTemplate" => through::<OpenStackMachineTemplate>(input),
            other => Err(format!("unexpected kind {other}")),
        }
        .map_err(|e| format!("{stage}: {e}"))?;
        let mut stage_diffs = Vec::new();
        differences("", input, &output, &mut stage_diffs);
        diffs.extend(stage_diffs.into_iter().map(|d| format!("{stage}: {d}")));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

#[test]
fn upstream_v1beta2_templates_round_trip() {
    let docs: Vec<_> = template_documents()
        .into_iter()
        .filter(|(_, d)| d["apiVersion"] == API_VERSION)
        .collect();
    let count = |kind: &str| docs.iter().filter(|(_, d)| d["kind"] == kind).count();
    println!(
        "v1beta2 documents: {} OpenStackCluster, {} OpenStackClusterTemplate, {} \
         OpenStackMachineTemplate, {} OpenStackMachine",
        count("OpenStackCluster"),
        count("OpenStackClusterTemplate"),
        count("OpenStackMachineTemplate"),
        count("OpenStackMachine")
    );
    assert_eq!(
        docs.len(),
        15,
        "upstream templates changed: review this test"
    );
    assert!(count("OpenStackCluster") > 0 && count("OpenStackClusterTemplate") > 0);
    assert!(count("OpenStackMachineTemplate") > 0);
    common::files::check_each("round trip", &docs, round_trip);
}

#[test]
fn v1beta1_documents_are_not_taken_for_v1beta2() {
    // The same manifests in v1beta1 form use renamed or restructured fields; read as v1beta2
    // they must fail or lose something, never pass unchanged.
    let docs: Vec<_> = template_documents()
        .into_iter()
        .filter(|(_, d)| d["apiVersion"] == "infrastructure.cluster.x-k8s.io/v1beta1")
        .collect();
    assert!(!docs.is_empty(), "no v1beta1 documents upstream");
    for (label, mut doc) in docs {
        doc["apiVersion"] = Value::from(API_VERSION);
        assert!(
            round_trip(&doc).is_err(),
            "{label} passes as v1beta2 unchanged"
        );
    }
}

fn named_maximal(schema: &Value, kind: &str) -> Value {
    let mut doc = maximal(schema);
    doc["apiVersion"] = Value::from(API_VERSION);
    doc["kind"] = Value::from(kind);
    doc["metadata"] = serde_json::json!({"name": "everything"});
    doc
}

#[test]
fn every_upstream_v1beta2_property_round_trips() {
    let kinds = [
        "OpenStackCluster",
        "OpenStackClusterTemplate",
        "OpenStackMachine",
        "OpenStackMachineTemplate",
    ];
    let failures: Vec<String> = kinds
        .iter()
        .filter_map(|kind| {
            round_trip(&named_maximal(&upstream_schema(kind), kind))
                .err()
                .map(|e| format!("{kind}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Same with our schemas, which add the BA/ACP extensions.
#[test]
fn every_property_of_our_v1beta2_schemas_round_trips() {
    let mut failures = Vec::new();
    for crd in capo_api::v1beta2::crds() {
        let schema = serde_json::to_value(
            crd.spec.versions[0]
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref()),
        )
        .unwrap_or_default();
        let kind = crd.spec.names.kind.clone();
        let doc = named_maximal(&schema, &kind);
        if !doc.to_string().contains("\"extensions\"") {
            failures.push(format!("{kind}: no extensions in our schema"));
        }
        if let Err(e) = round_trip(&doc) {
            failures.push(format!("{kind}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn unknown_fields_are_caught() {
    let doc = serde_json::json!({
        "apiVersion": API_VERSION,
        "kind": "OpenStackMachine",
        "metadata": {"name": "m"},
        "spec": {"flavor": {"id": "42"}, "image": {"filter": {"name": "ubuntu"}},
                 "flavorID": "42"}
    });
    let err = round_trip(&doc).err().unwrap_or_default();
    assert!(err.contains(".spec.flavorID: lost"), "{err}");
}

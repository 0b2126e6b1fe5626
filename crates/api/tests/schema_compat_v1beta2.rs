//! Schema compatibility of our v1beta2 types with upstream CAPO main (the v0.15 line).
//!
//! For OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine and
//! OpenStackMachineTemplate, the CRD rendered from `capo_api::v1beta2` (normalized like the
//! served CRDs) is compared path by path with the `v1beta2` version of upstream main's CRD,
//! read at test time from `../shared/reference/capo-main-2026-08-21/crds/` next to the
//! workspace (never copied into the repository). The comparison is stricter than the v1beta1
//! one: the CEL rules must be exactly upstream's, and a path that exists only in ours is a
//! difference unless it belongs to our BA/ACP `extensions`.
//!
//! The test prints `schema paths: N/M` per CRD and in total, and fails listing every difference.

mod common;

use common::schema_diff::{
    SchemaReport, Strictness, compare_schemas, compare_version_envelope, flatten, load_yaml,
};
use serde_json::Value;
use std::path::PathBuf;

/// Upstream paths our types cannot express, with the reason. Empty: every path is matched.
const KNOWN_GAPS: &[(&str, &str)] = &[];

/// Envelope differences made on purpose, with the reason. Empty: the envelope is upstream's.
const DELIBERATE: &[(&str, &str)] = &[];

/// Directory holding upstream main's CRDs.
fn upstream_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/capo-main-2026-08-21/crds")
}

/// True for paths of our BA/ACP extensions, which upstream does not have.
fn is_extension_path(path: &str) -> bool {
    path.split('.')
        .any(|segment| segment.trim_end_matches("[]").trim_end_matches("{}") == "extensions")
}

const STRICT: Strictness = Strictness {
    exact_cel: true,
    allowed_extra: Some(is_extension_path),
};

/// The `v1beta2` entry of a CRD's `spec.versions`.
fn v1beta2_version(crd: &Value) -> Option<&Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["name"] == "v1beta2"))
}

/// Compares one of our v1beta2 CRDs with upstream's file of the same name.
fn compare_crd(ours: &Value, file: &str) -> SchemaReport {
    let dir = upstream_dir();
    assert!(
        dir.is_dir(),
        "upstream CRDs not found at {}: this test needs the shared reference directory \
         (../shared/reference/capo-main-2026-08-21) next to the workspace",
        dir.display()
    );
    let upstream = load_yaml(&dir.join(file));
    let mut diffs = Vec::new();
    for ptr in [
        "/spec/group",
        "/spec/names",
        "/spec/scope",
        "/metadata/name",
    ] {
        if upstream.pointer(ptr) != ours.pointer(ptr) {
            diffs.push(format!(
                "{file}: {ptr} upstream={:?} ours={:?}",
                upstream.pointer(ptr),
                ours.pointer(ptr)
            ));
        }
    }
    let (Some(u_version), Some(o_version)) = (v1beta2_version(&upstream), v1beta2_version(ours))
    else {
        diffs.push(format!("{file}: no v1beta2 version upstream or in ours"));
        return SchemaReport {
            matched: 0,
            total: 1,
            diffs,
        };
    };
    for diff in compare_version_envelope(file, u_version, o_version) {
        match DELIBERATE.iter().find(|(text, _)| diff.contains(text)) {
            Some((_, reason)) => println!("deliberate: {diff}: {reason}"),
            None => diffs.push(diff),
        }
    }
    let schema_of = |v: &Value| {
        v.pointer("/schema/openAPIV3Schema")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut report = compare_schemas(
        &format!("{file} v1beta2"),
        &schema_of(u_version),
        &schema_of(o_version),
        STRICT,
    );
    report
        .diffs
        .retain(|d| !KNOWN_GAPS.iter().any(|(path, _)| d.contains(path)));
    diffs.append(&mut report.diffs);
    report.diffs = diffs;
    report
}

#[test]
fn v1beta2_types_match_upstream_main_schema() {
    // The served CRDs, whose v1beta2 version is compared.
    let crds = served_v1beta2();
    assert_eq!(crds.len(), 4, "four v1beta2 kinds");
    let (mut matched, mut total, mut diffs) = (0, 0, Vec::new());
    for crd in &crds {
        let file = capo_api::crds::file_name(crd);
        // Through the YAML rendering the served CRDs use, so bounds read `1`, not `1.0`.
        let yaml = capo_api::crds::render_yaml(crd);
        let ours: Value = yaml_serde::from_str(&yaml).unwrap_or_else(|e| panic!("{file}: {e}"));
        let report = compare_crd(&ours, &file);
        println!("{file}: schema paths: {}/{}", report.matched, report.total);
        matched += report.matched;
        total += report.total;
        diffs.extend(report.diffs);
    }
    println!("schema paths: {matched}/{total}");
    for (path, reason) in KNOWN_GAPS {
        println!("known gap {path}: {reason}");
    }
    assert!(
        diffs.is_empty(),
        "{} difference(s) from upstream CAPO main v1beta2:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// The served CRDs that hold a `v1beta2` version.
fn served_v1beta2()
-> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>
{
    capo_api::crds::all()
        .into_iter()
        .filter(|crd| crd.spec.versions.iter().any(|v| v.name == "v1beta2"))
        .collect()
}

#[test]
fn four_kinds_serve_both_versions_store_v1beta2_and_convert_by_webhook() {
    let crds = served_v1beta2();
    let kinds: Vec<_> = crds.iter().map(|c| c.spec.names.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "OpenStackCluster",
            "OpenStackClusterTemplate",
            "OpenStackMachine",
            "OpenStackMachineTemplate"
        ]
    );
    for crd in &crds {
        let kind = &crd.spec.names.kind;
        let versions: Vec<_> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.served, v.storage))
            .collect();
        assert_eq!(
            versions,
            [("v1beta1", true, false), ("v1beta2", true, true)],
            "{kind}"
        );
        let labels = crd.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("cluster.x-k8s.io/v1beta1").map(String::as_str),
            Some("v1beta1"),
            "{kind}"
        );
        assert_eq!(
            labels.get("cluster.x-k8s.io/v1beta2").map(String::as_str),
            Some("v1beta2"),
            "{kind}"
        );
        let Some(conversion) = crd.spec.conversion.as_ref() else {
            panic!("{kind}: no conversion");
        };
        assert_eq!(conversion.strategy, "Webhook", "{kind}");
        let Some(webhook) = conversion.webhook.as_ref() else {
            panic!("{kind}: no conversion webhook");
        };
        assert_eq!(webhook.conversion_review_versions, ["v1"], "{kind}");
        let Some(service) = webhook
            .client_config
            .as_ref()
            .and_then(|c| c.service.as_ref())
        else {
            panic!("{kind}: the conversion webhook names no Service");
        };
        assert_eq!(
            (
                service.name.as_str(),
                service.namespace.as_str(),
                service.path.as_deref()
            ),
            ("webhook-service", "system", Some("/convert")),
            "{kind}"
        );
    }
}

#[test]
fn served_v1beta2_is_the_v1beta2_types_schema() {
    let types = capo_api::v1beta2::crds();
    for crd in served_v1beta2() {
        let kind = &crd.spec.names.kind;
        let of_types = types
            .iter()
            .find(|c| &c.spec.names.kind == kind)
            .unwrap_or_else(|| panic!("{kind}: no v1beta2 type"));
        let served = crd.spec.versions.iter().find(|v| v.name == "v1beta2");
        assert_eq!(
            served.map(|v| (&v.schema, &v.subresources, &v.additional_printer_columns)),
            of_types.spec.versions.first().map(|v| (
                &v.schema,
                &v.subresources,
                &v.additional_printer_columns
            )),
            "{kind}"
        );
    }
}

#[test]
fn extension_paths_are_recognized() {
    assert!(is_extension_path("spec.extensions"));
    assert!(is_extension_path(
        "spec.bastion.spec.extensions.networkInterfaces"
    ));
    assert!(is_extension_path(
        "spec.template.spec.extensions.memory.reserved"
    ));
    assert!(!is_extension_path("spec.externalNetwork"));
}

/// The `openAPIV3Schema` of a CRD's first version, as rendered.
fn rendered_schema(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Value {
    let yaml = capo_api::crds::render_yaml(crd);
    let value: Value = yaml_serde::from_str(&yaml).unwrap_or_else(|e| panic!("{e}"));
    value
        .pointer("/spec/versions/0/schema/openAPIV3Schema")
        .cloned()
        .unwrap_or(Value::Null)
}

/// `(path, schema)` of every `extensions` property of a schema.
fn extension_nodes(schema: &Value) -> Vec<(String, Value)> {
    let mut nodes = Vec::new();
    flatten(schema, String::new(), true, &mut nodes);
    nodes
        .into_iter()
        .filter(|(path, _)| path == "extensions" || path.ends_with(".extensions"))
        .map(|(path, node)| (path, node.schema.clone()))
        .collect()
}

#[test]
fn extensions_sit_where_v1beta1_has_them_with_the_same_schema() {
    let served = capo_api::crds::all();
    for crd in capo_api::v1beta2::crds() {
        let kind = &crd.spec.names.kind;
        let v1beta1 = served
            .iter()
            .find(|c| &c.spec.names.kind == kind)
            .unwrap_or_else(|| panic!("{kind}: not served"));
        let (old, new) = (
            extension_nodes(&rendered_schema(v1beta1)),
            extension_nodes(&rendered_schema(&crd)),
        );
        assert!(!new.is_empty(), "{kind}: no extensions");
        let paths = |nodes: &[(String, Value)]| nodes.iter().map(|(p, _)| p.clone()).collect();
        let (old_paths, new_paths): (Vec<String>, Vec<String>) = (paths(&old), paths(&new));
        assert_eq!(old_paths, new_paths, "{kind}: extensions moved");
        for ((path, a), (_, b)) in old.iter().zip(&new) {
            assert!(
                a == b,
                "{kind} .{path}: extension schema differs from v1beta1"
            );
        }
    }
}

#[test]
fn strict_comparison_flags_extra_paths_and_rules() {
    let upstream = serde_json::json!({"type": "object", "properties": {
        "a": {"type": "string", "x-kubernetes-validations": [{"rule": "r", "message": "m"}]}}});
    let ours = serde_json::json!({"type": "object", "properties": {
        "a": {"type": "string", "x-kubernetes-validations": [
            {"rule": "r", "message": "m"}, {"rule": "r2", "message": "m2"}]},
        "b": {"type": "string"},
        "extensions": {"type": "object", "properties": {"c": {"type": "string"}}}}});
    let report = compare_schemas("t", &upstream, &ours, STRICT);
    let text = report.diffs.join("\n");
    assert!(text.contains("t .a: CEL rule not upstream"), "{text}");
    assert!(text.contains("t .b: not in upstream"), "{text}");
    assert!(!text.contains("extensions"), "{text}");
    assert_eq!(report.diffs.len(), 2, "{text}");
    assert_eq!((report.matched, report.total), (1, 2));
}

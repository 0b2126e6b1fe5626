//! Schema compatibility with upstream CAPO v0.14.7.
//!
//! For each of the seven upstream CRDs (kept as test data in `tests/data/upstream-crds/`), every
//! property path of the upstream `openAPIV3Schema` must exist in our generated CRD
//! (`config/crd/bases/`, same file name) with the same validation keywords: type, format, enum,
//! required-ness, default, CEL rules, list/map semantics, bounds and patterns. Descriptions are
//! ours and are not compared. The CRD envelope (group, names, scope, versions, printer columns,
//! subresources, contract label) must match as well, because clusterctl, `kubectl get` and
//! ClusterClass users depend on it.
//!
//! The test prints `schema paths: N/M` per CRD and in total, and fails listing every difference.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Validation keywords compared one-to-one at every schema node.
const COMPARED_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "default",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
];

/// Upstream CRD file names: ours must use the same ones.
const CRD_FILES: &[&str] = &[
    "infrastructure.cluster.x-k8s.io_openstackclusteridentities.yaml",
    "infrastructure.cluster.x-k8s.io_openstackclusters.yaml",
    "infrastructure.cluster.x-k8s.io_openstackclustertemplates.yaml",
    "infrastructure.cluster.x-k8s.io_openstackfloatingippools.yaml",
    "infrastructure.cluster.x-k8s.io_openstackmachines.yaml",
    "infrastructure.cluster.x-k8s.io_openstackmachinetemplates.yaml",
    "infrastructure.cluster.x-k8s.io_openstackservers.yaml",
];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
}

/// One schema node found at a property path, with whether its parent lists it as required.
struct Node<'a> {
    schema: &'a Value,
    required: bool,
}

/// Flattens a schema into `path -> node`, descending into properties, array items and map values.
fn flatten<'a>(schema: &'a Value, path: String, required: bool, out: &mut Vec<(String, Node<'a>)>) {
    out.push((path.clone(), Node { schema, required }));
    let required_names: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            let child_path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            flatten(
                child,
                child_path,
                required_names.contains(name.as_str()),
                out,
            );
        }
    }
    if let Some(items) = schema.get("items") {
        flatten(items, format!("{path}[]"), false, out);
    }
    if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        flatten(values, format!("{path}{{}}"), false, out);
    }
}

/// The CEL rules at a node, as (rule, message) pairs.
fn cel_rules(schema: &Value) -> BTreeSet<(String, String)> {
    schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .map(|rules| {
            rules
                .iter()
                .map(|r| {
                    let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                    (text("rule"), text("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn enum_set(schema: &Value) -> Option<BTreeSet<String>> {
    schema
        .get("enum")
        .and_then(Value::as_array)
        .map(|vals| vals.iter().map(Value::to_string).collect())
}

/// Compares one upstream node with ours; returns the differences found.
fn compare_node(path: &str, upstream: &Node, ours: &Node) -> Vec<String> {
    let mut diffs = Vec::new();
    for keyword in COMPARED_KEYWORDS {
        let (u, o) = (upstream.schema.get(keyword), ours.schema.get(keyword));
        if u != o {
            diffs.push(format!("{path}: {keyword} upstream={u:?} ours={o:?}"));
        }
    }
    if enum_set(upstream.schema) != enum_set(ours.schema) {
        diffs.push(format!(
            "{path}: enum upstream={:?} ours={:?}",
            enum_set(upstream.schema),
            enum_set(ours.schema)
        ));
    }
    if upstream.required != ours.required {
        diffs.push(format!(
            "{path}: required upstream={} ours={}",
            upstream.required, ours.required
        ));
    }
    let (u_rules, o_rules) = (cel_rules(upstream.schema), cel_rules(ours.schema));
    for missing in u_rules.difference(&o_rules) {
        diffs.push(format!("{path}: CEL rule missing: {missing:?}"));
    }
    if upstream.schema.get("anyOf") != ours.schema.get("anyOf") {
        diffs.push(format!("{path}: anyOf differs"));
    }
    diffs
}

/// Compares the CRD envelope: everything but the schemas and descriptions.
fn compare_envelope(file: &str, upstream: &Value, ours: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let pointers = [
        "/spec/group",
        "/spec/names",
        "/spec/scope",
        "/metadata/name",
    ];
    for ptr in pointers {
        if upstream.pointer(ptr) != ours.pointer(ptr) {
            diffs.push(format!(
                "{file}: {ptr} upstream={:?} ours={:?}",
                upstream.pointer(ptr),
                ours.pointer(ptr)
            ));
        }
    }
    // Upstream adds the contract label with kustomize; we put it in the CRD itself, so that
    // clusterctl finds the contract whichever way the CRDs are installed.
    let contract = "/metadata/labels/cluster.x-k8s.io~1v1beta1";
    if ours.pointer(contract).and_then(Value::as_str) != Some("v1beta1") {
        diffs.push(format!(
            "{file}: label cluster.x-k8s.io/v1beta1: v1beta1 missing"
        ));
    }
    let versions = |crd: &Value| {
        crd.pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
    };
    let (u_versions, o_versions) = (versions(upstream), versions(ours));
    let (Some(u_versions), Some(o_versions)) = (u_versions, o_versions) else {
        diffs.push(format!("{file}: spec.versions missing"));
        return diffs;
    };
    for u in &u_versions {
        let name = u.get("name");
        let Some(o) = o_versions.iter().find(|o| o.get("name") == name) else {
            diffs.push(format!("{file}: version {name:?} missing"));
            continue;
        };
        for key in ["served", "storage", "subresources", "deprecated"] {
            if u.get(key) != o.get(key) {
                diffs.push(format!("{file}: version {name:?} {key} differs"));
            }
        }
        if strip_descriptions(u.get("additionalPrinterColumns"))
            != strip_descriptions(o.get("additionalPrinterColumns"))
        {
            diffs.push(format!(
                "{file}: version {name:?} printer columns upstream={} ours={}",
                json_or_null(u.get("additionalPrinterColumns")),
                json_or_null(o.get("additionalPrinterColumns"))
            ));
        }
    }
    diffs
}

fn json_or_null(v: Option<&Value>) -> String {
    v.map(Value::to_string).unwrap_or_else(|| "null".into())
}

/// Printer-column descriptions are prose and may be ours; everything else must match.
fn strip_descriptions(columns: Option<&Value>) -> Option<Value> {
    let mut columns = columns?.clone();
    if let Some(list) = columns.as_array_mut() {
        for column in list.iter_mut().filter_map(Value::as_object_mut) {
            column.remove("description");
        }
    }
    Some(columns)
}

/// Result of comparing one CRD file.
struct FileReport {
    matched: usize,
    total: usize,
    diffs: Vec<String>,
}

fn compare_file(file: &str, ours_dir: &Path) -> FileReport {
    let upstream = load_yaml(&manifest_dir().join("tests/data/upstream-crds").join(file));
    let ours_path = ours_dir.join(file);
    if !ours_path.exists() {
        return FileReport {
            matched: 0,
            total: 1,
            diffs: vec![format!("{file}: not generated at {}", ours_path.display())],
        };
    }
    let ours = load_yaml(&ours_path);
    let mut diffs = compare_envelope(file, &upstream, &ours);
    let (mut matched, mut total) = (0, 0);
    for u_version in upstream
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = u_version.get("name").and_then(Value::as_str).unwrap_or("");
        let o_version = ours
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter()
                    .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
            });
        let schema_of = |v: &Value| v.pointer("/schema/openAPIV3Schema").cloned();
        let u_schema = schema_of(u_version).unwrap_or(Value::Null);
        let o_schema = o_version.and_then(schema_of).unwrap_or(Value::Null);
        let (mut u_nodes, mut o_nodes) = (Vec::new(), Vec::new());
        flatten(&u_schema, String::new(), true, &mut u_nodes);
        flatten(&o_schema, String::new(), true, &mut o_nodes);
        for (path, u_node) in &u_nodes {
            total += 1;
            let shown = format!("{file} {name} .{path}");
            match o_nodes.iter().find(|(p, _)| p == path) {
                None => diffs.push(format!("{shown}: missing in ours")),
                Some((_, o_node)) => {
                    let node_diffs = compare_node(&shown, u_node, o_node);
                    if node_diffs.is_empty() {
                        matched += 1;
                    }
                    diffs.extend(node_diffs);
                }
            }
        }
    }
    FileReport {
        matched,
        total,
        diffs,
    }
}

#[test]
fn generated_crds_cover_every_upstream_schema_path() {
    // Overridable so the comparison itself can be checked against the upstream files.
    let ours_dir = std::env::var_os("CAPO_COMPAT_OURS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../../config/crd/bases"));
    let (mut matched, mut total, mut diffs) = (0, 0, Vec::new());
    for file in CRD_FILES {
        let report = compare_file(file, &ours_dir);
        println!("{file}: schema paths: {}/{}", report.matched, report.total);
        matched += report.matched;
        total += report.total;
        diffs.extend(report.diffs);
    }
    println!("schema paths: {matched}/{total}");
    assert!(
        diffs.is_empty(),
        "{} difference(s) from upstream CAPO v0.14.7:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

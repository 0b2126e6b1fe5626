//! Path-by-path comparison of an upstream CRD schema with ours, shared by the schema
//! compatibility tests (`schema_compat.rs` for v1beta1/v1alpha1, `schema_compat_v1beta2.rs`).
//!
//! A schema is flattened into `path -> node` (`a.b` for properties, `a[]` for array items,
//! `a{}` for map values); at every upstream path the validation keywords listed in
//! [`COMPARED_KEYWORDS`], the enum values, required-ness, `anyOf` and the CEL rules must match.
//! Descriptions are ours and are never compared.

// Each test binary includes this file and uses a different subset of it.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// Validation keywords compared one-to-one at every schema node.
pub const COMPARED_KEYWORDS: &[&str] = &[
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

/// How strictly two schemas are compared.
#[derive(Clone, Copy, Debug)]
pub struct Strictness {
    /// CEL rules: `false` only requires upstream's rules to be present in ours; `true` requires
    /// the same list of rules (every key of each rule: rule, message, ...), nothing more.
    pub exact_cel: bool,
    /// Paths that exist only in ours are differences, except those for which this returns
    /// true (for example our BA/ACP extensions). `None` accepts every extra path.
    pub allowed_extra: Option<fn(&str) -> bool>,
}

/// v1beta1/v1alpha1 behaviour: upstream must be covered; ours may add paths and rules.
pub const COVERAGE: Strictness = Strictness {
    exact_cel: false,
    allowed_extra: None,
};

/// Reads a YAML file into a JSON value, panicking with the path on failure.
pub fn load_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
}

/// One schema node found at a property path, with whether its parent lists it as required.
pub struct Node<'a> {
    /// The schema object at that path.
    pub schema: &'a Value,
    /// Whether the parent object's `required` names this property.
    pub required: bool,
}

/// Flattens a schema into `path -> node`, descending into properties, array items and map values.
pub fn flatten<'a>(
    schema: &'a Value,
    path: String,
    required: bool,
    out: &mut Vec<(String, Node<'a>)>,
) {
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
pub fn cel_rules(schema: &Value) -> BTreeSet<(String, String)> {
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
pub fn compare_node(
    path: &str,
    upstream: &Node,
    ours: &Node,
    strictness: Strictness,
) -> Vec<String> {
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
    if strictness.exact_cel {
        for extra in o_rules.difference(&u_rules) {
            diffs.push(format!("{path}: CEL rule not upstream: {extra:?}"));
        }
        let all = |n: &Node| n.schema.get("x-kubernetes-validations").cloned();
        if u_rules == o_rules && all(upstream) != all(ours) {
            diffs.push(format!(
                "{path}: x-kubernetes-validations differ (order or extra keys): upstream={} ours={}",
                json_or_null(all(upstream).as_ref()),
                json_or_null(all(ours).as_ref())
            ));
        }
    }
    if upstream.schema.get("anyOf") != ours.schema.get("anyOf") {
        diffs.push(format!("{path}: anyOf differs"));
    }
    diffs
}

/// Result of comparing two schemas (or several, when added up).
#[derive(Default)]
pub struct SchemaReport {
    /// Upstream paths present in ours with no difference.
    pub matched: usize,
    /// Upstream paths.
    pub total: usize,
    /// Every difference found, one line each.
    pub diffs: Vec<String>,
}

/// Compares two `openAPIV3Schema`s path by path; `label` prefixes every message.
pub fn compare_schemas(
    label: &str,
    upstream: &Value,
    ours: &Value,
    strictness: Strictness,
) -> SchemaReport {
    let (mut u_nodes, mut o_nodes) = (Vec::new(), Vec::new());
    flatten(upstream, String::new(), true, &mut u_nodes);
    flatten(ours, String::new(), true, &mut o_nodes);
    let mut report = SchemaReport::default();
    for (path, u_node) in &u_nodes {
        report.total += 1;
        let shown = format!("{label} .{path}");
        match o_nodes.iter().find(|(p, _)| p == path) {
            None => report.diffs.push(format!("{shown}: missing in ours")),
            Some((_, o_node)) => {
                let node_diffs = compare_node(&shown, u_node, o_node, strictness);
                if node_diffs.is_empty() {
                    report.matched += 1;
                }
                report.diffs.extend(node_diffs);
            }
        }
    }
    if let Some(allowed) = strictness.allowed_extra {
        for (path, _) in &o_nodes {
            if !allowed(path) && !u_nodes.iter().any(|(p, _)| p == path) {
                report
                    .diffs
                    .push(format!("{label} .{path}: not in upstream"));
            }
        }
    }
    report
}

/// Compares the per-version envelope: served, storage, subresources, deprecation and printer
/// columns (descriptions excluded).
pub fn compare_version_envelope(label: &str, upstream: &Value, ours: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let name = upstream.get("name");
    for key in ["served", "storage", "subresources", "deprecated"] {
        if upstream.get(key) != ours.get(key) {
            diffs.push(format!("{label}: version {name:?} {key} differs"));
        }
    }
    if strip_descriptions(upstream.get("additionalPrinterColumns"))
        != strip_descriptions(ours.get("additionalPrinterColumns"))
    {
        diffs.push(format!(
            "{label}: version {name:?} printer columns upstream={} ours={}",
            json_or_null(upstream.get("additionalPrinterColumns")),
            json_or_null(ours.get("additionalPrinterColumns"))
        ));
    }
    diffs
}

/// A JSON value as text, `null` when absent.
pub fn json_or_null(v: Option<&Value>) -> String {
    v.map(Value::to_string).unwrap_or_else(|| "null".into())
}

/// Printer-column descriptions are prose and may be ours; everything else must match.
pub fn strip_descriptions(columns: Option<&Value>) -> Option<Value> {
    let mut columns = columns?.clone();
    if let Some(list) = columns.as_array_mut() {
        for column in list.iter_mut().filter_map(Value::as_object_mut) {
            column.remove("description");
        }
    }
    Some(columns)
}

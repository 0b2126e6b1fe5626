//! Conversion between v1beta1 and v1beta2 (`capo_api::conversion`).
//!
//! - Every v1beta1 document of the four converted kinds that exists here or in the shared
//!   reference (`templates/` of the repository, `tests/data/templates`, the accepted book
//!   examples in `tests/data/seed-001/accepted`, upstream v0.14.7's templates and the v1beta1
//!   documents among upstream main's) goes to v1beta2 and back; every v1beta2 document of
//!   upstream main's templates goes to v1beta1 and back. The result must be the document as
//!   its typed struct reads it, the converted object must read into the target's typed struct,
//!   and documents defaulted the way the API server stores them need no annotation.
//! - Upstream's v1beta2 templates are what our conversion makes of the same v0.14.7 templates.
//! - Property tests: objects generated from our CRD schemas round-trip both ways; conversion
//!   data from one object applied to another (stale data) never breaks a conversion.
//! - Arbitrary and malformed JSON, huge and deep values never panic.
//! - The admission validators judge generated objects of every validated kind (and updates
//!   between two of them) without a panic.
//!
//! The shared reference is read from `../shared/reference/` next to the workspace at test time;
//! the tests fail with the path when it is missing.

mod common;

use capo_api::conversion::{
    CONVERSION_DATA_ANNOTATION, ConversionError, MAX_DEPTH, StoredForm, StoredStatus, convert,
};
use capo_api::{v1beta1, v1beta2};
use common::json_values::{apply_defaults, differences};
use common::schema_diff::load_yaml;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

const V1: &str = "infrastructure.cluster.x-k8s.io/v1beta1";
const V2: &str = "infrastructure.cluster.x-k8s.io/v1beta2";
const KINDS: [&str; 4] = [
    "OpenStackCluster",
    "OpenStackClusterTemplate",
    "OpenStackMachine",
    "OpenStackMachineTemplate",
];

// ---------------------------------------------------------------------------------------------
// Documents

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A directory of the shared reference, which must exist.
fn reference(sub: &str) -> PathBuf {
    let dir = manifest_dir().join("../../../shared/reference").join(sub);
    assert!(
        dir.is_dir(),
        "shared reference not found at {}: these tests need ../shared/reference/ next to the \
         workspace",
        dir.display()
    );
    dir
}

/// clusterctl variables with a default take it; the others stay as they are (all of them sit
/// in string fields of the converted kinds).
fn substitute_defaults(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let Some(end) = after.find('}') else {
            out.push_str(after);
            return out;
        };
        let expr = &after[2..end];
        match expr.split_once(":=") {
            Some((_, default)) => out.push_str(default),
            None => out.push_str(&after[..=end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Every document of a converted kind and of `api_version` in the YAML files of `dir`, with
/// a label naming its file.
fn documents(dir: &Path, api_version: &str) -> Vec<(String, Value)> {
    let files = common::files::yaml_files(dir);
    let mut docs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        let text = substitute_defaults(&text);
        for (i, doc) in yaml_serde::Deserializer::from_str(&text).enumerate() {
            let doc = Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: bad YAML: {e}", file.display()));
            let kind = doc["kind"].as_str().unwrap_or_default();
            if KINDS.contains(&kind) && doc["apiVersion"] == api_version {
                docs.push((format!("{}#{i} ({kind})", file.display()), doc));
            }
        }
    }
    docs
}

fn v1beta1_documents() -> Vec<(String, Value)> {
    let dirs = [
        manifest_dir().join("../../templates"),
        // The templates' v1beta1 documents from before they moved to v1beta2.
        manifest_dir().join("../templates-test/tests/data/v1beta1"),
        manifest_dir().join("tests/data/templates"),
        manifest_dir().join("tests/data/seed-001/accepted"),
        reference("capo-v0.14.7/templates"),
        reference("capo-main-2026-08-21/templates"),
    ];
    dirs.iter().flat_map(|d| documents(d, V1)).collect()
}

fn v1beta2_documents() -> Vec<(String, Value)> {
    documents(&reference("capo-main-2026-08-21/templates"), V2)
}

/// Upstream main's schema of `kind` in `version`.
fn upstream_schema(kind: &str, version: &str) -> Value {
    let file = format!(
        "infrastructure.cluster.x-k8s.io_{}s.yaml",
        kind.to_lowercase()
    );
    let crd = load_yaml(&reference("capo-main-2026-08-21/crds").join(file));
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["name"] == version))
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .cloned()
        .unwrap_or_else(|| panic!("{kind}: no {version} schema upstream"))
}

// ---------------------------------------------------------------------------------------------
// Typed views

fn through<T: DeserializeOwned + serde::Serialize>(doc: &Value) -> Result<Value, String> {
    let typed: T = capo_api::decode::from_value(doc.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

/// `doc` as the typed struct of its kind and version reads and writes it.
fn normalized(doc: &Value) -> Result<Value, String> {
    let kind = doc["kind"].as_str().unwrap_or_default();
    match (doc["apiVersion"].as_str().unwrap_or_default(), kind) {
        (V1, "OpenStackCluster") => through::<v1beta1::OpenStackCluster>(doc),
        (V1, "OpenStackClusterTemplate") => through::<v1beta1::OpenStackClusterTemplate>(doc),
        (V1, "OpenStackMachine") => through::<v1beta1::OpenStackMachine>(doc),
        (V1, "OpenStackMachineTemplate") => through::<v1beta1::OpenStackMachineTemplate>(doc),
        (V2, "OpenStackCluster") => through::<v1beta2::OpenStackCluster>(doc),
        (V2, "OpenStackClusterTemplate") => through::<v1beta2::OpenStackClusterTemplate>(doc),
        (V2, "OpenStackMachine") => through::<v1beta2::OpenStackMachine>(doc),
        (V2, "OpenStackMachineTemplate") => through::<v1beta2::OpenStackMachineTemplate>(doc),
        (v, k) => Err(format!("not converted: {v} {k}")),
    }
}

fn annotation(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(CONVERSION_DATA_ANNOTATION))
        .and_then(Value::as_str)
}

fn other(version: &str) -> &'static str {
    if version == V1 { V2 } else { V1 }
}

/// Converts `doc` to the other version and back. Returns the converted object; fails unless it
/// reads into the target's typed struct (schema types) and the way back gives `doc` as its
/// typed struct reads it.
fn round_trip(doc: &Value) -> Result<Value, String> {
    let from = doc["apiVersion"].as_str().unwrap_or_default();
    let expected = normalized(doc).map_err(|e| format!("not a valid {from} object: {e}"))?;
    let there = convert(other(from), doc.clone()).map_err(|e| format!("refused: {e}"))?;
    if there["apiVersion"] != other(from) || there["kind"] != doc["kind"] {
        return Err(format!(
            "converted to {} {}",
            there["apiVersion"], there["kind"]
        ));
    }
    let typed = normalized(&there).map_err(|e| format!("converted object is invalid: {e}"))?;
    if typed != there {
        return Err("the converted object does not read back as its typed struct".into());
    }
    let back = convert(from, there.clone()).map_err(|e| format!("refused on the way back: {e}"))?;
    let mut diffs = Vec::new();
    differences("", &expected, &back, &mut diffs);
    if diffs.is_empty() {
        Ok(there)
    } else {
        Err(diffs.join("; "))
    }
}

/// `doc` defaulted with upstream's schema of its version, as the API server stores it.
fn defaulted(doc: &Value) -> Value {
    let kind = doc["kind"].as_str().unwrap_or_default();
    let version = doc["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit('/').next())
        .unwrap_or_default();
    let mut out = doc.clone();
    apply_defaults(&upstream_schema(kind, version), &mut out);
    out
}

/// Round-trips every document as written and defaulted; returns the defaulted documents that
/// needed conversion data, with the data.
fn check_documents(docs: &[(String, Value)]) -> Vec<(String, Value)> {
    let mut failures = Vec::new();
    let mut carried = Vec::new();
    for (label, doc) in docs {
        if let Err(e) = round_trip(doc) {
            failures.push(format!("{label}: {e}"));
        }
        match round_trip(&defaulted(doc)) {
            Err(e) => failures.push(format!("{label} (defaulted): {e}")),
            Ok(there) => {
                if let Some(data) = annotation(&there) {
                    let data = serde_json::from_str(data).unwrap_or(Value::Null);
                    carried.push((label.clone(), data));
                }
            }
        }
    }
    println!("{} documents, {} failures", docs.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    carried
}

#[test]
fn every_v1beta1_document_round_trips() {
    let docs = v1beta1_documents();
    for kind in KINDS {
        let n = docs.iter().filter(|(_, d)| d["kind"] == kind).count();
        println!("v1beta1 {kind}: {n}");
    }
    assert!(
        docs.len() >= 80,
        "only {} v1beta1 documents found",
        docs.len()
    );
    let carried = check_documents(&docs);
    assert!(
        carried.is_empty(),
        "v1beta2 holds every v1beta1 template field: {carried:?}"
    );
}

#[test]
fn every_v1beta2_document_round_trips() {
    let docs = v1beta2_documents();
    assert_eq!(
        docs.len(),
        15,
        "upstream templates changed: review this test"
    );
    let carried: Vec<(String, Value)> = check_documents(&docs)
        .into_iter()
        .map(|(label, data)| {
            (
                label.rsplit('/').next().unwrap_or_default().to_owned(),
                data,
            )
        })
        .collect();
    // Only what v1beta1 has no field for: an empty apiServer, and template metadata.
    let expected = vec![
        (
            "cluster-template-without-lb.yaml#5 (OpenStackCluster)".to_owned(),
            json!({"apiVersion": V2, "kind": "OpenStackCluster", "spec": {"apiServer": {}}}),
        ),
        (
            "clusterclass-dev-test.yaml#3 (OpenStackClusterTemplate)".to_owned(),
            json!({"apiVersion": V2, "kind": "OpenStackClusterTemplate", "spec": {"template": {"metadata": {
                "annotations": {"capo.e2e.test/template-metadata": "propagated"},
                "labels": {"capo.e2e.test/template-metadata": "propagated"}}}}}),
        ),
    ];
    assert_eq!(carried, expected);
}

/// Upstream converted its own templates when it introduced v1beta2: where a template exists in
/// both releases, our conversion of the v0.14.7 document must be upstream's v1beta2 document
/// (both as the API server would store them). Upstream also changed two documents beyond the
/// conversion, which are left out of the comparison: the e2e ClusterClass template gained
/// `spec.template.metadata` (new in v1beta2), and the cluster without load balancer has an
/// empty `spec.apiServer` where v0.14.7 has no API server field at all (the same meaning).
#[test]
fn v1beta1_templates_convert_to_upstreams_v1beta2_templates() {
    let old = documents(&reference("capo-v0.14.7/templates"), V1);
    let new = documents(&reference("capo-main-2026-08-21/templates"), V2);
    let file_of = |label: &str| {
        label
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .split('#')
            .next()
            .map(str::to_owned)
    };
    let mut pairs = 0;
    let mut failures = Vec::new();
    for (label, doc) in &old {
        let counterpart = new.iter().find(|(l, d)| {
            file_of(l) == file_of(label)
                && d["kind"] == doc["kind"]
                && d["metadata"]["name"] == doc["metadata"]["name"]
        });
        let Some((_, upstream)) = counterpart else {
            continue;
        };
        pairs += 1;
        let ours = match convert(V2, doc.clone()) {
            Ok(v) => defaulted(&v),
            Err(e) => {
                failures.push(format!("{label}: {e}"));
                continue;
            }
        };
        let mut theirs =
            defaulted(&normalized(upstream).unwrap_or_else(|e| panic!("{label}: {e}")));
        if let Some(template) = theirs
            .pointer_mut("/spec/template")
            .and_then(Value::as_object_mut)
        {
            template.remove("metadata");
        }
        if let Some(spec) = theirs.pointer_mut("/spec").and_then(Value::as_object_mut)
            && spec.get("apiServer") == Some(&json!({}))
        {
            spec.remove("apiServer");
        }
        let mut diffs = Vec::new();
        differences("", &theirs, &ours, &mut diffs);
        if !diffs.is_empty() {
            failures.push(format!("{label}: {}", diffs.join("; ")));
        }
    }
    println!("{pairs} pairs of documents compared");
    assert_eq!(
        pairs, 15,
        "every upstream v1beta2 document has a v0.14.7 counterpart"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Generated objects

/// Our CRD schema of `kind` in `version`.
fn our_schema(kind: &str, version: &str) -> Value {
    let crds = if version == "v1beta2" {
        v1beta2::crds()
    } else {
        capo_api::crds::all()
    };
    let crd = crds
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"));
    let schema = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == version)
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .map(serde_json::to_value)
        .and_then(Result::ok);
    schema.unwrap_or_else(|| panic!("no {version} schema for {kind}"))
}

/// Strings that exercise the mapping's edge cases, besides random ones.
const STRINGS: &[&str] = &[
    "",
    "x",
    "Ready",
    "True",
    "False",
    "NoReasonReported",
    "Local",
    "Volume",
    "Secret",
    "az-1",
];
const TIMES: &[&str] = &["2024-01-02T03:04:05Z", "2025-06-07T08:09:10Z"];

fn string_strategy() -> BoxedStrategy<Value> {
    prop_oneof![
        prop::sample::select(STRINGS).prop_map(Value::from),
        "[a-zA-Z0-9.-]{1,6}".prop_map(Value::from),
    ]
    .boxed()
}

/// Values for `schema` (structure only: enums and formats are honoured, bounds are not).
fn value_strategy(schema: &Value) -> BoxedStrategy<Value> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return prop::sample::select(values.clone()).boxed();
    }
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return prop::sample::select(vec![json!("1"), json!("2Gi")]).boxed();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => object_strategy(schema),
        Some("array") => {
            let items = value_strategy(schema.get("items").unwrap_or(&Value::Null));
            prop::collection::vec(items, 0..3)
                .prop_map(Value::Array)
                .boxed()
        }
        Some("integer") => prop_oneof![0i64..4, Just(6443i64), Just(i64::from(i32::MAX))]
            .prop_map(Value::from)
            .boxed(),
        Some("boolean") => any::<bool>().prop_map(Value::from).boxed(),
        Some("string") if schema.get("format") == Some(&json!("date-time")) => {
            prop::sample::select(TIMES).prop_map(Value::from).boxed()
        }
        Some("string") => string_strategy(),
        _ => Just(Value::Null).boxed(),
    }
}

fn object_strategy(schema: &Value) -> BoxedStrategy<Value> {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = props
            .iter()
            .map(|(name, prop)| {
                let name = name.clone();
                let value = value_strategy(prop);
                if required.contains(&name.as_str()) {
                    value.prop_map(move |v| Some((name.clone(), v))).boxed()
                } else {
                    prop::option::weighted(0.4, value.prop_map(move |v| (name.clone(), v))).boxed()
                }
            })
            .collect();
        fields
            .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect()))
            .boxed()
    } else if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        prop::collection::btree_map("[a-z]{1,3}", value_strategy(values), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed()
    } else {
        Just(json!({})).boxed()
    }
}

/// Metadata as the API server returns it: no empty maps, sometimes a generation, sometimes an
/// unrelated annotation under the conversion-data key.
fn metadata_strategy() -> BoxedStrategy<Value> {
    let annotations = prop::option::weighted(
        0.4,
        prop::collection::btree_map(
            prop_oneof![Just(CONVERSION_DATA_ANNOTATION.to_owned()), "[a-z]{1,3}"],
            prop_oneof![
                Just(
                    r#"{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha7","spec":{}}"#
                        .to_owned()
                ),
                "[a-z{}]{0,4}"
            ],
            1..3,
        ),
    );
    (prop::option::of(0i64..5), annotations)
        .prop_map(|(generation, annotations)| {
            let mut m = Map::new();
            m.insert("name".into(), json!("generated"));
            if let Some(g) = generation {
                m.insert("generation".into(), json!(g));
            }
            if let Some(a) = annotations {
                m.insert("annotations".into(), json!(a));
            }
            Value::Object(m)
        })
        .boxed()
}

/// Makes a generated object one that its version accepts where the mapping depends on it:
/// machine specs have exactly one flavor, block devices a known storage type, conditions and
/// failure domains unique keys.
fn make_valid(doc: &mut Value) {
    let v2 = doc["apiVersion"] == V2;
    let specs = [
        "/spec",
        "/spec/template/spec",
        "/spec/bastion/spec",
        "/spec/template/spec/bastion/spec",
    ];
    for pointer in specs {
        let machine = doc["kind"]
            .as_str()
            .is_some_and(|k| k.starts_with("OpenStackMachine"));
        let bastion = pointer.ends_with("bastion/spec");
        if !(machine ^ bastion) {
            continue;
        }
        let Some(spec) = doc.pointer_mut(pointer).and_then(Value::as_object_mut) else {
            continue;
        };
        if v2 {
            let flavor = spec.entry("flavor").or_insert_with(|| json!({"id": "f"}));
            let fixed = match (
                flavor.get("id").cloned(),
                flavor.pointer("/filter/name").cloned(),
            ) {
                (Some(id), _) => json!({"id": id}),
                (None, Some(name)) => json!({"filter": {"name": name}}),
                (None, None) => json!({"id": "f"}),
            };
            *flavor = fixed;
        } else if !spec.contains_key("flavor") && !spec.contains_key("flavorID") {
            spec.insert("flavor".into(), json!("f"));
        }
        if let Some(devices) = spec
            .get_mut("additionalBlockDevices")
            .and_then(Value::as_array_mut)
        {
            for d in devices {
                if let Some(t) = d.pointer_mut("/storage/type")
                    && t != "Local"
                    && t != "Volume"
                {
                    *t = json!("Volume");
                }
            }
        }
    }
    dedupe(doc.pointer_mut("/status/conditions"), "type");
    dedupe(doc.pointer_mut("/status/failureDomains"), "name");
}

fn dedupe(list: Option<&mut Value>, key: &str) {
    if let Some(items) = list.and_then(Value::as_array_mut) {
        let mut seen = std::collections::HashSet::new();
        items.retain(|i| seen.insert(i.get(key).cloned()));
    }
}

/// Valid generated objects of `kind` in `version` (`v1beta1` or `v1beta2`).
fn object_strategy_for(kind: &'static str, version: &'static str) -> BoxedStrategy<Value> {
    let schema = our_schema(kind, version);
    let spec = value_strategy(schema.pointer("/properties/spec").unwrap_or(&Value::Null));
    let status = match schema.pointer("/properties/status") {
        Some(s) => prop::option::weighted(0.7, value_strategy(s)).boxed(),
        None => Just(None).boxed(),
    };
    (metadata_strategy(), spec, status)
        .prop_map(move |(metadata, spec, status)| {
            let mut doc = json!({
                "apiVersion": format!("infrastructure.cluster.x-k8s.io/{version}"),
                "kind": kind, "metadata": metadata, "spec": spec,
            });
            if let Some(s) = status {
                doc["status"] = s;
            }
            make_valid(&mut doc);
            doc
        })
        .boxed()
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn generated_objects_round_trip(version: &'static str) {
    for kind in KINDS {
        let mut runner = runner(96);
        let result = runner.run(&object_strategy_for(kind, version), |doc| {
            prop_assume!(normalized(&doc).is_ok());
            round_trip(&doc).map(|_| ()).map_err(TestCaseError::fail)
        });
        if let Err(e) = result {
            panic!("{kind} {version}: {e}");
        }
    }
}

#[test]
fn generated_v1beta1_objects_round_trip() {
    generated_objects_round_trip("v1beta1");
}

#[test]
fn generated_v1beta2_objects_round_trip() {
    generated_objects_round_trip("v1beta2");
}

/// What a reader in the process makes of a stored (v1beta2) object with
/// [`StoredForm::from_stored`] is what the webhook's conversion serves, less the conversion data
/// annotation: for objects written as v1beta2 (no conversion data, the plain conversion) and
/// for objects written as v1beta1 and stored as v1beta2 (conversion data, restored).
fn read_in_process_as_served<T>(kind: &'static str)
where
    T: StoredForm + DeserializeOwned + serde::Serialize,
{
    for written in ["v1beta1", "v1beta2"] {
        let mut runner = runner(48);
        let result = runner.run(&object_strategy_for(kind, written), |doc| {
            prop_assume!(normalized(&doc).is_ok());
            let stored = convert(V2, doc).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let served =
                convert(V1, stored.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let typed: T::Stored =
                serde_json::from_value(stored).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let read = T::from_stored(typed).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let without_data = |v: Value| -> Result<Value, TestCaseError> {
                let mut v = through::<T>(&v).map_err(TestCaseError::fail)?;
                if let Some(a) = v
                    .pointer_mut("/metadata/annotations")
                    .and_then(Value::as_object_mut)
                {
                    a.remove(CONVERSION_DATA_ANNOTATION);
                    if a.is_empty() {
                        v["metadata"]
                            .as_object_mut()
                            .map(|m| m.remove("annotations"));
                    }
                }
                Ok(v)
            };
            let read =
                serde_json::to_value(&read).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(without_data(read)?, without_data(served)?);
            Ok(())
        });
        if let Err(e) = result {
            panic!("{kind} written as {written}: {e}");
        }
    }
}

#[test]
fn stored_objects_read_in_process_as_the_webhook_serves_them() {
    read_in_process_as_served::<v1beta1::OpenStackCluster>("OpenStackCluster");
    read_in_process_as_served::<v1beta1::OpenStackClusterTemplate>("OpenStackClusterTemplate");
    read_in_process_as_served::<v1beta1::OpenStackMachine>("OpenStackMachine");
    read_in_process_as_served::<v1beta1::OpenStackMachineTemplate>("OpenStackMachineTemplate");
}

/// The status a client in this process writes ([`StoredStatus::status_to_stored`], the plain
/// conversion) is the status the full conversion stores for the same object.
fn status_written_as_stored<T>(kind: &'static str)
where
    T: StoredStatus + DeserializeOwned + kube::Resource,
    T: HasStatus<<T as StoredStatus>::Status>,
{
    let mut runner = runner(48);
    let result = runner.run(&object_strategy_for(kind, "v1beta1"), |mut doc| {
        prop_assume!(normalized(&doc).is_ok());
        // The status subresource writes no annotation, so there is no conversion data to restore.
        doc["metadata"]
            .as_object_mut()
            .map(|m| m.remove("annotations"));
        let typed: T =
            serde_json::from_value(doc.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let Some(status) = typed.status_of() else {
            return Ok(());
        };
        let full = convert(V2, doc).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let plain = T::status_to_stored(status, typed.meta().generation)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let plain = serde_json::to_value(plain).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(plain, full["status"].clone());
        Ok(())
    });
    if let Err(e) = result {
        panic!("{kind}: {e}");
    }
}

/// The status of a kind, for [`status_written_as_stored`].
trait HasStatus<S> {
    fn status_of(&self) -> Option<&S>;
}

impl HasStatus<v1beta1::OpenStackClusterStatus> for v1beta1::OpenStackCluster {
    fn status_of(&self) -> Option<&v1beta1::OpenStackClusterStatus> {
        self.status.as_ref()
    }
}

impl HasStatus<v1beta1::OpenStackMachineStatus> for v1beta1::OpenStackMachine {
    fn status_of(&self) -> Option<&v1beta1::OpenStackMachineStatus> {
        self.status.as_ref()
    }
}

impl HasStatus<v1beta1::OpenStackMachineTemplateStatus> for v1beta1::OpenStackMachineTemplate {
    fn status_of(&self) -> Option<&v1beta1::OpenStackMachineTemplateStatus> {
        self.status.as_ref()
    }
}

#[test]
fn status_written_in_process_is_what_the_full_conversion_stores() {
    status_written_as_stored::<v1beta1::OpenStackCluster>("OpenStackCluster");
    status_written_as_stored::<v1beta1::OpenStackMachine>("OpenStackMachine");
    status_written_as_stored::<v1beta1::OpenStackMachineTemplate>("OpenStackMachineTemplate");
}

/// Conversion data meant for one object, found on another (the object changed in the other
/// version after the data was written): the conversion still succeeds, the result is valid,
/// and the data is gone.
#[test]
fn stale_conversion_data_never_breaks_a_conversion() {
    for version in ["v1beta1", "v1beta2"] {
        for kind in KINDS {
            let source = object_strategy_for(kind, version);
            let other_version = if version == "v1beta1" {
                "v1beta2"
            } else {
                "v1beta1"
            };
            let edited = object_strategy_for(kind, other_version);
            let mut runner = runner(48);
            let result = runner.run(&(source, edited), |(source, mut edited)| {
                prop_assume!(normalized(&source).is_ok() && normalized(&edited).is_ok());
                let there = convert(
                    other(&format!("infrastructure.cluster.x-k8s.io/{version}")),
                    source,
                )
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let Some(data) = annotation(&there) else {
                    return Ok(());
                };
                edited["metadata"]["annotations"] = json!({CONVERSION_DATA_ANNOTATION: data});
                let target = format!("infrastructure.cluster.x-k8s.io/{version}");
                let back =
                    convert(&target, edited).map_err(|e| TestCaseError::fail(e.to_string()))?;
                normalized(&back).map_err(TestCaseError::fail)?;
                let left =
                    annotation(&back).map(|a| a.contains(&format!("\"apiVersion\":\"{target}\"")));
                prop_assert_ne!(left, Some(true), "consumed data left behind");
                Ok(())
            });
            if let Err(e) = result {
                panic!("{kind} from {version}: {e}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Malformed input

fn arbitrary_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        string_strategy(),
    ];
    leaf.prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    prop::sample::select(vec![
                        "spec",
                        "status",
                        "metadata",
                        "flavor",
                        "ports",
                        "conditions",
                        "apiServer",
                        "type",
                        "annotations",
                        "template",
                        "image",
                        "identityRef",
                    ])
                    .prop_map(str::to_owned),
                    "[a-z]{1,4}",
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// Converting `doc` to both versions returns (whatever it returns) instead of panicking; a
/// success must be a valid object.
fn converts_without_panic(doc: &Value) -> Result<(), TestCaseError> {
    for target in [V1, V2, "v1"] {
        if let Ok(out) = convert(target, doc.clone())
            && target != doc["apiVersion"]
        {
            normalized(&out).map_err(|e| TestCaseError::fail(format!("invalid success: {e}")))?;
        }
    }
    Ok(())
}

#[test]
fn arbitrary_json_never_panics() {
    let header = (
        prop::sample::select(vec![V1, V2, "v1", ""]),
        prop::sample::select(KINDS.to_vec()),
    );
    runner(512)
        .run(
            &(header, arbitrary_json()),
            |((api_version, kind), body)| {
                converts_without_panic(&body)?;
                let mut doc = body;
                if let Some(map) = doc.as_object_mut() {
                    map.insert("apiVersion".into(), json!(api_version));
                    map.insert("kind".into(), json!(kind));
                }
                converts_without_panic(&doc)
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Every path to a node of `v`, as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, c)| pointers(c, format!("{at}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| pointers(c, format!("{at}/{i}"), out)),
        _ => {}
    }
    out.push(at);
}

#[test]
fn valid_objects_with_a_part_replaced_by_junk_never_panic() {
    for version in ["v1beta1", "v1beta2"] {
        for kind in KINDS {
            let strategy = (
                object_strategy_for(kind, version),
                any::<prop::sample::Index>(),
                arbitrary_json(),
            );
            runner(64)
                .run(&strategy, |(mut doc, index, junk)| {
                    let mut all = Vec::new();
                    pointers(&doc, String::new(), &mut all);
                    let at = index.get(&all).clone();
                    if let Some(slot) = doc.pointer_mut(&at) {
                        *slot = junk;
                    }
                    converts_without_panic(&doc)
                })
                .unwrap_or_else(|e| panic!("{kind} {version}: {e}"));
        }
    }
}

#[test]
fn junk_conversion_data_never_panics() {
    let strategy = (
        object_strategy_for("OpenStackMachine", "v1beta2"),
        arbitrary_json(),
        any::<bool>(),
    );
    runner(256)
        .run(&strategy, |(mut doc, junk, ours)| {
            let mut data = junk;
            if ours && let Some(m) = data.as_object_mut() {
                m.insert("apiVersion".into(), json!(V1));
            }
            doc["metadata"]["annotations"] = json!({CONVERSION_DATA_ANNOTATION: data.to_string()});
            converts_without_panic(&doc)
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

fn machine_v1beta1() -> Value {
    json!({
        "apiVersion": V1, "kind": "OpenStackMachine", "metadata": {"name": "m", "generation": 1},
        "spec": {"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}}}
    })
}

#[test]
fn deep_values_are_refused() {
    let mut deep = json!("bottom");
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut doc = machine_v1beta1();
    doc["spec"]["extensions"] = deep;
    let err = convert(V2, doc).err().map(|e| e.reason);
    assert_eq!(err, Some(format!("nested deeper than {MAX_DEPTH} levels")));
}

#[test]
fn huge_values_convert() {
    let mut doc = machine_v1beta1();
    let conditions: Vec<Value> = (0..20_000)
        .map(|i| {
            json!({"type": format!("C{i}"), "status": "False", "severity": "Info",
                        "lastTransitionTime": TIMES[0], "message": "m".repeat(50)})
        })
        .collect();
    doc["status"] = json!({"conditions": conditions, "instanceState": "x".repeat(4 << 20)});
    let there = convert(V2, doc.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert!(annotation(&there).is_some_and(|a| a.contains("C19999")));
    let back = convert(V1, there).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, normalized(&doc).unwrap_or_default());
    let mut long = machine_v1beta1();
    long["spec"]["tags"] = Value::Array(vec![json!("t"); 200_000]);
    assert!(convert(V2, long).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Specific mappings, through the public API

#[test]
fn ready_carried_against_the_conditions_does_not_outlive_them() {
    let cluster = json!({
        "apiVersion": V1, "kind": "OpenStackCluster", "metadata": {"name": "c"},
        "spec": {"identityRef": {"cloudName": "c", "name": "n"}},
        "status": {"ready": true}
    });
    let there = convert(V2, cluster.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert!(annotation(&there).is_some());
    assert_eq!(round_trip(&cluster).map(|_| ()), Ok(()));
    // The v1beta2 controller reports the cluster not ready: the carried `ready` no longer applies.
    let mut edited = there;
    edited["status"]["conditions"] = json!([{"type": "Ready", "status": "False", "reason": "Down",
        "message": "", "lastTransitionTime": TIMES[0]}]);
    let back = convert(V1, edited).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back["status"]["ready"], false);
}

#[test]
fn typed_functions_match_the_json_entry_point() {
    let doc = machine_v1beta1();
    let typed: v1beta1::OpenStackMachine =
        serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{e}"));
    let up = capo_api::conversion::machine_to_v1beta2(&typed).unwrap_or_else(|e| panic!("{e}"));
    let json_up = convert(V2, doc).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(serde_json::to_value(&up).ok(), Some(json_up));
    let down = capo_api::conversion::machine_to_v1beta1(&up).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(down, typed);
}

#[test]
fn errors_name_the_field_and_the_reason() {
    let mut doc = machine_v1beta1();
    doc["spec"]["additionalBlockDevices"] =
        json!([{"name": "d", "sizeGiB": 1, "storage": {"type": "Tape"}}]);
    let err = convert(V2, doc)
        .err()
        .unwrap_or_else(|| ConversionError::new("", ""));
    assert_eq!(err.path, "spec.additionalBlockDevices[0].storage.type");
    assert!(err.reason.contains("Tape"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Admission validation on generated objects

/// Creates and updates of generated objects of `kind` are judged without a panic, whatever the
/// verdict: both objects as the webhook decodes them (`v1beta2` ones converted first).
fn validators_never_panic<T>(kind: &'static str, version: &'static str)
where
    T: DeserializeOwned + capo_api::validation::Validate,
{
    let decode = |doc: Value| -> Option<T> {
        let doc = if doc["apiVersion"] == V2 {
            convert(V1, doc).ok()?
        } else {
            doc
        };
        capo_api::decode::from_value(doc).ok()
    };
    let strategy = (
        object_strategy_for(kind, version),
        object_strategy_for(kind, version),
        any::<bool>(),
    );
    let judged = std::sync::atomic::AtomicUsize::new(0);
    runner(64)
        .run(&strategy, |(old, new, dry_run)| {
            let (Some(old), Some(new)) = (decode(old), decode(new)) else {
                return Ok(());
            };
            judged.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let context = capo_api::validation::UpdateContext {
                topology_dry_run: dry_run,
            };
            let _ = new.validate_create();
            let _ = new.validate_update(&old, &context);
            let _ = old.validate_update(&old, &context);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{kind} {version}: {e}"));
    let judged = judged.into_inner();
    assert!(
        judged >= 16,
        "{kind} {version}: only {judged} of 64 pairs decoded"
    );
}

#[test]
fn generated_objects_never_panic_the_validators() {
    use capo_api::v1alpha1::OpenStackServer;
    for version in ["v1beta1", "v1beta2"] {
        validators_never_panic::<v1beta1::OpenStackCluster>("OpenStackCluster", version);
        validators_never_panic::<v1beta1::OpenStackClusterTemplate>(
            "OpenStackClusterTemplate",
            version,
        );
        validators_never_panic::<v1beta1::OpenStackMachine>("OpenStackMachine", version);
        validators_never_panic::<v1beta1::OpenStackMachineTemplate>(
            "OpenStackMachineTemplate",
            version,
        );
    }
    validators_never_panic::<OpenStackServer>("OpenStackServer", "v1alpha1");
}

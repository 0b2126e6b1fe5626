//! Round trip of upstream manifests through our types.
//!
//! Besides the manifests below, `every_*_round_trips` builds one object per kind with every
//! property of the schema set and round-trips it.
//!
//! Inputs (copied into `tests/data/` so the test does not depend on anything outside the repo):
//! - `templates/`: upstream CAPO v0.14.7 clusterctl templates; `${VAR}` placeholders are
//!   substituted with plausible values first (see [`substitute`]);
//! - `seed-001/accepted/`: the v1beta1 examples of the upstream book (seed 001), reconstructed
//!   into whole manifests (see `seed-001/README.md`);
//! - `seed-001/rejected/`: book examples that are stale for v1beta1 and that upstream's schema
//!   rejects too; our types must not accept them silently.
//!
//! The v1alpha1 OpenStackServer and OpenStackFloatingIPPool are held to upstream main's schema
//! instead of v0.14.7's ([`FOLLOWS_MAIN`]): main changed them in place and capo follows it;
//! objects stored by v0.14 must still read ([`v0_14_7_servers_and_pools_still_read`]).
//!
//! Each `OpenStack*` document is first defaulted with the upstream CRD schema (as the API server
//! does before storing it), then deserialized into our type and serialized back. The result
//! must equal the defaulted input: a field our types do not know is dropped by serde and shows up
//! here as a difference naming its path, although the types themselves ignore unknown fields.

mod common;

use common::json_values::{apply_defaults, differences, maximal};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::{Path, PathBuf};

use capo_api::v1alpha1::{OpenStackClusterIdentity, OpenStackFloatingIPPool, OpenStackServer};
use capo_api::v1beta1::{
    OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine, OpenStackMachineTemplate,
};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Values for the clusterctl variables used by the upstream templates.
fn variable(name: &str) -> Option<&'static str> {
    Some(match name {
        "CLUSTER_NAME" => "capo-test",
        "CONTROL_PLANE_MACHINE_COUNT" => "3",
        "WORKER_MACHINE_COUNT" => "2",
        "KUBERNETES_VERSION" => "v1.31.2",
        "COREOS_OPENSTACK_HOSTNAME" => "node-0.example",
        "COREOS_OPENSTACK_INSTANCE_UUID" => "8f0b5a3e-4a4b-4c1d-9e57-3f2a1b0c9d8e",
        "FLATCAR_IMAGE_NAME" | "OPENSTACK_FLATCAR_IMAGE_NAME" => "flatcar-stable",
        "OPENSTACK_CLOUD" => "capo-e2e",
        "OPENSTACK_CLOUD_CACERT_B64" | "OPENSTACK_CLOUD_YAML_B64" => "Y2xvdWRzOiB7fQo=",
        "OPENSTACK_CONTROL_PLANE_MACHINE_FLAVOR" => "m1.medium",
        "OPENSTACK_NODE_MACHINE_FLAVOR" => "m1.small",
        "OPENSTACK_DNS_NAMESERVERS" => "192.0.2.53",
        "OPENSTACK_EXTERNAL_NETWORK_ID" => "0a5d4e3d-0a2c-4bed-9172-72544db1f8da",
        "OPENSTACK_FAILURE_DOMAIN" => "nova",
        "OPENSTACK_IMAGE_NAME" => "ubuntu-2404-kube-v1.31.2",
        "OPENSTACK_SSH_KEY_NAME" => "capo-key",
        _ => return None,
    })
}

/// envsubst as clusterctl does it: `${VAR}`, `${VAR:=default}` and `${VAR%suffix-pattern}` (only
/// the `.*` pattern upstream uses: strip the last `.` and what follows).
fn substitute(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .unwrap_or_else(|| panic!("unterminated ${{ in {after:.40}"));
        let expr = &after[..end];
        let value = if let Some((name, default)) = expr.split_once(":=") {
            variable(name)
                .map(str::to_owned)
                .unwrap_or_else(|| default.to_owned())
        } else if let Some((name, ".*")) = expr.split_once('%') {
            let value = variable(name).unwrap_or_else(|| panic!("no value for ${{{name}}}"));
            value
                .rsplit_once('.')
                .map_or(value, |(head, _)| head)
                .to_owned()
        } else {
            variable(expr)
                .unwrap_or_else(|| panic!("no value for ${{{expr}}}"))
                .to_owned()
        };
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn yaml_documents(text: &str) -> Vec<Value> {
    yaml_serde::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("bad YAML: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

use serde::Deserialize;

/// The upstream schema of a kind, from the CRDs kept as test data.
/// Kinds whose served version upstream main changed in place (v1alpha1 on v1beta2's shared
/// types), which capo follows: their upstream schema is main's.
const FOLLOWS_MAIN: &[&str] = &["OpenStackServer", "OpenStackFloatingIPPool"];

/// Upstream main's CRDs (`../shared/reference`, as `schema_compat` reads them).
fn main_crds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/capo-main-2026-08-21/crds")
}

/// The upstream schema `kind` is held to: v0.14.7's, or main's for [`FOLLOWS_MAIN`].
fn upstream_schema(kind: &str) -> Value {
    if FOLLOWS_MAIN.contains(&kind) {
        schema_in(&main_crds_dir(), kind)
    } else {
        schema_in(&data_dir().join("upstream-crds"), kind)
    }
}

/// The first version's schema of `kind` in the CRD directory `dir`.
fn schema_in(dir: &Path, kind: &str) -> Value {
    let plural = format!("{}s", kind.to_lowercase()).replace("identitys", "identities");
    let path = dir.join(format!("infrastructure.cluster.x-k8s.io_{plural}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let crd: Value = yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    crd.pointer("/spec/versions/0/schema/openAPIV3Schema")
        .cloned()
        .unwrap_or(Value::Null)
}

fn through<K: Serialize + DeserializeOwned>(input: &Value) -> Result<Value, String> {
    let typed: K =
        serde_json::from_value(input.clone()).map_err(|e| format!("does not parse: {e}"))?;
    serde_json::to_value(&typed).map_err(|e| format!("does not serialize: {e}"))
}

/// Round-trips one document; `Err` describes why it failed.
fn round_trip(doc: &Value) -> Result<(), String> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let mut defaulted = doc.clone();
    apply_defaults(&upstream_schema(kind), &mut defaulted);
    // The raw manifest (before defaulting) must parse too: clients build objects without it.
    let raw_and_defaulted = [doc, &defaulted];
    let mut output = Value::Null;
    for input in raw_and_defaulted {
        output = match kind {
            "OpenStackCluster" => through::<OpenStackCluster>(input),
            "OpenStackClusterTemplate" => through::<OpenStackClusterTemplate>(input),
            "OpenStackMachine" => through::<OpenStackMachine>(input),
            "OpenStackMachineTemplate" => through::<OpenStackMachineTemplate>(input),
            "OpenStackServer" => through::<OpenStackServer>(input),
            "OpenStackFloatingIPPool" => through::<OpenStackFloatingIPPool>(input),
            "OpenStackClusterIdentity" => through::<OpenStackClusterIdentity>(input),
            other => Err(format!("unexpected kind {other}")),
        }?;
    }
    let mut diffs = Vec::new();
    differences("", &defaulted, &output, &mut diffs);
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

/// Every `OpenStack*` document of the YAML files in `dir`, with a label for messages.
fn openstack_documents(dir: &Path, envsubst: bool) -> Vec<(String, Value)> {
    let files = common::files::yaml_files(dir);
    let mut docs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        let text = if envsubst { substitute(&text) } else { text };
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (i, doc) in yaml_documents(&text).into_iter().enumerate() {
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
            if kind.starts_with("OpenStack") {
                docs.push((format!("{name}#{i} ({kind})"), doc));
            }
        }
    }
    docs
}

fn check_all_round_trip(docs: &[(String, Value)]) {
    common::files::check_each("round trip", docs, round_trip);
}

#[test]
fn upstream_templates_round_trip() {
    let docs = openstack_documents(&data_dir().join("templates"), true);
    assert_eq!(
        docs.len(),
        18,
        "expected 5 clusters, 1 cluster template, 12 machine templates"
    );
    check_all_round_trip(&docs);
}

#[test]
fn seed_book_examples_round_trip() {
    let docs = openstack_documents(&data_dir().join("seed-001/accepted"), false);
    assert!(docs.len() >= 20, "only {} seed examples found", docs.len());
    check_all_round_trip(&docs);
}

#[test]
fn stale_book_examples_are_not_silently_accepted() {
    let docs = openstack_documents(&data_dir().join("seed-001/rejected"), false);
    assert!(!docs.is_empty());
    for (label, doc) in &docs {
        assert!(
            round_trip(doc).is_err(),
            "{label} was accepted unchanged but upstream rejects it"
        );
    }
}

#[test]
fn unknown_fields_are_tolerated_at_runtime_but_caught_here() {
    let doc: Value = serde_json::json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "OpenStackMachine",
        "metadata": {"name": "m"},
        "spec": {"flavor": "m1.small", "image": {"id": "02e31c38-d5ba-4c57-addb-00fc71eb5b19"},
                 "fieldFromTheFuture": {"x": 1}}
    });
    // The types ignore the unknown field ...
    assert!(serde_json::from_value::<OpenStackMachine>(doc.clone()).is_ok());
    // ... and the round trip names it.
    let err = round_trip(&doc).err().unwrap_or_default();
    assert!(err.contains(".spec.fieldFromTheFuture: lost"), "{err}");
}

#[test]
fn extensions_absent_means_upstream_bytes() {
    let docs = openstack_documents(&data_dir().join("templates"), true);
    for (label, doc) in docs.iter().filter(|(_, d)| d["kind"] == "OpenStackCluster") {
        let typed: OpenStackCluster =
            serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(typed.spec.extensions.is_none());
        let text = serde_json::to_string(&typed).unwrap_or_default();
        assert!(!text.contains("extensions"), "{label}");
    }
}

#[test]
fn substitution_follows_clusterctl() {
    assert_eq!(substitute("a ${CLUSTER_NAME} b"), "a capo-test b");
    assert_eq!(substitute("${UNSET_FOR_TEST:=x}"), "x");
    assert_eq!(substitute("${KUBERNETES_VERSION%.*}"), "v1.31");
}

#[test]
fn every_upstream_property_round_trips() {
    let kinds = [
        ("OpenStackCluster", "v1beta1"),
        ("OpenStackClusterTemplate", "v1beta1"),
        ("OpenStackMachine", "v1beta1"),
        ("OpenStackMachineTemplate", "v1beta1"),
        ("OpenStackServer", "v1alpha1"),
        ("OpenStackFloatingIPPool", "v1alpha1"),
        ("OpenStackClusterIdentity", "v1alpha1"),
    ];
    let mut failures = Vec::new();
    for (kind, version) in kinds {
        let mut doc = maximal(&upstream_schema(kind));
        doc["apiVersion"] = Value::from(format!("infrastructure.cluster.x-k8s.io/{version}"));
        doc["kind"] = Value::from(kind);
        doc["metadata"] = serde_json::json!({"name": "everything"});
        if let Err(e) = round_trip(&doc) {
            failures.push(format!("{kind}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Servers and pools stored by upstream v0.14 (every property of v0.14.7's schema set) still
/// read; writing them back loses only the conditions' `severity`, which standard conditions do
/// not have. A port's `disablePortSecurity` stays (a legacy field of capo's v1alpha1).
#[test]
fn v0_14_7_servers_and_pools_still_read() {
    let mut failures = Vec::new();
    for kind in FOLLOWS_MAIN {
        let mut doc = maximal(&schema_in(&data_dir().join("upstream-crds"), kind));
        doc["apiVersion"] = Value::from("infrastructure.cluster.x-k8s.io/v1alpha1");
        doc["kind"] = Value::from(*kind);
        doc["metadata"] = serde_json::json!({"name": "stored-by-v0.14"});
        // v0.14.7 takes any string as a block device's storage type; only these two ever
        // worked (and v1beta2's schema allows no other).
        if let Some(storage) = doc.pointer_mut("/spec/additionalBlockDevices/0/storage/type") {
            *storage = Value::from("Volume");
        }
        let output = match *kind {
            "OpenStackServer" => through::<OpenStackServer>(&doc),
            _ => through::<OpenStackFloatingIPPool>(&doc),
        };
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                failures.push(format!("{kind}: {e}"));
                continue;
            }
        };
        let mut diffs = Vec::new();
        differences("", &doc, &output, &mut diffs);
        failures.extend(
            diffs
                .into_iter()
                .filter(|d| d != ".status.conditions[0].severity: lost in the round trip")
                .map(|d| format!("{kind}: {d}")),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Same as above with our own schemas, which add the BA/ACP extensions.
#[test]
fn every_property_of_our_schemas_round_trips() {
    let mut failures = Vec::new();
    for crd in capo_api::crds::all() {
        let version = &crd.spec.versions[0];
        let schema = serde_json::to_value(
            version
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref()),
        )
        .unwrap_or_default();
        let mut doc = maximal(&schema);
        doc["apiVersion"] = Value::from(format!("{}/{}", crd.spec.group, version.name));
        doc["kind"] = Value::from(crd.spec.names.kind.clone());
        doc["metadata"] = serde_json::json!({"name": "everything"});
        if let Err(e) = round_trip(&doc) {
            failures.push(format!("{}: {e}", crd.spec.names.kind));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

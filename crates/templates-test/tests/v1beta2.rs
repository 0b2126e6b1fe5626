//! The templates write capo's four kinds in `infrastructure.cluster.x-k8s.io/v1beta2` (but for
//! the capi-v1beta1 flavor, which stays on v1beta1 throughout), and that move changed nothing:
//! each v1beta2 document, converted to v1beta1 as the API server does it (defaulted in v1beta2,
//! then capo's conversion), is exactly the v1beta1 document the template had before
//! (`tests/data/v1beta1/`, defaulted in v1beta1), and converts back to itself. The ClusterClass keeps
//! its variables; its patches, rewritten for v1beta2, are exercised by the real Cluster API
//! topology controller in the end-to-end tier (`topology_flavor_reconciles_through_the_cluster_class`,
//! bastion included).
//!
//! The documents are compared unrendered: a clusterctl variable must stand where it stood.

mod common;

use std::collections::BTreeMap;

use common::TEMPLATES;
use common::infra::{self, V1BETA1, V1BETA2};
use serde_json::Value;

/// The infrastructure version each template writes its infrastructure objects in.
fn version_of(file: &str) -> &'static str {
    if file == "cluster-template-capi-v1beta1.yaml" {
        V1BETA1
    } else {
        V1BETA2
    }
}

/// `kind/name` of a document.
fn key(doc: &Value) -> String {
    format!(
        "{}/{}",
        doc["kind"].as_str().unwrap_or_default(),
        doc["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// Every object, reference or selector naming one of the four kinds with an `apiVersion`.
fn versioned_mentions<'a>(value: &'a Value, path: &str, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::Object(map) => {
            if infra::is_infra(value) {
                out.push((path.to_owned(), infra::type_of(value).0));
            }
            for (k, v) in map {
                versioned_mentions(v, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                versioned_mentions(v, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_infrastructure_api_version_is_the_flavors_version() {
    let mut mentions_seen = 0;
    for (file, _) in TEMPLATES {
        let expected = version_of(file);
        for doc in common::documents(&common::template(file)) {
            let mut mentions = Vec::new();
            versioned_mentions(&doc, &key(&doc), &mut mentions);
            for (path, version) in mentions {
                assert_eq!(version, expected, "{file}: {path}");
                mentions_seen += 1;
            }
        }
    }
    // Objects: 3 per kubeadm flavor (5 of them), 5 in ansible, 3 in the class. References with
    // an apiVersion: the 3 infrastructureRefs of capi-v1beta1 (Cluster API v1beta2 references
    // name a group, not a version), and in the class 3 templateRefs and 8 patch selectors
    // (identityRef 1, imageName 2, imageRef 2, allowedCIDRs 1, bastion 1, bastionFlavor 1).
    assert_eq!(mentions_seen, 5 * 3 + 5 + 3 + 3 + 3 + 8);
}

#[test]
fn the_v1beta2_documents_convert_to_the_previous_v1beta1_documents_and_back() {
    let previous = common::previous_v1beta1();
    let mut compared = 0;
    for (file, _) in TEMPLATES {
        let current: Vec<Value> = common::documents(&common::template(file))
            .into_iter()
            .filter(infra::is_infra)
            .collect();
        let Some(old) = previous.get(*file) else {
            // Unchanged by the move: the capi-v1beta1 flavor, and templates without
            // infrastructure objects.
            assert!(
                current.iter().all(|d| infra::type_of(d).0 == V1BETA1),
                "{file}: v1beta2 documents without tests/data/v1beta1/{file}"
            );
            continue;
        };
        let old: BTreeMap<String, Value> = common::documents(old)
            .into_iter()
            .filter(infra::is_infra)
            .map(|d| (key(&d), d))
            .collect();
        let new: BTreeMap<String, Value> = current.into_iter().map(|d| (key(&d), d)).collect();
        assert_eq!(
            old.keys().collect::<Vec<_>>(),
            new.keys().collect::<Vec<_>>(),
            "{file}: the infrastructure objects differ"
        );
        for (k, new) in &new {
            assert_eq!(infra::type_of(new).0, V1BETA2, "{file}: {k}");
            let down = infra::convert(new, V1BETA1).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(
                down,
                infra::defaulted(&old[k]),
                "{file}: {k} in v1beta1 (left) is not the previous document (right)"
            );
            let up = infra::convert(&down, V1BETA2).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(
                up,
                infra::defaulted(new),
                "{file}: {k} does not come back from v1beta1 unchanged"
            );
            compared += 1;
        }
    }
    // 4 kubeadm flavors × 3, ansible 5, the class's 3 templates.
    assert_eq!(compared, 4 * 3 + 5 + 3);
}

/// The ClusterClass and the infrastructure templates of `text`.
fn class_and_templates(text: &str) -> (Value, Vec<Value>) {
    let docs = common::documents(text);
    let class = docs
        .iter()
        .find(|d| d["kind"] == "ClusterClass")
        .cloned()
        .unwrap_or_else(|| panic!("no ClusterClass"));
    let templates = docs.into_iter().filter(infra::is_infra).collect();
    (class, templates)
}

#[test]
fn the_class_variables_are_unchanged() {
    // Existing Clusters of the class keep their variable values: the move to v1beta2 must not
    // change a variable's schema (descriptions aside).
    fn without_descriptions(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| *k != "description")
                    .map(|(k, v)| (k.clone(), without_descriptions(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(without_descriptions).collect()),
            other => other.clone(),
        }
    }
    let file = "clusterclass-capo-default.yaml";
    let (old, _) = class_and_templates(&common::previous_v1beta1()[file]);
    let (new, _) = class_and_templates(&common::template(file));
    assert_eq!(
        without_descriptions(&new["spec"]["variables"]),
        without_descriptions(&old["spec"]["variables"])
    );
}

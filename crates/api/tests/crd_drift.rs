//! The checked-in CRDs in `config/crd/bases/` must be exactly what the types generate.

use std::path::PathBuf;

#[test]
fn checked_in_crds_match_the_types() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/crd/bases");
    let mut stale = Vec::new();
    for crd in capo_api::crds::all() {
        let name = capo_api::crds::file_name(&crd);
        let expected = capo_api::crds::render_yaml(&crd);
        match std::fs::read_to_string(dir.join(&name)) {
            Ok(actual) if actual == expected => {}
            Ok(_) => stale.push(format!("{name}: differs from the types")),
            Err(e) => stale.push(format!("{name}: cannot read ({e})")),
        }
    }
    assert!(
        stale.is_empty(),
        "generated CRDs are out of date; run `cargo run -p capo-api --bin crdgen`:\n{}",
        stale.join("\n")
    );
}

#[test]
fn two_version_names_are_the_crds_serving_two_versions() {
    let generated: Vec<String> = capo_api::crds::all()
        .into_iter()
        .filter(|crd| crd.spec.versions.len() > 1)
        .filter_map(|crd| crd.metadata.name)
        .collect();
    assert_eq!(
        generated,
        capo_api::crds::two_version_names().map(str::to_owned)
    );
}

#[test]
fn rendering_is_deterministic() {
    let first: Vec<String> = capo_api::crds::all()
        .iter()
        .map(capo_api::crds::render_yaml)
        .collect();
    let second: Vec<String> = capo_api::crds::all()
        .iter()
        .map(capo_api::crds::render_yaml)
        .collect();
    assert_eq!(first, second);
}

#[test]
fn envelope_matches_upstream_conventions() {
    let crds = capo_api::crds::all();
    assert_eq!(crds.len(), 7);
    for crd in &crds {
        let labels = crd.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("cluster.x-k8s.io/v1beta1").map(String::as_str),
            Some("v1beta1"),
            "{} lacks the contract label",
            crd.spec.names.kind
        );
        let serves_v1beta2 = crd.spec.versions.iter().any(|v| v.name == "v1beta2");
        assert_eq!(
            labels.get("cluster.x-k8s.io/v1beta2").map(String::as_str),
            serves_v1beta2.then_some("v1beta2"),
            "{}: the v1beta2 contract label names the v1beta2 version where it is served",
            crd.spec.names.kind
        );
        let version = &crd.spec.versions[0];
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        let text = serde_json::to_string(&schema).unwrap_or_default();
        for forbidden in [
            "\"$ref\"",
            "\"oneOf\"",
            "\"allOf\"",
            "\"nullable\"",
            "\"const\"",
        ] {
            assert!(
                !text.contains(forbidden),
                "{} schema contains {forbidden}",
                crd.spec.names.kind
            );
        }
        let scope = if crd.spec.names.kind == "OpenStackClusterIdentity" {
            "Cluster"
        } else {
            "Namespaced"
        };
        assert_eq!(crd.spec.scope, scope);
        let in_capi_category = crd
            .spec
            .names
            .categories
            .as_ref()
            .is_some_and(|c| c.iter().any(|c| c == "cluster-api"));
        assert_eq!(
            in_capi_category,
            crd.spec.names.kind != "OpenStackFloatingIPPool"
        );
    }
}

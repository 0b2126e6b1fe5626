//! CRD generation: the seven CustomResourceDefinitions, rendered from the Rust types.
//!
//! `kube`'s derive builds each schema; [`all`] then applies the few adjustments that make the
//! result match what controller-gen emits for upstream (see [`normalize_schema`]).
//!
//! OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine and OpenStackMachineTemplate
//! serve `v1beta1` and `v1beta2`, converting through the webhook at `/convert`
//! ([`CONVERSION_SERVICE`] of namespace `system`, which `config/default` renames as it renames
//! the Service). `v1beta2` is the storage version: Cluster API v1.14 and capo's controllers
//! (which convert in process, see `capo_controller::stored`) read and write it without the
//! webhook; only `v1beta1` clients wait on a conversion. Both Cluster API contract labels
//! are set, so Cluster API v1.14 reads them as `v1beta2` (contract v1beta2), and older
//! releases as `v1beta1`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, JSONSchemaProps, ServiceReference,
    WebhookClientConfig, WebhookConversion,
};
use kube::CustomResourceExt;
use serde_json::Value;

use crate::v1alpha1::{OpenStackClusterIdentity, OpenStackFloatingIPPool, OpenStackServer};
use crate::{v1beta1, v1beta2};

/// Name of the Service (before `config/default`'s prefix) the API server calls for
/// conversions; the admission webhooks are behind it too.
pub const CONVERSION_SERVICE: &str = "webhook-service";
/// URL path of the conversion webhook.
pub const CONVERSION_PATH: &str = "/convert";
/// Version every multi-version CRD stores: the newest, which Cluster API v1.14 and capo's
/// controllers read and write without the conversion webhook.
pub const STORAGE_VERSION: &str = "v1beta2";

/// Names of the CRDs that serve two versions (v1beta1 and v1beta2), known without generating
/// their schemas (which [`all`] does, and which a running manager has no other use for).
pub fn two_version_names() -> [&'static str; 4] {
    [
        v1beta1::OpenStackCluster::crd_name(),
        v1beta1::OpenStackClusterTemplate::crd_name(),
        v1beta1::OpenStackMachine::crd_name(),
        v1beta1::OpenStackMachineTemplate::crd_name(),
    ]
}

/// Every CRD of the provider, in a fixed order.
pub fn all() -> Vec<CustomResourceDefinition> {
    let mut crds = vec![
        two_versions(
            v1beta1::OpenStackCluster::crd(),
            v1beta2::OpenStackCluster::crd(),
        ),
        two_versions(
            v1beta1::OpenStackClusterTemplate::crd(),
            v1beta2::OpenStackClusterTemplate::crd(),
        ),
        two_versions(
            v1beta1::OpenStackMachine::crd(),
            v1beta2::OpenStackMachine::crd(),
        ),
        two_versions(
            v1beta1::OpenStackMachineTemplate::crd(),
            v1beta2::OpenStackMachineTemplate::crd(),
        ),
        OpenStackServer::crd(),
        OpenStackFloatingIPPool::crd(),
        OpenStackClusterIdentity::crd(),
    ];
    finish(&mut crds);
    crds
}

/// One CRD serving the versions of `older` then `newer` (as upstream orders them), with the
/// labels of both, [`STORAGE_VERSION`] stored, and conversion through the webhook.
fn two_versions(
    mut older: CustomResourceDefinition,
    newer: CustomResourceDefinition,
) -> CustomResourceDefinition {
    let labels = older.metadata.labels.get_or_insert_with(Default::default);
    labels.extend(newer.metadata.labels.unwrap_or_default());
    older.spec.versions.extend(newer.spec.versions);
    for version in &mut older.spec.versions {
        version.served = true;
        version.storage = version.name == STORAGE_VERSION;
    }
    older.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    name: CONVERSION_SERVICE.to_owned(),
                    namespace: "system".to_owned(),
                    path: Some(CONVERSION_PATH.to_owned()),
                    port: None,
                }),
                ..WebhookClientConfig::default()
            }),
            conversion_review_versions: vec!["v1".to_owned()],
        }),
    });
    older
}

/// What every rendered CRD gets after `kube`'s derive: its list kind, and the schema
/// adjustments of [`normalize_schema`] in every version.
pub fn finish(crds: &mut [CustomResourceDefinition]) {
    for crd in crds {
        crd.spec.names.list_kind = Some(format!("{}List", crd.spec.names.kind));
        for version in &mut crd.spec.versions {
            if let Some(schema) = version
                .schema
                .as_mut()
                .and_then(|s| s.open_api_v3_schema.as_mut())
            {
                normalize_schema(schema);
            }
        }
    }
}

/// File name upstream uses for a CRD: `<group>_<plural>.yaml`.
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}

/// Renders a CRD as a YAML document (deterministic: struct fields in declaration order, schema
/// properties sorted by name).
pub fn render_yaml(crd: &CustomResourceDefinition) -> String {
    let mut value = match serde_json::to_value(crd) {
        Ok(value) => value,
        Err(e) => return format!("# CRD rendering failed: {e}\n"),
    };
    integral_floats_to_ints(&mut value);
    match yaml_serde::to_string(&value) {
        Ok(body) => format!("---\n{body}"),
        // Serializing plain data structs into a String cannot fail; keep a visible marker anyway
        // so a broken file is caught by the drift test instead of a panic.
        Err(e) => format!("# CRD rendering failed: {e}\n"),
    }
}

/// Adjusts a derived schema to controller-gen's conventions, which upstream's CRDs follow:
///
/// - the root declares `apiVersion`, `kind` and `metadata` and requires nothing (a manifest
///   without `spec` is accepted by the API server, as with upstream);
/// - no `nullable` anywhere: Go's optional fields are omitted rather than null, and a nullable
///   field would make the API server keep explicit nulls that upstream prunes;
/// - int-or-string nodes carry `anyOf: [{type: integer}, {type: string}]` (kube's structural
///   rewriter empties those branches when it hoists types).
pub fn normalize_schema(schema: &mut JSONSchemaProps) {
    let Ok(mut value) = serde_json::to_value(&*schema) else {
        return;
    };
    strip_nullable(&mut value);
    fix_int_or_string(&mut value);
    if let Some(root) = value.as_object_mut() {
        root.remove("required");
        let props = root
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(props) = props.as_object_mut() {
            props.insert("apiVersion".into(), root_field("string", API_VERSION_DOC));
            props.insert("kind".into(), root_field("string", KIND_DOC));
            props.insert("metadata".into(), serde_json::json!({"type": "object"}));
        }
    }
    if let Ok(normalized) = serde_json::from_value(value) {
        *schema = normalized;
    }
}

const API_VERSION_DOC: &str = "Versioned schema of this representation of an object.";
const KIND_DOC: &str = "REST resource this object represents, in CamelCase.";

fn root_field(ty: &str, doc: &str) -> Value {
    serde_json::json!({"type": ty, "description": doc})
}

fn strip_nullable(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("nullable");
            map.values_mut().for_each(strip_nullable);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nullable),
        _ => {}
    }
}

fn fix_int_or_string(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
                map.insert(
                    "anyOf".into(),
                    serde_json::json!([{"type": "integer"}, {"type": "string"}]),
                );
            }
            map.values_mut().for_each(fix_int_or_string);
        }
        Value::Array(items) => items.iter_mut().for_each(fix_int_or_string),
        _ => {}
    }
}

/// `JSONSchemaProps` stores bounds as `f64`; write `1` rather than `1.0`, as upstream does.
fn integral_floats_to_ints(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n
                .as_f64()
                .filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15)
            {
                // Exact: integral and far below 2^53.
                #[allow(clippy::cast_possible_truncation)]
                let int = f as i64;
                *value = Value::from(int);
            }
        }
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_ints),
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_ints),
        _ => {}
    }
}

//! The conversion-data annotation: reading it off an object, writing it on one.
//!
//! The value is a JSON object shaped like the object it was taken from (the *origin*):
//! `apiVersion` and `kind` of the origin, then a sparse copy of the origin's `spec` and
//! `status` holding only what the converted object cannot express. A `null` stands for a field
//! the origin did not have although the conversion back would produce one. When the converted
//! object already carried an annotation under the same key that is not ours to consume, its
//! value is kept inside ours as `metadata.annotations`, and put back on the way back.
//!
//! This is the shape Cluster API's `MarshalData` writes (the whole origin without metadata), cut
//! down to the fields that need it, so upstream CAPO reading our annotation, or we reading
//! upstream's, restores the same fields.

use serde_json::{Map, Value};

/// Key of the annotation, shared with Cluster API and upstream CAPO so that tools which ignore
/// conversion bookkeeping (the Cluster API topology controller does) ignore ours too.
pub const CONVERSION_DATA_ANNOTATION: &str = "cluster.x-k8s.io/conversion-data";

/// Conversion data written for, or read from, one object.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Payload {
    /// Sparse `spec` and `status` of the origin, keyed by section name.
    pub data: Map<String, Value>,
    /// A previous annotation value that ours displaced.
    pub displaced: Option<String>,
}

impl Payload {
    /// True when there is nothing to carry.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.displaced.is_none()
    }

    /// The annotation value for an origin of `api_version` and `kind`.
    pub fn render(&self, api_version: &str, kind: &str) -> String {
        let mut root = Map::new();
        root.insert("apiVersion".into(), Value::from(api_version));
        root.insert("kind".into(), Value::from(kind));
        if let Some(old) = &self.displaced {
            let mut annotations = Map::new();
            annotations.insert(CONVERSION_DATA_ANNOTATION.into(), Value::from(old.as_str()));
            let mut metadata = Map::new();
            metadata.insert("annotations".into(), Value::Object(annotations));
            root.insert("metadata".into(), Value::Object(metadata));
        }
        for (section, value) in &self.data {
            root.insert(section.clone(), value.clone());
        }
        Value::Object(root).to_string()
    }
}

/// The payload of `value` if it holds data of `origin` (an apiVersion) for `kind`.
///
/// Anything else (not JSON, another version, another kind, no apiVersion) is not for us.
/// Upstream's snapshots name the apiVersion and kind of their origin, so they qualify.
pub(crate) fn parse_for(value: &str, origin: &str, kind: &str) -> Option<Payload> {
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(value) else {
        return None;
    };
    if root.get("apiVersion").and_then(Value::as_str) != Some(origin) {
        return None;
    }
    if root.get("kind").is_some_and(|k| k.as_str() != Some(kind)) {
        return None;
    }
    let displaced = root
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(CONVERSION_DATA_ANNOTATION))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let data = root
        .into_iter()
        .filter(|(k, _)| k == "spec" || k == "status")
        .collect();
    Some(Payload { data, displaced })
}

/// True when `value` is conversion data whose origin is `api_version` (any kind).
pub(crate) fn has_origin(value: &str, api_version: &str) -> bool {
    matches!(
        serde_json::from_str::<Value>(value),
        Ok(Value::Object(root)) if root.get("apiVersion").and_then(Value::as_str) == Some(api_version)
    )
}

/// Removes the annotation from `object` and returns its value. An annotations map left empty
/// is removed too: the API server never stores an empty one.
pub(crate) fn take(object: &mut Value) -> Option<String> {
    let metadata = object.get_mut("metadata")?.as_object_mut()?;
    let annotations = metadata.get_mut("annotations")?.as_object_mut()?;
    let value = annotations.remove(CONVERSION_DATA_ANNOTATION);
    if annotations.is_empty() {
        metadata.remove("annotations");
    }
    value.and_then(|v| v.as_str().map(str::to_owned))
}

/// Sets the annotation on `object` (which must be an object with object `metadata`).
pub(crate) fn put(object: &mut Value, value: String) {
    let Some(root) = object.as_object_mut() else {
        return;
    };
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(CONVERSION_DATA_ANNOTATION.into(), Value::from(value));
    }
}

/// Removes an empty `metadata.annotations` map, which the API server would not keep either.
pub(crate) fn drop_empty_annotations(object: &mut Value) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
        && metadata
            .get("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        metadata.remove("annotations");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const V1: &str = "infrastructure.cluster.x-k8s.io/v1beta1";

    #[test]
    fn render_then_parse_gives_the_payload_back() {
        let mut data = Map::new();
        data.insert("status".into(), json!({"failureReason": "x"}));
        let payload = Payload {
            data,
            displaced: Some("old".into()),
        };
        let text = payload.render(V1, "OpenStackMachine");
        assert_eq!(parse_for(&text, V1, "OpenStackMachine"), Some(payload));
        assert!(has_origin(&text, V1));
        assert_eq!(parse_for(&text, V1, "OpenStackCluster"), None);
        assert_eq!(parse_for(&text, "v2", "OpenStackMachine"), None);
    }

    #[test]
    fn foreign_values_are_not_ours() {
        assert_eq!(parse_for("not json", V1, "K"), None);
        assert_eq!(parse_for("[1]", V1, "K"), None);
        assert_eq!(parse_for(r#"{"spec":{}}"#, V1, "K"), None);
        assert!(!has_origin("{", V1));
    }

    #[test]
    fn take_and_put_keep_other_annotations() {
        let mut obj =
            json!({"metadata": {"annotations": {"a": "1", CONVERSION_DATA_ANNOTATION: "d"}}});
        assert_eq!(take(&mut obj).as_deref(), Some("d"));
        assert_eq!(obj, json!({"metadata": {"annotations": {"a": "1"}}}));
        put(&mut obj, "e".into());
        assert_eq!(
            obj["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION],
            "e"
        );
        let mut only = json!({"metadata": {"annotations": {CONVERSION_DATA_ANNOTATION: "d"}}});
        assert_eq!(take(&mut only).as_deref(), Some("d"));
        assert_eq!(only, json!({"metadata": {}}));
        let mut bare = json!({});
        put(&mut bare, "x".into());
        assert_eq!(
            bare["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION],
            "x"
        );
    }
}

//! The conversion webhook: a `ConversionReview` (apiextensions.k8s.io `v1`, and `v1beta1`,
//! identical on the wire apart from `apiVersion`) → every object converted with
//! [`capo_api::conversion::convert`], or the first refusal.
//!
//! The API server sends a review whenever a client reads or writes OpenStackCluster,
//! OpenStackClusterTemplate, OpenStackMachine or OpenStackMachineTemplate in a version other
//! than the one stored: a list or watch sends many objects in one review. The answer is all or
//! nothing, as the API server requires: one object that cannot be converted fails the review,
//! with the object and the field named, and the client gets that message.

use capo_api::conversion::convert;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// URL path of the conversion webhook (controller-runtime's, which upstream's CRDs name).
pub const CONVERSION_PATH: &str = "/convert";
/// `apiVersion` of `apiextensions.k8s.io/v1` conversion reviews.
pub const CONVERSION_V1: &str = "apiextensions.k8s.io/v1";
/// `apiVersion` of `apiextensions.k8s.io/v1beta1` conversion reviews.
pub const CONVERSION_V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

/// A conversion review as sent by the API server (request) or returned (response).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversionReview {
    /// `apiextensions.k8s.io/v1` or `/v1beta1`; the answer repeats the request's.
    pub api_version: String,
    /// Always `ConversionReview`.
    pub kind: String,
    /// The request, in a review sent by the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ConversionRequest>,
    /// The result, in a review sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ConversionResponse>,
}

/// The objects to convert and the version wanted.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversionRequest {
    /// Identifies this request; the response must carry it back.
    pub uid: String,
    /// `group/version` every object must be converted to.
    #[serde(rename = "desiredAPIVersion")]
    pub desired_api_version: String,
    /// The objects, whole (metadata included), possibly in different versions.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub objects: Vec<Value>,
}

/// Every object converted, in the request's order, or why not.
///
/// The API server sends an empty one along with each request (`convertedObjects: null`, no
/// result status), so every field reads as empty when absent or null.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversionResponse {
    /// The request's `uid`.
    #[serde(default)]
    pub uid: String,
    /// The converted objects (empty on failure).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub converted_objects: Vec<Value>,
    /// `Success`, or `Failure` with a message.
    #[serde(default)]
    pub result: ConversionResult,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    Ok(Option::<Vec<Value>>::deserialize(d)?.unwrap_or_default())
}

/// The outcome of a conversion review (a reduced `meta/v1` Status).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct ConversionResult {
    /// `Success` or `Failure`.
    #[serde(default)]
    pub status: String,
    /// Why the review failed: the object and the field at fault.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Converts every object of `request`; the first one that cannot be converted fails them all.
pub fn review(request: ConversionRequest) -> ConversionResponse {
    let mut converted = Vec::with_capacity(request.objects.len());
    for object in request.objects {
        // Named before the object is handed over: the error must say which one failed.
        let subject = describe(&object);
        match convert(&request.desired_api_version, object) {
            Ok(object) => converted.push(object),
            Err(e) => {
                return ConversionResponse {
                    uid: request.uid,
                    converted_objects: Vec::new(),
                    result: ConversionResult {
                        status: "Failure".to_owned(),
                        message: format!(
                            "cannot convert {subject} to {}: {e}",
                            request.desired_api_version
                        ),
                    },
                };
            }
        }
    }
    ConversionResponse {
        uid: request.uid,
        converted_objects: converted,
        result: ConversionResult {
            status: "Success".to_owned(),
            message: String::new(),
        },
    }
}

/// `<kind> <namespace>/<name>` of an object, as far as it has them (never any field value
/// beyond those: an object may carry secrets in fields we do not know).
fn describe(object: &Value) -> String {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let kind = text(object.get("kind"));
    let meta = object.get("metadata");
    let name = text(meta.and_then(|m| m.get("name")));
    let namespace = text(meta.and_then(|m| m.get("namespace")));
    let kind = if kind.is_empty() {
        "object".to_owned()
    } else {
        kind
    };
    match (namespace.is_empty(), name.is_empty()) {
        (_, true) => kind,
        (true, false) => format!("{kind} {name}"),
        (false, false) => format!("{kind} {namespace}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn machine(name: &str, flavor: Option<&str>) -> Value {
        let mut spec = json!({"image": {"id": "8c4b8d1f-7c2a-4a55-9b2e-2d2f8e0e6f11"}});
        if let Some(flavor) = flavor {
            spec["flavor"] = json!(flavor);
        }
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackMachine",
            "metadata": {"name": name, "namespace": "ns", "uid": "u-1"},
            "spec": spec,
        })
    }

    #[test]
    fn converts_every_object_in_order() {
        let response = review(ConversionRequest {
            uid: "r-1".into(),
            desired_api_version: "infrastructure.cluster.x-k8s.io/v1beta2".into(),
            objects: vec![
                machine("a", Some("m1.small")),
                machine("b", Some("m1.large")),
            ],
        });
        assert_eq!(response.uid, "r-1");
        assert_eq!(response.result.status, "Success");
        let names: Vec<_> = response
            .converted_objects
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            response.converted_objects[1]["spec"]["flavor"],
            json!({"filter": {"name": "m1.large"}})
        );
        for object in &response.converted_objects {
            assert_eq!(
                object["apiVersion"],
                "infrastructure.cluster.x-k8s.io/v1beta2"
            );
        }
    }

    #[test]
    fn one_refusal_fails_the_review_naming_object_and_field() {
        let response = review(ConversionRequest {
            uid: "r-2".into(),
            desired_api_version: "infrastructure.cluster.x-k8s.io/v1beta2".into(),
            objects: vec![machine("good", Some("m1.small")), {
                let mut bad = machine("bad", Some("m1.small"));
                bad["spec"]["ports"] = json!([{"tags": "not-a-list"}]);
                bad
            }],
        });
        assert_eq!(response.result.status, "Failure");
        assert!(response.converted_objects.is_empty());
        let message = &response.result.message;
        assert!(message.contains("OpenStackMachine ns/bad"), "{message}");
        assert!(message.contains("spec.ports[0].tags"), "{message}");
    }

    #[test]
    fn reads_the_api_servers_request_with_its_empty_response() {
        let body = json!({
            "kind": "ConversionReview",
            "apiVersion": "apiextensions.k8s.io/v1",
            "request": {"uid": "u", "desiredAPIVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                        "objects": [machine("a", Some("m1.small"))]},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}}
        });
        let review: ConversionReview = serde_json::from_value(body).unwrap_or_default();
        assert_eq!(review.request.map(|r| r.objects.len()), Some(1));
    }

    #[test]
    fn junk_is_refused_not_panicked_on() {
        for object in [json!(null), json!(3), json!({"kind": 1}), json!([{}])] {
            let response = review(ConversionRequest {
                uid: "r".into(),
                desired_api_version: "infrastructure.cluster.x-k8s.io/v1beta1".into(),
                objects: vec![object],
            });
            assert_eq!(response.result.status, "Failure");
        }
    }
}

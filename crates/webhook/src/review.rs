//! The `AdmissionReview` wire format (admission.k8s.io `v1` and `v1beta1`, which are identical
//! on the wire apart from `apiVersion`), reduced to the fields a validating webhook reads and
//! writes.
//!
//! Our own types rather than kube's: kube's admission module only speaks `v1`, while upstream's
//! webhook configuration asks the API server for `v1beta1` reviews.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `apiVersion` of `admission.k8s.io/v1` reviews.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
/// `apiVersion` of `admission.k8s.io/v1beta1` reviews.
pub const ADMISSION_V1BETA1: &str = "admission.k8s.io/v1beta1";

/// An admission review as sent by the API server (request) or returned (response).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1` or `admission.k8s.io/v1beta1`; the answer repeats the request's.
    pub api_version: String,
    /// Always `AdmissionReview`.
    pub kind: String,
    /// The request, in a review sent by the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    /// The verdict, in a review sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

/// Group, version and kind of the object under review.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct GroupVersionKind {
    /// API group (`infrastructure.cluster.x-k8s.io`).
    #[serde(default)]
    pub group: String,
    /// API version (`v1beta1`).
    #[serde(default)]
    pub version: String,
    /// Kind (`OpenStackMachine`).
    #[serde(default)]
    pub kind: String,
}

/// One admission request: the operation and the objects before and after.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Identifies this request; the response must carry it back.
    pub uid: String,
    /// The kind of `object`, in the version the webhook registered for.
    pub kind: GroupVersionKind,
    /// The object's name (empty on create with `generateName`).
    #[serde(default)]
    pub name: String,
    /// The object's namespace (empty for cluster-scoped kinds).
    #[serde(default)]
    pub namespace: String,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    /// The object as it would be stored (create, update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The stored object (update, delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    /// Whether the request is a dry run (nothing is persisted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
}

/// The webhook's verdict.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's `uid`.
    pub uid: String,
    /// Whether the request may proceed.
    pub allowed: bool,
    /// Why not, when denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

/// A `meta/v1` Status, as the API server returns it for its own validation errors.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct Status {
    /// Always `Failure` in a denial.
    pub status: String,
    /// Human-readable summary, naming every offending field.
    pub message: String,
    /// Machine-readable reason: `Invalid` or `BadRequest`.
    pub reason: String,
    /// Per-field causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// HTTP status code the API server answers the client with (422, 400).
    pub code: u16,
}

/// The object a Status is about and the per-field causes.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct StatusDetails {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's API group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The object's kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// One entry per rejected field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
}

/// One rejected field.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct StatusCause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden` or `FieldValueDuplicate`
    /// (meta/v1 calls the field `Type` in Go but `reason` on the wire).
    pub reason: String,
    /// The error without its field path (`Invalid value: "sg": must be a UUID`).
    pub message: String,
    /// The field path (`spec.securityGroups[0].id`).
    pub field: String,
}

//! Decoding objects with the JSON path of the first offending field in the error.
//!
//! Plain serde errors say "invalid type: string, expected a sequence" without saying where;
//! a user who sent `tags: myTag` deep inside a port needs `spec.ports[0].network.filter.tags`.

use serde::de::DeserializeOwned;
use std::fmt;

/// An object that does not decode into its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// JSON path of the offending field (`.` for the object itself).
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for DecodeError {}

/// Decodes `value` into `T`, naming the offending field on failure.
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|e| DecodeError {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

/// Decodes JSON text into `T`, naming the offending field on failure.
pub fn from_slice<T: DeserializeOwned>(json: &[u8]) -> Result<T, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    serde_path_to_error::deserialize(&mut de).map_err(|e| DecodeError {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1beta1::{OpenStackCluster, OpenStackMachineTemplate};
    use serde_json::json;

    #[test]
    fn names_the_offending_field() {
        let doc = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackMachineTemplate",
            "metadata": {"name": "t"},
            "spec": {"template": {"spec": {
                "flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}},
                "ports": [{"network": {"filter": {"tags": "myTag"}}}]
            }}}
        });
        let err = from_value::<OpenStackMachineTemplate>(doc).err();
        let err = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            err.starts_with("spec.template.spec.ports[0].network.filter.tags: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn missing_required_field_is_named() {
        let doc =
            br#"{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"OpenStackCluster",
            "metadata":{"name":"c"},"spec":{"identityRef":{"cloudName":"openstack"}}}"#;
        let err = from_slice::<OpenStackCluster>(doc)
            .err()
            .unwrap_or(DecodeError {
                path: String::new(),
                message: String::new(),
            });
        assert_eq!(err.path, "spec.identityRef");
        assert!(
            err.message.contains("missing field `name`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn valid_object_decodes() {
        let doc = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackCluster",
            "metadata": {"name": "c"},
            "spec": {"identityRef": {"cloudName": "openstack", "name": "creds"}}
        });
        let cluster = from_value::<OpenStackCluster>(doc);
        assert!(cluster.is_ok_and(|c| c.spec.identity_ref.name == "creds"));
    }
}

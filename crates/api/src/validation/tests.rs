//! Case-by-case tests of the admission rules. Each case asserts the exact field path and kind.

mod cluster;
mod machine;
mod upstream;

use super::{FieldErrorKind, UpdateContext, Validate, ValidationErrors};
use crate::v1alpha1::{OpenStackClusterIdentity, OpenStackFloatingIPPool, OpenStackServer};
use crate::v1beta1::{
    OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine, OpenStackMachineTemplate,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const NET_ID: &str = "7f8e1d2c-3b4a-4c5d-9e6f-0a1b2c3d4e5f";
const SUBNET_ID: &str = "0c7d6e5f-4a3b-4c2d-8e1f-9a8b7c6d5e4f";

fn object<T: DeserializeOwned>(kind: &str, api_version: &str, spec: Value) -> T {
    let value = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "test", "namespace": "default"},
        "spec": spec,
    });
    match serde_json::from_value(value) {
        Ok(object) => object,
        Err(e) => panic!("test fixture for {kind} does not deserialize: {e}"),
    }
}

fn machine_spec() -> Value {
    json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu-2404"}}})
}

fn machine(spec: Value) -> OpenStackMachine {
    object(
        "OpenStackMachine",
        "infrastructure.cluster.x-k8s.io/v1beta1",
        spec,
    )
}

fn identity() -> Value {
    json!({"type": "Secret", "name": "cloud-config", "cloudName": "openstack"})
}

fn cluster_spec() -> Value {
    json!({
        "identityRef": identity(),
        "managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["8.8.8.8"]}],
        "apiServerLoadBalancer": {"enabled": true},
    })
}

fn cluster(spec: Value) -> OpenStackCluster {
    object(
        "OpenStackCluster",
        "infrastructure.cluster.x-k8s.io/v1beta1",
        spec,
    )
}

/// Merges `patch` into `base` (objects recursively, everything else replaced).
fn merged(mut base: Value, patch: Value) -> Value {
    fn merge(base: &mut Value, patch: Value) {
        match (base, patch) {
            (Value::Object(b), Value::Object(p)) => {
                for (k, v) in p {
                    merge(b.entry(k).or_insert(Value::Null), v);
                }
            }
            (b, p) => *b = p,
        }
    }
    merge(&mut base, patch);
    base
}

/// `(path, kind name)` of every error, for compact assertions.
fn summary(result: Result<(), ValidationErrors>) -> Vec<(String, &'static str)> {
    let Err(errors) = result else {
        return Vec::new();
    };
    errors
        .0
        .iter()
        .map(|e| {
            let kind = match e.kind {
                FieldErrorKind::Required => "Required",
                FieldErrorKind::Invalid(_) => "Invalid",
                FieldErrorKind::Forbidden => "Forbidden",
                FieldErrorKind::Immutable => "Immutable",
                FieldErrorKind::Duplicate(_) => "Duplicate",
            };
            (e.path.to_string(), kind)
        })
        .collect()
}

fn one(path: &str, kind: &'static str) -> Vec<(String, &'static str)> {
    vec![(path.to_owned(), kind)]
}

fn machine_errors(patch: Value) -> Vec<(String, &'static str)> {
    summary(machine(merged(machine_spec(), patch)).validate_create())
}

fn cluster_errors(patch: Value) -> Vec<(String, &'static str)> {
    summary(cluster(merged(cluster_spec(), patch)).validate_create())
}

const CTX: UpdateContext = UpdateContext {
    topology_dry_run: false,
};

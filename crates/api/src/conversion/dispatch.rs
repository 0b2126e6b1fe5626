//! The JSON entry point the conversion webhook calls.

use crate::conversion::cluster::Cluster;
use crate::conversion::cluster_template::ClusterTemplate;
use crate::conversion::engine::{self, Direction};
use crate::conversion::error::ConversionError;
use crate::conversion::limits;
use crate::conversion::machine::Machine;
use crate::conversion::machine_template::MachineTemplate;
use crate::conversion::versions::{V1BETA1, V1BETA2};
use serde_json::Value;

/// Converts `object` to `desired_api_version`, with its conversion data.
///
/// The object must be an OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine or
/// OpenStackMachineTemplate of `infrastructure.cluster.x-k8s.io/v1beta1` or `/v1beta2`. An
/// object already in the desired version is returned unchanged. Otherwise it is read into
/// its typed struct (unknown fields are dropped, as the API server's pruning would drop them;
/// v1beta1's defaulted fields are filled in), converted, and returned as JSON that reads into
/// the target version's typed struct.
///
/// Never panics: malformed input, including values nested deeper than
/// [`MAX_DEPTH`](crate::conversion::MAX_DEPTH), is refused with an error.
pub fn convert(desired_api_version: &str, object: Value) -> Result<Value, ConversionError> {
    if let Err(e) = limits::check_depth(&object) {
        limits::dismantle(object);
        return Err(e);
    }
    let api_version = string_field(&object, "apiVersion")?;
    let kind = string_field(&object, "kind")?;
    let known_kind = matches!(
        kind.as_str(),
        "OpenStackCluster"
            | "OpenStackClusterTemplate"
            | "OpenStackMachine"
            | "OpenStackMachineTemplate"
    );
    if !known_kind {
        return Err(ConversionError::new(
            "kind",
            format!("{kind:?} is not converted here"),
        ));
    }
    for (field, version) in [
        ("apiVersion", api_version.as_str()),
        ("desired apiVersion", desired_api_version),
    ] {
        if version != V1BETA1 && version != V1BETA2 {
            return Err(ConversionError::new(
                if field == "apiVersion" {
                    "apiVersion"
                } else {
                    ""
                },
                format!("{field} {version:?} is neither {V1BETA1} nor {V1BETA2}"),
            ));
        }
    }
    if api_version == desired_api_version {
        return Ok(object);
    }
    let direction = if desired_api_version == V1BETA2 {
        Direction::Up
    } else {
        Direction::Down
    };
    match kind.as_str() {
        "OpenStackCluster" => engine::convert::<Cluster>(direction, object),
        "OpenStackClusterTemplate" => engine::convert::<ClusterTemplate>(direction, object),
        "OpenStackMachine" => engine::convert::<Machine>(direction, object),
        _ => engine::convert::<MachineTemplate>(direction, object),
    }
}

fn string_field(object: &Value, field: &str) -> Result<String, ConversionError> {
    match object.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ConversionError::new(field, "is not a string")),
        None if object.is_object() => Err(ConversionError::new(field, "is missing")),
        None => Err(ConversionError::new("", "the object is not a JSON object")),
    }
}

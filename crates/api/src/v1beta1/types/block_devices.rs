//! Root volume and additional block devices.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Extra disk attached to a server, either ephemeral local storage or a Cinder volume.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AdditionalBlockDevice {
    /// Device name, unique per server; also names the volume.
    pub name: String,
    /// Size in GiB.
    #[serde(rename = "sizeGiB")]
    #[schemars(transform = crate::schema::drop_format)]
    #[schemars(extend("minimum" = 1))]
    pub size_gib: i32,
    /// Where the device is stored.
    pub storage: BlockDeviceStorage,
}

/// Backing storage of an additional block device.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BlockDeviceStorage {
    /// Local (ephemeral) or Volume (Cinder).
    pub r#type: String,
    /// Cinder volume settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume: Option<BlockDeviceVolume>,
}

/// Cinder volume options of a block device.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BlockDeviceVolume {
    /// How the volume availability zone is chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<VolumeAvailabilityZone>,
    /// Cinder volume type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
}

/// How the availability zone of a Cinder volume is chosen.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "name is required when from is 'Name' or default", "rule": "!has(self.from) || self.from == 'Name' ? has(self.name) : !has(self.name)"}]))]
pub struct VolumeAvailabilityZone {
    /// Source of the availability zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Name"))]
    pub from: Option<VolumeAZSource>,
    /// Availability zone name; required exactly when from is Name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1))]
    #[schemars(extend("pattern" = "^[^ ]+$"))]
    pub name: Option<String>,
}

/// Boot-from-volume settings of a server.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RootVolume {
    /// How the volume availability zone is chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<VolumeAvailabilityZone>,
    /// Size in GiB.
    #[serde(rename = "sizeGiB")]
    #[schemars(transform = crate::schema::drop_format)]
    #[schemars(extend("minimum" = 1))]
    pub size_gib: i32,
    /// Cinder volume type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
}

/// Where a volume availability zone comes from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum VolumeAZSource {
    /// The zone named in `name`.
    #[serde(rename = "Name")]
    Name,
    /// The zone of the machine the volume is attached to.
    #[serde(rename = "Machine")]
    Machine,
}

//! Root volume and additional disks of a v1beta2 server.

use crate::v1beta1::{BlockDeviceVolume, VolumeAvailabilityZone};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A disk attached to the server besides its root disk.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdditionalBlockDevice {
    /// Device name, unique within the server; it also appears in the volume name.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Capacity in GiB.
    #[serde(rename = "sizeGiB")]
    #[schemars(extend("minimum" = 1))]
    pub size_gib: i32,
    /// Backing store of the device.
    pub storage: BlockDeviceStorage,
}

/// Backing store of an additional disk.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BlockDeviceStorage {
    /// Hypervisor-local ephemeral disk or Cinder volume.
    pub r#type: BlockDeviceType,
    /// Cinder settings, used when `type` is `Volume`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume: Option<BlockDeviceVolume>,
}

/// Kind of backing store of an additional disk (free text in v1beta1, an enum in v1beta2).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum BlockDeviceType {
    /// Ephemeral disk on the compute host.
    #[serde(rename = "Local")]
    Local,
    /// Cinder volume.
    #[serde(rename = "Volume")]
    Volume,
}

/// Boot the server from a new Cinder volume instead of the flavor's disk.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RootVolume {
    /// How the volume's availability zone is picked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<VolumeAvailabilityZone>,
    /// Capacity in GiB.
    #[serde(rename = "sizeGiB")]
    #[schemars(extend("minimum" = 1))]
    pub size_gib: i32,
    /// Cinder volume type; the cloud's default type when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
}

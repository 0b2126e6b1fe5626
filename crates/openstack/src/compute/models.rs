//! Nova request and reply models (the fields the controllers use; unknown fields are ignored).

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use serde::{Deserialize, Serialize};

/// Bootstrap data for a server. Debug and Display are redacted: it carries bootstrap secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct UserData(Vec<u8>);

impl UserData {
    /// Wrap raw (not yet base64-encoded) user data.
    pub fn new(raw: impl Into<Vec<u8>>) -> Self {
        Self(raw.into())
    }
    /// Base64 as Nova expects it.
    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.0)
    }
}

impl fmt::Debug for UserData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<redacted {} bytes>", self.0.len())
    }
}

impl fmt::Display for UserData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One `block_device_mapping_v2` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockDevice {
    /// image, volume, blank.
    pub source_type: String,
    /// volume or local.
    pub destination_type: String,
    /// Image or volume ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// 0 for the root disk, -1 for others.
    pub boot_index: i32,
    /// Delete with the server.
    pub delete_on_termination: bool,
    /// Size in GiB for blank/local devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_size: Option<u32>,
    /// Device tag (microversion 2.42+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// What to create.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerCreate {
    /// Server name.
    pub name: String,
    /// Flavor ID.
    pub flavor_id: String,
    /// Image ID (None when booting from a volume).
    pub image_id: Option<String>,
    /// Pre-created port IDs, in order.
    pub port_ids: Vec<String>,
    /// Keypair name.
    pub key_name: Option<String>,
    /// Availability zone.
    pub availability_zone: Option<String>,
    /// Bootstrap data (redacted in Debug).
    pub user_data: Option<UserData>,
    /// Config drive.
    pub config_drive: bool,
    /// Metadata.
    pub metadata: BTreeMap<String, String>,
    /// Tags (needs 2.53).
    pub tags: Vec<String>,
    /// Block devices.
    pub block_devices: Vec<BlockDevice>,
    /// Scheduler hints (e.g. `group`).
    pub scheduler_hints: BTreeMap<String, serde_json::Value>,
    /// A multiattach volume is attached (needs 2.60).
    pub multiattach: bool,
}

/// A server address.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ServerAddress {
    /// IP address.
    pub addr: String,
    /// 4 or 6.
    #[serde(default)]
    pub version: u8,
    /// `fixed` or `floating`.
    #[serde(rename = "OS-EXT-IPS:type", default)]
    pub ip_type: Option<String>,
    /// MAC address.
    #[serde(rename = "OS-EXT-IPS-MAC:mac_addr", default)]
    pub mac: Option<String>,
}

/// A server's fault (set in ERROR state).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Fault {
    /// HTTP-like code.
    #[serde(default)]
    pub code: u16,
    /// Message, e.g. "No valid host was found".
    #[serde(default)]
    pub message: String,
}

/// A server.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Server {
    /// ID.
    pub id: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// ACTIVE, BUILD, ERROR, SHUTOFF, SOFT_DELETED, DELETED, ...
    #[serde(default)]
    pub status: String,
    /// Addresses by network name.
    #[serde(default)]
    pub addresses: BTreeMap<String, Vec<ServerAddress>>,
    /// Metadata.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Tags (2.26+).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Fault in ERROR state.
    #[serde(default)]
    pub fault: Option<Fault>,
    /// Availability zone.
    #[serde(rename = "OS-EXT-AZ:availability_zone", default)]
    pub availability_zone: Option<String>,
    /// Task state (e.g. spawning, deleting).
    #[serde(rename = "OS-EXT-STS:task_state", default)]
    pub task_state: Option<String>,
    /// Key name.
    #[serde(default)]
    pub key_name: Option<String>,
}

/// A flavor.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Flavor {
    /// ID.
    pub id: String,
    /// Name.
    pub name: String,
    /// vCPUs.
    #[serde(default)]
    pub vcpus: u32,
    /// RAM in MiB.
    #[serde(default)]
    pub ram: u64,
    /// Root disk in GiB.
    #[serde(default)]
    pub disk: u64,
    /// Ephemeral disk in GiB.
    #[serde(rename = "OS-FLV-EXT-DATA:ephemeral", default)]
    pub ephemeral: u64,
}

/// A keypair.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Keypair {
    /// Name.
    pub name: String,
    /// Public key.
    #[serde(default)]
    pub public_key: String,
    /// Fingerprint.
    #[serde(default)]
    pub fingerprint: Option<String>,
}

/// List entries wrap each keypair: `{"keypair": {...}}`.
#[derive(Debug, Clone, Deserialize)]
pub struct KeypairWrapper {
    /// The keypair.
    pub keypair: Keypair,
}

/// A server group.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ServerGroup {
    /// ID.
    pub id: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Policy (2.64+).
    #[serde(default)]
    pub policy: Option<String>,
    /// Policies (before 2.64).
    #[serde(default)]
    pub policies: Vec<String>,
    /// Member server IDs.
    #[serde(default)]
    pub members: Vec<String>,
}

/// Availability zone state.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ZoneState {
    /// Usable.
    pub available: bool,
}

/// An availability zone.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AvailabilityZone {
    /// Name.
    #[serde(rename = "zoneName")]
    pub name: String,
    /// State.
    #[serde(rename = "zoneState")]
    pub state: ZoneState,
}

/// A volume attachment.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VolumeAttachment {
    /// Attachment ID.
    #[serde(default)]
    pub id: Option<String>,
    /// Volume ID.
    #[serde(rename = "volumeId")]
    pub volume_id: String,
    /// Server ID.
    #[serde(rename = "serverId", default)]
    pub server_id: Option<String>,
    /// Device path.
    #[serde(default)]
    pub device: Option<String>,
    /// Whether Nova deletes the volume with the server (shown from 2.79).
    #[serde(default)]
    pub delete_on_termination: Option<bool>,
}

/// A fixed IP of an interface.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct InterfaceIp {
    /// Subnet ID.
    pub subnet_id: String,
    /// Address.
    pub ip_address: String,
}

/// A server interface (port attachment).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Interface {
    /// Port ID.
    pub port_id: String,
    /// Network ID.
    #[serde(default)]
    pub net_id: String,
    /// MAC address.
    #[serde(default)]
    pub mac_addr: Option<String>,
    /// Port state.
    #[serde(default)]
    pub port_state: Option<String>,
    /// Fixed IPs.
    #[serde(default)]
    pub fixed_ips: Vec<InterfaceIp>,
}

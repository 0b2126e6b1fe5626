//! Cinder v3: volumes, snapshots, volume types, availability zones.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Result;
use crate::request::{Request, Service};
use crate::session::Session;

const S: Service = Service::BlockStorage;

/// A volume.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Volume {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// creating, available, in-use, error, deleting, ...
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub volume_type: Option<String>,
    #[serde(default)]
    pub availability_zone: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub multiattach: bool,
    /// The servers it is attached to.
    #[serde(default)]
    pub attachments: Vec<VolumeServerAttachment>,
}

/// One attachment of a volume, as Cinder lists it on the volume.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VolumeServerAttachment {
    /// Nova server ID.
    #[serde(default)]
    pub server_id: String,
}

/// A volume snapshot.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Snapshot {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// creating, available, error, deleting, error_deleting, ...
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub volume_id: String,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// Create a volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct VolumeCreate {
    pub name: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    #[serde(rename = "imageRef", skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// A volume type.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct VolumeType {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub extra_specs: BTreeMap<String, String>,
}

/// A Cinder availability zone.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct VolumeAvailabilityZone {
    #[serde(rename = "zoneName")]
    pub name: String,
    #[serde(rename = "zoneState")]
    pub state: crate::compute::ZoneState,
}

/// POST /volumes.
pub fn create_volume_request(v: &VolumeCreate) -> Request {
    Request::post(S, "volumes", "volume_create", json!({"volume": v}))
}
/// GET /volumes/{id}.
pub fn get_volume_request(id: &str) -> Request {
    Request::get(S, format!("volumes/{id}"), "volume_get")
}
/// GET /volumes/detail?name=.
pub fn list_volumes_request(name: Option<&str>) -> Request {
    Request::get(S, "volumes/detail", "volume_list").with_opt_query("name", name)
}
/// DELETE /volumes/{id}.
pub fn delete_volume_request(id: &str) -> Request {
    Request::delete(S, format!("volumes/{id}"), "volume_delete")
}
/// GET /snapshots/detail.
pub fn list_snapshots_request() -> Request {
    Request::get(S, "snapshots/detail", "snapshot_list")
}
/// DELETE /snapshots/{id}.
pub fn delete_snapshot_request(id: &str) -> Request {
    Request::delete(S, format!("snapshots/{id}"), "snapshot_delete")
}
/// GET /types.
pub fn list_volume_types_request() -> Request {
    Request::get(S, "types", "volume_type_list")
}
/// GET /os-availability-zone.
pub fn list_availability_zones_request() -> Request {
    Request::get(S, "os-availability-zone", "volume_availability_zone_list")
}

/// Create a volume.
pub async fn create_volume(s: &Session, v: &VolumeCreate) -> Result<Volume> {
    s.fetch(&create_volume_request(v), "volume").await
}
/// Get a volume.
pub async fn get_volume(s: &Session, id: &str) -> Result<Volume> {
    s.fetch(&get_volume_request(id), "volume").await
}
/// List volumes, optionally by exact name.
pub async fn list_volumes(s: &Session, name: Option<&str>) -> Result<Vec<Volume>> {
    s.list(&list_volumes_request(name), "volumes").await
}
/// Delete a volume.
pub async fn delete_volume(s: &Session, id: &str) -> Result<()> {
    s.send(&delete_volume_request(id)).await.map(drop)
}
/// List the project's snapshots.
pub async fn list_snapshots(s: &Session) -> Result<Vec<Snapshot>> {
    s.list(&list_snapshots_request(), "snapshots").await
}
/// Delete a snapshot.
pub async fn delete_snapshot(s: &Session, id: &str) -> Result<()> {
    s.send(&delete_snapshot_request(id)).await.map(drop)
}
/// List volume types.
pub async fn list_volume_types(s: &Session) -> Result<Vec<VolumeType>> {
    s.list(&list_volume_types_request(), "volume_types").await
}
/// List Cinder availability zones.
pub async fn list_availability_zones(s: &Session) -> Result<Vec<VolumeAvailabilityZone>> {
    s.fetch(&list_availability_zones_request(), "availabilityZoneInfo")
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let r = create_volume_request(&VolumeCreate {
            name: "m-root".into(),
            size: 20,
            volume_type: Some("ssd".into()),
            image_ref: Some("img".into()),
            ..Default::default()
        });
        assert_eq!((r.path.as_str(), r.label), ("volumes", "volume_create"));
        assert_eq!(
            r.body.unwrap(),
            json!({"volume": {"name": "m-root", "size": 20, "volume_type": "ssd", "imageRef": "img"}})
        );
        assert_eq!(
            list_volumes_request(Some("x")).query,
            vec![("name".into(), "x".into())]
        );
        assert_eq!(list_volume_types_request().path, "types");
        assert_eq!(
            list_availability_zones_request().path,
            "os-availability-zone"
        );
        assert_eq!(delete_volume_request("v").path, "volumes/v");
    }
}

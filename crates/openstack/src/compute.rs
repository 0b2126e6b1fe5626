//! Nova: servers, flavors, keypairs, server groups, availability zones, volume attachments,
//! interfaces. Requests are built by pure `*_request` functions; the async functions send them.

mod models;

use http::Method;
use serde_json::{Map, Value, json};

pub use models::*;

use crate::error::Result;
use crate::request::{ApiVersion, Request, Service, TagFilter};
use crate::session::Session;

/// Microversion for server calls without tags (block_device_mapping_v2 volume_type needs 2.67
/// only when used; 2.38 is upstream's base).
pub const BASE_MICROVERSION: ApiVersion = ApiVersion(2, 38);
/// Microversion that introduces server tags at create time and device tags.
pub const TAGS_MICROVERSION: ApiVersion = ApiVersion(2, 53);
/// Microversion for multiattach volumes.
pub const MULTIATTACH_MICROVERSION: ApiVersion = ApiVersion(2, 60);
/// Microversion that shows (2.79) and updates (2.85) an attachment's `delete_on_termination`.
pub const ATTACHMENT_UPDATE_MICROVERSION: ApiVersion = ApiVersion(2, 85);

const S: Service = Service::Compute;

/// POST /servers. The body carries user_data base64-encoded; [`Request`]'s Debug never prints it.
pub fn create_server_request(spec: &ServerCreate) -> Request {
    let mut server = Map::new();
    server.insert("name".into(), json!(spec.name));
    server.insert("flavorRef".into(), json!(spec.flavor_id));
    // Booting from a volume: Nova wants an empty imageRef (or none).
    server.insert(
        "imageRef".into(),
        json!(spec.image_id.clone().unwrap_or_default()),
    );
    let networks: Vec<Value> = spec.port_ids.iter().map(|p| json!({"port": p})).collect();
    server.insert("networks".into(), json!(networks));
    if let Some(k) = &spec.key_name {
        server.insert("key_name".into(), json!(k));
    }
    if let Some(az) = &spec.availability_zone {
        server.insert("availability_zone".into(), json!(az));
    }
    if let Some(ud) = &spec.user_data {
        server.insert("user_data".into(), json!(ud.to_base64()));
    }
    if spec.config_drive {
        server.insert("config_drive".into(), json!(true));
    }
    if !spec.metadata.is_empty() {
        server.insert("metadata".into(), json!(spec.metadata));
    }
    if !spec.tags.is_empty() {
        server.insert("tags".into(), json!(spec.tags));
    }
    if !spec.block_devices.is_empty() {
        server.insert("block_device_mapping_v2".into(), json!(spec.block_devices));
    }
    let mut body = json!({ "server": server });
    if !spec.scheduler_hints.is_empty() {
        body["os:scheduler_hints"] = json!(spec.scheduler_hints);
    }
    let mv = if spec.multiattach {
        MULTIATTACH_MICROVERSION
    } else if !spec.tags.is_empty() || spec.block_devices.iter().any(|b| b.tag.is_some()) {
        TAGS_MICROVERSION
    } else {
        BASE_MICROVERSION
    };
    Request::post(S, "servers", "server_create", body).with_microversion(mv)
}

/// GET /servers/{id}.
pub fn get_server_request(id: &str) -> Request {
    Request::get(S, format!("servers/{id}"), "server_get").with_microversion(TAGS_MICROVERSION)
}

/// GET /servers/detail filtered by name regex and tags.
pub fn list_servers_request(name_regex: Option<&str>, tags: &TagFilter) -> Request {
    Request::get(S, "servers/detail", "server_list")
        .with_opt_query("name", name_regex)
        .with_tags(tags)
        .with_microversion(TAGS_MICROVERSION)
}

/// DELETE /servers/{id}.
pub fn delete_server_request(id: &str) -> Request {
    Request::delete(S, format!("servers/{id}"), "server_delete")
}

/// Create a server; see [`crate::error::ErrorKind::OutcomeUnknown`] for lost replies.
pub async fn create_server(s: &Session, spec: &ServerCreate) -> Result<Server> {
    s.fetch(&create_server_request(spec), "server").await
}
/// Get a server.
pub async fn get_server(s: &Session, id: &str) -> Result<Server> {
    s.fetch(&get_server_request(id), "server").await
}
/// List servers (all pages).
pub async fn list_servers(
    s: &Session,
    name_regex: Option<&str>,
    tags: &TagFilter,
) -> Result<Vec<Server>> {
    s.list(&list_servers_request(name_regex, tags), "servers")
        .await
}
/// Delete a server.
pub async fn delete_server(s: &Session, id: &str) -> Result<()> {
    s.send(&delete_server_request(id)).await.map(drop)
}

/// GET /flavors/detail.
pub fn list_flavors_request() -> Request {
    Request::get(S, "flavors/detail", "flavor_list")
}
/// GET /flavors/{id}.
pub fn get_flavor_request(id: &str) -> Request {
    Request::get(S, format!("flavors/{id}"), "flavor_get")
}
/// List flavors.
pub async fn list_flavors(s: &Session) -> Result<Vec<Flavor>> {
    s.list(&list_flavors_request(), "flavors").await
}
/// Get a flavor by ID.
pub async fn get_flavor(s: &Session, id: &str) -> Result<Flavor> {
    s.fetch(&get_flavor_request(id), "flavor").await
}
/// Find a flavor by exact name (None if absent).
pub async fn find_flavor_by_name(s: &Session, name: &str) -> Result<Option<Flavor>> {
    Ok(list_flavors(s).await?.into_iter().find(|f| f.name == name))
}

/// POST /os-keypairs importing a public key.
pub fn create_keypair_request(name: &str, public_key: &str) -> Request {
    Request::post(
        S,
        "os-keypairs",
        "keypair_create",
        json!({"keypair": {"name": name, "public_key": public_key}}),
    )
}
/// GET /os-keypairs/{name}.
pub fn get_keypair_request(name: &str) -> Request {
    Request::get(S, format!("os-keypairs/{name}"), "keypair_get")
}
/// DELETE /os-keypairs/{name}.
pub fn delete_keypair_request(name: &str) -> Request {
    Request::delete(S, format!("os-keypairs/{name}"), "keypair_delete")
}
/// Import a keypair.
pub async fn create_keypair(s: &Session, name: &str, public_key: &str) -> Result<Keypair> {
    s.fetch(&create_keypair_request(name, public_key), "keypair")
        .await
}
/// Get a keypair.
pub async fn get_keypair(s: &Session, name: &str) -> Result<Keypair> {
    s.fetch(&get_keypair_request(name), "keypair").await
}
/// List keypairs.
pub async fn list_keypairs(s: &Session) -> Result<Vec<Keypair>> {
    let wrapped: Vec<KeypairWrapper> = s
        .list(&Request::get(S, "os-keypairs", "keypair_list"), "keypairs")
        .await?;
    Ok(wrapped.into_iter().map(|w| w.keypair).collect())
}
/// Delete a keypair.
pub async fn delete_keypair(s: &Session, name: &str) -> Result<()> {
    s.send(&delete_keypair_request(name)).await.map(drop)
}

/// GET /os-server-groups.
pub fn list_server_groups_request() -> Request {
    Request::get(S, "os-server-groups", "server_group_list")
}
/// List server groups.
pub async fn list_server_groups(s: &Session) -> Result<Vec<ServerGroup>> {
    s.list(&list_server_groups_request(), "server_groups").await
}
/// Get a server group.
pub async fn get_server_group(s: &Session, id: &str) -> Result<ServerGroup> {
    let req = Request::get(S, format!("os-server-groups/{id}"), "server_group_get");
    s.fetch(&req, "server_group").await
}

/// GET /os-availability-zone.
pub fn list_availability_zones_request() -> Request {
    Request::get(S, "os-availability-zone", "availability_zone_list")
}
/// List availability zones (callers usually keep the available ones).
pub async fn list_availability_zones(s: &Session) -> Result<Vec<AvailabilityZone>> {
    s.fetch(&list_availability_zones_request(), "availabilityZoneInfo")
        .await
}

/// GET /servers/{id}/os-volume_attachments.
pub fn list_volume_attachments_request(server_id: &str) -> Request {
    Request::get(
        S,
        format!("servers/{server_id}/os-volume_attachments"),
        "volume_attachment_list",
    )
}
/// List a server's volume attachments.
pub async fn list_volume_attachments(
    s: &Session,
    server_id: &str,
) -> Result<Vec<VolumeAttachment>> {
    s.fetch(
        &list_volume_attachments_request(server_id),
        "volumeAttachments",
    )
    .await
}

/// PUT /servers/{id}/os-volume_attachments/{volume} (2.85) setting `delete_on_termination`:
/// Nova then deletes the volume when it deletes (or reclaims) the server.
pub fn set_delete_on_termination_request(server_id: &str, volume_id: &str, on: bool) -> Request {
    Request::put(
        S,
        format!("servers/{server_id}/os-volume_attachments/{volume_id}"),
        "volume_attachment_update",
        json!({"volumeAttachment": {"volumeId": volume_id, "delete_on_termination": on}}),
    )
    .with_microversion(ATTACHMENT_UPDATE_MICROVERSION)
}
/// Set an attachment's `delete_on_termination` (Nova 2.85).
pub async fn set_delete_on_termination(
    s: &Session,
    server_id: &str,
    volume_id: &str,
    on: bool,
) -> Result<()> {
    s.send(&set_delete_on_termination_request(server_id, volume_id, on))
        .await
        .map(drop)
}
/// List a server's volume attachments with their `delete_on_termination` (2.85).
pub async fn list_volume_attachments_dot(
    s: &Session,
    server_id: &str,
) -> Result<Vec<VolumeAttachment>> {
    s.fetch(
        &list_volume_attachments_request(server_id)
            .with_microversion(ATTACHMENT_UPDATE_MICROVERSION),
        "volumeAttachments",
    )
    .await
}

/// GET /servers/{id}/os-interface.
pub fn list_interfaces_request(server_id: &str) -> Request {
    Request::get(
        S,
        format!("servers/{server_id}/os-interface"),
        "interface_list",
    )
}
/// List a server's interfaces (ports).
pub async fn list_interfaces(s: &Session, server_id: &str) -> Result<Vec<Interface>> {
    s.fetch(&list_interfaces_request(server_id), "interfaceAttachments")
        .await
}
/// POST /servers/{id}/os-interface attaching an existing port.
pub fn attach_interface_request(server_id: &str, port_id: &str) -> Request {
    Request::new(
        S,
        Method::POST,
        format!("servers/{server_id}/os-interface"),
        "interface_create",
    )
    .with_body(json!({"interfaceAttachment": {"port_id": port_id}}))
}

#[cfg(test)]
mod tests;

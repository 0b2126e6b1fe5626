//! The Nova server: adopt by recorded ID, else by exact name + ownership metadata, else create.

use std::collections::BTreeMap;

use capo_openstack::compute::{self, BlockDevice, Server, ServerCreate, UserData};
use capo_openstack::{Session, TagFilter};

use super::owner::{ServerOwner, pick};
use super::volumes::{EnsuredVolume, ROOT_DEVICE};
use crate::Progress;
use crate::error::{Context, Error, Result};

/// Everything the create needs, resolved. Debug never shows the user data (it is redacted).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerRequest {
    /// Flavor ID.
    pub flavor_id: String,
    /// Image ID (also used as the local root disk when there is no root volume).
    pub image_id: Option<String>,
    /// Port IDs, in spec order.
    pub port_ids: Vec<String>,
    /// Ensured volumes (the root volume has device `root`).
    pub volumes: Vec<EnsuredVolume>,
    /// Local (ephemeral) additional devices: (name, size GiB).
    pub local_devices: Vec<(String, u32)>,
    /// Bootstrap data.
    pub user_data: Option<UserData>,
    /// Key pair.
    pub key_name: Option<String>,
    /// Server metadata (the ownership entry is added).
    pub metadata: BTreeMap<String, String>,
    /// Extra server tags besides the owner's spec tags.
    pub tags: Vec<String>,
    /// Nova availability zone.
    pub availability_zone: Option<String>,
    /// Server group ID (scheduler hint `group`).
    pub server_group_id: Option<String>,
    /// Additional scheduler hints.
    pub scheduler_hints: BTreeMap<String, serde_json::Value>,
    /// Config drive.
    pub config_drive: bool,
}

/// Ensure the server; the server with where it stands (record its ID either way): ACTIVE →
/// Done; BUILD (or any other transitional state) → Waiting; ERROR → [`Error::InstanceFailed`] carrying Nova's fault (retryable on
/// a slow backoff: the caller deletes the server and tries again). A lost create reply
/// surfaces as a retryable error; the rerun adopts the server by name instead of creating it
/// twice. A recorded server that no longer exists or is gone ([`is_gone`]: `SOFT_DELETED`
/// too), and none by name either, was deleted out of band: [`Error::ServerDeleted`] with the
/// status Nova still shows for it, if any; never a silent re-create (the caller reports
/// InstanceDeleted, or InstanceNotFound for an ID Nova no longer knows, so a
/// MachineHealthCheck can remediate).
pub async fn ensure_server(
    s: &Session,
    owner: &ServerOwner,
    req: &ServerRequest,
    recorded: Option<&str>,
) -> Result<(Server, Progress)> {
    let server = match find_server(s, owner, recorded).await? {
        Some(found) => found,
        None if let Some(id) = recorded.filter(|r| !r.is_empty()) => {
            // One more GET, on this rare path only: whether Nova still shows it (gone) or
            // no longer knows it (not found), which the owner reports differently.
            let state = get_server_any(s, id).await?.map(|v| v.status);
            return Err(Error::ServerDeleted {
                id: id.to_owned(),
                state,
            });
        }
        None => {
            let spec = create_spec(owner, req);
            tracing::info!(name = %owner.name, ports = spec.port_ids.len(), "creating server");
            compute::create_server(s, &spec)
                .await
                .ctx(|| format!("create server {}", owner.name))?
        }
    };
    classify_state(owner, server)
}

fn classify_state(owner: &ServerOwner, server: Server) -> Result<(Server, Progress)> {
    match server.status.as_str() {
        "ACTIVE" => Ok((server, Progress::Done(()))),
        "ERROR" => Err(Error::InstanceFailed {
            name: owner.name.clone(),
            id: server.id,
            fault: server
                .fault
                .map(|f| f.message.trim().to_owned())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "no fault reported".into()),
        }),
        // The create reply carries no status yet; BUILD, REBUILD, ... are all transitional.
        other => {
            let why = format!(
                "server {} is {}",
                owner.name,
                if other.is_empty() { "BUILD" } else { other }
            );
            Ok((server, Progress::waiting("server", &owner.name, why)))
        }
    }
}

/// Whether Nova's `status` means the server is gone for capo: `DELETED`, or `SOFT_DELETED`
/// (a cloud with `reclaim_instance_interval > 0` keeps a deleted server, powered off and shown
/// by ID, until it reclaims it; upstream v0.14 counts it as deleted too, its PR 2834). The one place
/// that decides it: [`get_server`] and [`find_server`] answer `None` for such a server, so
/// nothing capo does (create, adopt, steady checks, delete) sees it as a server any more.
pub fn is_gone(status: &str) -> bool {
    matches!(status, "DELETED" | "SOFT_DELETED")
}

/// The recorded server if it still exists, else the only server with our exact name that is
/// ours (or unmarked: adopted). More than one → an error naming their IDs. A gone server
/// ([`is_gone`]) is never found.
pub(crate) async fn find_server(
    s: &Session,
    owner: &ServerOwner,
    recorded: Option<&str>,
) -> Result<Option<Server>> {
    let class = |v: &Server| owner.classify_metadata(&v.metadata);
    if let Some(id) = recorded.filter(|i| !i.is_empty())
        && let Some(v) = get_server(s, id).await?
    {
        return pick("server", &owner.name, vec![v], |v| &v.id, class);
    }
    // Nova's name filter is a regex: escape the name and anchor it.
    let re = format!("^{}$", escape_regex(&owner.name));
    let found: Vec<Server> = compute::list_servers(s, Some(&re), &TagFilter::default())
        .await
        .ctx(|| format!("list servers {:?}", owner.name))?
        .into_iter()
        .filter(|v| v.name == owner.name && !is_gone(&v.status))
        .collect();
    pick("server", &owner.name, found, |v| &v.id, class)
}

/// GET server `id`; a 404 or a gone server ([`is_gone`]) is `None`.
pub async fn get_server(s: &Session, id: &str) -> Result<Option<Server>> {
    Ok(get_server_any(s, id).await?.filter(|v| !is_gone(&v.status)))
}

/// GET server `id` whatever its status (a gone server too); a 404 is `None`.
pub(crate) async fn get_server_any(s: &Session, id: &str) -> Result<Option<Server>> {
    compute::get_server(s, id)
        .await
        .ctx_opt(|| format!("get server {id}"))
}

/// DELETE server `id` without waiting for it to go; a 404 counts as done.
pub async fn delete_server(s: &Session, id: &str) -> Result<()> {
    compute::delete_server(s, id)
        .await
        .ctx_opt(|| format!("delete server {id}"))?;
    Ok(())
}

fn escape_regex(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// The create request: ownership in metadata, tags, and block_device_mapping_v2 (root volume
/// at boot index 0, or the image as a local root disk when other devices are mapped).
pub(crate) fn create_spec(owner: &ServerOwner, req: &ServerRequest) -> ServerCreate {
    let mut metadata = req.metadata.clone();
    metadata.extend(owner.metadata());
    let root = req.volumes.iter().find(|v| v.device == ROOT_DEVICE);
    let mut bdm = Vec::new();
    match root {
        Some(r) => bdm.push(volume_device(&r.id, 0, None)),
        None if !req.volumes.is_empty() || !req.local_devices.is_empty() => {
            bdm.push(BlockDevice {
                source_type: "image".into(),
                destination_type: "local".into(),
                uuid: req.image_id.clone(),
                boot_index: 0,
                delete_on_termination: true,
                volume_size: None,
                tag: None,
            });
        }
        None => {}
    }
    // Each additional device is tagged with its name (as upstream does), so the guest finds
    // it in the metadata API or on the config drive.
    for v in req.volumes.iter().filter(|v| v.device != ROOT_DEVICE) {
        bdm.push(volume_device(&v.id, -1, Some(&v.device)));
    }
    for (name, size) in &req.local_devices {
        bdm.push(BlockDevice {
            source_type: "blank".into(),
            destination_type: "local".into(),
            uuid: None,
            boot_index: -1,
            delete_on_termination: true,
            volume_size: Some(*size),
            tag: Some(name.clone()),
        });
    }
    let mut hints = req.scheduler_hints.clone();
    if let Some(g) = &req.server_group_id {
        hints.insert("group".into(), serde_json::json!(g));
    }
    ServerCreate {
        name: owner.name.clone(),
        flavor_id: req.flavor_id.clone(),
        image_id: if root.is_some() {
            None
        } else {
            req.image_id.clone()
        },
        port_ids: req.port_ids.clone(),
        key_name: req.key_name.clone().filter(|k| !k.is_empty()),
        availability_zone: req.availability_zone.clone(),
        user_data: req.user_data.clone(),
        config_drive: req.config_drive,
        metadata,
        tags: owner.desired_tags(&req.tags),
        block_devices: bdm,
        scheduler_hints: hints,
        multiattach: req.volumes.iter().any(|v| v.multiattach),
    }
}

/// A pre-created volume; we delete volumes ourselves, so Nova must not.
fn volume_device(id: &str, boot_index: i32, tag: Option<&str>) -> BlockDevice {
    BlockDevice {
        source_type: "volume".into(),
        destination_type: "volume".into(),
        uuid: Some(id.to_owned()),
        boot_index,
        delete_on_termination: false,
        volume_size: None,
        tag: tag.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_escaping() {
        assert_eq!(escape_regex("a.b-c"), "a\\.b-c");
    }

    #[test]
    fn boot_from_volume_mapping() {
        let owner = ServerOwner {
            uid: "u".into(),
            name: "m".into(),
            spec_tags: vec![],
        };
        let vol = |d: &str| EnsuredVolume {
            device: d.into(),
            id: format!("v-{d}"),
            multiattach: false,
        };
        let req = ServerRequest {
            image_id: Some("img".into()),
            volumes: vec![vol("root"), vol("data")],
            local_devices: vec![("eph".into(), 1)],
            user_data: Some(UserData::new("secret-bootstrap")),
            ..Default::default()
        };
        let spec = create_spec(&owner, &req);
        assert_eq!(spec.image_id, None);
        let idx: Vec<i32> = spec.block_devices.iter().map(|b| b.boot_index).collect();
        assert_eq!(idx, [0, -1, -1]);
        assert_eq!(spec.metadata["capo-server-uid"], "u");
        assert!(!format!("{req:?}").contains("secret-bootstrap"));
    }

    /// Upstream's "Volume that is multiattach": a server with a multiattach volume among its
    /// devices is created at Nova microversion 2.60 (older ones refuse such a volume); without
    /// one the create stays at the usual microversion.
    #[test]
    fn a_multiattach_volume_asks_nova_for_2_60() {
        let owner = ServerOwner {
            uid: "u".into(),
            name: "m".into(),
            spec_tags: vec![],
        };
        let vol = |d: &str, multiattach: bool| EnsuredVolume {
            device: d.into(),
            id: format!("v-{d}"),
            multiattach,
        };
        let req = ServerRequest {
            image_id: Some("img".into()),
            volumes: vec![vol("root", false), vol("data", true)],
            ..Default::default()
        };
        let spec = create_spec(&owner, &req);
        assert!(spec.multiattach);
        let r = compute::create_server_request(&spec);
        assert_eq!(r.microversion, Some(compute::MULTIATTACH_MICROVERSION));
        let plain = ServerRequest {
            volumes: vec![vol("root", false), vol("data", false)],
            ..req
        };
        let r = compute::create_server_request(&create_spec(&owner, &plain));
        assert_ne!(r.microversion, Some(compute::MULTIATTACH_MICROVERSION));
    }

    /// Upstream's "With custom scheduler hint bool/number/string": the custom hints go into
    /// `os:scheduler_hints` beside the server group, each with its JSON type.
    #[test]
    fn custom_scheduler_hints_go_beside_the_group() {
        let owner = ServerOwner {
            uid: "u".into(),
            name: "m".into(),
            spec_tags: vec![],
        };
        let req = ServerRequest {
            server_group_id: Some("sg-1".into()),
            scheduler_hints: BTreeMap::from([
                ("hint_bool".to_owned(), serde_json::json!(true)),
                ("hint_number".to_owned(), serde_json::json!(1)),
                ("hint_string".to_owned(), serde_json::json!("x")),
            ]),
            ..Default::default()
        };
        let r = compute::create_server_request(&create_spec(&owner, &req));
        let body = r.body.unwrap_or_default();
        assert_eq!(
            body["os:scheduler_hints"],
            serde_json::json!({
                "group": "sg-1",
                "hint_bool": true,
                "hint_number": 1,
                "hint_string": "x",
            })
        );
    }

    /// Upstream's "Duplicate tags": the server's tags keep each tag once, at its first place.
    #[test]
    fn duplicate_tags_are_dropped_keeping_the_first() {
        let owner = ServerOwner {
            uid: "u".into(),
            name: "m".into(),
            spec_tags: vec!["tag1".into(), "tag2".into(), "tag1".into(), "tag3".into()],
        };
        let req = ServerRequest {
            tags: vec!["tag3".into(), "tag4".into(), "tag2".into()],
            ..Default::default()
        };
        let spec = create_spec(&owner, &req);
        assert_eq!(
            spec.tags,
            ["tag1", "tag2", "tag3", "tag4", "capo-server-uid=u"]
        );
        let body = compute::create_server_request(&spec)
            .body
            .unwrap_or_default();
        assert_eq!(
            body["server"]["tags"],
            serde_json::json!(["tag1", "tag2", "tag3", "tag4", "capo-server-uid=u"])
        );
    }

    /// Upstream's "Additional block devices success": without a root volume the image is the
    /// local root disk at boot index 0; every additional device, volume or local, carries its
    /// name as the device tag; the root volume has none.
    #[test]
    fn additional_devices_carry_their_name_as_device_tag() {
        let owner = ServerOwner {
            uid: "u".into(),
            name: "m".into(),
            spec_tags: vec![],
        };
        let vol = |d: &str| EnsuredVolume {
            device: d.into(),
            id: format!("v-{d}"),
            multiattach: false,
        };
        let shape = |spec: &ServerCreate| -> Vec<(String, String, i32, Option<String>)> {
            spec.block_devices
                .iter()
                .map(|b| {
                    let uuid = b.uuid.clone().unwrap_or_default();
                    (b.source_type.clone(), uuid, b.boot_index, b.tag.clone())
                })
                .collect()
        };
        let row = |src: &str, uuid: &str, idx: i32, tag: Option<&str>| {
            (src.to_owned(), uuid.to_owned(), idx, tag.map(str::to_owned))
        };
        let local = ServerRequest {
            image_id: Some("img".into()),
            volumes: vec![vol("etcd")],
            local_devices: vec![("data".into(), 10)],
            ..Default::default()
        };
        let spec = create_spec(&owner, &local);
        assert_eq!(spec.image_id.as_deref(), Some("img"));
        assert_eq!(
            shape(&spec),
            [
                row("image", "img", 0, None),
                row("volume", "v-etcd", -1, Some("etcd")),
                row("blank", "", -1, Some("data")),
            ]
        );
        let bfv = ServerRequest {
            volumes: vec![vol("root"), vol("etcd")],
            ..local
        };
        assert_eq!(
            shape(&create_spec(&owner, &bfv)),
            [
                row("volume", "v-root", 0, None),
                row("volume", "v-etcd", -1, Some("etcd")),
                row("blank", "", -1, Some("data")),
            ]
        );
    }
}

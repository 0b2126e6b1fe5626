//! Cinder volumes of one server: the root volume `<server>-root` and every additional block
//! device of storage type `Volume` as `<server>-<name>`. Ownership is the metadata entry
//! `capo-server-uid=<uid>` (Cinder has no tags); an unmarked volume with our name is adopted.

use std::collections::BTreeMap;

use capo_api::v1beta1::{
    AdditionalBlockDevice, RootVolume, VolumeAZSource, VolumeAvailabilityZone,
};
use capo_openstack::Session;
use capo_openstack::blockstorage::{self as bs, Volume, VolumeCreate};

use super::owner::{ServerOwner, pick, split_duplicates};
use crate::Progress;
use crate::error::{Context, Error, Result};

/// A volume to ensure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeSpec {
    /// Volume name (`<server>-root`, `<server>-<device>`).
    pub name: String,
    /// Device name in the spec (`root` for the root volume).
    pub device: String,
    /// Size in GiB.
    pub size_gib: u64,
    /// Cinder volume type.
    pub volume_type: Option<String>,
    /// Cinder availability zone.
    pub availability_zone: Option<String>,
    /// Image to copy (root volume only).
    pub image_id: Option<String>,
}

/// A volume that exists and is usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsuredVolume {
    /// Device name in the spec (`root` for the root volume).
    pub device: String,
    /// Volume ID.
    pub id: String,
    /// Multiattach volume (the server create then needs microversion 2.60).
    pub multiattach: bool,
}

/// Device name of the root volume.
pub const ROOT_DEVICE: &str = "root";

/// The volumes to make, root first. `machine_az` is the server's AZ, used when a volume's AZ
/// comes `from: Machine` or is not given (upstream's rule).
pub fn plan_volumes(
    server: &str,
    root: Option<&RootVolume>,
    image_id: Option<&str>,
    additional: &[AdditionalBlockDevice],
    machine_az: Option<&str>,
) -> Vec<VolumeSpec> {
    let az = |v: Option<&VolumeAvailabilityZone>| match v {
        Some(VolumeAvailabilityZone {
            from: Some(VolumeAZSource::Name) | None,
            name: Some(n),
        }) => Some(n.clone()),
        _ => machine_az.map(str::to_owned),
    };
    let mut out = Vec::new();
    if let Some(r) = root.filter(|r| r.size_gib > 0) {
        out.push(VolumeSpec {
            name: format!("{server}-{ROOT_DEVICE}"),
            device: ROOT_DEVICE.to_owned(),
            size_gib: u64::try_from(r.size_gib).unwrap_or(0),
            volume_type: r.r#type.clone(),
            availability_zone: az(r.availability_zone.as_ref()),
            image_id: image_id.map(str::to_owned),
        });
    }
    for d in additional.iter().filter(|d| d.storage.r#type == "Volume") {
        let vol = d.storage.volume.as_ref();
        out.push(VolumeSpec {
            name: format!("{server}-{}", d.name),
            device: d.name.clone(),
            size_gib: u64::try_from(d.size_gib).unwrap_or(0),
            volume_type: vol.and_then(|v| v.r#type.clone()),
            availability_zone: az(vol.and_then(|v| v.availability_zone.as_ref())),
            image_id: None,
        });
    }
    out
}

/// Ensure every volume, creating all missing ones before reporting any wait (so they become
/// available in parallel). `recorded` maps device → ID; `record` is called with each ID as
/// soon as it is known. Waiting while any is still `creating`.
pub async fn ensure_volumes(
    s: &Session,
    owner: &ServerOwner,
    specs: &[VolumeSpec],
    recorded: &BTreeMap<String, String>,
    mut record: impl FnMut(&str, &str),
) -> Result<Progress<Vec<EnsuredVolume>>> {
    let mut ready = Vec::with_capacity(specs.len());
    let mut waiting = None;
    for spec in specs {
        let rec = recorded.get(&spec.device).map(String::as_str);
        let (volume, progress) = ensure_volume(s, owner, spec, rec).await?;
        record(&volume.device, &volume.id);
        match progress {
            Progress::Done(()) => ready.push(volume),
            not_yet => {
                waiting.get_or_insert(not_yet.map(|()| Vec::new()));
            }
        }
    }
    Ok(waiting.unwrap_or(Progress::Done(ready)))
}

/// Ensure one volume: by recorded ID, else by name + ownership, else create (metadata marks it
/// ours); the volume with where it stands: `creating`/`downloading` → Waiting; `error` → an
/// error naming the volume.
pub async fn ensure_volume(
    s: &Session,
    owner: &ServerOwner,
    spec: &VolumeSpec,
    recorded: Option<&str>,
) -> Result<(EnsuredVolume, Progress)> {
    let (found, duplicates) = find_volume(s, owner, &spec.name, recorded).await?;
    let vol = match found {
        Some(v) => v,
        None => {
            let create = VolumeCreate {
                name: spec.name.clone(),
                size: spec.size_gib,
                description: Some(format!("Created by capo for server {}", owner.name)),
                volume_type: spec.volume_type.clone(),
                availability_zone: spec.availability_zone.clone(),
                image_ref: spec.image_id.clone(),
                metadata: owner.metadata(),
            };
            tracing::info!(name = %spec.name, size = spec.size_gib, "creating volume");
            bs::create_volume(s, &create)
                .await
                .ctx(|| format!("create volume {}", spec.name))?
        }
    };
    let progress = match vol.status.as_str() {
        "available" | "in-use" => Progress::Done(()),
        "error" => {
            return Err(Error::InvalidSpec(format!(
                "volume {} ({}) is in status error; delete it to retry",
                spec.name, vol.id
            )));
        }
        other => Progress::waiting(
            "volume",
            &spec.name,
            format!("volume {} is {other}", spec.name),
        ),
    };
    // Not usable until a duplicate left by a lost create reply is gone (never leaked).
    let progress = if progress.is_done() {
        duplicates
    } else {
        progress
    };
    let volume = EnsuredVolume {
        device: spec.device.clone(),
        id: vol.id,
        multiattach: vol.multiattach,
    };
    Ok((volume, progress))
}

/// The volume recorded (if it still exists), else the one with our name (ours or adoptable);
/// with Waiting while a duplicate left by a lost create reply cannot be deleted yet.
pub(crate) async fn find_volume(
    s: &Session,
    owner: &ServerOwner,
    name: &str,
    recorded: Option<&str>,
) -> Result<(Option<Volume>, Progress)> {
    let class = |v: &Volume| owner.classify_metadata(&v.metadata);
    if let Some(id) = recorded.filter(|i| !i.is_empty()) {
        let got = bs::get_volume(s, id).await;
        if let Some(v) = got.ctx_opt(|| format!("get volume {id}"))? {
            let found = pick("volume", name, vec![v], |v| &v.id, class)?;
            return Ok((found, Progress::Done(())));
        }
    }
    let (keep, extra) = split_duplicates(named_volumes(s, name).await?, |v| &v.id, attached, class);
    let mut progress = Progress::Done(());
    for dup in extra {
        if let Progress::Waiting(w) = delete_unattached(s, &dup).await? {
            let message = format!("duplicate {}", w.message);
            progress = Progress::Waiting(w.with_message(message));
        }
    }
    Ok((pick("volume", name, keep, |v| &v.id, class)?, progress))
}

/// Every volume named exactly `name` (Cinder's name filter is a prefix match on some clouds).
pub(crate) async fn named_volumes(s: &Session, name: &str) -> Result<Vec<Volume>> {
    Ok(bs::list_volumes(s, Some(name))
        .await
        .ctx(|| format!("list volumes {name:?}"))?
        .into_iter()
        .filter(|v| v.name.as_deref() == Some(name))
        .collect())
}

/// Whether the volume is attached (or being attached or detached).
fn attached(v: &Volume) -> bool {
    matches!(
        v.status.as_str(),
        "in-use" | "attaching" | "detaching" | "reserved"
    )
}

/// Delete a volume that is not attached: Done once asked (or already going away), Waiting
/// while Cinder cannot delete it yet (attached, or still being created).
pub(crate) async fn delete_unattached(s: &Session, v: &Volume) -> Result<Progress> {
    match v.status.as_str() {
        "deleting" => Ok(Progress::Done(())),
        "creating" | "downloading" | "in-use" | "attaching" | "detaching" | "reserved" => {
            Ok(Progress::waiting(
                "volume",
                &v.id,
                format!("volume {} is still {}", v.id, v.status),
            ))
        }
        _ => {
            let deleted = bs::delete_volume(s, &v.id).await;
            if deleted
                .ctx_opt(|| format!("delete volume {}", v.id))?
                .is_some()
            {
                tracing::info!(id = %v.id, "deleted volume");
            }
            Ok(Progress::Done(()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capo_api::v1beta1::{BlockDeviceStorage, BlockDeviceVolume};

    #[test]
    fn plan_names_sizes_and_zones() {
        let root = RootVolume {
            size_gib: 10,
            r#type: Some("ssd".into()),
            availability_zone: Some(VolumeAvailabilityZone {
                from: Some(VolumeAZSource::Name),
                name: Some("vz".into()),
            }),
        };
        let dev = |name: &str, kind: &str, from| AdditionalBlockDevice {
            name: name.into(),
            size_gib: 2,
            storage: BlockDeviceStorage {
                r#type: kind.into(),
                volume: Some(BlockDeviceVolume {
                    availability_zone: Some(VolumeAvailabilityZone { from, name: None }),
                    r#type: None,
                }),
            },
        };
        let devices = [
            dev("etcd", "Volume", Some(VolumeAZSource::Machine)),
            dev("tmp", "Local", None),
        ];
        let plan = plan_volumes("m", Some(&root), Some("img"), &devices, Some("az1"));
        assert_eq!(plan.len(), 2);
        assert_eq!(plan[0].name, "m-root");
        assert_eq!(plan[0].availability_zone.as_deref(), Some("vz"));
        assert_eq!(plan[0].image_id.as_deref(), Some("img"));
        assert_eq!(plan[1].name, "m-etcd");
        assert_eq!(plan[1].availability_zone.as_deref(), Some("az1"));
        assert_eq!(plan[1].image_id, None);
    }
}

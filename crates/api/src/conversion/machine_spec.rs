//! The machine spec, shared by OpenStackMachine, OpenStackMachineTemplate and the bastion.

use crate::conversion::error::{ConversionError, join};
use crate::conversion::recast::{recast, recast_all};
use crate::conversion::{flavor, identity, ports};
use crate::v1beta1;
use crate::v1beta2;
use crate::v1beta2::BlockDeviceType;

/// A v1beta1 machine spec (at `path`) in v1beta2.
pub(crate) fn to_v1beta2(
    s: &v1beta1::OpenStackMachineSpec,
    path: &str,
) -> Result<v1beta2::OpenStackMachineSpec, ConversionError> {
    Ok(v1beta2::OpenStackMachineSpec {
        additional_block_devices: block_devices_to_v1beta2(
            &s.additional_block_devices,
            &join(path, "additionalBlockDevices"),
        )?,
        config_drive: s.config_drive,
        flavor: flavor::to_v1beta2(s.flavor.as_ref(), s.flavor_id.as_ref()),
        floating_ip_pool_ref: s.floating_ip_pool_ref.as_deref().cloned(),
        identity_ref: s.identity_ref.as_deref().map(identity::to_v1beta2),
        image: recast(&s.image, &join(path, "image"))?,
        ports: ports::to_v1beta2(&s.ports, &join(path, "ports"))?,
        provider_id: s.provider_id.clone(),
        root_volume: s
            .root_volume
            .as_ref()
            .map(|r| recast(r, &join(path, "rootVolume")))
            .transpose()?,
        scheduler_hint_additional_properties: recast_all(
            &s.scheduler_hint_additional_properties,
            &join(path, "schedulerHintAdditionalProperties"),
        )?,
        security_groups: s.security_groups.clone(),
        server_group: s.server_group.as_deref().cloned(),
        server_metadata: recast_all(&s.server_metadata, &join(path, "serverMetadata"))?,
        ssh_key_name: s.ssh_key_name.clone(),
        tags: s.tags.clone(),
        trunk: s.trunk,
        extensions: s.extensions.as_deref().cloned(),
    })
}

/// A v1beta2 machine spec (at `path`) in v1beta1.
pub(crate) fn to_v1beta1(
    s: &v1beta2::OpenStackMachineSpec,
    path: &str,
) -> Result<v1beta1::OpenStackMachineSpec, ConversionError> {
    let (flavor, flavor_id) = flavor::to_v1beta1(&s.flavor, path)?;
    Ok(v1beta1::OpenStackMachineSpec {
        additional_block_devices: block_devices_to_v1beta1(
            &s.additional_block_devices,
            &join(path, "additionalBlockDevices"),
        )?,
        config_drive: s.config_drive,
        flavor,
        flavor_id,
        floating_ip_pool_ref: s.floating_ip_pool_ref.clone().map(Box::new),
        identity_ref: s
            .identity_ref
            .as_ref()
            .map(|i| Box::new(identity::to_v1beta1(i))),
        image: recast(&s.image, &join(path, "image"))?,
        ports: ports::to_v1beta1(&s.ports, &join(path, "ports"))?,
        provider_id: s.provider_id.clone(),
        root_volume: s
            .root_volume
            .as_ref()
            .map(|r| recast(r, &join(path, "rootVolume")))
            .transpose()?,
        scheduler_hint_additional_properties: recast_all(
            &s.scheduler_hint_additional_properties,
            &join(path, "schedulerHintAdditionalProperties"),
        )?,
        security_groups: s.security_groups.clone(),
        server_group: s.server_group.clone().map(Box::new),
        server_metadata: recast_all(&s.server_metadata, &join(path, "serverMetadata"))?,
        ssh_key_name: s.ssh_key_name.clone(),
        tags: s.tags.clone(),
        trunk: s.trunk,
        extensions: s.extensions.clone().map(Box::new),
    })
}

/// Additional block devices; v1beta1's free-text storage type must be one of v1beta2's two.
pub(crate) fn block_devices_to_v1beta2(
    devices: &[v1beta1::AdditionalBlockDevice],
    path: &str,
) -> Result<Vec<v1beta2::AdditionalBlockDevice>, ConversionError> {
    devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let r#type = match d.storage.r#type.as_str() {
                "Local" => BlockDeviceType::Local,
                "Volume" => BlockDeviceType::Volume,
                other => {
                    return Err(ConversionError::new(
                        join(path, &format!("[{i}].storage.type")),
                        format!("{other:?} is neither \"Local\" nor \"Volume\", the only types v1beta2 knows"),
                    ));
                }
            };
            Ok(v1beta2::AdditionalBlockDevice {
                name: d.name.clone(),
                size_gib: d.size_gib,
                storage: v1beta2::BlockDeviceStorage {
                    r#type,
                    volume: d.storage.volume.clone(),
                },
            })
        })
        .collect()
}

/// Additional block devices; v1beta2's enum storage type is one of v1beta1's free-text ones.
pub(crate) fn block_devices_to_v1beta1(
    devices: &[v1beta2::AdditionalBlockDevice],
    path: &str,
) -> Result<Vec<v1beta1::AdditionalBlockDevice>, ConversionError> {
    recast_all(devices, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_storage_type_is_refused() {
        let spec = v1beta1::OpenStackMachineSpec {
            flavor: Some("m1.small".into()),
            additional_block_devices: vec![v1beta1::AdditionalBlockDevice {
                name: "data".into(),
                size_gib: 1,
                storage: v1beta1::BlockDeviceStorage {
                    r#type: "Tape".into(),
                    volume: None,
                },
            }],
            ..Default::default()
        };
        let err = to_v1beta2(&spec, "spec").err();
        assert_eq!(
            err.map(|e| e.path),
            Some("spec.additionalBlockDevices[0].storage.type".to_owned())
        );
    }
}

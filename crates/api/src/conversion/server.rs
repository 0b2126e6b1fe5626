//! OpenStackServer (v1alpha1, on v1beta2's shared types since upstream main) against the
//! v1beta1 shapes the controllers derive servers from (machine and bastion specs) and call the
//! cloud with.
//!
//! Field by field this is the machine-spec conversion (modules `machine_spec`, `ports`,
//! `identity`): the same functions do it. Two things are the server's own: its flavor stays
//! v1beta1's pair of strings, and its ports may carry the legacy `disablePortSecurity` of
//! servers written by upstream v0.14 or capo 0.1, which counts only when `enablePortSecurity` is
//! unset ([`v1alpha1::PortOpts::port_security_enabled`]). Going to v1beta1 folds the two into
//! `disablePortSecurity`; coming from v1beta1 writes `enablePortSecurity` only, upstream main's
//! form.

use crate::conversion::error::{ConversionError, join};
use crate::conversion::recast::{recast, recast_all};
use crate::conversion::{identity, machine_spec, ports};
use crate::v1alpha1;
use crate::v1beta1;
use crate::v1beta2;

/// An OpenStackServer spec in v1beta1's shared types (the shape of capo 0.1's v1alpha1):
/// what [`server_spec_from_v1beta1`] turns into a v1alpha1 spec and
/// [`server_spec_to_v1beta1`] gives back, for code that works with v1beta1 machine specs.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct V1beta1ServerSpec {
    /// Disks attached to the server besides the root disk.
    pub additional_block_devices: Vec<v1beta1::AdditionalBlockDevice>,
    /// Nova availability zone of the server.
    pub availability_zone: Option<String>,
    /// Attach a config drive to the server.
    pub config_drive: Option<bool>,
    /// Flavor name.
    pub flavor: Option<String>,
    /// Flavor ID; takes precedence over the flavor name.
    pub flavor_id: Option<String>,
    /// Pool from which the server takes its floating IP.
    pub floating_ip_pool_ref: Option<v1beta1::TypedLocalObjectReference>,
    /// Credentials, with the type stated (`Secret` when the v1alpha1 spec leaves it unset).
    pub identity_ref: v1beta1::OpenStackIdentityReference,
    /// Image to boot from.
    pub image: v1beta1::ImageParam,
    /// Ports, with port security in v1beta1's `disablePortSecurity`.
    pub ports: Vec<v1beta1::PortOpts>,
    /// Boot volume.
    pub root_volume: Option<v1beta1::RootVolume>,
    /// Extra Nova scheduler hints.
    pub scheduler_hint_additional_properties: Vec<v1beta1::SchedulerHintAdditionalProperty>,
    /// Security groups applied to every port without its own list.
    pub security_groups: Vec<v1beta1::NetworkParam>,
    /// Nova server group the server joins.
    pub server_group: Option<v1beta1::ServerGroupParam>,
    /// Nova metadata of the server.
    pub server_metadata: Vec<v1beta1::ServerMetadata>,
    /// Nova key pair injected into the server.
    pub ssh_key_name: String,
    /// Tags added to the server and its ports.
    pub tags: Vec<String>,
    /// Create a Neutron trunk for the port(s).
    pub trunk: Option<bool>,
    /// Secret holding the user data of the server.
    pub user_data_ref: Option<v1beta1::LocalObjectReference>,
}

/// A v1alpha1 OpenStackServer spec in v1beta1's shapes.
pub fn server_spec_to_v1beta1(
    s: &v1alpha1::OpenStackServerSpec,
) -> Result<V1beta1ServerSpec, ConversionError> {
    let path = "spec";
    let ports: Vec<v1beta2::PortOpts> = s
        .ports
        .iter()
        .map(|p| v1beta2::PortOpts {
            enable_port_security: p.port_security_enabled(),
            ..p.opts.clone()
        })
        .collect();
    Ok(V1beta1ServerSpec {
        additional_block_devices: machine_spec::block_devices_to_v1beta1(
            &s.additional_block_devices,
            &join(path, "additionalBlockDevices"),
        )?,
        availability_zone: s.availability_zone.clone(),
        config_drive: s.config_drive,
        flavor: s.flavor.clone(),
        flavor_id: s.flavor_id.clone(),
        floating_ip_pool_ref: s.floating_ip_pool_ref.as_deref().cloned(),
        identity_ref: identity::to_v1beta1(&s.identity_ref),
        image: recast(&s.image, &join(path, "image"))?,
        ports: ports::to_v1beta1(&ports, &join(path, "ports"))?,
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
        user_data_ref: s.user_data_ref.clone(),
    })
}

/// A server spec in v1beta1's shapes as a v1alpha1 spec: port security in
/// `enablePortSecurity`, the identity's type stated. Fails, naming the field, where v1beta2's
/// shared types cannot hold a value (a block-device storage type other than `Local` or
/// `Volume`).
pub fn server_spec_from_v1beta1(
    s: &V1beta1ServerSpec,
) -> Result<v1alpha1::OpenStackServerSpec, ConversionError> {
    let path = "spec";
    let ports = ports::to_v1beta2(&s.ports, &join(path, "ports"))?
        .into_iter()
        .map(|opts| v1alpha1::PortOpts {
            opts,
            disable_port_security: None,
        })
        .collect();
    Ok(v1alpha1::OpenStackServerSpec {
        additional_block_devices: machine_spec::block_devices_to_v1beta2(
            &s.additional_block_devices,
            &join(path, "additionalBlockDevices"),
        )?,
        availability_zone: s.availability_zone.clone(),
        config_drive: s.config_drive,
        flavor: s.flavor.clone(),
        flavor_id: s.flavor_id.clone(),
        floating_ip_pool_ref: s.floating_ip_pool_ref.clone().map(Box::new),
        identity_ref: identity::to_v1beta2(&s.identity_ref),
        image: recast(&s.image, &join(path, "image"))?,
        ports,
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
        user_data_ref: s.user_data_ref.clone(),
    })
}

/// A v1alpha1 `status.resolved` in v1beta1's shapes (what the cloud calls and the v1beta1
/// machine and bastion statuses take), the legacy `disablePortSecurity` folded in.
pub fn resolved_to_v1beta1(
    r: &v1alpha1::ResolvedServerSpec,
) -> Result<v1beta1::ResolvedMachineSpec, ConversionError> {
    let shared = v1beta2::ResolvedMachineSpec {
        flavor_id: r.flavor_id.clone(),
        image_id: r.image_id.clone(),
        ports: r
            .ports
            .iter()
            .map(|p| v1beta2::ResolvedPortSpec {
                enable_port_security: p.port_security_enabled(),
                ..p.spec.clone()
            })
            .collect(),
        server_group_id: r.server_group_id.clone(),
    };
    ports::resolved_spec_to_v1beta1(&shared, "status.resolved")
}

/// A resolved spec in v1beta1's shapes as v1alpha1's `status.resolved` (`enablePortSecurity`,
/// an empty description absent).
pub fn resolved_from_v1beta1(
    r: &v1beta1::ResolvedMachineSpec,
) -> Result<v1alpha1::ResolvedServerSpec, ConversionError> {
    let shared = ports::resolved_spec_to_v1beta2(r, "status.resolved")?;
    Ok(v1alpha1::ResolvedServerSpec {
        flavor_id: shared.flavor_id,
        image_id: shared.image_id,
        ports: shared
            .ports
            .into_iter()
            .map(|spec| v1alpha1::ResolvedPortSpec {
                spec,
                disable_port_security: None,
            })
            .collect(),
        server_group_id: shared.server_group_id,
    })
}

/// v1alpha1's `status.resources` in v1beta1's shape.
pub fn resources_to_v1beta1(
    r: &v1alpha1::ServerResources,
) -> Result<v1beta1::MachineResources, ConversionError> {
    recast(r, "status.resources")
}

/// A v1beta2 (and v1alpha1) identity reference with its type stated: an unset type is
/// `Secret`, the default the API server applies.
pub fn identity_to_v1beta1(
    r: &v1beta2::OpenStackIdentityReference,
) -> v1beta1::OpenStackIdentityReference {
    identity::to_v1beta1(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored_v014_server() -> v1alpha1::OpenStackServer {
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1",
            "kind": "OpenStackServer",
            "metadata": {"name": "c-bastion", "namespace": "ns", "generation": 3},
            "spec": {
                "flavor": "m1.small",
                "identityRef": {"cloudName": "capo", "name": "creds", "type": "Secret"},
                "image": {"filter": {"name": "ubuntu"}},
                "ports": [{"network": {"id": "n"}, "disablePortSecurity": true}],
                "sshKeyName": "k",
                "additionalBlockDevices": [
                    {"name": "data", "sizeGiB": 2, "storage": {"type": "Local"}}
                ]
            },
            "status": {
                "ready": true,
                "conditions": [
                    {"type": "Ready", "status": "True",
                     "lastTransitionTime": "2024-01-02T03:04:05Z"},
                    {"type": "InstanceReady", "status": "False", "severity": "Warning",
                     "reason": "InstanceNotReady",
                     "lastTransitionTime": "2024-01-02T03:04:05Z"}
                ],
                "resolved": {"imageID": "i", "flavorID": "f", "ports": [{
                    "name": "c-bastion-0", "networkID": "n", "description": "d",
                    "disablePortSecurity": true
                }]},
                "resources": {"ports": [{"id": "p"}]}
            }
        }))
        .unwrap_or_else(|e| panic!("a v0.14 server must read: {e}"))
    }

    #[test]
    fn v014_server_reads_and_keeps_its_port_security_choice() {
        let oss = stored_v014_server();
        let port = &oss.spec.ports[0];
        assert_eq!(port.disable_port_security, Some(true));
        assert_eq!(port.port_security_enabled(), Some(false));
        let status = oss.status.unwrap_or_default();
        // Standard conditions: severity dropped, a missing reason and message read as empty.
        assert_eq!(status.conditions[0].reason, "");
        assert_eq!(status.conditions[0].message, "");
        assert_eq!(status.conditions[1].reason, "InstanceNotReady");
        let resolved = status.resolved.unwrap_or_default();
        assert_eq!(resolved.ports[0].port_security_enabled(), Some(false));
        // The legacy field is written back as it was read: no pruning by a round trip.
        let again = serde_json::to_value(&oss.spec).unwrap_or_default();
        assert_eq!(again["ports"][0]["disablePortSecurity"], json!(true));
        assert!(again["ports"][0].get("enablePortSecurity").is_none());
    }

    #[test]
    fn enable_port_security_wins_over_the_legacy_field() {
        let port = |enable, disable| v1alpha1::PortOpts {
            opts: v1beta2::PortOpts {
                enable_port_security: enable,
                ..Default::default()
            },
            disable_port_security: disable,
        };
        assert_eq!(
            port(Some(true), Some(true)).port_security_enabled(),
            Some(true)
        );
        assert_eq!(port(Some(false), None).port_security_enabled(), Some(false));
        assert_eq!(port(None, Some(true)).port_security_enabled(), Some(false));
        assert_eq!(port(None, Some(false)).port_security_enabled(), Some(true));
        assert_eq!(port(None, None).port_security_enabled(), None);
    }

    #[test]
    fn v1beta1_view_folds_the_legacy_field_and_writes_back_enable() {
        let oss = stored_v014_server();
        let view = server_spec_to_v1beta1(&oss.spec).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(view.ports[0].disable_port_security, Some(true));
        assert_eq!(view.additional_block_devices[0].storage.r#type, "Local");
        let back = server_spec_from_v1beta1(&view).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.ports[0].opts.enable_port_security, Some(false));
        assert_eq!(back.ports[0].disable_port_security, None);
        assert_eq!(
            back.identity_ref.r#type,
            Some(v1beta1::IdentityRefType::Secret)
        );

        let resolved = oss.status.and_then(|s| s.resolved).unwrap_or_default();
        let v1 = resolved_to_v1beta1(&resolved).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v1.ports[0].disable_port_security, Some(true));
        let again = resolved_from_v1beta1(&v1).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.ports[0].spec.enable_port_security, Some(false));
        assert_eq!(again.ports[0].disable_port_security, None);
        assert_eq!(resolved_to_v1beta1(&again), Ok(v1));
    }

    #[test]
    fn an_unset_identity_type_is_a_secret() {
        let r = v1beta2::OpenStackIdentityReference {
            cloud_name: "c".into(),
            name: "n".into(),
            region: None,
            r#type: None,
        };
        assert_eq!(
            identity_to_v1beta1(&r).r#type,
            v1beta1::IdentityRefType::Secret
        );
    }

    #[test]
    fn unknown_storage_types_are_refused_with_their_path() {
        let view = V1beta1ServerSpec {
            additional_block_devices: vec![v1beta1::AdditionalBlockDevice {
                name: "d".into(),
                size_gib: 1,
                storage: v1beta1::BlockDeviceStorage {
                    r#type: "Tape".into(),
                    volume: None,
                },
            }],
            ..Default::default()
        };
        let err = server_spec_from_v1beta1(&view).err().map(|e| e.path);
        assert_eq!(
            err.as_deref(),
            Some("spec.additionalBlockDevices[0].storage.type")
        );
    }
}

//! OpenStackMachineSpec (of a machine or of the bastion) → OpenStackServerSpec, as upstream
//! derives it: ports default to one port on the cluster network, a port without a network gets
//! the cluster network (and its addresses from the primary subnet, else from each subnet the
//! cluster lists), a port without security groups gets the managed group of its role (unless
//! port security is disabled), tags are the machine's then the cluster's.
//!
//! Also the one place where the controllers move an OpenStackServer between its own shapes
//! (v1alpha1 on v1beta2's shared types) and the v1beta1 shapes the machine specs, the v1beta1
//! statuses and capo-cloud use: the derivation works in v1beta1's shapes and converts once at
//! the end, and the server's spec, `status.resolved` and `status.resources` are read back
//! through the functions below. All of them delegate to [`capo_api::conversion::server`].

use capo_api::conversion::ConversionError;
use capo_api::conversion::server::{self as shapes, V1beta1ServerSpec};
use capo_api::v1alpha1::{
    OpenStackServerSpec, OpenStackServerStatus, ResolvedServerSpec, ServerResources,
};
use capo_api::v1beta1::{
    AddressPair, FixedIP, LocalObjectReference, MachineResources, NetworkParam,
    OpenStackIdentityReference, OpenStackMachineSpec, PortOpts, ResolvedMachineSpec, SubnetParam,
};

use crate::error::{Error, Result};

/// What the derivation needs besides the machine spec.
#[derive(Debug, Clone, Default)]
pub struct Derivation<'a> {
    /// identityRef to use when the machine names none (the cluster's).
    pub cluster_identity: Option<&'a OpenStackIdentityReference>,
    /// The cluster's `spec.tags`.
    pub cluster_tags: &'a [String],
    /// Availability zone (Machine.spec.failureDomain, or the bastion's).
    pub availability_zone: Option<&'a str>,
    /// Bootstrap data Secret.
    pub user_data_secret: Option<&'a str>,
    /// The cluster network's ID (status.network.id).
    pub cluster_network_id: Option<&'a str>,
    /// The managed security group of the machine's role, if groups are managed.
    pub default_security_group_id: Option<&'a str>,
    /// The cluster's `spec.primarySubnet`: a port given the cluster network and no fixed IPs
    /// takes its address from that subnet only, as upstream (new machines can be moved off an
    /// exhausted subnet).
    pub primary_subnet: Option<&'a SubnetParam>,
    /// The cluster's `spec.subnets`: without a primary subnet, a port given the cluster network
    /// and no fixed IPs gets one address on each of them, as upstream (not on another subnet
    /// of that network that the cluster does not list).
    pub cluster_subnets: &'a [SubnetParam],
    /// The cluster disables port security by default.
    pub cluster_disables_port_security: bool,
    /// Addresses every port on the cluster network must accept (BA/ACP keepalived VIPs).
    pub allowed_address_pairs: &'a [String],
    /// Key pair for a machine that names none (BA/ACP generated key pair).
    pub default_ssh_key_name: Option<&'a str>,
}

/// Derive the server spec. Errors name the missing input (e.g. no identityRef anywhere).
pub fn server_spec(
    spec: &OpenStackMachineSpec,
    d: &Derivation<'_>,
) -> Result<OpenStackServerSpec, String> {
    let identity_ref = spec
        .identity_ref
        .as_deref()
        .cloned()
        .or_else(|| d.cluster_identity.cloned())
        .ok_or_else(|| "spec.identityRef: Required value: neither the machine nor its cluster names an identity".to_owned())?;
    let mut ports = if spec.ports.is_empty() {
        vec![PortOpts::default()]
    } else {
        spec.ports.clone()
    };
    for p in &mut ports {
        if p.network.is_none() {
            let Some(id) = d.cluster_network_id else {
                return Err(
                    "spec.ports: a port has no network and the cluster has no network yet"
                        .to_owned(),
                );
            };
            p.network = Some(NetworkParam {
                id: Some(id.to_owned()),
                filter: None,
            });
            if p.fixed_ips.is_empty() {
                let subnets = match d.primary_subnet {
                    Some(primary) => std::slice::from_ref(primary),
                    None => d.cluster_subnets,
                };
                p.fixed_ips = subnets
                    .iter()
                    .map(|sn| FixedIP {
                        ip_address: None,
                        subnet: Some(sn.clone()),
                    })
                    .collect();
            }
        }
        let port_security_off = p
            .disable_port_security
            .unwrap_or(d.cluster_disables_port_security);
        let on_cluster_network = p
            .network
            .as_ref()
            .and_then(|n| n.id.as_deref())
            .is_some_and(|id| Some(id) == d.cluster_network_id);
        if on_cluster_network && !port_security_off {
            for ip in d.allowed_address_pairs {
                if !p.allowed_address_pairs.iter().any(|a| &a.ip_address == ip) {
                    p.allowed_address_pairs.push(AddressPair {
                        ip_address: ip.clone(),
                        mac_address: None,
                    });
                }
            }
        }
        if p.security_groups.is_empty()
            && !port_security_off
            && let Some(sg) = d.default_security_group_id
        {
            p.security_groups = vec![NetworkParam {
                id: Some(sg.to_owned()),
                filter: None,
            }];
        }
    }
    // Machine tags then cluster tags, each once, at its first place (upstream's InstanceTags).
    let mut tags: Vec<String> = Vec::new();
    for t in spec.tags.iter().chain(d.cluster_tags) {
        if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    let view = V1beta1ServerSpec {
        additional_block_devices: spec.additional_block_devices.clone(),
        availability_zone: d.availability_zone.map(str::to_owned),
        config_drive: spec.config_drive,
        flavor: spec.flavor.clone(),
        flavor_id: spec.flavor_id.clone(),
        floating_ip_pool_ref: spec.floating_ip_pool_ref.as_deref().cloned(),
        identity_ref,
        image: spec.image.clone(),
        ports,
        root_volume: spec.root_volume.as_deref().cloned(),
        scheduler_hint_additional_properties: spec.scheduler_hint_additional_properties.clone(),
        security_groups: spec.security_groups.clone(),
        server_group: spec.server_group.as_deref().cloned(),
        server_metadata: spec.server_metadata.clone(),
        ssh_key_name: spec
            .ssh_key_name
            .clone()
            .filter(|k| !k.is_empty())
            .or_else(|| d.default_ssh_key_name.map(str::to_owned))
            .unwrap_or_default(),
        tags,
        trunk: spec.trunk,
        user_data_ref: d.user_data_secret.map(|n| LocalObjectReference {
            name: Some(n.to_owned()),
        }),
    };
    shapes::server_spec_from_v1beta1(&view).map_err(|e| e.to_string())
}

/// A server's shapes failed to convert (a value v1beta1's or v1beta2's types cannot hold):
/// the object cannot be reconciled as written.
fn invalid(e: ConversionError) -> Error {
    Error::InvalidSpec(e.to_string())
}

/// The server's spec in v1beta1's shapes: the identity's type stated (`Secret` when unset),
/// port security in `disablePortSecurity` (`enablePortSecurity` first, else the legacy
/// field).
pub fn v1beta1_spec(spec: &OpenStackServerSpec) -> Result<V1beta1ServerSpec> {
    shapes::server_spec_to_v1beta1(spec).map_err(invalid)
}

/// The server's credentials reference with its type stated (`Secret` when unset).
pub fn identity(spec: &OpenStackServerSpec) -> OpenStackIdentityReference {
    shapes::identity_to_v1beta1(&spec.identity_ref)
}

/// `status.resolved` in v1beta1's shapes (for capo-cloud and the v1beta1 statuses).
pub fn v1beta1_resolved(r: &ResolvedServerSpec) -> Result<ResolvedMachineSpec> {
    shapes::resolved_to_v1beta1(r).map_err(invalid)
}

/// A resolution in v1beta1's shapes as the server's `status.resolved`.
pub fn v1alpha1_resolved(r: &ResolvedMachineSpec) -> Result<ResolvedServerSpec> {
    shapes::resolved_from_v1beta1(r).map_err(invalid)
}

/// `status.resources` in v1beta1's shape.
pub fn v1beta1_resources(r: &ServerResources) -> Result<MachineResources> {
    shapes::resources_to_v1beta1(r).map_err(invalid)
}

/// `status.resolved` and `status.resources` of a server in v1beta1's shapes, as a machine or
/// the bastion mirrors them.
pub fn v1beta1_status_parts(
    st: &OpenStackServerStatus,
) -> Result<(Option<ResolvedMachineSpec>, Option<MachineResources>)> {
    let resolved = st.resolved.as_ref().map(v1beta1_resolved).transpose()?;
    let resources = st.resources.as_ref().map(v1beta1_resources).transpose()?;
    Ok((resolved, resources))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> OpenStackIdentityReference {
        OpenStackIdentityReference {
            cloud_name: "capo".into(),
            name: "creds".into(),
            ..Default::default()
        }
    }

    #[test]
    fn default_port_on_cluster_network_with_managed_group() {
        let id = identity();
        let d = Derivation {
            cluster_identity: Some(&id),
            cluster_tags: &["team-a".to_owned()],
            availability_zone: Some("az2"),
            user_data_secret: Some("boot"),
            cluster_network_id: Some("net-1"),
            default_security_group_id: Some("sg-1"),
            primary_subnet: None,
            cluster_subnets: &[],
            cluster_disables_port_security: false,
            allowed_address_pairs: &["10.0.0.5".to_owned()],
            default_ssh_key_name: Some("generated"),
        };
        let spec = OpenStackMachineSpec {
            tags: vec!["m".into(), "team-a".into()],
            ..Default::default()
        };
        let s = server_spec(&spec, &d).unwrap();
        assert_eq!(s.ports.len(), 1);
        assert_eq!(
            s.ports[0].opts.network.as_ref().unwrap().id.as_deref(),
            Some("net-1")
        );
        assert_eq!(
            s.ports[0].opts.security_groups[0].id.as_deref(),
            Some("sg-1")
        );
        assert_eq!(s.tags, vec!["m".to_owned(), "team-a".to_owned()]);
        assert_eq!(s.availability_zone.as_deref(), Some("az2"));
        assert_eq!(
            s.user_data_ref.as_ref().unwrap().name.as_deref(),
            Some("boot")
        );
        assert_eq!(super::identity(&s), id);
        assert_eq!(
            s.ports[0].opts.allowed_address_pairs[0].ip_address,
            "10.0.0.5"
        );
        assert_eq!(s.ssh_key_name, "generated");
    }

    /// Upstream's "Duplicate tags": machine tags then cluster tags, a duplicate dropped wherever
    /// it is (within the machine's, within the cluster's, or across them), the first kept.
    #[test]
    fn duplicate_tags_are_dropped_keeping_the_first() {
        let id = identity();
        let cluster_tags = ["tag2", "tag3", "tag3"].map(str::to_owned);
        let d = Derivation {
            cluster_identity: Some(&id),
            cluster_tags: &cluster_tags,
            cluster_network_id: Some("net-1"),
            ..Default::default()
        };
        let spec = OpenStackMachineSpec {
            tags: ["tag1", "tag2", "tag1"].map(str::to_owned).to_vec(),
            ..Default::default()
        };
        let s = server_spec(&spec, &d).unwrap();
        assert_eq!(s.tags, ["tag1", "tag2", "tag3"]);
    }

    #[test]
    fn new_servers_say_enable_port_security_and_stored_ones_keep_the_legacy_field() {
        let id = identity();
        let d = Derivation {
            cluster_identity: Some(&id),
            cluster_network_id: Some("net-1"),
            ..Default::default()
        };
        let spec = OpenStackMachineSpec {
            ports: vec![PortOpts {
                disable_port_security: Some(true),
                ..Default::default()
            }],
            ..Default::default()
        };
        let s = server_spec(&spec, &d).unwrap();
        // Upstream main's form, never the legacy one.
        assert_eq!(s.ports[0].opts.enable_port_security, Some(false));
        assert_eq!(s.ports[0].disable_port_security, None);
        let json = serde_json::to_value(&s).unwrap();
        assert!(
            json["ports"][0].get("disablePortSecurity").is_none(),
            "{json}"
        );
        // Read back for the cloud: port security off.
        assert_eq!(
            v1beta1_spec(&s).unwrap().ports[0].disable_port_security,
            Some(true)
        );

        // A bastion stored by v0.14 (legacy field only), and one given both fields.
        let mut stored = s.clone();
        stored.ports[0].opts.enable_port_security = None;
        stored.ports[0].disable_port_security = Some(true);
        assert_eq!(
            v1beta1_spec(&stored).unwrap().ports[0].disable_port_security,
            Some(true)
        );
        stored.ports[0].opts.enable_port_security = Some(true);
        stored.ports[0].disable_port_security = Some(false);
        assert_eq!(
            v1beta1_spec(&stored).unwrap().ports[0].disable_port_security,
            Some(false)
        );
        // enablePortSecurity wins over a (contradicting, refused at admission) legacy value.
        stored.ports[0].disable_port_security = Some(true);
        assert_eq!(
            v1beta1_spec(&stored).unwrap().ports[0].disable_port_security,
            Some(false)
        );
    }

    #[test]
    fn an_unset_identity_type_reads_as_a_secret() {
        let mut s = server_spec(
            &OpenStackMachineSpec {
                identity_ref: Some(Box::new(identity())),
                ..Default::default()
            },
            &Derivation {
                cluster_network_id: Some("net-1"),
                ..Default::default()
            },
        )
        .unwrap();
        s.identity_ref.r#type = None;
        assert_eq!(
            super::identity(&s).r#type,
            capo_api::v1beta1::IdentityRefType::Secret
        );
    }

    #[test]
    fn port_security_disabled_gets_no_group_and_missing_identity_is_named() {
        let d = Derivation {
            cluster_network_id: Some("net-1"),
            default_security_group_id: Some("sg-1"),
            cluster_disables_port_security: true,
            ..Default::default()
        };
        let spec = OpenStackMachineSpec {
            identity_ref: Some(Box::new(identity())),
            ..Default::default()
        };
        let s = server_spec(&spec, &d).unwrap();
        assert!(s.ports[0].opts.security_groups.is_empty());
        let err = server_spec(&OpenStackMachineSpec::default(), &d).unwrap_err();
        assert!(err.starts_with("spec.identityRef"), "{err}");
    }

    #[test]
    fn with_a_primary_subnet_injected_ports_take_their_address_from_it() {
        let primary = SubnetParam {
            id: None,
            filter: Some(capo_api::v1beta1::SubnetFilter {
                name: Some("nodes-b".into()),
                ..Default::default()
            }),
        };
        let id = identity();
        let d = Derivation {
            cluster_identity: Some(&id),
            cluster_network_id: Some("net-1"),
            primary_subnet: Some(&primary),
            ..Default::default()
        };
        let own = FixedIP {
            ip_address: Some("10.9.0.9".into()),
            subnet: None,
        };
        let spec = OpenStackMachineSpec {
            ports: vec![
                PortOpts::default(),
                PortOpts {
                    fixed_ips: vec![own.clone()],
                    ..Default::default()
                },
                PortOpts {
                    network: Some(NetworkParam {
                        id: Some("other".into()),
                        filter: None,
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let s = v1beta1_spec(&server_spec(&spec, &d).unwrap()).unwrap();
        assert_eq!(s.ports[0].fixed_ips[0].subnet.as_ref(), Some(&primary));
        // The machine's own fixed IPs and ports on other networks are left as given.
        assert_eq!(s.ports[1].fixed_ips, vec![own]);
        assert!(s.ports[2].fixed_ips.is_empty());
    }

    fn subnet(id: &str) -> SubnetParam {
        SubnetParam {
            id: Some(id.into()),
            filter: None,
        }
    }

    #[test]
    fn without_a_primary_subnet_injected_ports_take_an_address_on_each_cluster_subnet() {
        let listed = [subnet("sn-a"), subnet("sn-b")];
        let id = identity();
        let d = Derivation {
            cluster_identity: Some(&id),
            cluster_network_id: Some("net-1"),
            cluster_subnets: &listed,
            ..Default::default()
        };
        let own = FixedIP {
            ip_address: Some("10.9.0.9".into()),
            subnet: None,
        };
        let spec = OpenStackMachineSpec {
            ports: vec![
                PortOpts::default(),
                PortOpts {
                    fixed_ips: vec![own.clone()],
                    ..Default::default()
                },
                PortOpts {
                    network: Some(NetworkParam {
                        id: Some("other".into()),
                        filter: None,
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let s = v1beta1_spec(&server_spec(&spec, &d).unwrap()).unwrap();
        let on = |i: usize| -> Vec<Option<SubnetParam>> {
            s.ports[i]
                .fixed_ips
                .iter()
                .map(|f| f.subnet.clone())
                .collect()
        };
        // Never a subnet of the network that the cluster does not list.
        assert_eq!(on(0), vec![Some(subnet("sn-a")), Some(subnet("sn-b"))]);
        assert!(s.ports[0].fixed_ips.iter().all(|f| f.ip_address.is_none()));
        // The machine's own fixed IPs and ports on other networks are left as given.
        assert_eq!(s.ports[1].fixed_ips, vec![own]);
        assert!(s.ports[2].fixed_ips.is_empty());
        // A primary subnet wins over the list; no listed subnet (managed): Neutron chooses.
        let primary = subnet("sn-b");
        let with_primary = Derivation {
            primary_subnet: Some(&primary),
            ..d.clone()
        };
        let s =
            v1beta1_spec(&server_spec(&OpenStackMachineSpec::default(), &with_primary).unwrap())
                .unwrap();
        assert_eq!(s.ports[0].fixed_ips.len(), 1);
        assert_eq!(s.ports[0].fixed_ips[0].subnet, Some(primary));
        let managed = Derivation {
            cluster_subnets: &[],
            ..d
        };
        let s = v1beta1_spec(&server_spec(&OpenStackMachineSpec::default(), &managed).unwrap())
            .unwrap();
        assert!(s.ports[0].fixed_ips.is_empty());
    }

    #[test]
    fn flavor_name_and_id_pass_through_and_a_port_needs_some_network() {
        let id = identity();
        let d = Derivation {
            cluster_identity: Some(&id),
            default_security_group_id: Some("sg-worker"),
            ..Default::default()
        };
        // No cluster network and no port of the machine's own: refused, naming the field.
        let err = server_spec(&OpenStackMachineSpec::default(), &d).unwrap_err();
        assert!(err.starts_with("spec.ports"), "{err}");
        // A port with its own network needs no cluster network, and still gets the default
        // group; the machine's extra groups are kept for every port.
        let extra = NetworkParam {
            id: Some("sg-extra".into()),
            filter: None,
        };
        let spec = OpenStackMachineSpec {
            flavor: Some("m1.small".into()),
            flavor_id: Some("f-1".into()),
            ports: vec![PortOpts {
                network: Some(NetworkParam {
                    id: Some("net-own".into()),
                    filter: None,
                }),
                ..Default::default()
            }],
            security_groups: vec![extra.clone()],
            ..Default::default()
        };
        let s = v1beta1_spec(&server_spec(&spec, &d).unwrap()).unwrap();
        assert_eq!(s.flavor.as_deref(), Some("m1.small"));
        assert_eq!(s.flavor_id.as_deref(), Some("f-1"));
        assert_eq!(
            s.ports[0].network.as_ref().unwrap().id.as_deref(),
            Some("net-own")
        );
        assert!(s.ports[0].fixed_ips.is_empty());
        assert_eq!(
            s.ports[0].security_groups[0].id.as_deref(),
            Some("sg-worker")
        );
        assert_eq!(s.security_groups, vec![extra]);
        // A flavor ID alone.
        let only_id = OpenStackMachineSpec {
            flavor: None,
            ..spec
        };
        let s = v1beta1_spec(&server_spec(&only_id, &d).unwrap()).unwrap();
        assert_eq!((s.flavor, s.flavor_id.as_deref()), (None, Some("f-1")));
    }
}

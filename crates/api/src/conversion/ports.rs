//! Port options, where v1beta1's `disablePortSecurity` is v1beta2's `enablePortSecurity`.

use crate::conversion::error::{ConversionError, join};
use crate::conversion::recast::{negate, recast_all};
use crate::v1beta1;
use crate::v1beta2;

/// v1beta1 ports (at `path`) in v1beta2.
pub(crate) fn to_v1beta2(
    ports: &[v1beta1::PortOpts],
    path: &str,
) -> Result<Vec<v1beta2::PortOpts>, ConversionError> {
    ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let path = join(path, &format!("[{i}]"));
            Ok(v1beta2::PortOpts {
                admin_state_up: p.admin_state_up,
                allowed_address_pairs: recast_all(
                    &p.allowed_address_pairs,
                    &join(&path, "allowedAddressPairs"),
                )?,
                description: p.description.clone(),
                enable_port_security: negate(p.disable_port_security),
                fixed_ips: recast_all(&p.fixed_ips, &join(&path, "fixedIPs"))?,
                host_id: p.host_id.clone(),
                mac_address: p.mac_address.clone(),
                name_suffix: p.name_suffix.clone(),
                network: p.network.clone(),
                profile: p.profile.clone(),
                propagate_uplink_status: p.propagate_uplink_status,
                security_groups: p.security_groups.clone(),
                tags: p.tags.clone(),
                trunk: p.trunk,
                value_specs: recast_all(&p.value_specs, &join(&path, "valueSpecs"))?,
                vnic_type: p.vnic_type.clone(),
            })
        })
        .collect()
}

/// v1beta2 ports (at `path`) in v1beta1.
pub(crate) fn to_v1beta1(
    ports: &[v1beta2::PortOpts],
    path: &str,
) -> Result<Vec<v1beta1::PortOpts>, ConversionError> {
    ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let path = join(path, &format!("[{i}]"));
            Ok(v1beta1::PortOpts {
                admin_state_up: p.admin_state_up,
                allowed_address_pairs: recast_all(
                    &p.allowed_address_pairs,
                    &join(&path, "allowedAddressPairs"),
                )?,
                description: p.description.clone(),
                disable_port_security: negate(p.enable_port_security),
                fixed_ips: recast_all(&p.fixed_ips, &join(&path, "fixedIPs"))?,
                host_id: p.host_id.clone(),
                mac_address: p.mac_address.clone(),
                name_suffix: p.name_suffix.clone(),
                network: p.network.clone(),
                profile: p.profile.clone(),
                propagate_uplink_status: p.propagate_uplink_status,
                security_groups: p.security_groups.clone(),
                tags: p.tags.clone(),
                trunk: p.trunk,
                value_specs: recast_all(&p.value_specs, &join(&path, "valueSpecs"))?,
                vnic_type: p.vnic_type.clone(),
            })
        })
        .collect()
}

/// A resolved port of v1beta1 status in v1beta2. An empty description (v1beta1 requires the
/// field) is an absent one.
pub(crate) fn resolved_to_v1beta2(
    p: &v1beta1::ResolvedPortSpec,
    path: &str,
) -> Result<v1beta2::ResolvedPortSpec, ConversionError> {
    Ok(v1beta2::ResolvedPortSpec {
        admin_state_up: p.admin_state_up,
        allowed_address_pairs: recast_all(
            &p.allowed_address_pairs,
            &join(path, "allowedAddressPairs"),
        )?,
        description: Some(p.description.clone()).filter(|d| !d.is_empty()),
        enable_port_security: negate(p.disable_port_security),
        fixed_ips: p.fixed_ips.clone(),
        host_id: p.host_id.clone(),
        mac_address: p.mac_address.clone(),
        name: p.name.clone(),
        network_id: p.network_id.clone(),
        profile: p.profile.clone(),
        propagate_uplink_status: p.propagate_uplink_status,
        security_groups: p.security_groups.clone(),
        tags: p.tags.clone(),
        trunk: p.trunk,
        value_specs: recast_all(&p.value_specs, &join(path, "valueSpecs"))?,
        vnic_type: p.vnic_type.clone(),
    })
}

/// A resolved port of v1beta2 status in v1beta1.
pub(crate) fn resolved_to_v1beta1(
    p: &v1beta2::ResolvedPortSpec,
    path: &str,
) -> Result<v1beta1::ResolvedPortSpec, ConversionError> {
    Ok(v1beta1::ResolvedPortSpec {
        admin_state_up: p.admin_state_up,
        allowed_address_pairs: recast_all(
            &p.allowed_address_pairs,
            &join(path, "allowedAddressPairs"),
        )?,
        description: p.description.clone().unwrap_or_default(),
        disable_port_security: negate(p.enable_port_security),
        fixed_ips: p.fixed_ips.clone(),
        host_id: p.host_id.clone(),
        mac_address: p.mac_address.clone(),
        name: p.name.clone(),
        network_id: p.network_id.clone(),
        profile: p.profile.clone(),
        propagate_uplink_status: p.propagate_uplink_status,
        security_groups: p.security_groups.clone(),
        tags: p.tags.clone(),
        trunk: p.trunk,
        value_specs: recast_all(&p.value_specs, &join(path, "valueSpecs"))?,
        vnic_type: p.vnic_type.clone(),
    })
}

/// The resolved machine spec of v1beta1 status in v1beta2.
pub(crate) fn resolved_spec_to_v1beta2(
    r: &v1beta1::ResolvedMachineSpec,
    path: &str,
) -> Result<v1beta2::ResolvedMachineSpec, ConversionError> {
    let ports_path = join(path, "ports");
    Ok(v1beta2::ResolvedMachineSpec {
        flavor_id: r.flavor_id.clone(),
        image_id: r.image_id.clone(),
        ports: r
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| resolved_to_v1beta2(p, &join(&ports_path, &format!("[{i}]"))))
            .collect::<Result<_, _>>()?,
        server_group_id: r.server_group_id.clone(),
    })
}

/// The resolved machine spec of v1beta2 status in v1beta1.
pub(crate) fn resolved_spec_to_v1beta1(
    r: &v1beta2::ResolvedMachineSpec,
    path: &str,
) -> Result<v1beta1::ResolvedMachineSpec, ConversionError> {
    let ports_path = join(path, "ports");
    Ok(v1beta1::ResolvedMachineSpec {
        flavor_id: r.flavor_id.clone(),
        image_id: r.image_id.clone(),
        ports: r
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| resolved_to_v1beta1(p, &join(&ports_path, &format!("[{i}]"))))
            .collect::<Result<_, _>>()?,
        server_group_id: r.server_group_id.clone(),
    })
}

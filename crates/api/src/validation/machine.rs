//! OpenStackMachine and OpenStackMachineTemplate, and the server parts they share with
//! OpenStackServer and the cluster's bastion.

use super::common::{
    check_image_param, check_ip, check_ip_or_cidr, check_network_param, check_neutron_tags,
    check_server_group_param, check_subnet_param, check_unique,
};
use super::extensions::check_machine_extensions;
use super::immutability::{check_template_update, check_unchanged};
use super::{FieldError, FieldPath, UpdateContext, Validate, ValidationErrors};
use crate::v1beta1::{
    AdditionalBlockDevice, ImageParam, NetworkParam, OpenStackMachine, OpenStackMachineSpec,
    OpenStackMachineTemplate, PortOpts, RootVolume, SchedulerHintAdditionalProperty,
    SchedulerHintValueType, ServerGroupParam,
};

/// The server-describing fields common to machine, server and bastion specs.
pub(crate) struct ServerShape<'a> {
    pub(crate) flavor: Option<&'a str>,
    pub(crate) flavor_id: Option<&'a str>,
    pub(crate) image: &'a ImageParam,
    pub(crate) ports: &'a [PortOpts],
    pub(crate) security_groups: &'a [NetworkParam],
    pub(crate) server_group: Option<&'a ServerGroupParam>,
    pub(crate) root_volume: Option<&'a RootVolume>,
    pub(crate) additional_block_devices: &'a [AdditionalBlockDevice],
    pub(crate) scheduler_hints: &'a [SchedulerHintAdditionalProperty],
    pub(crate) tags: &'a [String],
}

impl<'a> ServerShape<'a> {
    /// The shape of an OpenStackMachine spec.
    pub(crate) fn of_machine(spec: &'a OpenStackMachineSpec) -> Self {
        Self {
            flavor: spec.flavor.as_deref(),
            flavor_id: spec.flavor_id.as_deref(),
            image: &spec.image,
            ports: &spec.ports,
            security_groups: &spec.security_groups,
            server_group: spec.server_group.as_deref(),
            root_volume: spec.root_volume.as_deref(),
            additional_block_devices: &spec.additional_block_devices,
            scheduler_hints: &spec.scheduler_hint_additional_properties,
            tags: &spec.tags,
        }
    }
}

/// Every create-time rule on the server-describing fields.
pub(crate) fn check_server_shape(
    path: &FieldPath,
    shape: &ServerShape,
    errors: &mut Vec<FieldError>,
) {
    let has = |v: Option<&str>| v.is_some_and(|s| !s.is_empty());
    if !has(shape.flavor) && !has(shape.flavor_id) {
        errors.push(FieldError::required(
            &path.child("flavor"),
            "at least one of flavor or flavorID must be set",
        ));
    }
    check_image_param(&path.child("image"), shape.image, errors);
    for (i, sg) in shape.security_groups.iter().enumerate() {
        check_network_param(&path.child("securityGroups").index(i), sg, errors);
    }
    if let Some(group) = shape.server_group {
        check_server_group_param(&path.child("serverGroup"), group, errors);
    }
    check_ports(&path.child("ports"), shape.ports, errors);
    check_port_security(path, shape.ports, shape.security_groups, errors);
    check_block_devices(
        path,
        shape.root_volume,
        shape.additional_block_devices,
        errors,
    );
    check_scheduler_hints(
        &path.child("schedulerHintAdditionalProperties"),
        shape.scheduler_hints,
        errors,
    );
    // Machine tags are also put on the machine's Neutron ports.
    check_neutron_tags(&path.child("tags"), shape.tags, errors);
}

fn check_ports(path: &FieldPath, ports: &[PortOpts], errors: &mut Vec<FieldError>) {
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        if let Some(network) = &port.network {
            check_network_param(&p.child("network"), network, errors);
        }
        for (j, fixed) in port.fixed_ips.iter().enumerate() {
            let f = p.child("fixedIPs").index(j);
            if let Some(subnet) = &fixed.subnet {
                check_subnet_param(&f.child("subnet"), subnet, errors);
            }
            if let Some(ip) = &fixed.ip_address {
                check_ip(&f.child("ipAddress"), ip, errors);
            }
        }
        for (j, sg) in port.security_groups.iter().enumerate() {
            check_network_param(&p.child("securityGroups").index(j), sg, errors);
        }
        for (j, pair) in port.allowed_address_pairs.iter().enumerate() {
            check_ip_or_cidr(
                &p.child("allowedAddressPairs").index(j).child("ipAddress"),
                &pair.ip_address,
                errors,
            );
        }
        check_neutron_tags(&p.child("tags"), &port.tags, errors);
    }
    // Port names are `<server>-<nameSuffix>`: two equal suffixes would collide on adoption.
    let suffixes = ports.iter().filter_map(|p| p.name_suffix.as_deref());
    let suffix_path = FieldPath::new(&format!("{path}[*]")).child("nameSuffix");
    check_unique(&suffix_path, suffixes, errors);
}

/// Neutron refuses security groups on a port whose port security is disabled; the machine-level
/// list is added to every port, so it conflicts with such a port as well.
fn check_port_security(
    path: &FieldPath,
    ports: &[PortOpts],
    machine_groups: &[NetworkParam],
    errors: &mut Vec<FieldError>,
) {
    for (i, port) in ports.iter().enumerate() {
        if port.disable_port_security != Some(true) {
            continue;
        }
        let p = path.child("ports").index(i);
        if !port.security_groups.is_empty() {
            let detail = "cannot have security groups when disablePortSecurity is true";
            errors.push(FieldError::forbidden(&p.child("securityGroups"), detail));
        }
        if !machine_groups.is_empty() {
            let detail = format!("are added to every port, but {p} sets disablePortSecurity");
            errors.push(FieldError::forbidden(&path.child("securityGroups"), detail));
        }
    }
}

fn check_block_devices(
    path: &FieldPath,
    root_volume: Option<&RootVolume>,
    devices: &[AdditionalBlockDevice],
    errors: &mut Vec<FieldError>,
) {
    if let Some(root) = root_volume {
        check_volume_az(
            &path.child("rootVolume").child("availabilityZone"),
            root.availability_zone.as_ref(),
            errors,
        );
    }
    let list = path.child("additionalBlockDevices");
    for (i, device) in devices.iter().enumerate() {
        let d = list.index(i);
        if device.name == "root" && root_volume.is_some() {
            let detail =
                "cannot be \"root\" when rootVolume is set: the root volume uses that name";
            errors.push(FieldError::forbidden(&d.child("name"), detail));
        }
        let storage = d.child("storage");
        match device.storage.r#type.as_str() {
            "Volume" => {
                let az = device
                    .storage
                    .volume
                    .as_ref()
                    .and_then(|v| v.availability_zone.as_ref());
                check_volume_az(
                    &storage.child("volume").child("availabilityZone"),
                    az,
                    errors,
                );
            }
            "Local" if device.storage.volume.is_some() => {
                errors.push(FieldError::forbidden(
                    &storage.child("volume"),
                    "only allowed when type is Volume",
                ));
            }
            "Local" => {}
            other => errors.push(FieldError::invalid(
                &storage.child("type"),
                other,
                "must be Local or Volume",
            )),
        }
    }
    check_unique(
        &FieldPath::new(&format!("{list}[*]")).child("name"),
        devices.iter().map(|d| d.name.as_str()),
        errors,
    );
}

fn check_volume_az(
    path: &FieldPath,
    az: Option<&crate::v1beta1::VolumeAvailabilityZone>,
    errors: &mut Vec<FieldError>,
) {
    let Some(az) = az else { return };
    let from_name = az
        .from
        .as_ref()
        .is_none_or(|f| *f == crate::v1beta1::VolumeAZSource::Name);
    match (from_name, az.name.is_some()) {
        (true, false) => errors.push(FieldError::required(
            &path.child("name"),
            "name is required when from is 'Name' or default",
        )),
        (false, true) => errors.push(FieldError::forbidden(
            &path.child("name"),
            "only allowed when from is 'Name'",
        )),
        _ => {}
    }
}

fn check_scheduler_hints(
    path: &FieldPath,
    hints: &[SchedulerHintAdditionalProperty],
    errors: &mut Vec<FieldError>,
) {
    for (i, hint) in hints.iter().enumerate() {
        let v = path.index(i).child("value");
        let value = &hint.value;
        let set = [
            ("bool", SchedulerHintValueType::Bool, value.bool.is_some()),
            (
                "number",
                SchedulerHintValueType::Number,
                value.number.is_some(),
            ),
            (
                "string",
                SchedulerHintValueType::String,
                value.string.is_some(),
            ),
        ];
        for (name, kind, is_set) in set {
            match (value.r#type == kind, is_set) {
                (true, false) => errors.push(FieldError::required(
                    &v.child(name),
                    format!("required when type is {kind:?}"),
                )),
                (false, true) => errors.push(FieldError::forbidden(
                    &v.child(name),
                    format!("only allowed when type is {kind:?}"),
                )),
                _ => {}
            }
        }
    }
    check_unique(
        &FieldPath::new(&format!("{path}[*]")).child("name"),
        hints.iter().map(|h| h.name.as_str()),
        errors,
    );
}

/// All create-time rules of an OpenStackMachine-shaped spec (machines, templates, bastion).
pub(crate) fn check_machine_spec(
    path: &FieldPath,
    spec: &OpenStackMachineSpec,
    errors: &mut Vec<FieldError>,
) {
    check_server_shape(path, &ServerShape::of_machine(spec), errors);
    if let Some(extensions) = &spec.extensions {
        check_machine_extensions(&path.child("extensions"), extensions, errors);
    }
}

impl Validate for OpenStackMachine {
    fn validate_create(&self) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        check_machine_spec(&FieldPath::new("spec"), &self.spec, &mut errors);
        ValidationErrors::into_result(errors)
    }

    /// As upstream: the spec is immutable except identityRef, providerID (the controller
    /// rewrites it, e.g. to add the region to an ID written by an older release) and, as
    /// upstream's v0.15 line, each port's `allowedAddressPairs` (the machine controller pushes
    /// them onto the existing ports).
    fn validate_update(
        &self,
        old: &Self,
        _context: &UpdateContext,
    ) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        let spec = FieldPath::new("spec");
        check_machine_spec(&spec, &self.spec, &mut errors);
        let mut allowed = old.spec.clone();
        allowed.identity_ref = self.spec.identity_ref.clone();
        allowed.provider_id = self.spec.provider_id.clone();
        take_address_pairs(&mut allowed.ports, &self.spec.ports, |p| {
            &mut p.allowed_address_pairs
        });
        let detail = "a machine's spec cannot change; roll out a new machine instead";
        check_unchanged(&spec, &allowed, &self.spec, detail, &mut errors);
        ValidationErrors::into_result(errors)
    }
}

impl Validate for OpenStackMachineTemplate {
    fn validate_create(&self) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        let spec = FieldPath::new("spec").child("template").child("spec");
        check_machine_spec(&spec, &self.spec.template.spec, &mut errors);
        if self.spec.template.spec.provider_id.is_some() {
            let detail = "cannot be set in a template: every machine gets its own";
            errors.push(FieldError::forbidden(&spec.child("providerID"), detail));
        }
        ValidationErrors::into_result(errors)
    }

    /// Templates are immutable, except for the Cluster API topology controller's dry runs
    /// and, as upstream's v0.15 line, each port's `allowedAddressPairs` (pushed onto the
    /// machines made from the template).
    fn validate_update(&self, old: &Self, context: &UpdateContext) -> Result<(), ValidationErrors> {
        let new = &self.spec.template.spec;
        let mut old = old.spec.template.spec.clone();
        take_address_pairs(&mut old.ports, &new.ports, |p| &mut p.allowed_address_pairs);
        check_template_update(self.validate_create(), &old, new, context)
    }
}

/// Copy each port's address pairs from `new` into `old` when both have the same ports, so
/// that a change of the pairs alone passes the immutability check (a port added or removed
/// still fails it).
pub(crate) fn take_address_pairs<P: Clone, A: Clone>(
    old: &mut [P],
    new: &[P],
    pairs: impl Fn(&mut P) -> &mut A,
) {
    if old.len() != new.len() {
        return;
    }
    for (o, n) in old.iter_mut().zip(new) {
        let mut n = n.clone();
        *pairs(o) = pairs(&mut n).clone();
    }
}

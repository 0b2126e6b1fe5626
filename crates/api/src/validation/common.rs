//! Rules shared by every kind: IDs, tags, addresses and the `*Param` selectors.

use super::{FieldError, FieldPath};
use crate::v1beta1::{
    ImageFilter, ImageParam, NetworkParam, NeutronFilter, ServerGroupFilter, ServerGroupParam,
    SubnetFilter, SubnetParam,
};
use std::collections::BTreeSet;
use std::net::IpAddr;

/// Whether `value` is a UUID in its canonical 8-4-4-4-12 hexadecimal form (either case).
pub(crate) fn is_uuid(value: &str) -> bool {
    let groups: Vec<&str> = value.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    groups.len() == lengths.len()
        && groups
            .iter()
            .zip(lengths)
            .all(|(g, len)| g.len() == len && g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// An OpenStack ID field must be a UUID: a name in an `id` field would silently match nothing.
pub(crate) fn check_uuid(path: &FieldPath, value: &str, errors: &mut Vec<FieldError>) {
    if !is_uuid(value) {
        errors.push(FieldError::invalid(path, value, "must be a UUID"));
    }
}

/// Neutron rejects empty tags and uses commas as the separator of its tag filters.
pub(crate) fn check_neutron_tags(path: &FieldPath, tags: &[String], errors: &mut Vec<FieldError>) {
    for (i, tag) in tags.iter().enumerate() {
        if tag.is_empty() {
            errors.push(FieldError::invalid(
                &path.index(i),
                tag,
                "a tag must not be empty",
            ));
        } else if tag.contains(',') {
            let detail = "a tag must not contain a comma: Neutron tag filters are comma-separated";
            errors.push(FieldError::invalid(&path.index(i), tag, detail));
        }
    }
}

/// Parses an IP address, reporting the field when it is not one.
pub(crate) fn check_ip(
    path: &FieldPath,
    value: &str,
    errors: &mut Vec<FieldError>,
) -> Option<IpAddr> {
    match value.parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) => {
            errors.push(FieldError::invalid(
                path,
                value,
                "must be an IPv4 or IPv6 address",
            ));
            None
        }
    }
}

/// A parsed CIDR: network address and prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// Address part of the CIDR.
    pub addr: IpAddr,
    /// Prefix length.
    pub prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n` or `x::y/n`.
    pub fn parse(value: &str) -> Option<Cidr> {
        let (addr, prefix) = value.split_once('/')?;
        let addr: IpAddr = addr.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(Cidr { addr, prefix })
    }

    /// Whether `ip` lies inside this CIDR.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// Reports a value that is not a CIDR.
pub(crate) fn check_cidr(
    path: &FieldPath,
    value: &str,
    errors: &mut Vec<FieldError>,
) -> Option<Cidr> {
    let parsed = Cidr::parse(value);
    if parsed.is_none() {
        errors.push(FieldError::invalid(
            path,
            value,
            "must be a CIDR such as 10.0.0.0/24 or fd00::/64",
        ));
    }
    parsed
}

/// Accepts an IP address or a CIDR (allowed address pairs and allowed CIDRs take both).
pub(crate) fn check_ip_or_cidr(path: &FieldPath, value: &str, errors: &mut Vec<FieldError>) {
    if value.parse::<IpAddr>().is_err() && Cidr::parse(value).is_none() {
        errors.push(FieldError::invalid(
            path,
            value,
            "must be an IP address or a CIDR",
        ));
    }
}

/// TCP/UDP ports are 1-65535.
pub(crate) fn check_port(path: &FieldPath, port: i32, errors: &mut Vec<FieldError>) {
    if !(1..=65535).contains(&port) {
        errors.push(FieldError::invalid(
            path,
            port,
            "must be a port number between 1 and 65535",
        ));
    }
}

/// Reports every repeated value of a list.
pub(crate) fn check_unique<T: Ord + std::fmt::Display>(
    path: &FieldPath,
    values: impl IntoIterator<Item = T>,
    errors: &mut Vec<FieldError>,
) {
    let mut seen = BTreeSet::new();
    for (i, value) in values.into_iter().enumerate() {
        if seen.contains(&value) {
            errors.push(FieldError::duplicate(&path.index(i), &value));
        } else {
            seen.insert(value);
        }
    }
}

/// Exactly one of the listed fields must be set; `set` pairs each JSON name with whether it is set.
fn check_exactly_one(path: &FieldPath, set: &[(&str, bool)], errors: &mut Vec<FieldError>) {
    let names: Vec<&str> = set.iter().map(|(n, _)| *n).collect();
    match set.iter().filter(|(_, is_set)| *is_set).count() {
        1 => {}
        0 => errors.push(FieldError::required(
            path,
            format!("exactly one of {} must be set", names.join(", ")),
        )),
        _ => errors.push(FieldError::forbidden(
            path,
            format!("only one of {} may be set", names.join(", ")),
        )),
    }
}

fn check_neutron_filter(path: &FieldPath, filter: &NeutronFilter, errors: &mut Vec<FieldError>) {
    if filter == &NeutronFilter::default() {
        errors.push(FieldError::required(
            path,
            "a filter must set at least one field",
        ));
    }
    check_neutron_tags(&path.child("tags"), &filter.tags, errors);
    check_neutron_tags(&path.child("tagsAny"), &filter.tags_any, errors);
    check_neutron_tags(&path.child("notTags"), &filter.not_tags, errors);
    check_neutron_tags(&path.child("notTagsAny"), &filter.not_tags_any, errors);
}

fn check_subnet_filter(path: &FieldPath, filter: &SubnetFilter, errors: &mut Vec<FieldError>) {
    if filter == &SubnetFilter::default() {
        errors.push(FieldError::required(
            path,
            "a filter must set at least one field",
        ));
    }
    check_neutron_tags(&path.child("tags"), &filter.tags, errors);
    check_neutron_tags(&path.child("tagsAny"), &filter.tags_any, errors);
    check_neutron_tags(&path.child("notTags"), &filter.not_tags, errors);
    check_neutron_tags(&path.child("notTagsAny"), &filter.not_tags_any, errors);
    if let Some(version) = filter.ip_version.filter(|v| *v != 4 && *v != 6) {
        errors.push(FieldError::invalid(
            &path.child("ipVersion"),
            version,
            "must be 4 or 6",
        ));
    }
    if let Some(cidr) = &filter.cidr {
        check_cidr(&path.child("cidr"), cidr, errors);
    }
    if let Some(gateway) = &filter.gateway_ip {
        check_ip(&path.child("gatewayIP"), gateway, errors);
    }
}

/// The `{id, filter}` selectors: exactly one of the two, the ID a UUID, the filter checked by
/// `check_filter`.
fn check_id_or_filter<F>(
    path: &FieldPath,
    id: Option<&String>,
    filter: Option<&F>,
    check_filter: impl Fn(&FieldPath, &F, &mut Vec<FieldError>),
    errors: &mut Vec<FieldError>,
) {
    let set = [("id", id.is_some()), ("filter", filter.is_some())];
    check_exactly_one(path, &set, errors);
    if let Some(id) = id {
        check_uuid(&path.child("id"), id, errors);
    }
    if let Some(filter) = filter {
        check_filter(&path.child("filter"), filter, errors);
    }
}

/// NetworkParam (also used for routers and security groups): an ID or a filter.
pub(crate) fn check_network_param(
    path: &FieldPath,
    param: &NetworkParam,
    errors: &mut Vec<FieldError>,
) {
    let (id, filter) = (param.id.as_ref(), param.filter.as_ref());
    check_id_or_filter(path, id, filter, check_neutron_filter, errors);
}

/// SubnetParam: an ID or a subnet filter.
pub(crate) fn check_subnet_param(
    path: &FieldPath,
    param: &SubnetParam,
    errors: &mut Vec<FieldError>,
) {
    let (id, filter) = (param.id.as_ref(), param.filter.as_ref());
    check_id_or_filter(path, id, filter, check_subnet_filter, errors);
}

/// ImageParam: an ID, a Glance filter, or a reference to an ORC Image.
pub(crate) fn check_image_param(
    path: &FieldPath,
    param: &ImageParam,
    errors: &mut Vec<FieldError>,
) {
    let set = [
        ("id", param.id.is_some()),
        ("filter", param.filter.is_some()),
        ("imageRef", param.image_ref.is_some()),
    ];
    check_exactly_one(path, &set, errors);
    if let Some(id) = &param.id {
        check_uuid(&path.child("id"), id, errors);
    }
    if let Some(filter) = &param.filter
        && filter == &ImageFilter::default()
    {
        let detail = "a filter must set name or tags";
        errors.push(FieldError::required(&path.child("filter"), detail));
    }
    if let Some(reference) = &param.image_ref
        && reference.name.is_empty()
    {
        let detail = "the ORC Image name";
        errors.push(FieldError::required(
            &path.child("imageRef").child("name"),
            detail,
        ));
    }
}

/// ServerGroupParam: an ID or a name filter.
pub(crate) fn check_server_group_param(
    path: &FieldPath,
    param: &ServerGroupParam,
    errors: &mut Vec<FieldError>,
) {
    let check_name =
        |path: &FieldPath, filter: &ServerGroupFilter, errors: &mut Vec<FieldError>| {
            if filter.name.as_deref().is_none_or(str::is_empty) {
                let detail = "the server group name";
                errors.push(FieldError::required(&path.child("name"), detail));
            }
        };
    let (id, filter) = (param.id.as_ref(), param.filter.as_ref());
    check_id_or_filter(path, id, filter, check_name, errors);
}

//! OpenStackCluster and OpenStackClusterTemplate.

use super::common::{
    check_cidr, check_ip, check_ip_or_cidr, check_network_param, check_neutron_tags, check_port,
    check_subnet_param, check_unique, check_uuid,
};
use super::extensions::check_cluster_extensions;
use super::immutability::{check_template_update, check_unchanged};
use super::machine::check_machine_spec;
use super::{FieldError, FieldPath, UpdateContext, Validate, ValidationErrors};
use crate::extensions::OpenStackClusterExtensions;
use crate::v1beta1::{
    APIServerLoadBalancer, EtherType, ManagedSecurityGroups, NetworkParam, OpenStackCluster,
    OpenStackClusterSpec, OpenStackClusterTemplate, SecurityGroupRuleSpec, SubnetParam, SubnetSpec,
};

fn check_managed_subnet(path: &FieldPath, subnet: &SubnetSpec, errors: &mut Vec<FieldError>) {
    let cidr = check_cidr(&path.child("cidr"), &subnet.cidr, errors);
    for (i, dns) in subnet.dns_nameservers.iter().enumerate() {
        check_ip(&path.child("dnsNameservers").index(i), dns, errors);
    }
    check_unique(
        &path.child("dnsNameservers"),
        subnet.dns_nameservers.iter(),
        errors,
    );
    for (i, pool) in subnet.allocation_pools.iter().enumerate() {
        let p = path.child("allocationPools").index(i);
        let start = check_ip(&p.child("start"), &pool.start, errors);
        let end = check_ip(&p.child("end"), &pool.end, errors);
        let (Some(start), Some(end)) = (start, end) else {
            continue;
        };
        if start > end {
            errors.push(FieldError::invalid(
                &p.child("end"),
                &pool.end,
                "must not be lower than start",
            ));
        }
        for (name, ip, text) in [("start", start, &pool.start), ("end", end, &pool.end)] {
            if cidr.is_some_and(|c| !c.contains(ip)) {
                let detail = format!("must be inside the subnet cidr {}", subnet.cidr);
                errors.push(FieldError::invalid(&p.child(name), text, detail));
            }
        }
    }
}

/// Neutron accepts only one remote per rule; upstream checks this on allNodes rules only.
fn check_rule(path: &FieldPath, rule: &SecurityGroupRuleSpec, errors: &mut Vec<FieldError>) {
    let remotes = [
        ("remoteGroupID", rule.remote_group_id.is_some()),
        ("remoteIPPrefix", rule.remote_ip_prefix.is_some()),
        (
            "remoteManagedGroups",
            !rule.remote_managed_groups.is_empty(),
        ),
    ];
    let set: Vec<&str> = remotes
        .iter()
        .filter(|(_, s)| *s)
        .map(|(n, _)| *n)
        .collect();
    if set.len() > 1 {
        let detail = format!(
            "only one of remoteGroupID, remoteIPPrefix, remoteManagedGroups may be set, found {}",
            set.join(", ")
        );
        errors.push(FieldError::forbidden(path, detail));
    }
    if let Some(group) = &rule.remote_group_id {
        check_uuid(&path.child("remoteGroupID"), group, errors);
    }
    if let Some(prefix) = &rule.remote_ip_prefix
        && let Some(cidr) = check_cidr(&path.child("remoteIPPrefix"), prefix, errors)
    {
        let family_ok = match rule.ether_type {
            Some(EtherType::Ipv4) => cidr.addr.is_ipv4(),
            Some(EtherType::Ipv6) => cidr.addr.is_ipv6(),
            None => true,
        };
        if !family_ok {
            let detail = "does not match etherType";
            errors.push(FieldError::invalid(
                &path.child("remoteIPPrefix"),
                prefix,
                detail,
            ));
        }
    }
    for (name, port) in [
        ("portRangeMin", rule.port_range_min),
        ("portRangeMax", rule.port_range_max),
    ] {
        if let Some(port) = port {
            check_port(&path.child(name), port, errors);
        }
    }
    if let (Some(min), Some(max)) = (rule.port_range_min, rule.port_range_max)
        && min > max
    {
        let detail = "must not be lower than portRangeMin";
        errors.push(FieldError::invalid(
            &path.child("portRangeMax"),
            max,
            detail,
        ));
    }
}

fn check_security_groups(
    path: &FieldPath,
    groups: &ManagedSecurityGroups,
    errors: &mut Vec<FieldError>,
) {
    let lists = [
        (
            "allNodesSecurityGroupRules",
            &groups.all_nodes_security_group_rules,
        ),
        (
            "controlPlaneNodesSecurityGroupRules",
            &groups.control_plane_nodes_security_group_rules,
        ),
        (
            "workerNodesSecurityGroupRules",
            &groups.worker_nodes_security_group_rules,
        ),
    ];
    for (name, rules) in lists {
        for (i, rule) in rules.iter().enumerate() {
            check_rule(&path.child(name).index(i), rule, errors);
        }
    }
}

fn check_load_balancer(path: &FieldPath, lb: &APIServerLoadBalancer, errors: &mut Vec<FieldError>) {
    for (i, port) in lb.additional_ports.iter().enumerate() {
        check_port(&path.child("additionalPorts").index(i), *port, errors);
    }
    check_unique(
        &path.child("additionalPorts"),
        lb.additional_ports.iter().copied(),
        errors,
    );
    for (i, cidr) in lb.allowed_cidrs.iter().enumerate() {
        check_ip_or_cidr(&path.child("allowedCIDRs").index(i), cidr, errors);
    }
    if let Some(network) = &lb.network {
        check_network_param(&path.child("network"), network, errors);
    }
    for (i, subnet) in lb.subnets.iter().enumerate() {
        check_subnet_param(&path.child("subnets").index(i), subnet, errors);
    }
}

fn check_networking(
    spec_path: &FieldPath,
    spec: &OpenStackClusterSpec,
    errors: &mut Vec<FieldError>,
) {
    let params = [
        ("externalNetwork", &spec.external_network),
        ("network", &spec.network),
        ("router", &spec.router),
    ];
    for (name, param) in params {
        if let Some(param) = param {
            check_network_param(&spec_path.child(name), param, errors);
        }
    }
    for (i, subnet) in spec.subnets.iter().enumerate() {
        check_subnet_param(&spec_path.child("subnets").index(i), subnet, errors);
    }
    if let Some(primary) = &spec.primary_subnet {
        check_primary_subnet(&spec_path.child("primarySubnet"), primary, spec, errors);
    }
    for (i, subnet) in spec.managed_subnets.iter().enumerate() {
        check_managed_subnet(&spec_path.child("managedSubnets").index(i), subnet, errors);
    }
    for (i, ip) in spec.external_router_ips.iter().enumerate() {
        let p = spec_path.child("externalRouterIPs").index(i);
        check_subnet_param(&p.child("subnet"), &ip.subnet, errors);
        if let Some(fixed) = &ip.fixed_ip {
            check_ip(&p.child("fixedIP"), fixed, errors);
        }
    }
    check_neutron_tags(&spec_path.child("tags"), &spec.tags, errors);
}

/// The primary subnet must be one of the cluster's subnets. Only IDs can be compared before
/// the cloud is asked (filters are checked when the network step resolves them).
fn check_primary_subnet(
    path: &FieldPath,
    primary: &SubnetParam,
    spec: &OpenStackClusterSpec,
    errors: &mut Vec<FieldError>,
) {
    check_subnet_param(path, primary, errors);
    fn by_id(p: &SubnetParam) -> Option<&str> {
        p.filter.is_none().then_some(p.id.as_deref()).flatten()
    }
    let Some(id) = by_id(primary) else {
        return;
    };
    let listed: Option<Vec<&str>> = spec.subnets.iter().map(by_id).collect();
    if let Some(listed) = listed.filter(|l| !l.is_empty())
        && !listed.contains(&id)
    {
        errors.push(FieldError::invalid(
            &path.child("id"),
            id,
            "must be one of the subnets listed in subnets",
        ));
    }
}

fn check_endpoint(
    spec_path: &FieldPath,
    spec: &OpenStackClusterSpec,
    errors: &mut Vec<FieldError>,
) {
    if let Some(ip) = &spec.api_server_fixed_ip {
        check_ip(&spec_path.child("apiServerFixedIP"), ip, errors);
    }
    if let Some(ip) = &spec.api_server_floating_ip {
        check_ip(&spec_path.child("apiServerFloatingIP"), ip, errors);
    }
    if let Some(port) = spec.api_server_port {
        check_port(&spec_path.child("apiServerPort"), port, errors);
    }
    if let Some(lb) = &spec.api_server_load_balancer {
        check_load_balancer(&spec_path.child("apiServerLoadBalancer"), lb, errors);
    }
    if spec.disable_external_network == Some(true)
        && spec.disable_api_server_floating_ip == Some(false)
    {
        let detail =
            "disableAPIServerFloatingIP cannot be false when disableExternalNetwork is true";
        errors.push(FieldError::forbidden(
            &spec_path.child("disableAPIServerFloatingIP"),
            detail,
        ));
    }
}

fn check_bastion(spec_path: &FieldPath, spec: &OpenStackClusterSpec, errors: &mut Vec<FieldError>) {
    let Some(bastion) = &spec.bastion else { return };
    let path = spec_path.child("bastion");
    if bastion.enabled.unwrap_or(true) && bastion.spec.is_none() {
        errors.push(FieldError::required(
            &path.child("spec"),
            "spec is required if bastion is enabled",
        ));
    }
    if let Some(ip) = &bastion.floating_ip {
        check_ip(&path.child("floatingIP"), ip, errors);
        if spec.disable_external_network == Some(true) {
            let detail = "bastion floating IP cannot be set when disableExternalNetwork is true";
            errors.push(FieldError::forbidden(&path.child("floatingIP"), detail));
        }
    }
    if let Some(machine) = &bastion.spec {
        check_machine_spec(&path.child("spec"), machine, errors);
    }
}

/// Every create-time rule of a cluster spec (also a cluster template's spec).
fn check_cluster_spec(path: &FieldPath, spec: &OpenStackClusterSpec, errors: &mut Vec<FieldError>) {
    check_networking(path, spec, errors);
    check_endpoint(path, spec, errors);
    check_bastion(path, spec, errors);
    if let Some(groups) = &spec.managed_security_groups {
        check_security_groups(&path.child("managedSecurityGroups"), groups, errors);
    }
    if let Some(extensions) = &spec.extensions {
        check_cluster_extensions(&path.child("extensions"), extensions, spec, errors);
    }
}

/// A filter may be replaced by the ID it resolved to (recorded in status), as upstream allows,
/// so a cluster can be pinned to its network after creation.
fn resolved_to<T: PartialEq>(old: &Option<T>, new: &Option<T>, by_id: impl Fn(&T) -> bool) -> bool {
    matches!((old, new), (Some(_), Some(n)) if by_id(n))
}

/// Copies into `allowed` (a copy of the old spec) every change upstream permits on update.
fn permit_updates(
    allowed: &mut OpenStackClusterSpec,
    old: &OpenStackCluster,
    new: &OpenStackCluster,
    errors: &mut Vec<FieldError>,
) {
    let (old_spec, new_spec) = (&old.spec, &new.spec);
    let spec_path = FieldPath::new("spec");
    allowed.identity_ref = new_spec.identity_ref.clone();
    if old_spec.identity_ref.region != new_spec.identity_ref.region {
        errors.push(FieldError::immutable(
            &spec_path.child("identityRef").child("region"),
            "region is immutable",
        ));
    }
    let endpoint_unset = old_spec
        .control_plane_endpoint
        .as_ref()
        .is_none_or(|e| e.host.as_deref().is_none_or(str::is_empty) || e.port.unwrap_or(0) <= 0);
    if endpoint_unset {
        allowed.control_plane_endpoint = new_spec.control_plane_endpoint.clone();
    }
    // As upstream: without an API floating IP the endpoint is the fixed IP (or the load
    // balancer's VIP), so a fixed IP and a port may still be chosen once; with one, they are
    // behind the floating IP already handed out and cannot change.
    if old_spec.disable_api_server_floating_ip == Some(true) {
        if old_spec
            .api_server_fixed_ip
            .as_deref()
            .is_none_or(str::is_empty)
        {
            allowed.api_server_fixed_ip = new_spec.api_server_fixed_ip.clone();
        }
        if old_spec.api_server_port.unwrap_or(0) == 0 {
            allowed.api_server_port = new_spec.api_server_port;
        }
    }
    let old_bastion_enabled = old_spec
        .bastion
        .as_ref()
        .is_some_and(|b| b.enabled.unwrap_or(true));
    if new_spec.bastion.is_none() && old_bastion_enabled {
        errors.push(FieldError::forbidden(
            &spec_path.child("bastion"),
            "cannot be removed before disabling it",
        ));
    }
    allowed.bastion = new_spec.bastion.clone();
    if let (Some(a), Some(n)) = (
        allowed.api_server_load_balancer.as_mut(),
        &new_spec.api_server_load_balancer,
    ) {
        a.allowed_cidrs = n.allowed_cidrs.clone();
        a.monitor = n.monitor.clone();
    }
    allowed.control_plane_availability_zones = new_spec.control_plane_availability_zones.clone();
    allowed.control_plane_omit_availability_zone = new_spec.control_plane_omit_availability_zone;
    let status_lb_ip = old
        .status
        .as_ref()
        .and_then(|s| s.api_server_load_balancer.as_ref())
        .map(|lb| lb.ip.as_str());
    if status_lb_ip.is_some() && new_spec.api_server_floating_ip.as_deref() == status_lb_ip {
        allowed.api_server_floating_ip = new_spec.api_server_floating_ip.clone();
    }
    if old_spec.managed_security_groups.is_some() && new_spec.managed_security_groups.is_none() {
        let detail = "cannot be disabled once enabled";
        errors.push(FieldError::forbidden(
            &spec_path.child("managedSecurityGroups"),
            detail,
        ));
    }
    // Forbidden removal is reported above; every other change of the rules is allowed.
    allowed.managed_security_groups = new_spec.managed_security_groups.clone();
    if allowed.managed_subnets.len() == new_spec.managed_subnets.len() {
        for (a, n) in allowed
            .managed_subnets
            .iter_mut()
            .zip(&new_spec.managed_subnets)
        {
            a.dns_nameservers = n.dns_nameservers.clone();
        }
    }
    // As upstream: a new primary subnet directs new machines' addresses to it (moving off an
    // exhausted subnet); what exists already (VIPs, ports) stays where it is.
    allowed.primary_subnet = new_spec.primary_subnet.clone();
    permit_pinning(allowed, old, new);
    allowed.extensions =
        permitted_extensions(old_spec.extensions.as_ref(), new_spec.extensions.as_ref());
}

/// Network and subnet filters may be replaced by the IDs they resolved to.
fn permit_pinning(
    allowed: &mut OpenStackClusterSpec,
    old: &OpenStackCluster,
    new: &OpenStackCluster,
) {
    let status_network = old.status.as_ref().and_then(|s| s.network.as_ref());
    let network_id = status_network.map(|n| n.id.as_str());
    let is_id = |p: &NetworkParam, id: Option<&str>| {
        p.filter.is_none() && p.id.as_deref().is_some_and(|i| Some(i) == id)
    };
    if resolved_to(&old.spec.network, &new.spec.network, |n| {
        is_id(n, network_id)
    }) {
        allowed.network = new.spec.network.clone();
    }
    let Some(status_network) = status_network else {
        return;
    };
    if allowed.subnets.len() != new.spec.subnets.len() {
        return;
    }
    // The status lists the primary subnet first, so a subnet is matched by ID, not position:
    // an entry given by filter may become the ID of the status subnet that carries the
    // filter's name (the one it resolved to), as upstream. Pinning two entries to one subnet
    // would drop a subnet and is not a pinning.
    let resolved = |old: &SubnetParam, new: &SubnetParam| {
        let Some(name) = old.filter.as_ref().and_then(|f| f.name.as_deref()) else {
            return false;
        };
        new.filter.is_none()
            && new.id.as_deref().is_some_and(|id| {
                (status_network.subnets.iter()).any(|s| s.id == id && s.name == name)
            })
    };
    let mut ids: Vec<&str> = new
        .spec
        .subnets
        .iter()
        .filter_map(|p| p.id.as_deref())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != new.spec.subnets.iter().filter(|p| p.id.is_some()).count() {
        return;
    }
    for (a, n) in allowed.subnets.iter_mut().zip(&new.spec.subnets) {
        if resolved(a, n) {
            *a = n.clone();
        }
    }
}

/// Extension changes allowed after creation: everything but the control-plane VIP (moving it
/// would move the API endpoint) and the ingress mode once chosen.
fn permitted_extensions(
    old: Option<&OpenStackClusterExtensions>,
    new: Option<&OpenStackClusterExtensions>,
) -> Option<OpenStackClusterExtensions> {
    let mut permitted = new.cloned().unwrap_or_default();
    let old_lbs = old.and_then(|o| o.load_balancers.clone());
    let old_cp = old_lbs.as_ref().and_then(|l| l.control_plane.clone());
    let old_ingress_mode = old_lbs
        .as_ref()
        .and_then(|l| l.ingress.as_ref())
        .map(|i| i.mode.clone());
    let lbs = permitted
        .load_balancers
        .get_or_insert_with(Default::default);
    lbs.control_plane = old_cp;
    if let (Some(mode), Some(ingress)) = (old_ingress_mode, lbs.ingress.as_mut()) {
        ingress.mode = mode;
    }
    // Keep "absent" absent so an upstream-shaped object compares equal.
    if permitted == OpenStackClusterExtensions::default() || (new.is_none() && old.is_none()) {
        return new.cloned();
    }
    Some(permitted)
}

/// The annotations capo reads from an OpenStackCluster take only the values it understands.
fn check_cluster_annotations(osc: &OpenStackCluster, errors: &mut Vec<FieldError>) {
    let key = crate::constants::CLOUD_PROVIDER_VOLUMES_ANNOTATION;
    let annotations = osc.metadata.annotations.as_ref();
    if let Some(v) = annotations.and_then(|a| a.get(key))
        && !crate::constants::CLOUD_PROVIDER_VOLUMES_VALUES.contains(&v.as_str())
    {
        let path = FieldPath::new(&format!("metadata.annotations[{key}]"));
        errors.push(FieldError::invalid(
            &path,
            v,
            "must be \"keep\" or \"delete\" (what happens to the Cinder CSI volumes and snapshots when the cluster is deleted)",
        ));
    }
}

impl Validate for OpenStackCluster {
    fn validate_create(&self) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        let spec = FieldPath::new("spec");
        check_cluster_spec(&spec, &self.spec, &mut errors);
        check_cluster_annotations(self, &mut errors);
        ValidationErrors::into_result(errors)
    }

    fn validate_update(
        &self,
        old: &Self,
        _context: &UpdateContext,
    ) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        let spec = FieldPath::new("spec");
        check_cluster_spec(&spec, &self.spec, &mut errors);
        check_cluster_annotations(self, &mut errors);
        let mut allowed = old.spec.clone();
        permit_updates(&mut allowed, old, self, &mut errors);
        check_unchanged(
            &spec,
            &allowed,
            &self.spec,
            "cannot be changed after creation",
            &mut errors,
        );
        ValidationErrors::into_result(errors)
    }
}

impl Validate for OpenStackClusterTemplate {
    fn validate_create(&self) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        let path = FieldPath::new("spec").child("template").child("spec");
        check_cluster_spec(&path, &self.spec.template.spec, &mut errors);
        ValidationErrors::into_result(errors)
    }

    /// Templates are immutable, except for the Cluster API topology controller's dry runs.
    fn validate_update(&self, old: &Self, context: &UpdateContext) -> Result<(), ValidationErrors> {
        let (old, new) = (&old.spec.template.spec, &self.spec.template.spec);
        check_template_update(self.validate_create(), old, new, context)
    }
}

//! The managed security groups and their rules, laid out as upstream CAPO v0.14.7 does, with
//! one deliberate difference: the control-plane API rule follows `spec.apiServerPort`
//! (upstream hard-codes 6443 even when the API listens elsewhere).
//!
//! Layout (every group also gets Neutron's default egress-any rules for IPv4 and IPv6):
//! - control plane: API port from anywhere; one rule per load-balancer additional port;
//!   etcd 2379-2380 from itself; kubelet 10250 from itself and the workers (or, with
//!   `allowAllInClusterTraffic`, any protocol from itself and the workers); SSH 22 from the
//!   bastion group when the bastion is enabled;
//! - worker: NodePort 30000-32767 TCP and UDP from the workers, the control plane and the
//!   cluster's IPv4 subnet CIDR; kubelet 10250 from itself and the control plane (or any
//!   protocol, as above); SSH 22 from the bastion group;
//! - bastion (only when enabled): SSH 22 from anywhere; NTP (UDP 123) from the control plane
//!   and the workers when it serves them time ([`bastion_serves_ntp`], BA/ACP extension);
//! - user rules: `allNodesSecurityGroupRules` on control plane and worker, the per-role lists
//!   on their group; `remoteManagedGroups` expands to one rule per named group.

use capo_api::names::{SecurityGroupRole, security_group_name};
use capo_api::v1beta1::{
    EtherType, ManagedSecurityGroupName, OpenStackClusterSpec, RuleDirection, SecurityGroupRuleSpec,
};

use crate::error::{Error, Result};
use crate::plan::rule_diff::{DesiredRule, RuleKey};

/// IDs of the managed groups, known once they exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupIds {
    /// Control-plane group.
    pub control_plane: String,
    /// Worker group.
    pub worker: String,
    /// Bastion group, when the bastion is enabled.
    pub bastion: Option<String>,
}

/// Desired rules per group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredGroups {
    /// Control-plane group rules.
    pub control_plane: Vec<DesiredRule>,
    /// Worker group rules.
    pub worker: Vec<DesiredRule>,
    /// Bastion group rules (None when the bastion is disabled).
    pub bastion: Option<Vec<DesiredRule>>,
}

/// Whether the spec asks for managed security groups at all.
pub fn managed(spec: &OpenStackClusterSpec) -> bool {
    spec.managed_security_groups.is_some()
}

/// Whether the bastion is enabled (`bastion` present and `enabled` not false).
pub fn bastion_enabled(spec: &OpenStackClusterSpec) -> bool {
    spec.bastion
        .as_ref()
        .is_some_and(|b| b.enabled != Some(false))
}

/// Whether the bastion serves time to the nodes: the BA/ACP extension is on and names no NTP
/// server, so it publishes the bastion as `ntp_server` (the bastion's user data then runs an
/// NTP server for the cluster network, and its group lets the nodes in on UDP 123).
pub fn bastion_serves_ntp(spec: &OpenStackClusterSpec) -> bool {
    bastion_enabled(spec)
        && spec
            .extensions
            .as_ref()
            .is_some_and(|e| e.ntp_override().is_none())
}

/// The roles whose groups should exist, with their names.
pub fn desired_groups(
    spec: &OpenStackClusterSpec,
    namespace: &str,
    cluster: &str,
) -> Vec<(SecurityGroupRole, String)> {
    let mut roles = vec![SecurityGroupRole::ControlPlane, SecurityGroupRole::Worker];
    if bastion_enabled(spec) {
        roles.push(SecurityGroupRole::Bastion);
    }
    roles
        .into_iter()
        .map(|r| (r, security_group_name(namespace, cluster, r)))
        .collect()
}

/// The API port the control-plane rule opens ([`OpenStackClusterSpec::api_server_port`]).
pub fn api_server_port(spec: &OpenStackClusterSpec) -> Result<u16> {
    port(spec.api_server_port(), "apiServerPort")
}

fn port(p: i32, what: &str) -> Result<u16> {
    u16::try_from(p)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| Error::InvalidSpec(format!("{what} {p} is not a TCP port")))
}

/// Every desired rule of every managed group. `ipv4_subnet_cidr` is the cluster network's
/// IPv4 subnet (NodePort source), when there is one.
pub fn desired_rules(
    spec: &OpenStackClusterSpec,
    ids: &GroupIds,
    ipv4_subnet_cidr: Option<&str>,
) -> Result<DesiredGroups> {
    let msg = spec.managed_security_groups.clone().unwrap_or_default();
    let (cp, wk) = (ids.control_plane.as_str(), ids.worker.as_str());
    let bastion = ids.bastion.as_deref().filter(|_| bastion_enabled(spec));

    let mut control_plane = control_plane_base(spec)?;
    let mut worker = default_egress();
    worker.extend(node_ports(cp, wk, ipv4_subnet_cidr));
    if msg.allow_all_in_cluster_traffic {
        control_plane.push(any_from("In-cluster Ingress", cp));
        control_plane.push(any_from("In-cluster Ingress", wk));
        worker.push(any_from("In-cluster Ingress", wk));
        worker.push(any_from("In-cluster Ingress", cp));
    } else {
        control_plane.push(group_tcp("Etcd", (2379, 2380), cp));
        control_plane.push(group_tcp("Kubelet API", (10250, 10250), cp));
        control_plane.push(group_tcp("Kubelet API", (10250, 10250), wk));
        worker.push(group_tcp("Kubelet API", (10250, 10250), wk));
        worker.push(group_tcp("Kubelet API", (10250, 10250), cp));
    }
    if let Some(b) = bastion {
        control_plane.push(group_tcp("SSH", (22, 22), b));
        worker.push(group_tcp("SSH", (22, 22), b));
    }
    for r in &msg.all_nodes_security_group_rules {
        control_plane.extend(user_rule(r, ids, bastion)?);
        worker.extend(user_rule(r, ids, bastion)?);
    }
    for r in &msg.control_plane_nodes_security_group_rules {
        control_plane.extend(user_rule(r, ids, bastion)?);
    }
    for r in &msg.worker_nodes_security_group_rules {
        worker.extend(user_rule(r, ids, bastion)?);
    }
    let bastion_rules = bastion.map(|_| {
        let mut rules = default_egress();
        rules.push(ingress_tcp("SSH", 22, None));
        if bastion_serves_ntp(spec) {
            for group in [cp, wk] {
                rules.push(DesiredRule {
                    key: RuleKey::new(
                        "ingress",
                        "IPv4",
                        Some("udp"),
                        (Some(123), Some(123)),
                        Some(group),
                        None,
                    ),
                    description: "NTP".to_owned(),
                });
            }
        }
        rules
    });
    Ok(DesiredGroups {
        control_plane,
        worker,
        bastion: bastion_rules,
    })
}

/// Egress, the API port and the load balancer's additional ports.
fn control_plane_base(spec: &OpenStackClusterSpec) -> Result<Vec<DesiredRule>> {
    let mut rules = default_egress();
    rules.push(ingress_tcp("Kubernetes API", api_server_port(spec)?, None));
    let lb = spec
        .api_server_load_balancer
        .as_ref()
        .filter(|lb| lb.enabled);
    for p in lb
        .map(|lb| lb.additional_ports.as_slice())
        .unwrap_or_default()
    {
        rules.push(ingress_tcp(
            "Additional port",
            port(*p, "additionalPorts")?,
            None,
        ));
    }
    Ok(rules)
}

/// NodePort TCP and UDP from the workers, the control plane and the IPv4 subnet.
fn node_ports(cp: &str, wk: &str, ipv4_subnet_cidr: Option<&str>) -> Vec<DesiredRule> {
    let sources = [
        ("Node Port Services", Some(wk), None),
        ("Node Port Services", Some(cp), None),
        ("Node Port Services", None, ipv4_subnet_cidr),
    ];
    let mut out = Vec::new();
    for proto in ["tcp", "udp"] {
        for (desc, group, prefix) in sources {
            if group.is_none() && prefix.is_none() {
                continue;
            }
            let ports = (Some(30000), Some(32767));
            out.push(DesiredRule {
                key: RuleKey::new("ingress", "IPv4", Some(proto), ports, group, prefix),
                description: desc.to_owned(),
            });
        }
    }
    out
}

fn default_egress() -> Vec<DesiredRule> {
    ["IPv4", "IPv6"]
        .into_iter()
        .map(|e| DesiredRule {
            key: RuleKey::new("egress", e, None, (None, None), None, None),
            description: "Full open".to_owned(),
        })
        .collect()
}

fn ingress_tcp(description: &str, port: u16, prefix: Option<&str>) -> DesiredRule {
    DesiredRule {
        key: RuleKey::new(
            "ingress",
            "IPv4",
            Some("tcp"),
            (Some(port), Some(port)),
            None,
            prefix,
        ),
        description: description.to_owned(),
    }
}

fn group_tcp(description: &str, (min, max): (u16, u16), group: &str) -> DesiredRule {
    DesiredRule {
        key: RuleKey::new(
            "ingress",
            "IPv4",
            Some("tcp"),
            (Some(min), Some(max)),
            Some(group),
            None,
        ),
        description: description.to_owned(),
    }
}

fn any_from(description: &str, group: &str) -> DesiredRule {
    DesiredRule {
        key: RuleKey::new("ingress", "IPv4", None, (None, None), Some(group), None),
        description: description.to_owned(),
    }
}

/// One user rule, expanded per remote managed group.
fn user_rule(
    r: &SecurityGroupRuleSpec,
    ids: &GroupIds,
    bastion: Option<&str>,
) -> Result<Vec<DesiredRule>> {
    let remotes = [
        !r.remote_managed_groups.is_empty(),
        r.remote_group_id.is_some(),
        r.remote_ip_prefix.is_some(),
    ];
    if remotes.iter().filter(|x| **x).count() > 1 {
        return Err(Error::InvalidSpec(format!(
            "security group rule {:?}: remoteManagedGroups, remoteGroupID and remoteIPPrefix are mutually exclusive",
            r.name
        )));
    }
    let ports = (
        r.port_range_min
            .map(|p| port(p, "portRangeMin"))
            .transpose()?,
        r.port_range_max
            .map(|p| port(p, "portRangeMax"))
            .transpose()?,
    );
    let direction = match r.direction {
        RuleDirection::Ingress => "ingress",
        RuleDirection::Egress => "egress",
    };
    let ethertype = match r.ether_type {
        Some(EtherType::Ipv6) => "IPv6",
        _ => "IPv4",
    };
    let description = r.description.clone().unwrap_or_else(|| r.name.clone());
    let make = |group: Option<&str>| DesiredRule {
        key: RuleKey::new(
            direction,
            ethertype,
            r.protocol.as_deref(),
            ports,
            group,
            r.remote_ip_prefix.as_deref(),
        ),
        description: description.clone(),
    };
    if r.remote_managed_groups.is_empty() {
        return Ok(vec![make(r.remote_group_id.as_deref())]);
    }
    r.remote_managed_groups
        .iter()
        .map(|g| {
            let id = match g {
                ManagedSecurityGroupName::Controlplane => Some(ids.control_plane.as_str()),
                ManagedSecurityGroupName::Worker => Some(ids.worker.as_str()),
                ManagedSecurityGroupName::Bastion => bastion,
            };
            id.map(|id| make(Some(id))).ok_or_else(|| {
                Error::InvalidSpec(format!(
                    "security group rule {:?} refers to the bastion group, but the bastion is disabled",
                    r.name
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;

//! `inventory.yaml`: an Ansible YAML inventory with Kubespray's groups.

use crate::{BastionFacts, ClusterFacts, Error, HostFacts, Result, Role, safety};
use serde::Serialize;
use std::collections::BTreeMap;

/// Inventory host name of the bastion: the name Kubespray's documentation declares it with and
/// older Kubespray releases look it up by (`hostvars['bastion']`); newer ones take the first
/// host of the `bastion` group. It is not the bastion server's name.
pub const BASTION_HOST: &str = "bastion";
/// Group of the bastion host.
pub const GROUP_BASTION: &str = "bastion";
/// Group of the control-plane machines.
pub const GROUP_KUBE_CONTROL_PLANE: &str = "kube_control_plane";
/// Group of the worker machines.
pub const GROUP_KUBE_NODE: &str = "kube_node";
/// Group of the etcd members: the control-plane machines (stacked etcd, as with kubeadm).
pub const GROUP_ETCD: &str = "etcd";
/// Group whose children are `kube_control_plane` and `kube_node`.
pub const GROUP_K8S_CLUSTER: &str = "k8s_cluster";

/// Options of the jump connection. The bastion's host key cannot be known in advance (it is
/// generated on first boot), and options given on the command line do not reach a `ProxyJump`
/// connection, so the jump goes through an explicit `ProxyCommand` that relaxes host-key
/// checking for the bastion only, as Kubespray's own bastion role does. The key file, when the
/// playbook sets `ansible_ssh_private_key_file`, is passed to the jump connection too (Ansible
/// templates connection variables before use).
const PROXY_SSH_OPTIONS: &str = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null";
const PROXY_IDENTITY: &str = "{% if ansible_ssh_private_key_file is defined %} -i {{ ansible_ssh_private_key_file }}{% endif %}";

#[derive(Serialize)]
struct Inventory<'a> {
    all: All<'a>,
}

#[derive(Serialize)]
struct All<'a> {
    hosts: BTreeMap<&'a str, HostVars<'a>>,
    children: Children<'a>,
}

/// Top-level groups in a fixed order. `kube_control_plane` and `kube_node` are defined inside
/// `k8s_cluster`, so their only parent is `k8s_cluster` (as Kubespray's INI sample yields), not
/// also `all`.
#[derive(Serialize)]
struct Children<'a> {
    k8s_cluster: K8sCluster<'a>,
    etcd: Members<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bastion: Option<Members<'a>>,
}

#[derive(Serialize)]
struct K8sCluster<'a> {
    children: Roles<'a>,
}

#[derive(Serialize)]
struct Roles<'a> {
    kube_control_plane: Members<'a>,
    kube_node: Members<'a>,
}

/// Group membership only; host variables live once under `all.hosts`. A member maps to
/// `null`, as in Kubespray's sample inventory.
#[derive(Serialize)]
struct Members<'a> {
    hosts: BTreeMap<&'a str, Option<()>>,
}

/// Variables of one host, in a fixed order.
#[derive(Serialize)]
struct HostVars<'a> {
    ansible_host: &'a str,
    ansible_user: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ip: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    access_ip: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    etcd_member_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keepalived_interface: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ansible_ssh_common_args: Option<String>,
}

/// Renders `inventory.yaml`.
///
/// Host names are machine names. Hosts without a private IP yet are left out (they cannot be
/// reached); [`inventory_warnings`] names them. With a bastion, every machine is reached on its
/// private IP through it; without one, on its floating IP when it has one, else its private IP.
/// `etcd_member_name` is the machine name, so scaling never renames a surviving member.
pub fn render_inventory(facts: &ClusterFacts) -> Result<String> {
    safety::check(facts)?;
    let proxy = facts.bastion.as_ref().map(proxy_args);
    let mut hosts = BTreeMap::new();
    let mut control_plane = BTreeMap::new();
    let mut workers = BTreeMap::new();
    for host in facts.sorted_hosts() {
        if host.name == BASTION_HOST && facts.bastion.is_some() {
            return Err(Error::ReservedHostName(host.name.clone()));
        }
        let Some(vars) = host_vars(facts, host, proxy.as_deref()) else {
            continue;
        };
        if hosts.insert(host.name.as_str(), vars).is_some() {
            return Err(Error::DuplicateHost(host.name.clone()));
        }
        let group = match host.role {
            Role::ControlPlane => &mut control_plane,
            Role::Worker => &mut workers,
        };
        group.insert(host.name.as_str(), None);
    }
    let bastion = facts.bastion.as_ref().map(|b| {
        hosts.insert(BASTION_HOST, bastion_vars(b));
        Members {
            hosts: BTreeMap::from([(BASTION_HOST, None)]),
        }
    });
    let children = Children {
        k8s_cluster: K8sCluster {
            children: Roles {
                kube_control_plane: Members {
                    hosts: control_plane.clone(),
                },
                kube_node: Members { hosts: workers },
            },
        },
        etcd: Members {
            hosts: control_plane,
        },
        bastion,
    };
    let doc = Inventory {
        all: All { hosts, children },
    };
    yaml_serde::to_string(&doc).map_err(|source| Error::Render {
        document: crate::INVENTORY_KEY,
        source,
    })
}

/// `ansible_ssh_common_args` of every machine behind `bastion`.
fn proxy_args(bastion: &BastionFacts) -> String {
    format!(
        "-o ProxyCommand=\"ssh {PROXY_SSH_OPTIONS} -W %h:%p -p {} {}@{}{PROXY_IDENTITY}\"",
        crate::DEFAULT_SSH_PORT,
        bastion.user,
        bastion.address
    )
}

/// The bastion host: only what Kubespray reads (`ansible_host`, `ansible_user`).
fn bastion_vars(bastion: &BastionFacts) -> HostVars<'_> {
    HostVars {
        ansible_host: &bastion.address,
        ansible_user: &bastion.user,
        ip: None,
        access_ip: None,
        etcd_member_name: None,
        keepalived_interface: None,
        ansible_ssh_common_args: None,
    }
}

/// Variables of one machine, `None` when it has no private IP yet.
fn host_vars<'a>(
    facts: &'a ClusterFacts,
    host: &'a HostFacts,
    proxy: Option<&str>,
) -> Option<HostVars<'a>> {
    let private = host.private_ip.as_deref()?;
    let ansible_host = match (&facts.bastion, host.public_ip.as_deref()) {
        (None, Some(public)) => public,
        _ => private,
    };
    Some(HostVars {
        ansible_host,
        ansible_user: &facts.ssh_user,
        ip: Some(private),
        access_ip: Some(private),
        etcd_member_name: (host.role == Role::ControlPlane).then_some(host.name.as_str()),
        keepalived_interface: host.keepalived_interface.as_deref(),
        ansible_ssh_common_args: proxy.map(str::to_owned),
    })
}

/// Things a playbook run would trip over, for events and conditions; rendering never fails on
/// them.
///
/// Kubespray's inventory validation wants an odd number of etcd members (a quorum survives
/// one loss fewer than the next odd size otherwise), and hosts without a private IP are left
/// out of the inventory.
pub fn inventory_warnings(facts: &ClusterFacts) -> Vec<String> {
    let mut warnings = Vec::new();
    let members = facts
        .hosts
        .iter()
        .filter(|h| h.role == Role::ControlPlane && h.private_ip.is_some())
        .count();
    if members == 0 {
        warnings.push("no control-plane host with an address: the etcd group is empty".into());
    } else if members % 2 == 0 {
        warnings.push(format!(
            "the etcd group has {members} members; Kubespray expects an odd number"
        ));
    }
    for host in facts.sorted_hosts() {
        if host.private_ip.is_none() {
            warnings.push(format!(
                "machine {:?} has no private IP yet and is not in the inventory",
                host.name
            ));
        }
    }
    warnings
}

#[cfg(test)]
#[path = "inventory_tests.rs"]
mod tests;

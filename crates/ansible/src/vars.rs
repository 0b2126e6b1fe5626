//! `vars.yaml`: the seed table's cluster variables plus `node_resources`.

use crate::{ClusterFacts, Error, HostFacts, Result, safety};
use capo_api::extensions::ReservedResources;
use serde::Serialize;
use std::collections::BTreeMap;

/// Names of the cluster-level variables of `vars.yaml`, in the order they are rendered (the
/// order of the seed table). `keepalived_interface` is a machine variable and lives in the
/// inventory; `node_resources` follows these.
pub const CLUSTER_VARIABLES: &[&str] = &[
    "kube_network_plugin",
    "cilium_openstack_project_id",
    "cilium_openstack_default_subnet_id",
    "cilium_openstack_security_group_ids",
    "vpc_cni_webhook_enable",
    "master_virtual_vip",
    "ingress_virtual_vip",
    "harbor_addr",
    "cloud_master_vip",
    "openstack_auth_domain",
    "openstack_cinder_domain",
    "openstack_nova_domain",
    "openstack_neutron_domain",
    "openstack_project_name",
    "openstack_project_domain_name",
    "openstack_region_name",
    "ntp_server",
    "vip_mgmt",
    "flannel_interface",
];

/// Kubespray's kubelet reservation variables, the keys of each `node_resources.<machine>`.
pub const RESERVATION_VARIABLES: &[&str] = &[
    "kube_cpu_reserved",
    "kube_memory_reserved",
    "kube_ephemeral_storage_reserved",
    "system_cpu_reserved",
    "system_memory_reserved",
    "system_ephemeral_storage_reserved",
];

/// The document; field names are the variable names, field order is the rendering order.
#[derive(Serialize)]
struct VarsFile<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    kube_network_plugin: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cilium_openstack_project_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cilium_openstack_default_subnet_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cilium_openstack_security_group_ids: Option<Vec<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vpc_cni_webhook_enable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    master_virtual_vip: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ingress_virtual_vip: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    harbor_addr: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cloud_master_vip: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    openstack_auth_domain: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    openstack_cinder_domain: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    openstack_nova_domain: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    openstack_neutron_domain: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    openstack_project_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    openstack_project_domain_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    openstack_region_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ntp_server: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vip_mgmt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flannel_interface: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    node_resources: BTreeMap<&'a str, Reservations<'a>>,
}

/// One `node_resources.<machine>` entry with Kubespray's variable names.
#[derive(Serialize)]
struct Reservations<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    kube_cpu_reserved: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kube_memory_reserved: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kube_ephemeral_storage_reserved: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_cpu_reserved: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_memory_reserved: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_ephemeral_storage_reserved: Option<&'a str>,
}

impl<'a> Reservations<'a> {
    /// `None` when no field is set, so a machine never renders as an empty mapping.
    fn of(reserved: &'a ReservedResources) -> Option<Self> {
        let r = Reservations {
            kube_cpu_reserved: reserved.kube_cpu_reserved.as_deref(),
            kube_memory_reserved: reserved.kube_memory_reserved.as_deref(),
            kube_ephemeral_storage_reserved: reserved.kube_ephemeral_storage_reserved.as_deref(),
            system_cpu_reserved: reserved.system_cpu_reserved.as_deref(),
            system_memory_reserved: reserved.system_memory_reserved.as_deref(),
            system_ephemeral_storage_reserved: reserved
                .system_ephemeral_storage_reserved
                .as_deref(),
        };
        let any = [
            r.kube_cpu_reserved,
            r.kube_memory_reserved,
            r.kube_ephemeral_storage_reserved,
            r.system_cpu_reserved,
            r.system_memory_reserved,
            r.system_ephemeral_storage_reserved,
        ]
        .iter()
        .any(Option::is_some);
        any.then_some(r)
    }
}

/// Renders `vars.yaml`.
///
/// Unresolved values are **omitted**, never rendered as `null`: an explicit `null` in a vars
/// file would override a playbook's role defaults with "no value" and defeat `is defined`
/// checks, whereas an absent key lets Kubespray's defaults apply. What is missing and why is
/// reported by [`unresolved`]. `ingress_virtual_vip`/`harbor_addr` are only rendered when an
/// ingress VIP was requested. Values containing Jinja delimiters are refused
/// ([`Error::UnsafeValue`]).
pub fn render_vars(facts: &ClusterFacts) -> Result<String> {
    safety::check(facts)?;
    let os = &facts.openstack;
    let ingress = facts
        .ingress_vip
        .as_deref()
        .filter(|_| facts.ingress_requested);
    let doc = VarsFile {
        kube_network_plugin: facts.kube_network_plugin.as_deref(),
        cilium_openstack_project_id: facts.cilium_project_id.as_deref(),
        cilium_openstack_default_subnet_id: facts.cilium_default_subnet_id.as_deref(),
        cilium_openstack_security_group_ids: facts
            .cilium_security_group_ids
            .as_ref()
            .map(|ids| unique_in_order(ids)),
        vpc_cni_webhook_enable: facts.vpc_cni_webhook_enable,
        master_virtual_vip: facts.control_plane_vip.as_deref(),
        ingress_virtual_vip: ingress,
        harbor_addr: ingress,
        cloud_master_vip: os.mgmt.as_deref(),
        openstack_auth_domain: os.hosts.keystone.as_deref(),
        openstack_cinder_domain: os.hosts.cinder.as_deref(),
        openstack_nova_domain: os.hosts.nova.as_deref(),
        openstack_neutron_domain: os.hosts.neutron.as_deref(),
        openstack_project_name: os.project.as_deref(),
        openstack_project_domain_name: os.project_domain.as_deref(),
        openstack_region_name: os.region.as_deref(),
        ntp_server: facts.ntp_server.as_deref(),
        vip_mgmt: facts.management_vip.as_deref(),
        flannel_interface: facts.flannel_interface.as_deref(),
        node_resources: node_resources(&facts.hosts),
    };
    yaml_serde::to_string(&doc).map_err(|source| Error::Render {
        document: crate::VARS_KEY,
        source,
    })
}

/// Security groups in status order (the controller writes them in a fixed order: the pods'
/// group first, then control plane, workers; consumers that keep one keep the first), each once.
fn unique_in_order(ids: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::with_capacity(ids.len());
    for id in ids {
        if !out.contains(&id.as_str()) {
            out.push(id);
        }
    }
    out
}

fn node_resources(hosts: &[HostFacts]) -> BTreeMap<&str, Reservations<'_>> {
    hosts
        .iter()
        .filter_map(|h| {
            let r = Reservations::of(h.reserved.as_ref()?)?;
            Some((h.name.as_str(), r))
        })
        .collect()
}

/// Variables that are expected but not known yet, with the reason, in rendering order.
///
/// User choices (`kube_network_plugin`, `flannel_interface`, `keepalived_interface`) are never
/// listed: when unset, the playbook's defaults apply. `ingress_virtual_vip` and `harbor_addr`
/// are listed only when an ingress VIP was requested. Machines are named as
/// `node_resources.<machine>`.
pub fn unresolved(facts: &ClusterFacts) -> Vec<(String, String)> {
    let mut result: Vec<(String, String)> = networking_gaps(facts)
        .into_iter()
        .chain(cloud_gaps(facts))
        .filter_map(|(name, reason)| Some((name.to_owned(), reason?)))
        .collect();
    for host in facts.sorted_hosts() {
        if host.reserved.as_ref().and_then(Reservations::of).is_none() {
            result.push((
                format!("node_resources.{}", host.name),
                "the reservations have not been computed from the machine's flavor yet".into(),
            ));
        }
    }
    result
}

/// A variable's name and, when it is missing, why.
type Gap = (&'static str, Option<String>);

fn networking_gaps(facts: &ClusterFacts) -> Vec<Gap> {
    let vip = |kind: &str| {
        format!("the {kind} VIP (load balancer or keepalived port) does not exist yet")
    };
    let cilium = facts
        .kube_network_plugin
        .as_deref()
        .is_some_and(|p| p.eq_ignore_ascii_case("cilium"));
    let mut gaps = vec![
        (
            "cilium_openstack_project_id",
            missing(&facts.cilium_project_id, || {
                "the project of the provider's Keystone token is not known yet".into()
            }),
        ),
        (
            "cilium_openstack_default_subnet_id",
            missing(&facts.cilium_default_subnet_id, || {
                if cilium {
                    "the pod network does not exist yet".into()
                } else {
                    "the cluster subnet does not exist yet".into()
                }
            }),
        ),
        (
            "cilium_openstack_security_group_ids",
            missing(&facts.cilium_security_group_ids, || {
                if cilium {
                    "the pods' security group does not exist yet".into()
                } else {
                    "the managed security groups do not exist yet".into()
                }
            }),
        ),
        (
            "vpc_cni_webhook_enable",
            missing(&facts.vpc_cni_webhook_enable, || {
                "not derived from kube_network_plugin yet".into()
            }),
        ),
        (
            "master_virtual_vip",
            missing(&facts.control_plane_vip, || vip("control-plane")),
        ),
    ];
    if facts.ingress_requested {
        let reason = missing(&facts.ingress_vip, || vip("ingress"));
        gaps.push(("ingress_virtual_vip", reason.clone()));
        gaps.push(("harbor_addr", reason));
    }
    gaps
}

fn cloud_gaps(facts: &ClusterFacts) -> Vec<Gap> {
    let os = &facts.openstack;
    let catalog = |service: &str| {
        format!(
            "no {service} endpoint host from the service catalog for the cluster's region and \
             interface yet"
        )
    };
    let identity = |what: &str| format!("the {what} in use is not known yet");
    vec![
        (
            "cloud_master_vip",
            missing(&os.mgmt, || {
                "the host of the cloud's API endpoint is not known yet".into()
            }),
        ),
        (
            "openstack_auth_domain",
            missing(&os.hosts.keystone, || catalog("identity")),
        ),
        (
            "openstack_cinder_domain",
            missing(&os.hosts.cinder, || catalog("block-storage")),
        ),
        (
            "openstack_nova_domain",
            missing(&os.hosts.nova, || catalog("compute")),
        ),
        (
            "openstack_neutron_domain",
            missing(&os.hosts.neutron, || catalog("network")),
        ),
        (
            "openstack_project_name",
            missing(&os.project, || identity("project")),
        ),
        (
            "openstack_project_domain_name",
            missing(&os.project_domain, || identity("project's domain")),
        ),
        (
            "openstack_region_name",
            missing(&os.region, || identity("region")),
        ),
        (
            "ntp_server",
            missing(&facts.ntp_server, || ntp_reason(facts)),
        ),
        (
            "vip_mgmt",
            missing(&facts.management_vip, || mgmt_reason(facts)),
        ),
    ]
}

fn missing<T>(value: &Option<T>, reason: impl FnOnce() -> String) -> Option<String> {
    value.is_none().then(reason)
}

fn ntp_reason(facts: &ClusterFacts) -> String {
    if facts.bastion.is_none() {
        "no NTP override (spec.extensions.platform.ntp.server) and no bastion address to \
         default to"
            .into()
    } else {
        "not derived from the override or the bastion address yet".into()
    }
}

fn mgmt_reason(facts: &ClusterFacts) -> String {
    if facts.bastion.is_none() {
        "the cluster has no bastion with an address (spec.bastion)".into()
    } else {
        "not derived from the bastion address yet".into()
    }
}

#[cfg(test)]
#[path = "vars_tests.rs"]
mod tests;

//! Building the facts from capo-api objects, so the controllers' glue is one call.

use crate::{BastionFacts, ClusterFacts, DEFAULT_SSH_USER, HostFacts, Role};
use capo_api::constants::CONTROL_PLANE_LABEL;
use capo_api::extensions::{
    DEFAULT_NTP_SERVER, OpenStackClusterExtensions, OpenStackClusterStatusExtensions,
};
use capo_api::v1beta1::{OpenStackCluster, OpenStackMachine};
use std::collections::BTreeMap;

/// Machine address type of fixed IPs, as reported to Cluster API.
const INTERNAL_IP: &str = "InternalIP";
/// Machine address type of floating IPs, as reported to Cluster API.
const EXTERNAL_IP: &str = "ExternalIP";

/// Effective `vpc_cni_webhook_enable`: the spec override, else on exactly when the network
/// plugin is `cilium` (the VPC CNI webhook only serves Cilium's OpenStack IPAM).
pub fn webhook_enable(extensions: &OpenStackClusterExtensions) -> bool {
    extensions
        .cilium
        .as_ref()
        .and_then(|c| c.webhook_enable)
        .unwrap_or(extensions.cilium())
}

/// `ntp_server` by its rule: `spec.extensions.platform.ntp.server`, else the bastion's address
/// on the cluster network (the bastion then serves time to it), else [`DEFAULT_NTP_SERVER`].
pub fn ntp_server(
    extensions: &OpenStackClusterExtensions,
    bastion_fixed_ip: Option<String>,
) -> String {
    extensions
        .ntp_override()
        .map(str::to_owned)
        .or(bastion_fixed_ip)
        .unwrap_or_else(|| DEFAULT_NTP_SERVER.to_owned())
}

impl ClusterFacts {
    /// Facts of `cluster` and of the given machines (the caller picks them, typically every
    /// OpenStackMachine labelled with the cluster name).
    ///
    /// `status.extensions` is the source of every provider-derived value. Values the provider
    /// derives by a fixed rule from the spec or the bastion are derived here by the same rule
    /// while the status does not hold them yet: `vpc_cni_webhook_enable` ([`webhook_enable`]),
    /// `ntp_server` (override, else the bastion's fixed IP, else [`DEFAULT_NTP_SERVER`]),
    /// `vip_mgmt` (bastion address).
    pub fn from_api(cluster: &OpenStackCluster, machines: &[OpenStackMachine]) -> ClusterFacts {
        let spec = cluster.spec.extensions.clone().unwrap_or_default();
        let status: OpenStackClusterStatusExtensions = cluster
            .status
            .as_ref()
            .and_then(|s| s.extensions.clone())
            .unwrap_or_default();
        let cilium = status.networking.and_then(|n| n.cilium).unwrap_or_default();
        let lbs = status.load_balancers.unwrap_or_default();
        let platform = status.platform.unwrap_or_default();
        let bastion_address = bastion_address(cluster);
        let ssh_user = spec
            .ssh
            .as_ref()
            .and_then(|s| s.user.clone())
            .unwrap_or_else(|| DEFAULT_SSH_USER.to_owned());
        ClusterFacts {
            kube_network_plugin: spec
                .networking
                .as_ref()
                .and_then(|n| n.kube_network_plugin.clone()),
            flannel_interface: spec
                .network_interfaces
                .as_ref()
                .and_then(|n| n.flannel.clone()),
            cilium_project_id: cilium.project_id,
            cilium_default_subnet_id: cilium.default_subnet_id,
            cilium_security_group_ids: security_groups(cluster, &spec, cilium.security_group_ids),
            vpc_cni_webhook_enable: Some(cilium.webhook_enable.unwrap_or(webhook_enable(&spec))),
            control_plane_vip: lbs.control_plane.and_then(|v| v.vip),
            ingress_requested: spec
                .load_balancers
                .as_ref()
                .is_some_and(|l| l.ingress.is_some()),
            ingress_vip: lbs.ingress.and_then(|v| v.vip),
            openstack: status.open_stack.unwrap_or_default(),
            ntp_server: Some(
                platform
                    .ntp
                    .and_then(|n| n.server)
                    .unwrap_or_else(|| ntp_server(&spec, bastion_fixed_ip(cluster))),
            ),
            management_vip: platform
                .management
                .and_then(|m| m.vip)
                .or_else(|| bastion_address.clone()),
            bastion: bastion_address.map(|address| BastionFacts {
                address,
                user: ssh_user.clone(),
            }),
            ssh_user,
            hosts: machines.iter().map(HostFacts::from_api).collect(),
        }
    }
}

/// The bastion's floating IP, else its fixed IP.
fn bastion_address(cluster: &OpenStackCluster) -> Option<String> {
    let bastion = cluster.status.as_ref()?.bastion.as_ref()?;
    bastion.floating_ip.clone().or_else(|| bastion.ip.clone())
}

/// The bastion's address on the cluster network (where it serves time to the nodes).
fn bastion_fixed_ip(cluster: &OpenStackCluster) -> Option<String> {
    cluster.status.as_ref()?.bastion.as_ref()?.ip.clone()
}

/// The recorded security groups; an empty record means "not created yet" when the cluster
/// manages security groups or runs Cilium (the pods' group leads the list), else "none".
fn security_groups(
    cluster: &OpenStackCluster,
    spec: &OpenStackClusterExtensions,
    recorded: Vec<String>,
) -> Option<Vec<String>> {
    let expected = cluster.spec.managed_security_groups.is_some() || spec.cilium();
    if !recorded.is_empty() || !expected {
        Some(recorded)
    } else {
        None
    }
}

impl HostFacts {
    /// Facts of one machine: its name, role (from the `cluster.x-k8s.io/control-plane`
    /// label, which Cluster API puts on control-plane infrastructure machines), first
    /// `InternalIP` and `ExternalIP` addresses, keepalived interface and the reservations in
    /// `status.extensions.nodeResources.reserved`.
    pub fn from_api(machine: &OpenStackMachine) -> HostFacts {
        let status = machine.status.as_ref();
        let address = |kind: &str| {
            status
                .into_iter()
                .flat_map(|s| &s.addresses)
                .find(|a| a.r#type == kind)
                .map(|a| a.address.clone())
        };
        HostFacts {
            name: machine.metadata.name.clone().unwrap_or_default(),
            role: Role::of_labels(machine.metadata.labels.as_ref()),
            private_ip: address(INTERNAL_IP),
            public_ip: address(EXTERNAL_IP),
            keepalived_interface: machine
                .spec
                .extensions
                .as_ref()
                .and_then(|e| e.network_interfaces.as_ref())
                .and_then(|n| n.keepalived.clone()),
            reserved: status
                .and_then(|s| s.extensions.as_ref())
                .and_then(|e| e.node_resources.as_ref())
                .and_then(|n| n.reserved.clone()),
        }
    }
}

impl Role {
    /// `ControlPlane` when the labels carry `cluster.x-k8s.io/control-plane` (any value, as
    /// Cluster API's own selector does), else `Worker`.
    pub fn of_labels(labels: Option<&BTreeMap<String, String>>) -> Role {
        if labels.is_some_and(|l| l.contains_key(CONTROL_PLANE_LABEL)) {
            Role::ControlPlane
        } else {
            Role::Worker
        }
    }
}

#[cfg(test)]
#[path = "from_api_tests.rs"]
mod tests;

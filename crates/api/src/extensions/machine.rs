//! `OpenStackMachine(Template).spec.extensions` and `OpenStackMachine.status.extensions`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// BA/ACP options of one machine.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineExtensions {
    /// Guest interface names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_interfaces: Option<MachineNetworkInterfaces>,
    /// Override of the resources reserved for Kubernetes and the system on this node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_resources: Option<NodeResources>,
    /// Which of the cluster's keepalived VIPs this machine's ports accept (the peer
    /// provider's field). Unset: the control-plane VIP on control-plane machines, the
    /// ingress VIP on the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancers: Option<MachineLoadBalancers>,
    /// Memory reservation handed to the Ansible bootstrap provider as this node's
    /// `node_resources.memory` (the peer provider's field; passed through unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MachineMemory>,
}

/// The keepalived VIPs one machine's ports accept as allowed address pairs.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineLoadBalancers {
    /// Accept the control-plane VIP.
    #[serde(rename = "controlPlaneVIP", skip_serializing_if = "Option::is_none")]
    pub control_plane_vip: Option<bool>,
    /// Accept the ingress VIP.
    #[serde(rename = "ingressVIP", skip_serializing_if = "Option::is_none")]
    pub ingress_vip: Option<bool>,
}

/// Memory reservation of one node, as the Ansible bootstrap provider reads it.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineMemory {
    /// A signed integer in the unit the consumer's playbooks give it (the peer documents no
    /// unit); the consumer renders it as a number.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[+-]?[0-9]+$"))]
    pub reserved: Option<String>,
}

/// Guest interface names of one machine.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineNetworkInterfaces {
    /// Interface keepalived announces the VIPs on; feeds the host variable `keepalived_interface`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 15))]
    pub keepalived: Option<String>,
}

/// Resource reservations of one node (`node_resources.<machine>` in the Ansible variables).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeResources {
    /// Reserved resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved: Option<ReservedResources>,
}

/// Kubelet reservations, as Kubernetes quantities (`100m`, `512Mi`, ...).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ReservedResources {
    /// CPU reserved for Kubernetes daemons; feeds `kube_cpu_reserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_cpu_reserved: Option<String>,
    /// Memory reserved for Kubernetes daemons; feeds `kube_memory_reserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_memory_reserved: Option<String>,
    /// Ephemeral storage reserved for Kubernetes daemons; feeds `kube_ephemeral_storage_reserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_ephemeral_storage_reserved: Option<String>,
    /// CPU reserved for system daemons; feeds `system_cpu_reserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_cpu_reserved: Option<String>,
    /// Memory reserved for system daemons; feeds `system_memory_reserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_memory_reserved: Option<String>,
    /// Ephemeral storage reserved for system daemons; feeds `system_ephemeral_storage_reserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_ephemeral_storage_reserved: Option<String>,
}

/// Values the provider derived for this machine.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineStatusExtensions {
    /// Reservations in effect: the spec override, else computed from the flavor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_resources: Option<NodeResources>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_names_follow_the_contract() {
        let ext: OpenStackMachineExtensions = serde_json::from_value(json!({
            "networkInterfaces": {"keepalived": "ens3"},
            "nodeResources": {"reserved": {"kubeCpuReserved": "200m", "systemMemoryReserved": "1Gi"}}
        }))
        .unwrap_or_default();
        assert_eq!(
            ext.network_interfaces.and_then(|n| n.keepalived).as_deref(),
            Some("ens3")
        );
        let reserved = ext
            .node_resources
            .and_then(|n| n.reserved)
            .unwrap_or_default();
        assert_eq!(reserved.kube_cpu_reserved.as_deref(), Some("200m"));
        assert_eq!(reserved.system_memory_reserved.as_deref(), Some("1Gi"));
    }

    #[test]
    fn the_peer_providers_machine_fields_parse() {
        let ext: OpenStackMachineExtensions = serde_json::from_value(json!({
            "loadBalancers": {"controlPlaneVIP": true, "ingressVIP": false},
            "memory": {"reserved": "-4"}
        }))
        .unwrap_or_default();
        let lbs = ext.load_balancers.unwrap_or_default();
        assert_eq!(
            (lbs.control_plane_vip, lbs.ingress_vip),
            (Some(true), Some(false))
        );
        assert_eq!(ext.memory.and_then(|m| m.reserved).as_deref(), Some("-4"));
    }
}

//! `OpenStackCluster.status.extensions`: values the provider derived for BA/ACP.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Values the provider derived for the bootstrap and control plane providers.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackClusterStatusExtensions {
    /// Network plugin inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub networking: Option<NetworkingStatus>,
    /// Control-plane and ingress VIPs and the resources behind them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancers: Option<LoadBalancersStatus>,
    /// Hosts of the cloud's API endpoints and the identity in use (never credentials).
    #[serde(rename = "openStack", skip_serializing_if = "Option::is_none")]
    pub open_stack: Option<OpenStackEndpoints>,
    /// The same endpoint hosts as `openStack.{keystone,nova,neutron,cinder}`, at the path the
    /// Ansible bootstrap provider reads (`openstack_{auth,nova,neutron,cinder}_domain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<ServiceEndpoints>,
    /// Platform services.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<PlatformStatus>,
    /// SSH credentials the provider created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<SshStatus>,
    /// Where the rendered Ansible variables and inventory are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ansible: Option<AnsibleStatus>,
}

/// Network plugin inputs.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkingStatus {
    /// Cilium (VPC CNI) inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cilium: Option<CiliumStatus>,
    /// The pod network capo made for Cilium's OpenStack IPAM (`kubeNetworkPlugin: cilium`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_network: Option<PodNetworkStatus>,
}

/// The pod network of a Cilium cluster: a network and subnet with the Cluster's pod CIDR on
/// the cluster router, and an allow-all security group for the pods' ports.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PodNetworkStatus {
    /// Neutron network ID.
    #[serde(rename = "networkID")]
    pub network_id: String,
    /// Neutron subnet ID; published as `cilium.defaultSubnetID`.
    #[serde(rename = "subnetID")]
    pub subnet_id: String,
    /// The subnet's CIDR (the Cluster's first pod CIDR block).
    pub cidr: String,
    /// The allow-all security group; published first in `cilium.securityGroupIDs`.
    #[serde(rename = "securityGroupID")]
    pub security_group_id: String,
}

/// Cilium (VPC CNI) inputs.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CiliumStatus {
    /// Project of the Keystone token; feeds `cilium_openstack_project_id`.
    #[serde(rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The pod subnet with `kubeNetworkPlugin: cilium`, else the cluster subnet; feeds
    /// `cilium_openstack_default_subnet_id`.
    #[serde(rename = "defaultSubnetID", skip_serializing_if = "Option::is_none")]
    pub default_subnet_id: Option<String>,
    /// The pods' security group first (with `kubeNetworkPlugin: cilium`; the consumer keeps only
    /// the first), then the managed control-plane and worker groups; feeds
    /// `cilium_openstack_security_group_ids`.
    #[serde(
        rename = "securityGroupIDs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_group_ids: Vec<String>,
    /// Effective `vpc_cni_webhook_enable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_enable: Option<bool>,
}

/// Control-plane and ingress VIPs.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancersStatus {
    /// Kubernetes API VIP; `vip` feeds `master_virtual_vip`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<VipStatus>,
    /// Ingress VIP; `vip` feeds `ingress_virtual_vip` and `harbor_addr`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<VipStatus>,
    /// The registry's VIP: the ingress VIP (Harbor is served through the ingress), at the path
    /// the peer provider publishes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harbor: Option<AddressStatus>,
}

/// A published address.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AddressStatus {
    /// The address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip: Option<String>,
}

/// One VIP and the OpenStack resources created for it (recorded so deletion finds them).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VipStatus {
    /// Mode in effect (`Octavia` or `Keepalived`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Fixed VIP address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip: Option<String>,
    /// Neutron port holding the VIP (the reserved port in Keepalived mode).
    #[serde(rename = "portID", skip_serializing_if = "Option::is_none")]
    pub port_id: Option<String>,
    /// Octavia load balancer in Octavia mode.
    #[serde(rename = "loadBalancerID", skip_serializing_if = "Option::is_none")]
    pub load_balancer_id: Option<String>,
    /// Floating IP address attached to the VIP, if any.
    #[serde(rename = "floatingIP", skip_serializing_if = "Option::is_none")]
    pub floating_ip: Option<String>,
    /// Neutron ID of that floating IP.
    #[serde(rename = "floatingIPID", skip_serializing_if = "Option::is_none")]
    pub floating_ip_id: Option<String>,
}

/// Hosts of the cloud's API endpoints (from the service catalog) and the identity in use.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackEndpoints {
    /// Host of the cloud's API endpoint; feeds `cloud_master_vip`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mgmt: Option<String>,
    /// The service endpoint hosts (`keystone`, `nova`, `neutron`, `cinder`), the same value as
    /// `status.extensions.endpoints`.
    #[serde(flatten)]
    pub hosts: ServiceEndpoints,
    /// Project name; feeds `openstack_project_name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Project domain name; feeds `project_domain_name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_domain: Option<String>,
    /// Region; feeds `region_name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The cluster's application credential (never its secret: only the Secret's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_credential: Option<AppCredentialStatus>,
}

/// Where the cluster's application credential is.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AppCredentialStatus {
    /// Name of the Secret (in the cluster's namespace) holding `clouds.yaml` with cloud
    /// `<namespace>-<cluster>` authenticated by the application credential.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    /// Keystone ID of the application credential (not a secret), so deletion finds it.
    #[serde(rename = "id", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// True when the Secret holds the cluster identity's own application credential (Keystone
    /// refused one for the cluster; `spec.extensions.openStack.shareIdentityCredential`): capo
    /// made nothing in Keystone then, `id` is absent and deleting the cluster deletes only the
    /// Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
}

/// Hosts of the cloud's service endpoints, by service.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEndpoints {
    /// Keystone endpoint host; feeds `openstack_auth_domain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keystone: Option<String>,
    /// Nova endpoint host; feeds `openstack_nova_domain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nova: Option<String>,
    /// Neutron endpoint host; feeds `openstack_neutron_domain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neutron: Option<String>,
    /// Cinder endpoint host; feeds `openstack_cinder_domain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cinder: Option<String>,
}

/// Platform services.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PlatformStatus {
    /// NTP in effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ntp: Option<NtpStatus>,
    /// Management access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub management: Option<ManagementStatus>,
}

/// NTP in effect.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NtpStatus {
    /// NTP server; feeds `ntp_server` (the override, else the bastion address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// Management access.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ManagementStatus {
    /// Bastion floating (else fixed) IP; feeds `vip_mgmt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip: Option<String>,
}

/// SSH credentials created by the provider.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SshStatus {
    /// Nova key pair holding the generated public key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_pair_name: Option<String>,
    /// `kubernetes.io/ssh-auth` Secret holding the private key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
}

/// Where the rendered Ansible inputs are.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AnsibleStatus {
    /// Secret with `vars.yaml` and `inventory.yaml`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_names_follow_the_contract() {
        let status = OpenStackClusterStatusExtensions {
            networking: Some(NetworkingStatus {
                cilium: Some(CiliumStatus {
                    project_id: Some("p".into()),
                    default_subnet_id: Some("s".into()),
                    security_group_ids: vec!["a".into(), "b".into()],
                    webhook_enable: Some(true),
                }),
                pod_network: Some(PodNetworkStatus {
                    network_id: "n".into(),
                    subnet_id: "s".into(),
                    cidr: "10.8.0.0/16".into(),
                    security_group_id: "a".into(),
                }),
            }),
            load_balancers: Some(LoadBalancersStatus {
                control_plane: Some(VipStatus {
                    vip: Some("10.6.0.5".into()),
                    port_id: Some("port".into()),
                    floating_ip_id: Some("fip".into()),
                    ..Default::default()
                }),
                ingress: None,
                harbor: Some(AddressStatus {
                    vip: Some("10.6.0.6".into()),
                }),
            }),
            open_stack: Some(OpenStackEndpoints {
                project_domain: Some("Default".into()),
                app_credential: Some(AppCredentialStatus {
                    secret_ref: Some("c1-app-credential".into()),
                    id: Some("ac".into()),
                    shared: None,
                }),
                ..Default::default()
            }),
            endpoints: Some(ServiceEndpoints {
                keystone: Some("k".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&status).unwrap_or_default(),
            json!({
                "networking": {"cilium": {"projectID": "p", "defaultSubnetID": "s",
                    "securityGroupIDs": ["a", "b"], "webhookEnable": true},
                    "podNetwork": {"networkID": "n", "subnetID": "s", "cidr": "10.8.0.0/16",
                        "securityGroupID": "a"}},
                "loadBalancers": {"controlPlane": {"vip": "10.6.0.5", "portID": "port", "floatingIPID": "fip"},
                    "harbor": {"vip": "10.6.0.6"}},
                "openStack": {"projectDomain": "Default",
                    "appCredential": {"ref": "c1-app-credential", "id": "ac"}},
                "endpoints": {"keystone": "k"}
            })
        );
    }
}

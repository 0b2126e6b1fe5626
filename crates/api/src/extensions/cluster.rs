//! `OpenStackCluster.spec.extensions` (and the same in OpenStackClusterTemplate).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Values Kubespray accepts for `kube_network_plugin`.
pub const KUBE_NETWORK_PLUGINS: &[&str] = &[
    "calico",
    "flannel",
    "cilium",
    "kube-ovn",
    "kube-router",
    "cni",
    "none",
];

/// Load balancer mode backed by an Octavia load balancer.
pub const LOAD_BALANCER_MODE_OCTAVIA: &str = "Octavia";
/// Load balancer mode backed by a keepalived VIP on a reserved Neutron port.
pub const LOAD_BALANCER_MODE_KEEPALIVED: &str = "Keepalived";
/// Every load balancer mode.
pub const LOAD_BALANCER_MODES: &[&str] =
    &[LOAD_BALANCER_MODE_OCTAVIA, LOAD_BALANCER_MODE_KEEPALIVED];

/// Ports an ingress load balancer forwards when `ports` is empty.
pub const DEFAULT_INGRESS_PORTS: &[i32] = &[80, 443];

/// BA/ACP options of a cluster. Absent means: behave exactly like upstream CAPO.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackClusterExtensions {
    /// Kubernetes networking choices handed to the bootstrap provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub networking: Option<ClusterNetworking>,
    /// Guest interface names the network components bind to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_interfaces: Option<ClusterNetworkInterfaces>,
    /// How the control-plane and ingress VIPs are provided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancers: Option<ClusterLoadBalancers>,
    /// Platform services (NTP) overrides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<PlatformOptions>,
    /// SSH access to the nodes for Ansible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<SshOptions>,
    /// Cilium (VPC CNI) options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cilium: Option<CiliumOptions>,
    /// OpenStack credentials handed to the nodes (the peer provider's `openStack: {}` is
    /// accepted and means the defaults).
    #[serde(rename = "openStack", skip_serializing_if = "Option::is_none")]
    pub open_stack: Option<ClusterOpenStackOptions>,
}

/// OpenStack credentials handed to the nodes.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOpenStackOptions {
    /// Create an application credential for the cluster and publish its Secret at
    /// `status.extensions.openStack.appCredential.ref` (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_credential: Option<bool>,
    /// When Keystone refuses to create the cluster's application credential because the
    /// cluster's identity is itself a restricted application credential, publish the identity's
    /// own application credential in that Secret instead, marked
    /// `status.extensions.openStack.appCredential.shared` (default true). It is then shared with
    /// the management cluster and every other cluster of that identity: revoking it stops them
    /// all. false: publish nothing in that case. Never applies to a password identity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_identity_credential: Option<bool>,
}

/// Kubernetes networking choices.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetworking {
    /// Network plugin; feeds `kube_network_plugin`. Kept a string so a newer value never breaks
    /// reading an object; the CRD restricts it to the Kubespray values.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["calico", "flannel", "cilium", "kube-ovn", "kube-router", "cni", "none"]))]
    pub kube_network_plugin: Option<String>,
}

/// Guest interface names used by cluster-wide network components.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetworkInterfaces {
    /// Interface flannel binds to; feeds `flannel_interface`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 15))]
    pub flannel: Option<String>,
}

/// Control-plane and ingress VIPs.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterLoadBalancers {
    /// VIP of the Kubernetes API; feeds `master_virtual_vip`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<ControlPlaneLoadBalancer>,
    /// VIP of the ingress controllers on the workers; feeds `ingress_virtual_vip` and `harbor_addr`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressLoadBalancer>,
}

/// How the Kubernetes API VIP is provided.
///
/// `Octavia` uses the upstream API server load balancer. `Keepalived` reserves a Neutron port
/// whose fixed IP is added as an allowed address pair on every control-plane port and carries the
/// API floating IP, so control-plane upgrades and scale-downs never move the floating IP.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneLoadBalancer {
    /// `Octavia` or `Keepalived`.
    #[schemars(extend("enum" = ["Octavia", "Keepalived"]))]
    pub mode: String,
    /// Fixed IP to reserve for the VIP in Keepalived mode; allocated by Neutron when unset.
    #[serde(rename = "vipAddress", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "ipv4"))]
    pub vip_address: Option<String>,
    /// keepalived virtual router ID (1-255) in Keepalived mode; the bootstrap provider picks one
    /// when unset.
    #[serde(rename = "virtualRouterID", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 255))]
    pub virtual_router_id: Option<i32>,
}

/// How the ingress VIP on the workers is provided.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct IngressLoadBalancer {
    /// `Octavia` (a load balancer with one listener per port, members are the workers) or
    /// `Keepalived` (a reserved VIP port allowed on every worker port).
    #[schemars(extend("enum" = ["Octavia", "Keepalived"]))]
    pub mode: String,
    /// TCP ports forwarded to the workers; 80 and 443 when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"type": "integer", "minimum": 1, "maximum": 65535}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub ports: Vec<i32>,
    /// Fixed IP to reserve for the VIP; allocated by Neutron when unset.
    #[serde(rename = "vipAddress", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "ipv4"))]
    pub vip_address: Option<String>,
    /// Also attach a floating IP from the external network to the ingress VIP.
    #[serde(rename = "floatingIP", skip_serializing_if = "Option::is_none")]
    pub floating_ip: Option<bool>,
}

impl IngressLoadBalancer {
    /// The ports to forward, applying the 80/443 default.
    pub fn effective_ports(&self) -> Vec<i32> {
        if self.ports.is_empty() {
            DEFAULT_INGRESS_PORTS.to_vec()
        } else {
            self.ports.clone()
        }
    }
}

/// Platform services overrides.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PlatformOptions {
    /// NTP settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ntp: Option<NtpOptions>,
}

/// NTP settings.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NtpOptions {
    /// NTP server for the nodes; feeds `ntp_server`. Unset: the bastion, which then serves
    /// time to the cluster network, else [`DEFAULT_NTP_SERVER`].
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub server: Option<String>,
}

/// SSH access for Ansible.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SshOptions {
    /// Generate an SSH key pair, register its public key as a Nova key pair and store the
    /// private key in the `kubernetes.io/ssh-auth` Secret `<cluster>-ssh`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generate_key_pair: Option<bool>,
    /// Login user on the nodes and the bastion; feeds `ansible_user` in the inventory.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub user: Option<String>,
}

/// Cilium (VPC CNI) options.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CiliumOptions {
    /// Override of `vpc_cni_webhook_enable`, otherwise derived from the network plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_enable: Option<bool>,
}

/// Kind of the Ansible control-plane provider's object (`controlplane.cluster.x-k8s.io`).
pub const ANSIBLE_CONTROL_PLANE_KIND: &str = "AnsibleControlPlane";

/// `ntp_server` when the spec names none and the cluster has no bastion: the public NTP pool,
/// which is also Kubespray's default. Clouds without internet access set
/// `spec.extensions.platform.ntp.server` or enable the bastion.
pub const DEFAULT_NTP_SERVER: &str = "pool.ntp.org";

impl OpenStackClusterExtensions {
    /// `spec.extensions.platform.ntp.server`, if set.
    pub fn ntp_override(&self) -> Option<&str> {
        self.platform.as_ref()?.ntp.as_ref()?.server.as_deref()
    }

    /// Whether the network plugin is Cilium (any case, as the peer compares it), which gets a
    /// pod network and an allow-all pod security group for Cilium's OpenStack IPAM.
    pub fn cilium(&self) -> bool {
        self.networking
            .as_ref()
            .and_then(|n| n.kube_network_plugin.as_deref())
            .is_some_and(|p| p.eq_ignore_ascii_case("cilium"))
    }

    /// What the peer provider does for a cluster its Ansible providers drive when the
    /// OpenStackCluster has no `spec.extensions` (its manifests never write one): a control-plane
    /// VIP (the API load balancer when `apiServerLoadBalancer` is enabled, else a keepalived VIP
    /// port, since capo's Keepalived mode replaces that load balancer), a keepalived ingress VIP
    /// (which is also Harbor's), an application credential, and one SSH key for `root`, the
    /// user the Ansible providers log in as.
    pub fn peer_defaults(api_server_load_balancer: bool) -> Self {
        let control_plane_mode = if api_server_load_balancer {
            LOAD_BALANCER_MODE_OCTAVIA
        } else {
            LOAD_BALANCER_MODE_KEEPALIVED
        };
        OpenStackClusterExtensions {
            load_balancers: Some(ClusterLoadBalancers {
                control_plane: Some(ControlPlaneLoadBalancer {
                    mode: control_plane_mode.to_owned(),
                    ..Default::default()
                }),
                ingress: Some(IngressLoadBalancer {
                    mode: LOAD_BALANCER_MODE_KEEPALIVED.to_owned(),
                    ..Default::default()
                }),
            }),
            ssh: Some(SshOptions {
                generate_key_pair: Some(true),
                user: Some("root".to_owned()),
            }),
            open_stack: Some(ClusterOpenStackOptions::default()),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_names_follow_the_contract() {
        let ext = OpenStackClusterExtensions {
            networking: Some(ClusterNetworking {
                kube_network_plugin: Some("cilium".into()),
            }),
            network_interfaces: Some(ClusterNetworkInterfaces {
                flannel: Some("eth1".into()),
            }),
            load_balancers: Some(ClusterLoadBalancers {
                control_plane: Some(ControlPlaneLoadBalancer {
                    mode: LOAD_BALANCER_MODE_KEEPALIVED.into(),
                    vip_address: Some("10.6.0.5".into()),
                    virtual_router_id: Some(51),
                }),
                ingress: None,
            }),
            platform: Some(PlatformOptions {
                ntp: Some(NtpOptions {
                    server: Some("ntp.example".into()),
                }),
            }),
            ssh: Some(SshOptions {
                generate_key_pair: Some(true),
                user: None,
            }),
            cilium: Some(CiliumOptions {
                webhook_enable: Some(false),
            }),
            open_stack: Some(ClusterOpenStackOptions {
                app_credential: Some(false),
                share_identity_credential: None,
            }),
        };
        let value = serde_json::to_value(&ext).unwrap_or_default();
        assert_eq!(
            value,
            json!({
                "networking": {"kubeNetworkPlugin": "cilium"},
                "networkInterfaces": {"flannel": "eth1"},
                "loadBalancers": {"controlPlane": {"mode": "Keepalived", "vipAddress": "10.6.0.5", "virtualRouterID": 51}},
                "platform": {"ntp": {"server": "ntp.example"}},
                "ssh": {"generateKeyPair": true},
                "cilium": {"webhookEnable": false},
                "openStack": {"appCredential": false}
            })
        );
    }

    #[test]
    fn peer_defaults_follow_the_api_load_balancer_switch() {
        let mode = |e: &OpenStackClusterExtensions| {
            e.load_balancers
                .as_ref()
                .and_then(|l| l.control_plane.as_ref())
                .map(|c| c.mode.clone())
        };
        let with_lb = OpenStackClusterExtensions::peer_defaults(true);
        assert_eq!(mode(&with_lb).as_deref(), Some(LOAD_BALANCER_MODE_OCTAVIA));
        let without = OpenStackClusterExtensions::peer_defaults(false);
        assert_eq!(
            mode(&without).as_deref(),
            Some(LOAD_BALANCER_MODE_KEEPALIVED)
        );
        let ingress = without
            .load_balancers
            .and_then(|l| l.ingress)
            .unwrap_or_default();
        assert_eq!(ingress.mode, LOAD_BALANCER_MODE_KEEPALIVED);
        assert_eq!(without.ssh.and_then(|s| s.user).as_deref(), Some("root"));
    }

    #[test]
    fn empty_extensions_serialize_to_nothing() {
        let value = serde_json::to_value(OpenStackClusterExtensions::default()).unwrap_or_default();
        assert_eq!(value, json!({}));
    }

    #[test]
    fn ingress_ports_default_to_http_and_https() {
        let lb: IngressLoadBalancer =
            serde_json::from_value(json!({"mode": "Octavia"})).unwrap_or_default();
        assert_eq!(lb.effective_ports(), vec![80, 443]);
        let lb: IngressLoadBalancer =
            serde_json::from_value(json!({"mode": "Octavia", "ports": [8443]})).unwrap_or_default();
        assert_eq!(lb.effective_ports(), vec![8443]);
    }

    #[test]
    fn schema_restricts_the_plugin_and_modes() {
        let crd = crate::crds::all().remove(0);
        let text = serde_json::to_string(&crd).unwrap_or_default();
        for plugin in KUBE_NETWORK_PLUGINS {
            assert!(text.contains(&format!("\"{plugin}\"")), "{plugin}");
        }
        assert!(text.contains(r#""enum":["Octavia","Keepalived"]"#));
    }
}

//! What the renderers need to know about a cluster, independent of where it came from.

use capo_api::extensions::{OpenStackEndpoints, ReservedResources};

/// Login user on the nodes and the bastion when `spec.extensions.ssh.user` is unset: the
/// default user of the Ubuntu cloud images the upstream image-builder produces.
pub const DEFAULT_SSH_USER: &str = "ubuntu";

/// SSH port of the bastion (the provider never changes it).
pub const DEFAULT_SSH_PORT: u16 = 22;

/// Everything that goes into `vars.yaml` and `inventory.yaml` for one cluster.
///
/// `None` means "not known yet" (see [`crate::unresolved`]); such values are left out of the
/// rendered documents rather than rendered as `null`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ClusterFacts {
    /// `kube_network_plugin` (user choice; Kubespray's default applies when unset).
    pub kube_network_plugin: Option<String>,
    /// `flannel_interface` (user choice; flannel picks the default-route interface when unset).
    pub flannel_interface: Option<String>,
    /// `cilium_openstack_project_id`: project of the provider's Keystone token.
    pub cilium_project_id: Option<String>,
    /// `cilium_openstack_default_subnet_id`: the cluster subnet.
    pub cilium_default_subnet_id: Option<String>,
    /// `cilium_openstack_security_group_ids`: managed security groups. `Some(vec![])` means
    /// known to be none (no managed security groups requested), `None` means not known yet.
    pub cilium_security_group_ids: Option<Vec<String>>,
    /// `vpc_cni_webhook_enable`.
    pub vpc_cni_webhook_enable: Option<bool>,
    /// `master_virtual_vip`: control-plane load balancer VIP or keepalived VIP port address.
    pub control_plane_vip: Option<String>,
    /// An ingress VIP was requested (`spec.extensions.loadBalancers.ingress`); without it
    /// `ingress_virtual_vip` and `harbor_addr` are not expected.
    pub ingress_requested: bool,
    /// `ingress_virtual_vip` and `harbor_addr`.
    pub ingress_vip: Option<String>,
    /// `cloud_master_vip`, `openstack_*_domain`, `openstack_project_name`,
    /// `openstack_project_domain_name`, `openstack_region_name` (hosts and names only).
    pub openstack: OpenStackEndpoints,
    /// `ntp_server`: the override, else the bastion address.
    pub ntp_server: Option<String>,
    /// `vip_mgmt`: the bastion's floating (else fixed) IP.
    pub management_vip: Option<String>,
    /// `ansible_user` of every host and of the bastion.
    pub ssh_user: String,
    /// The jump host, when the cluster has one with an address.
    pub bastion: Option<BastionFacts>,
    /// Machines of the cluster, in any order (the renderers sort them).
    pub hosts: Vec<HostFacts>,
}

/// The bastion as the inventory sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BastionFacts {
    /// Address Ansible connects to: the floating IP, else the fixed IP.
    pub address: String,
    /// Login user on the bastion.
    pub user: String,
}

/// The Kubespray role of a machine.
///
/// Defaults to `Worker`: a machine is a control-plane machine only when labelled as one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Role {
    /// Member of `kube_control_plane` and `etcd`.
    ControlPlane,
    /// Member of `kube_node`.
    #[default]
    Worker,
}

/// One machine as the renderers see it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct HostFacts {
    /// Machine name: the inventory host name and the key under `node_resources`.
    pub name: String,
    /// Kubespray role.
    pub role: Role,
    /// Fixed IP on the cluster network (`ip`, `access_ip`); hosts without one yet are left out
    /// of the inventory and named by [`crate::inventory_warnings`].
    pub private_ip: Option<String>,
    /// Floating IP, used as `ansible_host` when there is no bastion.
    pub public_ip: Option<String>,
    /// `keepalived_interface` host variable.
    pub keepalived_interface: Option<String>,
    /// Kubelet reservations in effect (`node_resources.<name>`); `None` until the machine
    /// controller computed them from the flavor.
    pub reserved: Option<ReservedResources>,
}

impl ClusterFacts {
    /// Facts with the default SSH user and nothing else known.
    pub fn new() -> Self {
        ClusterFacts {
            ssh_user: DEFAULT_SSH_USER.to_owned(),
            ..ClusterFacts::default()
        }
    }

    /// Hosts sorted by name, the order every rendered list uses.
    pub(crate) fn sorted_hosts(&self) -> Vec<&HostFacts> {
        let mut hosts: Vec<&HostFacts> = self.hosts.iter().collect();
        hosts.sort_by(|a, b| a.name.cmp(&b.name));
        hosts
    }
}

//! Deterministic names of the OpenStack resources and Kubernetes objects the provider creates.
//!
//! They equal upstream CAPO v0.14.7's names, so a management cluster can switch controllers and
//! the new one finds (adopts) what the old one created.

/// Prefix of every cluster-level Neutron/Octavia resource: `k8s-clusterapi-cluster-<ns>-<name>`.
/// Used as is for the cluster network, subnet and router.
pub fn cluster_resource_name(namespace: &str, cluster: &str) -> String {
    format!("k8s-clusterapi-cluster-{namespace}-{cluster}")
}

/// Name of the API server load balancer: `k8s-clusterapi-cluster-<ns>-<name>-kubeapi`.
pub fn api_load_balancer_name(namespace: &str, cluster: &str) -> String {
    format!("{}-kubeapi", cluster_resource_name(namespace, cluster))
}

/// Name of a listener, pool or monitor of the API load balancer: `<lb>-<port>`.
pub fn lb_listener_name(lb_name: &str, port: i32) -> String {
    format!("{lb_name}-{port}")
}

/// Name of a load balancer pool member: `<lb>-<port>-<machine>`.
pub fn lb_member_name(lb_name: &str, port: i32, machine: &str) -> String {
    format!("{lb_name}-{port}-{machine}")
}

/// The three managed security groups of a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecurityGroupRole {
    /// Control-plane nodes.
    ControlPlane,
    /// Worker nodes.
    Worker,
    /// The bastion host.
    Bastion,
}

impl SecurityGroupRole {
    /// Suffix used in the group name (also the `remoteManagedGroups` value).
    pub fn suffix(self) -> &'static str {
        match self {
            Self::ControlPlane => "controlplane",
            Self::Worker => "worker",
            Self::Bastion => "bastion",
        }
    }
}

/// Name of a managed security group: `k8s-cluster-<ns>-<name>-secgroup-<role>`.
pub fn security_group_name(namespace: &str, cluster: &str, role: SecurityGroupRole) -> String {
    format!(
        "k8s-cluster-{namespace}-{cluster}-secgroup-{}",
        role.suffix()
    )
}

/// Name of the Cilium pod network of a cluster whose extension asks for
/// `kubeNetworkPlugin: cilium`: `<ns>-<name>-vpc-cni`, the peer provider's name, so a cluster
/// switched from it adopts its pod network instead of making a second one.
pub fn pod_network_name(namespace: &str, cluster: &str) -> String {
    format!("{namespace}-{cluster}-vpc-cni")
}

/// Name of the pod network's subnet: `<ns>-<name>-vpc-cni-subnet` (the peer's).
pub fn pod_subnet_name(namespace: &str, cluster: &str) -> String {
    format!("{}-subnet", pod_network_name(namespace, cluster))
}

/// Name of the pods' allow-all security group: `<ns>-<name>-vpc-cni-secgroup` (the peer's).
pub fn pod_security_group_name(namespace: &str, cluster: &str) -> String {
    format!("{}-secgroup", pod_network_name(namespace, cluster))
}

/// Name of the bastion OpenStackServer: `<cluster>-bastion`.
pub fn bastion_server_name(cluster: &str) -> String {
    format!("{cluster}-bastion")
}

/// Name of a server port: `<server>-<nameSuffix>` or `<server>-<index>`.
pub fn port_name(server: &str, name_suffix: Option<&str>, index: usize) -> String {
    match name_suffix {
        Some(suffix) => format!("{server}-{suffix}"),
        None => format!("{server}-{index}"),
    }
}

/// Name of a server's root volume: `<server>-root`.
pub fn root_volume_name(server: &str) -> String {
    format!("{server}-root")
}

/// Name of an additional block device volume: `<server>-<device>`.
pub fn block_device_volume_name(server: &str, device: &str) -> String {
    format!("{server}-{device}")
}

/// Name of the IPAddressClaim a server makes on its floating IP pool.
pub fn floating_ip_claim_name(server: &str) -> String {
    format!("{server}-floating-ip-address")
}

/// Neutron tag put on floating IPs allocated by a pool.
pub fn floating_ip_pool_tag(pool: &str) -> String {
    format!("cluster-api-provider-openstack-fip-pool-{pool}")
}

/// Provider ID of a server: `openstack://<region>/<instance>` (region may be empty).
pub fn provider_id(region: &str, instance_id: &str) -> String {
    format!("openstack://{region}/{instance_id}")
}

/// Secret with the rendered Ansible inputs of a cluster (BA/ACP extension): `<cluster>-ansible`.
pub fn ansible_secret_name(cluster: &str) -> String {
    format!("{cluster}-ansible")
}

/// Secret with generated SSH credentials (BA/ACP extension): `<cluster>-ssh`.
pub fn ssh_secret_name(cluster: &str) -> String {
    format!("{cluster}-ssh")
}

/// The same SSH key under the name the Ansible bootstrap and control-plane providers read:
/// `<cluster>-ssh-auth`.
pub fn ssh_auth_secret_name(cluster: &str) -> String {
    format!("{cluster}-ssh-auth")
}

/// Secret with the cluster's application credential as a `clouds.yaml` (BA/ACP extension):
/// `<cluster>-app-credential`.
pub fn app_credential_secret_name(cluster: &str) -> String {
    format!("{cluster}-app-credential")
}

/// Secret with the bastion's cloud-init user data (key `value`) when the cluster's SSH key is
/// managed by the BA/ACP extension: `<cluster>-bastion-userdata`.
pub fn bastion_user_data_secret_name(cluster: &str) -> String {
    format!("{cluster}-bastion-userdata")
}

/// Nova key pair holding the generated public key (BA/ACP extension), namespaced like the other
/// cluster resources so two clusters of the same name in different namespaces never collide.
pub fn ssh_keypair_name(namespace: &str, cluster: &str) -> String {
    cluster_resource_name(namespace, cluster)
}

/// The name the peer provider gave the same VIP port: `<ns>-<name>-controlplane-keepalived` or
/// `<ns>-<name>-ingress-keepalived`; capo adopts a port of that name when it has none of its own,
/// so switching from the peer keeps the cluster's VIPs.
pub fn peer_vip_port_name(namespace: &str, cluster: &str, purpose: &str) -> String {
    let role = if purpose == "kubeapi" {
        "controlplane"
    } else {
        purpose
    };
    format!("{namespace}-{cluster}-{role}-keepalived")
}

/// Neutron port reserved for a keepalived VIP (BA/ACP extension): `<prefix>-<purpose>-vip`,
/// where purpose is `kubeapi` or `ingress`.
pub fn vip_port_name(namespace: &str, cluster: &str, purpose: &str) -> String {
    format!(
        "{}-{purpose}-vip",
        cluster_resource_name(namespace, cluster)
    )
}

/// The cluster name capo gives cloud-provider-openstack in the workload cluster: the CCM's
/// `--cluster-name` and the Cinder CSI plugin's `--cluster`, `<namespace>-<cluster>`.
///
/// The CCM writes it into the names and descriptions of the load balancers, floating IPs and
/// security groups it creates, and the CSI plugin into the `cinder.csi.openstack.org/cluster`
/// property of its volumes and snapshots; capo's cleanup at cluster deletion finds them by it.
/// The CCM's own default, `kubernetes`, is the same for every cluster of a project.
pub fn cloud_provider_cluster_name(namespace: &str, cluster: &str) -> String {
    format!("{namespace}-{cluster}")
}

/// Key of the ownership tag put on every OpenStack resource the provider creates for a cluster.
pub const OWNERSHIP_TAG_KEY: &str = "capo-cluster";

/// Ownership tag `capo-cluster=<uid>` (uid of the OpenStackCluster).
///
/// Adoption by deterministic name alone would let two management clusters that manage clusters
/// of the same namespace/name adopt each other's resources; requiring this tag as well prevents
/// that. Neutron and Nova tags may not contain commas, which a Kubernetes UID never does.
pub fn ownership_tag(cluster_uid: &str) -> String {
    format!("{OWNERSHIP_TAG_KEY}={cluster_uid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_level_names_match_upstream() {
        assert_eq!(
            cluster_resource_name("ns", "c1"),
            "k8s-clusterapi-cluster-ns-c1"
        );
        assert_eq!(
            api_load_balancer_name("ns", "c1"),
            "k8s-clusterapi-cluster-ns-c1-kubeapi"
        );
        assert_eq!(
            lb_listener_name("k8s-clusterapi-cluster-ns-c1-kubeapi", 6443),
            "k8s-clusterapi-cluster-ns-c1-kubeapi-6443"
        );
        assert_eq!(lb_member_name("lb", 6443, "m-0"), "lb-6443-m-0");
    }

    #[test]
    fn security_group_names_match_upstream() {
        let name = |role| security_group_name("default", "demo", role);
        assert_eq!(
            name(SecurityGroupRole::ControlPlane),
            "k8s-cluster-default-demo-secgroup-controlplane"
        );
        assert_eq!(
            name(SecurityGroupRole::Worker),
            "k8s-cluster-default-demo-secgroup-worker"
        );
        assert_eq!(
            name(SecurityGroupRole::Bastion),
            "k8s-cluster-default-demo-secgroup-bastion"
        );
    }

    #[test]
    fn server_level_names_match_upstream() {
        assert_eq!(bastion_server_name("demo"), "demo-bastion");
        assert_eq!(port_name("srv", None, 0), "srv-0");
        assert_eq!(port_name("srv", Some("data"), 1), "srv-data");
        assert_eq!(root_volume_name("srv"), "srv-root");
        assert_eq!(block_device_volume_name("srv", "etcd"), "srv-etcd");
        assert_eq!(floating_ip_claim_name("srv"), "srv-floating-ip-address");
        assert_eq!(
            floating_ip_pool_tag("pool"),
            "cluster-api-provider-openstack-fip-pool-pool"
        );
        assert_eq!(provider_id("RegionOne", "abc"), "openstack://RegionOne/abc");
        assert_eq!(provider_id("", "abc"), "openstack:///abc");
    }

    #[test]
    fn ownership_tag_names_the_cluster_uid() {
        let tag = ownership_tag("4f1c2d3e-0000-4000-8000-000000000001");
        assert_eq!(tag, "capo-cluster=4f1c2d3e-0000-4000-8000-000000000001");
        assert!(!tag.contains(','));
    }

    #[test]
    fn extension_names() {
        assert_eq!(ansible_secret_name("demo"), "demo-ansible");
        assert_eq!(ssh_secret_name("demo"), "demo-ssh");
        assert_eq!(
            ssh_keypair_name("ns", "demo"),
            "k8s-clusterapi-cluster-ns-demo"
        );
        assert_eq!(
            vip_port_name("ns", "demo", "ingress"),
            "k8s-clusterapi-cluster-ns-demo-ingress-vip"
        );
    }
}

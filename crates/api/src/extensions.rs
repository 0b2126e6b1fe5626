//! BA/ACP extensions: optional fields that are not part of upstream CAPO.
//!
//! They carry what an Ansible-driven bootstrap (BA) and control plane (ACP) provider needs from
//! the infrastructure: a chosen network plugin, control-plane and ingress VIPs, endpoints of the
//! cloud, NTP and SSH settings. Every field is optional and skipped when empty, so an object
//! without `extensions` serializes exactly like an upstream object and the provider then behaves
//! exactly like upstream. Each field's documentation names the Ansible variable it feeds (the
//! variables land in the `<cluster>-ansible` Secret).

mod cluster;
mod cluster_status;
mod machine;
mod node_resources;

pub use cluster::{
    ANSIBLE_CONTROL_PLANE_KIND, CiliumOptions, ClusterLoadBalancers, ClusterNetworkInterfaces,
    ClusterNetworking, ClusterOpenStackOptions, ControlPlaneLoadBalancer, DEFAULT_INGRESS_PORTS,
    DEFAULT_NTP_SERVER, IngressLoadBalancer, KUBE_NETWORK_PLUGINS, LOAD_BALANCER_MODE_KEEPALIVED,
    LOAD_BALANCER_MODE_OCTAVIA, LOAD_BALANCER_MODES, NtpOptions, OpenStackClusterExtensions,
    PlatformOptions, SshOptions,
};
pub use cluster_status::{
    AddressStatus, AnsibleStatus, AppCredentialStatus, CiliumStatus, LoadBalancersStatus,
    ManagementStatus, NetworkingStatus, NtpStatus, OpenStackClusterStatusExtensions,
    OpenStackEndpoints, PlatformStatus, PodNetworkStatus, ServiceEndpoints, SshStatus, VipStatus,
};
pub use machine::{
    MachineLoadBalancers, MachineMemory, MachineNetworkInterfaces, NodeResources,
    OpenStackMachineExtensions, OpenStackMachineStatusExtensions, ReservedResources,
};
pub use node_resources::reserved_for_flavor;

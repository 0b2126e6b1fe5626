//! Well-known strings shared with upstream CAPO v0.14.7 and Cluster API: finalizers, labels,
//! annotations, condition types and reasons. Keeping them identical is what makes the provider a
//! drop-in replacement (objects created by upstream keep working and vice versa).

/// API group of every kind in this crate.
pub const GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// Finalizer on OpenStackCluster.
pub const CLUSTER_FINALIZER: &str = "openstackcluster.infrastructure.cluster.x-k8s.io";
/// Finalizer on OpenStackMachine.
pub const MACHINE_FINALIZER: &str = "openstackmachine.infrastructure.cluster.x-k8s.io";
/// Finalizer on OpenStackServer.
pub const SERVER_FINALIZER: &str = "openstackserver.infrastructure.cluster.x-k8s.io";
/// Finalizer on OpenStackFloatingIPPool.
pub const FLOATING_IP_POOL_FINALIZER: &str =
    "openstackfloatingippool.infrastructure.cluster.x-k8s.io";
/// Finalizer the machine controller puts on the IPAddressClaims it creates.
pub const IP_CLAIM_FINALIZER: &str = "openstackmachine.infrastructure.cluster.x-k8s.io/ip-claim";
/// Finalizer the pool controller puts on the IPAddresses it creates.
pub const DELETE_FLOATING_IP_FINALIZER: &str =
    "openstackfloatingippool.infrastructure.cluster.x-k8s.io/delete-floating-ip";

/// Label naming the Cluster API Cluster an object belongs to.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// Label set on control-plane Machines by Cluster API.
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
/// Annotation that pauses reconciliation of an object.
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";
/// Annotation on an OpenStackCluster choosing what happens, when the cluster is deleted, to the
/// volumes and snapshots the workload cluster's Cinder CSI plugin made: `keep` (the default) or
/// `delete` (docs/deletion.md).
pub const CLOUD_PROVIDER_VOLUMES_ANNOTATION: &str =
    "infrastructure.cluster.x-k8s.io/capo-cloud-provider-volumes";
/// The values [`CLOUD_PROVIDER_VOLUMES_ANNOTATION`] accepts.
pub const CLOUD_PROVIDER_VOLUMES_VALUES: [&str; 2] = ["keep", "delete"];
/// Annotation on an OpenStackCluster asking capo to delete security-group rules it did not
/// create (by default, hand-added rules are left alone).
pub const STRICT_RULES_ANNOTATION: &str =
    "infrastructure.cluster.x-k8s.io/capo-strict-security-group-rules";
/// Label that makes `clusterctl move` pick up an object it does not reach by owner references.
pub const CLUSTERCTL_MOVE_LABEL: &str = "clusterctl.cluster.x-k8s.io/move";
/// CRD label declaring which served version satisfies the Cluster API v1beta1 contract.
pub const CONTRACT_LABEL_V1BETA1: &str = "cluster.x-k8s.io/v1beta1";

/// Condition types (Cluster API v1beta1 style).
pub mod condition_types {
    /// Summary condition of every kind.
    pub const READY: &str = "Ready";
    /// Cluster network and subnets exist.
    pub const NETWORK_READY: &str = "NetworkReady";
    /// Cluster router exists.
    pub const ROUTER_READY: &str = "RouterReady";
    /// Managed security groups exist with the desired rules.
    pub const SECURITY_GROUPS_READY: &str = "SecurityGroupsReady";
    /// The Kubernetes API endpoint (load balancer or floating IP) is in place.
    pub const API_ENDPOINT_READY: &str = "APIEndpointReady";
    /// The Nova server exists and is active.
    pub const INSTANCE_READY: &str = "InstanceReady";
    /// The machine receives API traffic (load balancer member or floating IP).
    pub const API_SERVER_INGRESS_READY: &str = "APIServerIngressReadyCondition";
    /// The server's floating IP from an OpenStackFloatingIPPool is assigned.
    pub const FLOATING_ADDRESS_FROM_POOL_READY: &str = "FloatingAddressFromPoolReady";
    /// An OpenStackFloatingIPPool can serve claims (upstream's spelling).
    pub const FLOATING_IP_POOL_READY: &str = "OpenstackFloatingIPPoolReadyCondition";
    /// The object's OpenStack credentials work (upstream v0.15's condition, on every kind
    /// that uses credentials).
    pub const OPENSTACK_AUTHENTICATION_SUCCEEDED: &str = "OpenStackAuthenticationSucceeded";
}

/// Condition reasons (Cluster API v1beta1 style).
pub mod condition_reasons {
    /// The OpenStackCluster is not ready yet.
    pub const WAITING_FOR_CLUSTER_INFRASTRUCTURE: &str = "WaitingForClusterInfrastructure";
    /// The Machine has no bootstrap data secret yet.
    pub const WAITING_FOR_BOOTSTRAP_DATA: &str = "WaitingForBootstrapData";
    /// The machine spec cannot be resolved.
    pub const INVALID_MACHINE_SPEC: &str = "InvalidMachineSpec";
    /// Creating the server failed.
    pub const INSTANCE_CREATE_FAILED: &str = "InstanceCreateFailed";
    /// The recorded server no longer exists.
    pub const INSTANCE_NOT_FOUND: &str = "InstanceNotFound";
    /// The server is in ERROR state.
    pub const INSTANCE_STATE_ERROR: &str = "InstanceStateError";
    /// The server was deleted outside the provider.
    pub const INSTANCE_DELETED: &str = "InstanceDeleted";
    /// An object this one depends on failed.
    pub const DEPENDENCY_FAILED: &str = "DependencyFailed";
    /// Adding the machine to the API load balancer failed.
    pub const LOAD_BALANCER_MEMBER_ERROR: &str = "LoadBalancerMemberError";
    /// Handling a floating IP failed.
    pub const FLOATING_IP_ERROR: &str = "FloatingIPError";
    /// An OpenStack call failed.
    pub const OPENSTACK_ERROR: &str = "OpenStackError";
    /// A floating IP pool reached `maxIPs` and allocates no more.
    pub const MAX_IPS_REACHED: &str = "MaxIPsReached";
    /// A floating IP pool's network cannot be resolved.
    pub const UNABLE_TO_FIND_NETWORK: &str = "UnableToFindNetwork";
    /// The credentials could not be used to authenticate with OpenStack (upstream v0.15's
    /// reason of a False `OpenStackAuthenticationSucceeded`).
    pub const OPENSTACK_AUTHENTICATION_FAILED: &str = "OpenStackAuthenticationFailed";
    /// Reason of a True `OpenStackAuthenticationSucceeded` (upstream v0.15's
    /// `ReadyConditionReason`).
    pub const READY: &str = "Ready";
}

/// Condition severities (Cluster API v1beta1).
pub mod condition_severities {
    /// Blocks progress.
    pub const ERROR: &str = "Error";
    /// Degraded but progressing.
    pub const WARNING: &str = "Warning";
    /// Informational.
    pub const INFO: &str = "Info";
}

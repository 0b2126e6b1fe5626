//! Types shared by the v1beta1 and v1alpha1 kinds.

mod bastion;
mod block_devices;
mod conditions;
mod filters;
mod identity;
mod load_balancer;
mod networking;
mod params;
mod ports;
mod references;
mod resolved;
mod scheduling;
mod security_groups;
mod status;

pub use bastion::{Bastion, BastionStatus};
pub use block_devices::{
    AdditionalBlockDevice, BlockDeviceStorage, BlockDeviceVolume, RootVolume, VolumeAZSource,
    VolumeAvailabilityZone,
};
pub use conditions::{Condition, Initialization};
pub use filters::{ImageFilter, NeutronFilter, ServerGroupFilter, SubnetFilter};
pub use identity::{IdentityRefType, OpenStackIdentityReference};
pub use load_balancer::{APIServerLoadBalancer, APIServerLoadBalancerMonitor};
pub use networking::{AllocationPool, ExternalRouterIPParam, SubnetSpec};
pub use params::{ImageParam, NetworkParam, ServerGroupParam, SubnetParam};
pub use ports::{AddressPair, BindingProfile, FixedIP, PortOpts, ValueSpec};
pub use references::{
    APIEndpoint, LocalObjectReference, MachineAddress, ResourceReference, TypedLocalObjectReference,
};
pub use resolved::{
    MachineResources, PortStatus, ResolvedFixedIP, ResolvedMachineSpec, ResolvedPortSpec,
};
pub use scheduling::{
    SchedulerHintAdditionalProperty, SchedulerHintAdditionalValue, SchedulerHintValueType,
    ServerMetadata,
};
pub use security_groups::{
    EtherType, ManagedSecurityGroupName, ManagedSecurityGroups, RuleDirection,
    SecurityGroupRuleSpec,
};
pub use status::{
    FailureDomainSpec, LoadBalancer, NetworkStatus, NetworkStatusWithSubnets, Router,
    SecurityGroupStatus, Subnet,
};

/// Selects a Neutron security group by ID or by filter (same shape as a network selector).
pub type SecurityGroupParam = NetworkParam;
/// Selects a Neutron router by ID or by filter (same shape as a network selector).
pub type RouterParam = NetworkParam;

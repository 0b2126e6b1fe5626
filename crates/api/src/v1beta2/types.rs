//! Sub-types of the v1beta2 kinds.
//!
//! Only the types whose schema changed from v1beta1 are defined here; the unchanged ones are
//! re-exported from [`crate::v1beta1`], so `v1beta2::X` names every type of this version.

mod api_server;
mod bastion;
mod block_devices;
mod conditions;
mod filters;
mod identity;
mod networking;
mod params;
mod ports;
mod references;
mod resolved;
mod scheduling;
mod security_groups;
mod status;

pub use api_server::{APIServer, APIServerLoadBalancer, APIServerLoadBalancerMonitor};
pub use bastion::{Bastion, BastionStatus};
pub use block_devices::{AdditionalBlockDevice, BlockDeviceStorage, BlockDeviceType, RootVolume};
pub use conditions::{Condition, conditions_schema, plain_conditions_schema};
pub use filters::{FlavorFilter, SubnetFilter};
pub use identity::OpenStackIdentityReference;
pub use networking::{
    AllocationPool, ExternalRouterIPParam, ManagedNetwork, ManagedRouter, SubnetSpec,
};
pub use params::{FlavorParam, ImageParam, ResourceReference, SubnetParam};
pub use ports::{AddressPair, FixedIP, PortOpts, ValueSpec};
pub use references::APIEndpoint;
pub use resolved::{MachineResources, PortStatus, ResolvedMachineSpec, ResolvedPortSpec};
pub use scheduling::{
    SchedulerHintAdditionalProperty, SchedulerHintAdditionalValue, ServerMetadata,
};
pub use security_groups::{ManagedSecurityGroups, SecurityGroupRuleSpec};
pub use status::{
    FailureDomain, LoadBalancer, NetworkStatus, NetworkStatusWithSubnets, Router,
    SecurityGroupStatus, Subnet,
};

// Unchanged from v1beta1: same Rust types, hence the same schema.
pub use crate::v1beta1::{
    BindingProfile, BlockDeviceVolume, EtherType, IdentityRefType, ImageFilter, Initialization,
    MachineAddress, ManagedSecurityGroupName, NetworkParam, NeutronFilter, NodeInfo,
    ResolvedFixedIP, RouterParam, RuleDirection, SchedulerHintValueType, SecurityGroupParam,
    ServerGroupFilter, ServerGroupParam, TypedLocalObjectReference, VolumeAZSource,
    VolumeAvailabilityZone,
};

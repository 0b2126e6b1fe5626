//! API group infrastructure.cluster.x-k8s.io/v1beta1: clusters, machines and their templates.

mod cluster;
mod cluster_template;
mod machine;
mod machine_template;
pub mod types;

pub use cluster::{DEFAULT_API_SERVER_PORT, OpenStackCluster};
pub use cluster::{OpenStackClusterSpec, OpenStackClusterStatus};
pub use cluster_template::OpenStackClusterTemplate;
pub use cluster_template::{OpenStackClusterTemplateResource, OpenStackClusterTemplateSpec};
pub use machine::OpenStackMachine;
pub use machine::{OpenStackMachineSpec, OpenStackMachineStatus};
pub use machine_template::OpenStackMachineTemplate;
pub use machine_template::{
    NodeInfo, OpenStackMachineTemplateResource, OpenStackMachineTemplateSpec,
    OpenStackMachineTemplateStatus,
};
pub use types::*;

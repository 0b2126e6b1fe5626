//! API group infrastructure.cluster.x-k8s.io/v1beta2: clusters, machines and their templates.
//!
//! The version upstream CAPO serves from v0.15 on. It is not served by this provider yet (that
//! needs a conversion webhook); [`crds`] renders the four CRDs of this version for tests and
//! for the later merge with v1beta1. Types whose schema did not change are shared with
//! [`crate::v1beta1`] and re-exported here, so `v1beta2::X` names every type of the version.

mod cluster;
mod cluster_template;
mod machine;
mod machine_template;
pub mod types;

pub use cluster::{OpenStackCluster, OpenStackClusterSpec, OpenStackClusterStatus};
pub use cluster_template::{
    OpenStackClusterTemplate, OpenStackClusterTemplateResource, OpenStackClusterTemplateSpec,
    TemplateMetadata,
};
pub use machine::{OpenStackMachine, OpenStackMachineSpec, OpenStackMachineStatus};
pub use machine_template::{
    OpenStackMachineTemplate, OpenStackMachineTemplateResource, OpenStackMachineTemplateSpec,
    OpenStackMachineTemplateStatus,
};
pub use types::*;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The v1beta2 CRDs of OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine and
/// OpenStackMachineTemplate, each holding only this version, normalized as
/// [`crate::crds::all`] normalizes the served ones.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut crds = vec![
        OpenStackCluster::crd(),
        OpenStackClusterTemplate::crd(),
        OpenStackMachine::crd(),
        OpenStackMachineTemplate::crd(),
    ];
    crate::crds::finish(&mut crds);
    crds
}

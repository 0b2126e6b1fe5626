//! OpenStackServer: a standalone server.

use crate::v1beta1::{
    AdditionalBlockDevice, Condition, ImageParam, LocalObjectReference, MachineAddress,
    MachineResources, NetworkParam, OpenStackIdentityReference, PortOpts, ResolvedMachineSpec,
    RootVolume, SchedulerHintAdditionalProperty, ServerGroupParam, ServerMetadata,
    TypedLocalObjectReference,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a standalone Nova server managed by the provider.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
// Each `printcolumn(...)` repeats the same keys, which this lint mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1alpha1",
    kind = "OpenStackServer",
    plural = "openstackservers"
)]
#[kube(
    namespaced,
    status = "OpenStackServerStatus",
    shortname = "oss",
    category = "cluster-api"
)]
#[kube(doc = "Standalone Nova server managed by the provider (used for the bastion).")]
#[kube(label("cluster.x-k8s.io/v1beta1", "v1beta1"), derive = "PartialEq")]
#[kube(printcolumn(
    name = "InstanceState",
    type_ = "string",
    json_path = ".status.instanceState",
    description = "Nova server state"
))]
#[kube(printcolumn(
    name = "Ready",
    type_ = "string",
    json_path = ".status.ready",
    description = "Server ready"
))]
#[kube(printcolumn(
    name = "InstanceID",
    type_ = "string",
    json_path = ".status.instanceID",
    description = "Nova server ID"
))]
#[kube(printcolumn(
    name = "Age",
    type_ = "date",
    json_path = ".metadata.creationTimestamp",
    description = "Time since creation"
))]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "at least one of flavor or flavorID must be set", "rule": "(has(self.flavor) || has(self.flavorID))"}]))]
pub struct OpenStackServerSpec {
    /// Disks attached to the server besides the root disk.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub additional_block_devices: Vec<AdditionalBlockDevice>,
    /// Nova availability zone of the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    /// Attach a config drive to the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_drive: Option<bool>,
    /// Flavor name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1))]
    pub flavor: Option<String>,
    /// Flavor ID; takes precedence over the flavor name.
    #[serde(rename = "flavorID", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1))]
    pub flavor_id: Option<String>,
    /// Pool from which the machine takes its floating IP.
    #[serde(rename = "floatingIPPoolRef", skip_serializing_if = "Option::is_none")]
    pub floating_ip_pool_ref: Option<TypedLocalObjectReference>,
    /// Credentials used for every OpenStack call of this object.
    pub identity_ref: OpenStackIdentityReference,
    /// Image to boot from.
    pub image: ImageParam,
    /// Ports of the server.
    pub ports: Vec<PortOpts>,
    /// Boot from a Cinder volume of this size and type instead of the flavor disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_volume: Option<RootVolume>,
    /// Extra Nova scheduler hints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub scheduler_hint_additional_properties: Vec<SchedulerHintAdditionalProperty>,
    /// Security groups applied to every port without its own list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_groups: Vec<NetworkParam>,
    /// Nova server group the server joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_group: Option<ServerGroupParam>,
    /// Nova metadata of the server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["key"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub server_metadata: Vec<ServerMetadata>,
    /// Nova key pair injected into the server.
    pub ssh_key_name: String,
    /// Tags added to the server and its ports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Create a Neutron trunk for the port(s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trunk: Option<bool>,
    /// Secret holding the user data (cloud-init) of the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_data_ref: Option<LocalObjectReference>,
}

/// Observed state of an OpenStackServer.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::require(&["ready"]))]
pub struct OpenStackServerStatus {
    /// Addresses of the server, reported to the Cluster API Machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<MachineAddress>,
    /// Cluster API v1beta1 conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Nova server ID.
    #[serde(rename = "instanceID", skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// Nova server state (ACTIVE, ERROR, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_state: Option<String>,
    /// The resource is ready for use.
    #[serde(default)]
    pub ready: bool,
    /// Spec with all references resolved, written with the first status write after the
    /// resolution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolvedMachineSpec>,
    /// OpenStack resources created so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<MachineResources>,
}

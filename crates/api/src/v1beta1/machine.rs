//! OpenStackMachine: spec and status.

use crate::extensions::{OpenStackMachineExtensions, OpenStackMachineStatusExtensions};
use crate::v1beta1::{
    AdditionalBlockDevice, Condition, ImageParam, Initialization, MachineAddress, MachineResources,
    NetworkParam, OpenStackIdentityReference, PortOpts, ResolvedMachineSpec, RootVolume,
    SchedulerHintAdditionalProperty, ServerGroupParam, ServerMetadata, TypedLocalObjectReference,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of one Nova server backing a Cluster API Machine.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
// Each `printcolumn(...)` repeats the same keys, which this lint mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "OpenStackMachine",
    plural = "openstackmachines"
)]
#[kube(
    namespaced,
    status = "OpenStackMachineStatus",
    shortname = "osm",
    category = "cluster-api"
)]
#[kube(doc = "Nova server backing one Cluster API Machine.")]
#[kube(label("cluster.x-k8s.io/v1beta1", "v1beta1"), derive = "PartialEq")]
#[kube(printcolumn(
    name = "Cluster",
    type_ = "string",
    json_path = r".metadata.labels.cluster\.x-k8s\.io/cluster-name",
    description = "Owning Cluster API Cluster"
))]
#[kube(printcolumn(
    name = "Ready",
    type_ = "string",
    json_path = ".status.ready",
    description = "Server ready"
))]
#[kube(printcolumn(
    name = "ProviderID",
    type_ = "string",
    json_path = ".spec.providerID",
    description = "Provider ID of the server"
))]
#[kube(printcolumn(
    name = "Machine",
    type_ = "string",
    json_path = r#".metadata.ownerReferences[?(@.kind=="Machine")].name"#,
    description = "Owning Cluster API Machine"
))]
#[kube(printcolumn(
    name = "Age",
    type_ = "date",
    json_path = ".metadata.creationTimestamp",
    description = "Time since creation"
))]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "at least one of flavor or flavorID must be set", "rule": "(has(self.flavor) || has(self.flavorID))"}]))]
pub struct OpenStackMachineSpec {
    /// Disks attached to the server besides the root disk.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub additional_block_devices: Vec<AdditionalBlockDevice>,
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
    pub floating_ip_pool_ref: Option<Box<TypedLocalObjectReference>>,
    /// Credentials used for every OpenStack call of this object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_ref: Option<Box<OpenStackIdentityReference>>,
    /// Image to boot from.
    pub image: ImageParam,
    /// Ports of the server; one port on the cluster network when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortOpts>,
    /// Cluster API provider ID (openstack:///<server id>).
    #[serde(rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Boot from a Cinder volume of this size and type instead of the flavor disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_volume: Option<Box<RootVolume>>,
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
    pub server_group: Option<Box<ServerGroupParam>>,
    /// Nova metadata of the server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["key"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub server_metadata: Vec<ServerMetadata>,
    /// Nova key pair injected into the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_key_name: Option<String>,
    /// Tags added to the server and its ports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Create a Neutron trunk for the port(s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trunk: Option<bool>,
    /// BA/ACP extensions of a machine (not part of upstream CAPO); ignored on the bastion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Box<OpenStackMachineExtensions>>,
}

/// Observed state of an OpenStackMachine, written by the provider.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineStatus {
    /// Addresses of the server, reported to the Cluster API Machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<MachineAddress>,
    /// Cluster API v1beta1 conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Human-readable terminal error (Cluster API v1beta1 contract).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Machine-readable terminal error (Cluster API v1beta1 contract).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// Initialization milestones (Cluster API v1beta2 contract).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initialization: Option<Initialization>,
    /// Nova server ID.
    #[serde(rename = "instanceID", skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// Nova server state (ACTIVE, ERROR, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_state: Option<String>,
    /// Server is active and ready (Cluster API v1beta1 contract).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Spec with all references resolved, written with the first status write after the
    /// resolution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolvedMachineSpec>,
    /// OpenStack resources created so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<MachineResources>,
    /// Values the provider derived for BA/ACP for this machine (not part of upstream CAPO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Box<OpenStackMachineStatusExtensions>>,
}

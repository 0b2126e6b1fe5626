//! OpenStackMachine v1beta2: spec and status.

use crate::extensions::{OpenStackMachineExtensions, OpenStackMachineStatusExtensions};
use crate::v1beta2::{
    AdditionalBlockDevice, Condition, FlavorParam, ImageParam, Initialization, MachineAddress,
    MachineResources, NetworkParam, OpenStackIdentityReference, PortOpts, ResolvedMachineSpec,
    RootVolume, SchedulerHintAdditionalProperty, ServerGroupParam, ServerMetadata,
    TypedLocalObjectReference,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired Nova server behind one Cluster API Machine.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
// Each `printcolumn(...)` repeats the same keys, which this lint mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "OpenStackMachine",
    plural = "openstackmachines"
)]
#[kube(
    namespaced,
    status = "OpenStackMachineStatus",
    shortname = "osm",
    category = "cluster-api"
)]
#[kube(doc = "The Nova server of one Cluster API Machine (v1beta2).")]
#[kube(label("cluster.x-k8s.io/v1beta2", "v1beta2"), derive = "PartialEq")]
#[kube(printcolumn(
    name = "Cluster",
    type_ = "string",
    json_path = r".metadata.labels.cluster\.x-k8s\.io/cluster-name",
    description = "Owning Cluster API Cluster"
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
pub struct OpenStackMachineSpec {
    /// Disks to attach besides the root disk, keyed by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub additional_block_devices: Vec<AdditionalBlockDevice>,
    /// Whether Nova attaches a config drive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_drive: Option<bool>,
    /// Flavor of the server, by ID or filter (v1beta1: the strings `flavor` and `flavorID`).
    pub flavor: FlavorParam,
    /// OpenStackFloatingIPPool the machine's floating IP comes from.
    #[serde(rename = "floatingIPPoolRef", skip_serializing_if = "Option::is_none")]
    pub floating_ip_pool_ref: Option<TypedLocalObjectReference>,
    /// Credentials for this machine's OpenStack calls; the cluster's when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_ref: Option<OpenStackIdentityReference>,
    /// Image the server boots.
    pub image: ImageParam,
    /// Ports of the server; a single port on the cluster network when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub ports: Vec<PortOpts>,
    /// Cluster API provider ID (`openstack:///<server UUID>`), set by the provider.
    #[serde(rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Boot from a new Cinder volume rather than the flavor's disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_volume: Option<RootVolume>,
    /// Custom Nova scheduler hints, keyed by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub scheduler_hint_additional_properties: Vec<SchedulerHintAdditionalProperty>,
    /// Security groups of every port that does not list its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub security_groups: Vec<NetworkParam>,
    /// Nova server group to join.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_group: Option<ServerGroupParam>,
    /// Nova metadata of the server, keyed by key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["key"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub server_metadata: Vec<ServerMetadata>,
    /// Nova key pair to inject.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_key_name: Option<String>,
    /// Tags of the server and of its ports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Whether each port gets a Neutron trunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trunk: Option<bool>,
    /// BA/ACP extensions of a machine (not part of upstream CAPO); ignored on the bastion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<OpenStackMachineExtensions>,
}

/// Observed server, written by the provider.
///
/// v1beta2 has no `ready`, `failureReason` or `failureMessage`: readiness is the `Ready`
/// condition and `initialization.provisioned`.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineStatus {
    /// Addresses of the server, copied to the Cluster API Machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub addresses: Vec<MachineAddress>,
    /// Standard Kubernetes conditions, one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::v1beta2::conditions_schema")]
    pub conditions: Vec<Condition>,
    /// Cluster API v1beta2 contract milestones (`provisioned`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initialization: Option<Initialization>,
    /// Server UUID.
    #[serde(rename = "instanceID", skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// Nova state of the server (ACTIVE, ERROR, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_state: Option<String>,
    /// The spec with every reference resolved to an ID, recorded once resolution succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolvedMachineSpec>,
    /// OpenStack resources created for the server so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<MachineResources>,
    /// Values the provider derived for BA/ACP for this machine (not part of upstream CAPO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<OpenStackMachineStatusExtensions>,
}

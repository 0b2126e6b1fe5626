//! OpenStackServer: a standalone server.
//!
//! As upstream CAPO main (v0.15), the spec and status are made of v1beta2's shared types and
//! the conditions are standard `metav1.Condition`s; the flavor stays a pair of strings.
//! Objects written by upstream v0.14 or capo 0.1 (v1beta1's shared types) still read: their
//! conditions' severity is dropped and a missing reason or message reads as empty, and a port's
//! `disablePortSecurity` is kept in a capo-only legacy field ([`PortOpts`]).
//!
//! The controllers derive servers from v1beta1 machine specs and call the cloud with v1beta1
//! shapes; [`crate::conversion::server`] converts between the two.

use crate::v1beta1::LocalObjectReference;
use crate::v1beta2::{
    self, AdditionalBlockDevice, Condition, ImageParam, MachineAddress, NetworkParam,
    OpenStackIdentityReference, RootVolume, SchedulerHintAdditionalProperty, ServerGroupParam,
    ServerMetadata, TypedLocalObjectReference,
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
    pub floating_ip_pool_ref: Option<Box<TypedLocalObjectReference>>,
    /// Credentials used for every OpenStack call of this object.
    pub identity_ref: OpenStackIdentityReference,
    /// Image to boot from.
    pub image: ImageParam,
    /// Ports of the server.
    pub ports: Vec<PortOpts>,
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
    /// Standard Kubernetes conditions (InstanceReady, Ready, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::v1beta2::plain_conditions_schema")]
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
    pub resolved: Option<ResolvedServerSpec>,
    /// OpenStack resources created so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ServerResources>,
}

/// Settings of one Neutron port of an OpenStackServer: v1beta2's port options plus capo's
/// legacy `disablePortSecurity`.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PortOpts {
    /// Upstream main's port options (with `enablePortSecurity`).
    #[serde(flatten)]
    pub opts: v1beta2::PortOpts,
    /// Deprecated: the v1beta1 form of `enablePortSecurity` (true disables port security),
    /// kept so that servers written by upstream v0.14 or capo 0.1 keep their setting; used only
    /// when `enablePortSecurity` is unset. New servers use `enablePortSecurity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_port_security: Option<bool>,
}

impl PortOpts {
    /// Whether port security is on: `enablePortSecurity`, else the negated legacy
    /// `disablePortSecurity`, else unset (the network's default).
    pub fn port_security_enabled(&self) -> Option<bool> {
        effective_port_security(self.opts.enable_port_security, self.disable_port_security)
    }
}

/// `status.resolved` of an OpenStackServer: the spec's references resolved to IDs.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedServerSpec {
    /// Resolved flavor ID.
    #[serde(rename = "flavorID", skip_serializing_if = "Option::is_none")]
    pub flavor_id: Option<String>,
    /// Resolved image ID.
    #[serde(rename = "imageID", skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// Ports to create, fully resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ResolvedPortSpec>,
    /// Resolved server group ID.
    #[serde(rename = "serverGroupID", skip_serializing_if = "Option::is_none")]
    pub server_group_id: Option<String>,
}

/// `status.resources` of an OpenStackServer: what was created so far, so deletion finds it.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ServerResources {
    /// Ports created for the server, in spec order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<v1beta2::PortStatus>,
}

/// A resolved port of an OpenStackServer: v1beta2's resolved port plus the legacy
/// `disablePortSecurity` of servers resolved by upstream v0.14 or capo 0.1.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedPortSpec {
    /// Upstream main's resolved port (with `enablePortSecurity`).
    #[serde(flatten)]
    pub spec: v1beta2::ResolvedPortSpec,
    /// Deprecated: the v1beta1 form of `enablePortSecurity`, as resolved by upstream v0.14 or
    /// capo 0.1; used only when `enablePortSecurity` is unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_port_security: Option<bool>,
}

impl ResolvedPortSpec {
    /// Whether port security is on, as [`PortOpts::port_security_enabled`].
    pub fn port_security_enabled(&self) -> Option<bool> {
        effective_port_security(self.spec.enable_port_security, self.disable_port_security)
    }
}

/// `enablePortSecurity` wins; the legacy `disablePortSecurity` counts only without it.
fn effective_port_security(enable: Option<bool>, legacy_disable: Option<bool>) -> Option<bool> {
    enable.or(legacy_disable.map(|d| !d))
}

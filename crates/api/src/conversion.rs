//! Lossless conversion of OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine and
//! OpenStackMachineTemplate between `v1beta1` and `v1beta2` (the hub, and the storage
//! version).
//!
//! [`convert`] is the JSON entry point for the conversion webhook; the typed functions
//! ([`cluster_to_v1beta2`], [`cluster_to_v1beta1`], ...) do the same for typed objects.
//!
//! [`server`] uses the same field conversions for the v1alpha1 OpenStackServer, whose spec and
//! status are made of v1beta2's shared types: the controllers derive servers from v1beta1
//! machine specs and call the cloud with v1beta1's shapes. (No API version is converted there.)
//!
//! # Lossless both ways
//!
//! Converting an object to the other version and back gives the same JSON value (after the
//! object is read into its typed struct, which is how the API server's defaulting and pruning
//! leave it). What the target version cannot hold travels in the annotation
//! [`CONVERSION_DATA_ANNOTATION`] (`cluster.x-k8s.io/conversion-data`, the key Cluster API and
//! upstream CAPO use) on the converted object; see the `annotation` module for the format. The
//! annotation is written only when something must travel, and removed when the object is
//! converted back and the data restored. Every conversion checks this by converting its result
//! back; if that does not give the source exactly, the conversion is refused.
//!
//! Carried from v1beta1 to v1beta2 (written on the v1beta2 object): `status.ready` where it
//! differs from the `Ready` condition (with the conditions it contradicts, so that it is not
//! restored once they changed), `status.failureReason`, `status.failureMessage`, the conditions
//! with a `severity` (or with a reason or message that v1beta2's stand-ins would not bring
//! back), and the `flavor` name of a machine spec that also sets `flavorID` (with that ID).
//!
//! Carried from v1beta2 to v1beta1 (written on the v1beta1 object):
//! `spec.template.metadata` of a cluster template, conditions whose `observedGeneration` is not
//! the object's generation, an unset `identityRef.type`, `managedSecurityGroups
//! .allowAllInClusterTraffic` or `managedLoadBalancer.enabled` (v1beta1 requires them), an
//! empty `apiServer`, `managedNetwork` or `managedRouter`, the order of unsorted
//! `failureDomains`, and an empty resolved port `description`.
//!
//! # Paths
//!
//! - There and back without changes: everything carried is restored and the annotation is
//!   removed, in both directions (v1beta1→v1beta2→v1beta1 and v1beta2→v1beta1→v1beta2).
//! - There, changed in the other version, and back: each carried field (or condition) is
//!   restored only where it still agrees with the object; data about something the other
//!   version's client changed is dropped. Fields the other version cannot see at all
//!   (`failureReason`, template metadata, ...) always come back. The
//!   annotation is removed either way.
//! - There and read in that same version: conversion is the identity, so clients of the
//!   target version see the annotation; it is bookkeeping, like Cluster API's.
//! - An annotation under the key that does not hold data for the version being converted to
//!   (an older API version's, another kind's, or unparsable) is left alone; if ours has to be
//!   written, or if it holds data of the source version (and so would be taken for ours on
//!   the way back), it rides inside ours and is put back on the way back.
//! - Upstream CAPO's annotations (the whole source object) are read the same way: only the
//!   fields that still agree with the object are restored.
//!
//! # Refused
//!
//! A conversion fails with a [`ConversionError`] naming the field when the source cannot be
//! read into its typed struct, or when it has no faithful form in the target version: a
//! machine spec without `flavor` and `flavorID`, a v1beta2 flavor that is not exactly one of
//! `id` or `filter.name`, an additional block device whose storage type is neither `Local` nor
//! `Volume`, conditions repeating a type, failure domains repeating a name, and (by the final
//! check) anything else that would not come back unchanged. Values nested deeper than
//! [`MAX_DEPTH`] are refused before anything else is done with them.
//!
//! Schema bounds that do not affect the mapping (string lengths, patterns, list sizes) are
//! not re-checked here: the API server validates objects in the version they are written in.

mod annotation;
mod carry;
mod cluster;
mod cluster_spec;
mod cluster_status;
mod cluster_template;
mod conditions;
mod dispatch;
mod engine;
mod error;
mod flavor;
mod identity;
mod json_path;
mod limits;
mod machine;
mod machine_spec;
mod machine_status;
mod machine_template;
mod ports;
mod recast;
mod restore;
pub mod server;
mod versions;

pub use annotation::CONVERSION_DATA_ANNOTATION;
pub use cluster::{cluster_to_v1beta1, cluster_to_v1beta2};
pub use cluster_template::{cluster_template_to_v1beta1, cluster_template_to_v1beta2};
pub use conditions::NO_REASON;
pub use dispatch::convert;
pub use error::ConversionError;
pub use limits::MAX_DEPTH;
pub use machine::{machine_to_v1beta1, machine_to_v1beta2};
pub use machine_template::{machine_template_to_v1beta1, machine_template_to_v1beta2};

/// A v1beta1 kind that is stored as v1beta2, read by a client in this process.
pub trait StoredForm: Sized {
    /// The kind's type in the storage version.
    type Stored: serde::de::DeserializeOwned;
    /// `stored` in this version: the plain conversion, or the full one when the object
    /// carries conversion data to restore.
    fn from_stored(stored: Self::Stored) -> Result<Self, ConversionError>;
}

macro_rules! stored_form {
    ($($old:ty => $new:ty, $pair:ty);* $(;)?) => {$(
        impl StoredForm for $old {
            type Stored = $new;
            fn from_stored(stored: Self::Stored) -> Result<Self, ConversionError> {
                engine::read_down::<$pair>(stored)
            }
        }
    )*};
}

stored_form! {
    crate::v1beta1::OpenStackCluster => crate::v1beta2::OpenStackCluster, cluster::Cluster;
    crate::v1beta1::OpenStackClusterTemplate => crate::v1beta2::OpenStackClusterTemplate,
        cluster_template::ClusterTemplate;
    crate::v1beta1::OpenStackMachine => crate::v1beta2::OpenStackMachine, machine::Machine;
    crate::v1beta1::OpenStackMachineTemplate => crate::v1beta2::OpenStackMachineTemplate,
        machine_template::MachineTemplate;
}

/// A kind stored as v1beta2 whose status a client in this process writes in v1beta1's form.
pub trait StoredStatus: StoredForm {
    /// The kind's v1beta1 status.
    type Status;
    /// The kind's status in the storage version.
    type WireStatus: serde::Serialize;
    /// `status` of an object at `generation` as the status subresource stores it: the plain
    /// conversion. What only v1beta1 can hold (condition severities, `failureReason`) has
    /// nowhere to go, since the status subresource writes no annotation; what v1beta2
    /// cannot express at all is refused, naming the field.
    fn status_to_stored(
        status: &Self::Status,
        generation: Option<i64>,
    ) -> Result<Self::WireStatus, ConversionError>;
}

macro_rules! stored_status {
    ($($old:ty => $status:ty, $wire:ty, $convert:path);* $(;)?) => {$(
        impl StoredStatus for $old {
            type Status = $status;
            type WireStatus = $wire;
            fn status_to_stored(
                status: &Self::Status,
                generation: Option<i64>,
            ) -> Result<Self::WireStatus, ConversionError> {
                $convert(status, generation)
            }
        }
    )*};
}

stored_status! {
    crate::v1beta1::OpenStackCluster => crate::v1beta1::OpenStackClusterStatus,
        crate::v1beta2::OpenStackClusterStatus, cluster_status::to_v1beta2;
    crate::v1beta1::OpenStackMachine => crate::v1beta1::OpenStackMachineStatus,
        crate::v1beta2::OpenStackMachineStatus, machine_status::to_v1beta2;
    crate::v1beta1::OpenStackMachineTemplate => crate::v1beta1::OpenStackMachineTemplateStatus,
        crate::v1beta2::OpenStackMachineTemplateStatus, machine_status::template_to_v1beta2;
}

#[cfg(test)]
mod tests;

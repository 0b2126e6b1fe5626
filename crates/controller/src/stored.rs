//! The v1beta1/v1beta2 kinds as the controllers read and write them: in the storage version,
//! v1beta2, so neither capo's watches nor Cluster API's go through the conversion webhook.
//!
//! The controllers' logic works on the v1beta1 structs. [`Stored`] carries one of them and
//! speaks v1beta2 on the wire: each object read is decoded as v1beta2 and converted in process,
//! once (watch event or GET), with the webhook's field conversions (the full conversion only
//! for an object carrying conversion data: [`StoredForm`]); each status
//! written is converted back ([`wire_status`]). What only v1beta1 can hold (condition
//! severities, `failureReason`) cannot be written through the status subresource, so it is
//! dropped on the way out, as the v1beta2 contract has it; the lifecycle compares statuses as
//! the API server would store them, so such a difference never causes a write.

use std::borrow::Cow;
use std::ops::{Deref, DerefMut};

use capo_api::conversion::{StoredForm, StoredStatus, convert};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// The storage version of the four kinds that have two.
pub const STORED_VERSION: &str = capo_api::crds::STORAGE_VERSION;

/// A v1beta1 object of a kind stored in v1beta2, read and written in v1beta2.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored<T>(pub T);

impl<T> Deref for Stored<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Stored<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: Resource<DynamicType = ()>> Resource for Stored<T> {
    type DynamicType = ();
    type Scope = T::Scope;

    fn kind(_: &()) -> Cow<'_, str> {
        T::kind(&())
    }
    fn group(_: &()) -> Cow<'_, str> {
        T::group(&())
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(STORED_VERSION)
    }
    fn plural(_: &()) -> Cow<'_, str> {
        T::plural(&())
    }
    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

impl<'de, T> Deserialize<'de> for Stored<T>
where
    T: StoredForm,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        // Decoded straight into the storage version's struct (list items come without their
        // type; the struct does not need it), then converted.
        let stored = T::Stored::deserialize(d)?;
        T::from_stored(stored).map(Stored).map_err(D::Error::custom)
    }
}

impl<T> Serialize for Stored<T>
where
    T: Resource<DynamicType = ()> + Serialize,
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let value = serde_json::to_value(&self.0).map_err(S::Error::custom)?;
        let stored = convert(&Self::api_version(&()), value).map_err(S::Error::custom)?;
        stored.serialize(s)
    }
}

/// `status` of `obj` in the storage version ([`StoredStatus::status_to_stored`]).
pub fn wire_status<T>(obj: &T, status: &T::Status) -> Result<Value>
where
    T: StoredStatus + Resource<DynamicType = ()>,
{
    let meta = obj.meta();
    let stored = T::status_to_stored(status, meta.generation).map_err(|e| {
        Error::InvalidSpec(format!(
            "the status of {} {} has no {STORED_VERSION} form: {e}",
            T::kind(&()),
            meta.name.as_deref().unwrap_or_default()
        ))
    })?;
    serde_json::to_value(stored).map_err(|source| Error::Serialize {
        what: "status",
        source,
    })
}

/// The objects of kind `T` that own `owned`: matched by group and kind, whatever the version
/// in the owner reference (capo 0.1 and upstream v0.14 wrote `v1beta1` there; Kubernetes'
/// garbage collector also ignores the version). For a controller's `watches_shared_stream`,
/// where `owns` would compare the stored version with the reference's.
pub fn owners_of<T, O>(owned: &O) -> Vec<kube::runtime::reflector::ObjectRef<Stored<T>>>
where
    T: Resource<DynamicType = ()>,
    O: Resource,
{
    let group = T::group(&());
    let prefix = format!("{group}/");
    let namespace = owned.meta().namespace.clone();
    (owned.meta().owner_references.iter().flatten())
        .filter(|r| r.kind == T::kind(&()) && r.api_version.starts_with(&prefix))
        .map(|r| {
            let obj = kube::runtime::reflector::ObjectRef::new(&r.name);
            match &namespace {
                Some(ns) => obj.within(ns),
                None => obj,
            }
        })
        .collect()
}

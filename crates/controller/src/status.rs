//! Writing status and spec fields: status by server-side apply with one field manager, so
//! fields this provider stops setting are removed; `spec.controlPlaneEndpoint` by merge patch
//! (set once, never moved).

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::FIELD_MANAGER;
use crate::error::{Error, Result};

/// Server-side apply `status` on `name`.
pub async fn apply_status<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize,
{
    let status = serde_json::to_value(status).map_err(|source| Error::Serialize {
        what: "status",
        source,
    })?;
    let body = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await
    .map_err(|e| Error::kube(format!("apply status of {} {name}", K::kind(&())), e))?;
    Ok(())
}

/// JSON merge patch on the main resource (spec or metadata).
pub async fn merge_patch<K>(api: &Api<K>, name: &str, patch: serde_json::Value) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..Default::default()
        },
        &Patch::Merge(patch),
    )
    .await
    .map_err(|e| Error::kube(format!("patch {} {name}", K::kind(&())), e))
}

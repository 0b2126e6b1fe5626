//! Steady reconciles of an ACTIVE server cost one OpenStack request: a GET of the recorded
//! server, which is what detects an out-of-band deletion or a server gone to ERROR.

use capo_api::v1alpha1::{OpenStackServer, OpenStackServerStatus};
use capo_openstack::Session;

use crate::context::Context;
use crate::error::Result;
use crate::fingerprint::{Digest, Fingerprint};
use crate::memo::{Key, Part};

/// Fingerprint of what a converged reconcile depended on: UID, generation, spec, and the status
/// without conditions.
pub(super) fn fingerprint(oss: &OpenStackServer, status: &OpenStackServerStatus) -> Result<Digest> {
    let mut status = status.clone();
    status.conditions.clear();
    let mut h = Fingerprint::new();
    h.bytes(oss.metadata.uid.as_deref().unwrap_or_default());
    h.bytes(oss.metadata.generation.unwrap_or_default().to_le_bytes());
    h.json(&oss.spec)?.json(&status)?;
    Ok(h.finish())
}

/// True when the server converged with this fingerprint, was verified within the period, and
/// is still ACTIVE. Anything else drops the memo: the caller runs a full reconcile.
pub(super) async fn is_steady(
    ctx: &Context,
    key: &Key,
    fp: &Digest,
    instance_id: &str,
    s: &Session,
) -> Result<bool> {
    if ctx.memo.fresh(key, Part::Object, fp).is_none() {
        return Ok(false);
    }
    match capo_cloud::instance::get_server(s, instance_id).await? {
        Some(v) if v.status == "ACTIVE" => Ok(true),
        Some(v) => {
            tracing::info!(id = %instance_id, status = %v.status, "server changed state; full reconcile");
            ctx.memo.forget(key);
            Ok(false)
        }
        None => {
            ctx.memo.forget(key);
            Ok(false)
        }
    }
}

//! One admission request → one verdict: decode the objects, pick the rule set for the
//! operation, answer in the API server's error format.

use capo_api::decode::from_value;
use capo_api::validation::{UpdateContext, Validate, ValidationErrors};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::kinds::Webhook;
use crate::review::{AdmissionRequest, AdmissionResponse, Status};
use crate::status::{self, Subject};

/// Annotation the Cluster API topology controller puts on the objects of its dry runs.
pub const TOPOLOGY_DRY_RUN_ANNOTATION: &str = "topology.cluster.x-k8s.io/dry-run";

/// Reviews `request` with the rules of `T`.
pub(crate) fn review<T: Validate + DeserializeOwned>(
    hook: &Webhook,
    request: &AdmissionRequest,
) -> AdmissionResponse {
    let status = judge::<T>(hook, request).err().map(|status| *status);
    AdmissionResponse {
        uid: request.uid.clone(),
        allowed: status.is_none(),
        status,
    }
}

fn judge<T: Validate + DeserializeOwned>(
    hook: &Webhook,
    request: &AdmissionRequest,
) -> Result<(), Box<Status>> {
    if request.kind.group != hook.group || request.kind.kind != hook.kind {
        return Err(Box::new(status::bad_request(format!(
            "this webhook validates {}.{}, not {}.{}",
            hook.kind, hook.group, request.kind.kind, request.kind.group
        ))));
    }
    let subject = Subject {
        group: hook.group,
        kind: hook.kind,
        name: &request.name,
    };
    let invalid = |errors: ValidationErrors| Box::new(status::invalid(subject, &errors));
    match request.operation.as_str() {
        "CREATE" => {
            let new: T = decode(hook, request, request.object.as_ref(), "object")?;
            new.validate_create().map_err(invalid)
        }
        "UPDATE" => {
            let new: T = decode(hook, request, request.object.as_ref(), "object")?;
            let old = match decode::<T>(hook, request, request.old_object.as_ref(), "oldObject") {
                Ok(old) => old,
                // A stored object our types cannot read (written under another schema) must
                // not become impossible to update: its finalizer could never be removed. The
                // new object still gets every create rule; only the comparison is lost.
                Err(status) => {
                    tracing::warn!(webhook = hook.name, namespace = %request.namespace,
                        name = %request.name, reason = %status.message,
                        "stored object does not decode; validating the update as a create");
                    return new.validate_create().map_err(invalid);
                }
            };
            let context = UpdateContext {
                topology_dry_run: is_topology_dry_run(request),
            };
            let verdict = new.validate_update(&old, &context);
            ratchet(verdict, old.validate_create()).map_err(invalid)
        }
        // The configuration registers CREATE and UPDATE only; anything else has no rules.
        _ => Ok(()),
    }
}

/// Decodes one object of the request, naming the kind and the offending field on failure.
fn decode<T: DeserializeOwned>(
    hook: &Webhook,
    request: &AdmissionRequest,
    object: Option<&Value>,
    which: &str,
) -> Result<T, Box<Status>> {
    let Some(object) = object else {
        return Err(Box::new(status::bad_request(format!(
            "{} review of {} {:?} carries no {which}",
            request.operation, hook.kind, request.name
        ))));
    };
    from_value(object.clone()).map_err(|e| {
        Box::new(status::bad_request(format!(
            "cannot decode {which} as {}.{} {:?}: {e}",
            hook.kind, hook.group, request.name
        )))
    })
}

/// As upstream (Cluster API's `ShouldSkipImmutabilityChecks`): a dry-run request whose new
/// object carries the topology dry-run annotation comes from the topology controller's
/// rebase checks, which compare templates and must not trip template immutability.
fn is_topology_dry_run(request: &AdmissionRequest) -> bool {
    let annotated = request
        .object
        .as_ref()
        .and_then(|o| o.pointer("/metadata/annotations"))
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(TOPOLOGY_DRY_RUN_ANNOTATION));
    request.dry_run == Some(true) && annotated
}

/// Drops from an update's errors those the stored object already had ("ratcheting", as the
/// API server does for CRD schema rules): an object admitted under older or looser rules, for
/// instance one created by upstream CAPO, can still get its finalizer removed or its identity
/// rotated, as long as the update adds no new problem. Immutability errors never ratchet:
/// the stored object cannot have them.
fn ratchet(
    verdict: Result<(), ValidationErrors>,
    old: Result<(), ValidationErrors>,
) -> Result<(), ValidationErrors> {
    match (verdict, old) {
        (Err(new), Err(old)) => {
            let fresh = new.0.into_iter().filter(|e| !old.0.contains(e)).collect();
            ValidationErrors::into_result(fresh)
        }
        (verdict, _) => verdict,
    }
}

#[cfg(test)]
mod tests;

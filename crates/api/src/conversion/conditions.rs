//! Cluster API v1beta1 conditions against standard Kubernetes conditions, and the `ready`
//! flag v1beta1 derives from them.
//!
//! Upstream CAPO maps the two field by field: `severity` has no counterpart and is dropped,
//! `observedGeneration` is set to the object's `metadata.generation` on the way to v1beta2.
//! v1beta2 has no `status.deprecated.v1beta1.conditions` (Cluster API's own types have one;
//! upstream CAPO's CRDs do not), so there is no other place for the v1beta1 list.
//!
//! Where v1beta1 may omit a field that v1beta2 requires, a fixed stand-in takes its place and
//! maps back to "absent": a missing reason becomes [`NO_REASON`] (Cluster API's own word for
//! it, which keeps the condition valid against v1beta2's `minLength: 1`), a missing message
//! becomes the empty string. Everything else that does not map back (a severity, a literal
//! `NoReasonReported`, an observedGeneration other than the object's generation) travels in
//! the conversion-data annotation.

use crate::conversion::error::{ConversionError, join};
use crate::v1beta1;
use crate::v1beta2;
use std::collections::HashSet;

/// The reason given in v1beta2 to a v1beta1 condition that has none.
pub const NO_REASON: &str = "NoReasonReported";

/// Type of the condition whose status `ready` mirrors.
const READY: &str = "Ready";

/// v1beta1 conditions as v1beta2 conditions observed at `generation`.
pub(crate) fn to_v1beta2(
    conditions: &[v1beta1::Condition],
    generation: Option<i64>,
    path: &str,
) -> Result<Vec<v1beta2::Condition>, ConversionError> {
    unique_types(conditions.iter().map(|c| c.r#type.as_str()), path)?;
    Ok(conditions
        .iter()
        .map(|c| v1beta2::Condition {
            last_transition_time: c.last_transition_time.clone(),
            message: c.message.clone().unwrap_or_default(),
            observed_generation: generation,
            reason: c.reason.clone().unwrap_or_else(|| NO_REASON.to_owned()),
            status: c.status.clone(),
            type_: c.r#type.clone(),
        })
        .collect())
}

/// v1beta2 conditions as v1beta1 conditions (without severity).
pub(crate) fn to_v1beta1(
    conditions: &[v1beta2::Condition],
    path: &str,
) -> Result<Vec<v1beta1::Condition>, ConversionError> {
    unique_types(conditions.iter().map(|c| c.type_.as_str()), path)?;
    Ok(conditions
        .iter()
        .map(|c| v1beta1::Condition {
            last_transition_time: c.last_transition_time.clone(),
            message: Some(c.message.clone()).filter(|m| !m.is_empty()),
            reason: Some(c.reason.clone()).filter(|r| r != NO_REASON),
            severity: None,
            status: c.status.clone(),
            r#type: c.type_.clone(),
        })
        .collect())
}

/// v1beta1's `ready` as upstream derives it: the `Ready` condition's status is `True`.
/// `None` when there is no `Ready` condition.
pub(crate) fn ready(conditions: &[v1beta2::Condition]) -> Option<bool> {
    conditions
        .iter()
        .find(|c| c.type_ == READY)
        .map(|c| c.status == "True")
}

/// Refuses a list in which a type repeats: v1beta2 keys conditions by type.
fn unique_types<'a>(
    types: impl Iterator<Item = &'a str>,
    path: &str,
) -> Result<(), ConversionError> {
    let mut seen = HashSet::new();
    for (i, t) in types.enumerate() {
        if !seen.insert(t) {
            return Err(ConversionError::new(
                join(&join(path, &format!("[{i}]")), "type"),
                format!("repeats condition type {t:?}; v1beta2 allows one condition per type"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn time() -> Time {
        serde_json::from_value(serde_json::json!("2024-01-02T03:04:05Z"))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn v1(t: &str, reason: Option<&str>, message: Option<&str>) -> v1beta1::Condition {
        v1beta1::Condition {
            last_transition_time: time(),
            message: message.map(str::to_owned),
            reason: reason.map(str::to_owned),
            severity: None,
            status: "True".into(),
            r#type: t.into(),
        }
    }

    #[test]
    fn missing_reason_and_message_get_stand_ins_and_come_back_absent() {
        let up = to_v1beta2(&[v1("Ready", None, None)], Some(4), "status.conditions")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(up[0].reason, NO_REASON);
        assert_eq!(up[0].message, "");
        assert_eq!(up[0].observed_generation, Some(4));
        let down = to_v1beta1(&up, "status.conditions").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(down, vec![v1("Ready", None, None)]);
        assert_eq!(ready(&up), Some(true));
    }

    #[test]
    fn repeated_types_are_refused_with_their_path() {
        let list = [v1("A", Some("R"), None), v1("A", Some("R"), None)];
        let err = to_v1beta2(&list, Some(1), "status.conditions").err();
        assert_eq!(
            err.map(|e| e.path),
            Some("status.conditions[1].type".to_owned())
        );
    }

    #[test]
    fn authentication_condition_round_trips_with_its_reasons() {
        use crate::constants::{condition_reasons as r, condition_types as t};
        let ok = v1(t::OPENSTACK_AUTHENTICATION_SUCCEEDED, Some(r::READY), None);
        let mut failed = v1(
            t::OPENSTACK_AUTHENTICATION_SUCCEEDED,
            Some(r::OPENSTACK_AUTHENTICATION_FAILED),
            Some("credentials: identityRef Secret ns/x not found"),
        );
        failed.status = "False".to_owned();
        failed.severity = Some("Error".to_owned());
        for c in [ok, failed] {
            let up = to_v1beta2(std::slice::from_ref(&c), Some(2), "status.conditions")
                .unwrap_or_else(|e| panic!("{}", e.path));
            assert_eq!(up[0].reason, c.reason.clone().unwrap_or_default());
            assert_eq!(up[0].status, c.status);
            let down =
                to_v1beta1(&up, "status.conditions").unwrap_or_else(|e| panic!("{}", e.path));
            assert_eq!(down[0].reason, c.reason);
            assert_eq!(down[0].message, c.message);
        }
    }

    #[test]
    fn ready_needs_a_ready_condition() {
        assert_eq!(ready(&[]), None);
    }
}

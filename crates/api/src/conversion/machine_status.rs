//! The machine status and the machine template status.
//!
//! As for clusters, v1beta2 drops `ready`, `failureReason` and `failureMessage`; `ready` is
//! derived from the `Ready` condition on the way back (absent when there is none), and the
//! rest travels in the conversion-data annotation.

use crate::conversion::conditions;
use crate::conversion::error::ConversionError;
use crate::conversion::ports::{resolved_spec_to_v1beta1, resolved_spec_to_v1beta2};
use crate::conversion::recast::recast;
use crate::v1beta1;
use crate::v1beta2;

/// A v1beta1 machine status in v1beta2; conditions are observed at `generation`.
pub(crate) fn to_v1beta2(
    s: &v1beta1::OpenStackMachineStatus,
    generation: Option<i64>,
) -> Result<v1beta2::OpenStackMachineStatus, ConversionError> {
    Ok(v1beta2::OpenStackMachineStatus {
        addresses: s.addresses.clone(),
        conditions: conditions::to_v1beta2(&s.conditions, generation, "status.conditions")?,
        initialization: s.initialization.clone(),
        instance_id: s.instance_id.clone(),
        instance_state: s.instance_state.clone(),
        resolved: s
            .resolved
            .as_ref()
            .map(|r| resolved_spec_to_v1beta2(r, "status.resolved"))
            .transpose()?,
        resources: s
            .resources
            .as_ref()
            .map(|r| recast(r, "status.resources"))
            .transpose()?,
        extensions: s.extensions.as_deref().cloned(),
    })
}

/// A v1beta2 machine status in v1beta1.
pub(crate) fn to_v1beta1(
    s: &v1beta2::OpenStackMachineStatus,
) -> Result<v1beta1::OpenStackMachineStatus, ConversionError> {
    Ok(v1beta1::OpenStackMachineStatus {
        addresses: s.addresses.clone(),
        conditions: conditions::to_v1beta1(&s.conditions, "status.conditions")?,
        failure_message: None,
        failure_reason: None,
        initialization: s.initialization.clone(),
        instance_id: s.instance_id.clone(),
        instance_state: s.instance_state.clone(),
        ready: conditions::ready(&s.conditions),
        resolved: s
            .resolved
            .as_ref()
            .map(|r| resolved_spec_to_v1beta1(r, "status.resolved"))
            .transpose()?,
        resources: s
            .resources
            .as_ref()
            .map(|r| recast(r, "status.resources"))
            .transpose()?,
        extensions: s.extensions.clone().map(Box::new),
    })
}

/// A v1beta1 machine template status in v1beta2.
pub(crate) fn template_to_v1beta2(
    s: &v1beta1::OpenStackMachineTemplateStatus,
    generation: Option<i64>,
) -> Result<v1beta2::OpenStackMachineTemplateStatus, ConversionError> {
    Ok(v1beta2::OpenStackMachineTemplateStatus {
        capacity: s.capacity.clone(),
        conditions: conditions::to_v1beta2(&s.conditions, generation, "status.conditions")?,
        node_info: s.node_info.clone(),
    })
}

/// A v1beta2 machine template status in v1beta1.
pub(crate) fn template_to_v1beta1(
    s: &v1beta2::OpenStackMachineTemplateStatus,
) -> Result<v1beta1::OpenStackMachineTemplateStatus, ConversionError> {
    Ok(v1beta1::OpenStackMachineTemplateStatus {
        capacity: s.capacity.clone(),
        conditions: conditions::to_v1beta1(&s.conditions, "status.conditions")?,
        node_info: s.node_info.clone(),
    })
}

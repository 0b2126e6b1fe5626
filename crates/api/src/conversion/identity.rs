//! The credentials reference, whose `type` is required in v1beta1 and optional in v1beta2.

use crate::v1beta1;
use crate::v1beta2;

/// A v1beta1 identity reference in v1beta2: the type is always stated.
pub(crate) fn to_v1beta2(
    r: &v1beta1::OpenStackIdentityReference,
) -> v1beta2::OpenStackIdentityReference {
    v1beta2::OpenStackIdentityReference {
        cloud_name: r.cloud_name.clone(),
        name: r.name.clone(),
        region: r.region.clone(),
        r#type: Some(r.r#type),
    }
}

/// A v1beta2 identity reference in v1beta1: an unset type is its default, `Secret` (an unset
/// type is carried in the conversion-data annotation).
pub(crate) fn to_v1beta1(
    r: &v1beta2::OpenStackIdentityReference,
) -> v1beta1::OpenStackIdentityReference {
    v1beta1::OpenStackIdentityReference {
        cloud_name: r.cloud_name.clone(),
        name: r.name.clone(),
        region: r.region.clone(),
        r#type: r.ref_type(),
    }
}

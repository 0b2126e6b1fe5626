//! One reconcile's view of a pool.

use capo_api::v1alpha1::OpenStackFloatingIPPool;

use crate::lifecycle;

/// One reconcile's view of a pool.
pub(super) type Scope<'a> = lifecycle::Scope<'a, OpenStackFloatingIPPool>;

//! One reconcile's view of an OpenStackCluster, as every step of the controller takes it.

use capo_api::v1beta1::OpenStackCluster;

use crate::lifecycle;
use crate::stored::Stored;

/// One reconcile's view of an OpenStackCluster.
pub(super) type Scope<'a> = lifecycle::Scope<'a, Stored<OpenStackCluster>>;

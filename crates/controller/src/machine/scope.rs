//! One reconcile's view of an OpenStackMachine.

use capo_api::v1beta1::OpenStackMachine;

use crate::lifecycle;
use crate::stored::Stored;

/// One reconcile's view of an OpenStackMachine.
pub(super) type Scope<'a> = lifecycle::Scope<'a, Stored<OpenStackMachine>>;

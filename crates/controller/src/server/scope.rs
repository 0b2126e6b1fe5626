//! One reconcile's view of an OpenStackServer.

use capo_api::constants::condition_types::{INSTANCE_READY, READY};
use capo_api::v1alpha1::OpenStackServer;

use crate::conditions::State;
use crate::lifecycle;

/// One reconcile's view of an OpenStackServer.
pub(super) type Scope<'a> = lifecycle::Scope<'a, OpenStackServer>;

impl Scope<'_> {
    /// Set InstanceReady and Ready to the same state.
    pub(super) fn set_instance(&mut self, state: State) {
        self.set(INSTANCE_READY, state.clone());
        self.set(READY, state);
    }
}

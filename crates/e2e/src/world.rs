//! The management cluster shared by every scenario of a test binary ([`Management`]): started
//! once, on first use, and kept until the binary exits.

use std::ops::Deref;
use std::sync::OnceLock;

use crate::management::Management;

pub use crate::management::NETNS_VAR;

/// Everything shared by the scenarios: one [`Management`] cluster (its methods are reached
/// through `Deref`: `client()`, `clusterctl()`, `new_namespace()`, `kube_requests()`,
/// `log_tails()`, ...).
pub struct World {
    management: Management,
}

static WORLD: OnceLock<Result<World, String>> = OnceLock::new();

impl World {
    /// The shared world, started on first use; panics (with the reason) when it cannot start,
    /// so every scenario reports the same cause.
    pub fn get() -> &'static World {
        match WORLD
            .get_or_init(|| Management::start("shared").map(|management| World { management }))
        {
            Ok(w) => w,
            Err(e) => panic!("the end-to-end world did not start: {e}"),
        }
    }

    /// The management cluster itself.
    pub fn management(&self) -> &Management {
        &self.management
    }
}

impl Deref for World {
    type Target = Management;

    fn deref(&self) -> &Management {
        &self.management
    }
}

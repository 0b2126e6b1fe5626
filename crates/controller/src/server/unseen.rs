//! Which servers may have creates whose outcome this controller never saw, so that their
//! first ready pass looks for duplicates ([`super::apply`]).

use std::collections::HashSet;
use std::sync::Mutex;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::memo::Key;

/// Servers whose creates may have had unseen outcomes, and when the controller started.
#[derive(Debug)]
pub struct UnseenCreates {
    marked: Mutex<HashSet<Key>>,
    /// When this controller started (in the manager: when it became the leader).
    started_at: Timestamp,
}

impl Default for UnseenCreates {
    fn default() -> Self {
        Self {
            marked: Mutex::default(),
            started_at: Timestamp::now(),
        }
    }
}

impl UnseenCreates {
    /// Remember that a create for `key` may have happened without its outcome being seen
    /// (a create or a later step of the same pass failed: the reply may be lost while the
    /// cloud still makes the resource).
    pub fn mark(&self, key: &Key) {
        if let Ok(mut m) = self.marked.lock() {
            m.insert(key.clone());
        }
    }

    /// Whether creates for `key`, an object created at `created`, may have had outcomes this
    /// controller never saw: the object is older than the controller (an earlier process, or
    /// an earlier leader, may have been killed while the cloud was still making something),
    /// or a pass failed while creating ([`UnseenCreates::mark`]). Taken out of the table: the
    /// caller looks for strays once. Costs nothing for objects this controller made from the
    /// start without a failure, the bulk of a scale-out.
    pub fn take(&self, key: &Key, created: Option<&Time>) -> bool {
        let marked = self.marked.lock().is_ok_and(|mut m| m.remove(key));
        marked || created.is_none_or(|t| t.0 < self.started_at)
    }

    /// Drop `key` (the server is gone).
    pub fn forget(&self, key: &Key) {
        if let Ok(mut m) = self.marked.lock() {
            m.remove(key);
        }
    }
}

//! Where a step stands: the one answer of every `ensure_*`/`delete_*` that may have to wait
//! for the cloud, and of every reconcile step and cleanup built on them.

/// Where a step stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Progress<T = ()> {
    /// Converged; the value is usable.
    Done(T),
    /// Under way (building, deleting, or the service is busy): call again after a requeue.
    /// Says what is awaited, for conditions.
    Waiting(String),
    /// Failed in a way only the operator (or a delete) can fix, e.g. a load balancer in
    /// provisioning status ERROR; carries the cloud's status text.
    Stuck(String),
}

impl<T> Progress<T> {
    /// True when converged.
    pub fn is_done(&self) -> bool {
        matches!(self, Progress::Done(_))
    }

    /// The value once converged.
    pub fn done(self) -> Option<T> {
        match self {
            Progress::Done(v) => Some(v),
            Progress::Waiting(_) | Progress::Stuck(_) => None,
        }
    }

    /// Convert the value once converged.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Progress<U> {
        match self {
            Progress::Done(v) => Progress::Done(f(v)),
            Progress::Waiting(why) => Progress::Waiting(why),
            Progress::Stuck(why) => Progress::Stuck(why),
        }
    }
}

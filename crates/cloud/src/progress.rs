//! Where a step stands: the one answer of every `ensure_*`/`delete_*` that may have to wait
//! for the cloud, and of every reconcile step and cleanup built on them.

/// Where a step stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Progress<T = ()> {
    /// Converged; the value is usable.
    Done(T),
    /// Under way (building, deleting, or the service is busy): call again after a requeue.
    /// Says what is awaited.
    Waiting(Wait),
    /// Failed in a way only the operator (or a delete) can fix, e.g. a load balancer in
    /// provisioning status ERROR; carries the cloud's status text.
    Stuck(String),
}

/// What a step waits on: the resource, by kind and ID, which tells one wait from the next
/// (a caller that paces its looks keys them by it, never by the text), and a message for
/// conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// Kind of the resource awaited (`load balancer`, `listener`, `volume`, ...).
    pub on: &'static str,
    /// Its ID or name; empty when the kind alone tells it (one of its kind per object).
    pub id: String,
    /// What is awaited, for humans.
    pub message: String,
}

impl Wait {
    /// A wait on resource `on` `id`, described by `message`.
    pub fn new(on: &'static str, id: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            on,
            id: id.into(),
            message: message.into(),
        }
    }

    /// The same wait described by `message` instead.
    pub fn with_message(self, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            ..self
        }
    }
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl<T> Progress<T> {
    /// Waiting on resource `on` `id`, described by `message` ([`Wait`]).
    pub fn waiting(on: &'static str, id: impl Into<String>, message: impl Into<String>) -> Self {
        Progress::Waiting(Wait::new(on, id, message))
    }

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

    /// What a step that is not done says (the wait's message, or the stuck text).
    pub fn why(&self) -> Option<&str> {
        match self {
            Progress::Done(_) => None,
            Progress::Waiting(w) => Some(&w.message),
            Progress::Stuck(why) => Some(why),
        }
    }

    /// Convert the value once converged.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Progress<U> {
        match self {
            Progress::Done(v) => Progress::Done(f(v)),
            Progress::Waiting(w) => Progress::Waiting(w),
            Progress::Stuck(why) => Progress::Stuck(why),
        }
    }
}

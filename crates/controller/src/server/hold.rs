//! Retry holds: after a failed build the next attempt must wait the slow backoff even though
//! the status write that reported the failure wakes the object at once (a watch event).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Per-object "not before" instants, in memory (a restart retries at once, as after any
/// restart).
#[derive(Debug, Default)]
pub struct Holds {
    until: Mutex<HashMap<String, Instant>>,
}

impl Holds {
    /// Hold `key` for `d`.
    pub fn hold(&self, key: &str, d: Duration) {
        if let Ok(mut m) = self.until.lock() {
            m.retain(|_, t| *t > Instant::now());
            m.insert(key.to_owned(), Instant::now() + d);
        }
    }

    /// Time left on `key`'s hold, if any.
    pub fn remaining(&self, key: &str) -> Option<Duration> {
        let m = self.until.lock().ok()?;
        m.get(key)
            .and_then(|t| t.checked_duration_since(Instant::now()))
            .filter(|d| !d.is_zero())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_expire() {
        let h = Holds::default();
        assert!(h.remaining("a").is_none());
        h.hold("a", Duration::from_millis(30));
        assert!(h.remaining("a").is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert!(h.remaining("a").is_none());
    }
}

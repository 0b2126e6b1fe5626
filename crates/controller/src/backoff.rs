//! Per-object exponential backoff for failed reconciles, with jitter, reset on success.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use capo_openstack::retry::exponential_backoff;

/// Attempts per object key (UID).
#[derive(Debug)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    attempts: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    /// Delays double from `min` up to `max`.
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max,
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// The delay before retrying `key` after one more failure (±20% jitter, so many objects
    /// failing together do not retry in lockstep).
    pub fn next(&self, key: &str) -> Duration {
        let n = self
            .attempts
            .lock()
            .map(|mut m| {
                let a = m.entry(key.to_owned()).or_insert(0);
                *a = a.saturating_add(1);
                *a
            })
            .unwrap_or(1);
        exponential_backoff(self.min, self.max, n, 0.8..=1.2)
    }

    /// Forget failures of `key`.
    pub fn reset(&self, key: &str) {
        if let Ok(mut m) = self.attempts.lock() {
            m.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_max_and_resets() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(10));
        let d: Vec<Duration> = (0..6).map(|_| b.next("x")).collect();
        assert!(d[0] >= Duration::from_millis(800) && d[0] <= Duration::from_millis(1200));
        assert!(d[2] >= Duration::from_millis(3200) && d[2] <= Duration::from_millis(4800));
        assert!(d[5] <= Duration::from_secs(10));
        b.reset("x");
        assert!(b.next("x") <= Duration::from_millis(1200));
    }
}

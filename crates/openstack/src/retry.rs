//! Retry policy (jittered exponential backoff) and the per-cloud token-bucket rate limiter.

use std::ops::RangeInclusive;
use std::time::Duration;

use rand::Rng;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// How often and how long to retry idempotent requests.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Total attempts including the first (1 = no retries).
    pub max_attempts: u32,
    /// First backoff.
    pub base: Duration,
    /// Backoff ceiling.
    pub max_backoff: Duration,
    /// A Retry-After longer than this is not waited for in-line: the error goes to the caller,
    /// which requeues instead of holding a worker.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Backoff before attempt `attempt + 1` (from 1): "equal jitter", half the exponential step
    /// to all of it, so retries spread out but never collapse to zero.
    pub fn backoff(&self, attempt: u32) -> Duration {
        exponential_backoff(self.base, self.max_backoff, attempt, 0.5..=1.0)
    }
}

/// The delay after failure number `attempt` (from 1): `base` doubled per earlier failure up to
/// `max`, times a random factor from `jitter` (so failures together do not retry in lockstep),
/// never above `max`.
pub fn exponential_backoff(
    base: Duration,
    max: Duration,
    attempt: u32,
    jitter: RangeInclusive<f64>,
) -> Duration {
    geometric_delay(base, max, attempt, 2.0, jitter)
}

/// The delay before poll or retry number `attempt` (from 1): `base` times `factor` per earlier
/// one, up to `max`, times a random factor from `jitter`, never above `max`.
pub fn geometric_delay(
    base: Duration,
    max: Duration,
    attempt: u32,
    factor: f64,
    jitter: RangeInclusive<f64>,
) -> Duration {
    // The exponent is capped to stay finite; by 64 steps of any factor worth using, a
    // realistic `base` exceeds `max`.
    let exponent = attempt.saturating_sub(1).min(64);
    let growth = factor.max(1.0).powi(i32::try_from(exponent).unwrap_or(64));
    let step = Duration::try_from_secs_f64(base.as_secs_f64() * growth)
        .unwrap_or(max)
        .min(max);
    step.mul_f64(rand::rng().random_range(jitter)).min(max)
}

/// Token bucket: `rate` requests per second on average, bursts up to `burst`.
#[derive(Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

/// Rate limit settings per cloud (Keystone auth URL).
#[derive(Debug, Clone, Copy)]
pub struct RateLimit {
    /// Sustained requests per second.
    pub per_second: f64,
    /// Burst size.
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            per_second: 50.0,
            burst: 100,
        }
    }
}

impl RateLimiter {
    /// A full bucket.
    pub fn new(limit: RateLimit) -> Self {
        let burst = f64::from(limit.burst.max(1));
        Self {
            rate: limit.per_second.max(0.001),
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// Wait for one token.
    pub async fn acquire(&self) {
        loop {
            let wait = {
                let mut s = self.state.lock().await;
                let now = Instant::now();
                let refill = now.duration_since(s.1).as_secs_f64() * self.rate;
                s.0 = (s.0 + refill).min(self.burst);
                s.1 = now;
                if s.0 >= 1.0 {
                    s.0 -= 1.0;
                    return;
                }
                Duration::from_secs_f64((1.0 - s.0) / self.rate)
            };
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy::default();
        for attempt in 1..10 {
            let b = p.backoff(attempt);
            let step = p.base.saturating_mul(1 << (attempt - 1)).min(p.max_backoff);
            assert!(b >= step / 2 && b <= step, "{attempt}: {b:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_limits_sustained_rate() {
        let l = RateLimiter::new(RateLimit {
            per_second: 10.0,
            burst: 5,
        });
        let start = Instant::now();
        for _ in 0..25 {
            l.acquire().await;
        }
        // 5 from the burst, 20 more at 10/s.
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(1900) && took < Duration::from_millis(2200),
            "{took:?}"
        );
    }
}

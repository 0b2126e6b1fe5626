//! Client-side rate limit of the Kubernetes client (`--kube-api-qps`, `--kube-api-burst`), a
//! token bucket like client-go's: `burst` requests may go at once, then `qps` per second.
//!
//! The kube client puts its service stack behind a buffer, so requests reach this layer one at
//! a time; waiting in `poll_ready` therefore delays each request until a token is available,
//! without holding back responses already on their way (long-running watches take one token
//! when they start, as in client-go).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use tower_layer::Layer;
use tower_service::Service;

/// Requests through the client and time spent waiting for the limiter. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ClientMetrics {
    requests: Counter,
    throttled: Counter<f64, std::sync::atomic::AtomicU64>,
}

impl ClientMetrics {
    /// Create and register `capo_kube_api_requests_total` and
    /// `capo_kube_api_throttle_seconds_total`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register(
            "capo_kube_api_requests",
            "Requests of the manager's Kubernetes client (watches count once, when they start)",
            m.requests.clone(),
        );
        registry.register(
            "capo_kube_api_throttle_seconds",
            "Time requests waited for the client-side rate limiter (--kube-api-qps/--kube-api-burst)",
            m.throttled.clone(),
        );
        m
    }

    /// Requests so far.
    pub fn requests(&self) -> u64 {
        self.requests.get()
    }
}

/// Token bucket: `burst` tokens, refilled at `qps` per second.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    /// A full bucket. `qps <= 0` means unlimited (client-go disables its limiter for a
    /// negative QPS); a burst below 1 is raised to 1.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            qps,
            burst,
            tokens: burst,
            at: Instant::now(),
        }
    }

    /// Take a token at `now`, or say how long to wait for one.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        if self.qps <= 0.0 {
            return Ok(());
        }
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.qps))
        }
    }
}

/// Layer adding [`RateLimited`] to the kube client's stack.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    qps: f64,
    burst: u32,
    metrics: ClientMetrics,
}

impl RateLimitLayer {
    /// `qps` requests per second with bursts of `burst`, counted in `metrics`.
    pub fn new(qps: f32, burst: u32, metrics: ClientMetrics) -> Self {
        Self {
            qps: f64::from(qps),
            burst,
            metrics,
        }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            inner,
            bucket: TokenBucket::new(self.qps, self.burst),
            sleep: None,
            permit: false,
            metrics: self.metrics.clone(),
        }
    }
}

/// A service that waits for a token before each request.
#[derive(Debug)]
pub struct RateLimited<S> {
    inner: S,
    bucket: TokenBucket,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A token was taken for the next `call` (poll_ready may be polled again before it).
    permit: bool,
    metrics: ClientMetrics,
}

impl<S, R> Service<R> for RateLimited<S>
where
    S: Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        while !self.permit {
            if let Some(sleep) = self.sleep.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.sleep = None;
            }
            match self.bucket.take(Instant::now()) {
                Ok(()) => self.permit = true,
                Err(wait) => {
                    self.metrics.throttled.inc_by(wait.as_secs_f64());
                    self.sleep = Some(Box::pin(tokio::time::sleep(wait)));
                }
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        self.permit = false;
        self.metrics.requests.inc();
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_the_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(20.0, 3);
        for _ in 0..3 {
            assert_eq!(b.take(t0), Ok(()));
        }
        let wait = b.take(t0).unwrap_err();
        assert!((wait.as_secs_f64() - 0.05).abs() < 1e-9, "{wait:?}");
        assert_eq!(b.take(t0 + Duration::from_millis(50)), Ok(()));
        // A long pause refills up to the burst, not beyond.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(b.take(later), Ok(()));
        }
        assert!(b.take(later).is_err());
    }

    #[test]
    fn non_positive_qps_is_unlimited() {
        let mut b = TokenBucket::new(-1.0, 0);
        let now = Instant::now();
        for _ in 0..1000 {
            assert_eq!(b.take(now), Ok(()));
        }
    }

    /// Counts calls; always ready.
    struct Count(u32);

    impl Service<()> for Count {
        type Response = u32;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<u32, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, (): ()) -> Self::Future {
            self.0 += 1;
            std::future::ready(Ok(self.0))
        }
    }

    async fn ready<S: Service<()>>(s: &mut S) {
        std::future::poll_fn(|cx| s.poll_ready(cx))
            .await
            .map_err(|_| ())
            .unwrap();
    }

    #[tokio::test]
    async fn service_waits_for_tokens() {
        let metrics = ClientMetrics::default();
        let mut svc = RateLimitLayer::new(20.0, 2, metrics.clone()).layer(Count(0));
        let started = Instant::now();
        for _ in 0..6 {
            ready(&mut svc).await;
            svc.call(()).await.unwrap();
        }
        // 2 at once, then 4 more at 20/s: at least 200 ms.
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(190), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert_eq!(svc.inner.0, 6);
        assert_eq!(metrics.requests(), 6);
        let waited = metrics.throttled.get();
        assert!((0.15..0.3).contains(&waited), "{waited}");
    }
}

//! Client-side rate limit of the Kubernetes client (`--kube-api-qps`, `--kube-api-burst`): a
//! token bucket like client-go's, one per resource (`openstackmachines`, `secrets`, ...), as
//! upstream's manager has: controller-runtime builds one REST client per kind, and client-go
//! gives each REST client its own bucket, so the same flags mean the same budget for both.
//! `burst` requests of a resource may go at once, then `qps` per second.
//!
//! A request waits for its resource's token before it is sent; requests of other resources
//! pass meanwhile (long-running watches take one token when they start, as in client-go).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
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

    /// Take a token at `now`, possibly one not refilled yet: how long until it is (zero when
    /// one was there). Later callers queue behind it.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        if self.qps <= 0.0 {
            return Duration::ZERO;
        }
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.at = now;
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
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
    /// `qps` requests per second per resource with bursts of `burst`, counted in `metrics`.
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
            inner: Arc::new(tokio::sync::Mutex::new(inner)),
            buckets: Arc::new(Mutex::new(HashMap::new())),
            qps: self.qps,
            burst: self.burst,
            metrics: self.metrics.clone(),
        }
    }
}

/// A service that delays each request until its resource's bucket has a token.
#[derive(Debug)]
pub struct RateLimited<S> {
    /// Behind a lock so a request can be sent after its wait, from its own future (the
    /// buffer in front of this layer dispatches one request at a time anyway).
    inner: Arc<tokio::sync::Mutex<S>>,
    buckets: Arc<Mutex<HashMap<String, TokenBucket>>>,
    qps: f64,
    burst: u32,
    metrics: ClientMetrics,
}

impl<S> RateLimited<S> {
    /// How long a request of `resource` sent now must wait (its token is taken: a request
    /// that must wait holds its place in line).
    fn reserve(&self, resource: &str) -> Duration {
        let Ok(mut buckets) = self.buckets.lock() else {
            return Duration::ZERO;
        };
        buckets
            .entry(resource.to_owned())
            .or_insert_with(|| TokenBucket::new(self.qps, self.burst))
            .reserve(Instant::now())
    }
}

impl<S, B> Service<http::Request<B>> for RateLimited<S>
where
    S: Service<http::Request<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner service's readiness is awaited in the request's own future.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let labels = crate::kube_requests::labels(req.method(), req.uri());
        let resource = labels.resource.split('/').next().unwrap_or_default();
        let wait = self.reserve(resource);
        self.metrics.requests.inc();
        if !wait.is_zero() {
            self.metrics.throttled.inc_by(wait.as_secs_f64());
        }
        let inner = self.inner.clone();
        Box::pin(async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            // The inner future (the whole HTTP exchange, several KB) is allocated only once the
            // request's turn came: a queued request holds little more than itself.
            let sent = {
                let mut svc = inner.lock().await;
                std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
                Box::pin(svc.call(req))
            };
            sent.await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_the_burst_then_queues_at_the_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(20.0, 3);
        for _ in 0..3 {
            assert_eq!(b.reserve(t0), Duration::ZERO);
        }
        let wait = b.reserve(t0);
        assert!((wait.as_secs_f64() - 0.05).abs() < 1e-9, "{wait:?}");
        let next = b.reserve(t0);
        assert!(
            (next.as_secs_f64() - 0.10).abs() < 1e-9,
            "queued behind: {next:?}"
        );
        // A long pause refills up to the burst, not beyond.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(b.reserve(later), Duration::ZERO);
        }
        assert!(b.reserve(later) > Duration::ZERO);
    }

    #[test]
    fn non_positive_qps_is_unlimited() {
        let mut b = TokenBucket::new(-1.0, 0);
        let now = Instant::now();
        for _ in 0..1000 {
            assert_eq!(b.reserve(now), Duration::ZERO);
        }
    }

    /// Counts calls; always ready.
    struct Count(u32);

    impl Service<http::Request<()>> for Count {
        type Response = u32;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<u32, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: http::Request<()>) -> Self::Future {
            self.0 += 1;
            std::future::ready(Ok(self.0))
        }
    }

    fn get(path: &str) -> http::Request<()> {
        let mut r = http::Request::new(());
        *r.uri_mut() = path.parse().unwrap();
        r
    }

    #[tokio::test]
    async fn each_resource_waits_for_its_own_tokens() {
        let metrics = ClientMetrics::default();
        let mut svc = RateLimitLayer::new(20.0, 2, metrics.clone()).layer(Count(0));
        let started = Instant::now();
        let secrets = "/api/v1/namespaces/a/secrets/s";
        let machines =
            "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/a/openstackmachines/m/status";
        let mut pending = Vec::new();
        for _ in 0..6 {
            pending.push(svc.call(get(secrets)));
        }
        // Another resource is not held up by the queue of the first.
        svc.call(get(machines)).await.unwrap();
        assert!(started.elapsed() < Duration::from_millis(100));
        for p in pending {
            p.await.unwrap();
        }
        // 2 at once, then 4 more at 20/s: at least 200 ms.
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(190), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert_eq!(svc.inner.lock().await.0, 7);
        assert_eq!(metrics.requests(), 7);
        let waited = metrics.throttled.get();
        // Reserved waits 50, 100, 150, 200 ms.
        assert!((0.45..0.55).contains(&waited), "{waited}");
    }
}

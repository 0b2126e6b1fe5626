//! A small TTL cache of lookups (name → ID for images, flavors, server groups, networks,
//! subnets and security groups; whole flavors and images for template capacity), shared by
//! the reconciles of one controller, so objects naming the same selectors resolve them once
//! per TTL instead of once each.
//!
//! Keys carry the session's identity (auth URL, region, project), so two clouds or projects
//! never see each other's answers. Only successful lookups are cached: a missing image is
//! looked up again on the next attempt. Concurrent misses of one key are coalesced: the first
//! caller looks up, the others wait for its answer (a thousand templates reconciled at once
//! after a restart cost one lookup per flavor, not one per worker).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capo_openstack::Session;

/// Cached lookups with a time to live.
#[derive(Debug)]
pub struct LookupCache<V = String> {
    ttl: Duration,
    entries: Mutex<HashMap<String, (V, Instant)>>,
    /// One gate per key being looked up, so concurrent misses make one request.
    in_flight: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl LookupCache {
    /// The scope of a session's lookups: auth URL, region and project (what decides which
    /// resources a lookup can see).
    pub async fn scope_of(s: &Session) -> String {
        // The project comes from the token the first call of the reconcile needs anyway.
        let project = s.project_id().await.unwrap_or_default();
        format!(
            "{}|{}|{project}",
            s.credentials().auth_url(),
            s.region().unwrap_or_default()
        )
    }
}

impl<V: Clone> LookupCache<V> {
    /// A cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    /// The cached value of `key`, else the value `lookup` produces (cached on success).
    pub async fn get_or<E, F>(&self, key: String, lookup: F) -> Result<V, E>
    where
        F: Future<Output = Result<V, E>>,
    {
        if let Some(v) = self.get(&key) {
            return Ok(v);
        }
        let gate = self.gate(&key);
        let held = gate.lock().await;
        // Whoever held the gate before may have filled the entry.
        let out = match self.get(&key) {
            Some(v) => Ok(v),
            None => match lookup.await {
                Ok(v) => {
                    if let Ok(mut m) = self.entries.lock() {
                        m.retain(|_, (_, at)| at.elapsed() < self.ttl);
                        m.insert(key.clone(), (v.clone(), Instant::now()));
                    }
                    Ok(v)
                }
                Err(e) => Err(e),
            },
        };
        drop(held);
        self.release(&key, gate);
        out
    }

    fn get(&self, key: &str) -> Option<V> {
        let m = self.entries.lock().ok()?;
        m.get(key)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(v, _)| v.clone())
    }

    fn gate(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        match self.in_flight.lock() {
            Ok(mut m) => m.entry(key.to_owned()).or_default().clone(),
            // A poisoned map only loses the coalescing, never an answer.
            Err(_) => Arc::default(),
        }
    }

    /// Drop the gate of `key` once nobody else holds or waits on it (the map keeps one
    /// reference, `gate` is ours).
    fn release(&self, key: &str, gate: Arc<tokio::sync::Mutex<()>>) {
        if let Ok(mut m) = self.in_flight.lock()
            && Arc::strong_count(&gate) <= 2
        {
            m.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn caches_successes_only_and_expires() {
        let c = LookupCache::new(Duration::from_millis(50));
        let v: Result<String, ()> = c.get_or("k".into(), async { Ok("a".into()) }).await;
        assert_eq!(v.unwrap(), "a");
        let v: Result<String, ()> = c.get_or("k".into(), async { Ok("b".into()) }).await;
        assert_eq!(v.unwrap(), "a", "cached");
        let e: Result<String, &str> = c.get_or("x".into(), async { Err("nope") }).await;
        assert!(e.is_err());
        assert!(c.get("x").is_none(), "errors are not cached");
        tokio::time::sleep(Duration::from_millis(60)).await;
        let v: Result<String, ()> = c.get_or("k".into(), async { Ok("c".into()) }).await;
        assert_eq!(v.unwrap(), "c", "expired");
    }

    #[tokio::test]
    async fn concurrent_misses_make_one_lookup() {
        let c = Arc::new(LookupCache::<u32>::new(Duration::from_secs(60)));
        let calls = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (c, calls) = (c.clone(), calls.clone());
                tokio::spawn(async move {
                    c.get_or("k".into(), async {
                        calls.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Ok::<_, ()>(7)
                    })
                    .await
                })
            })
            .collect();
        for t in tasks {
            assert_eq!(t.await.unwrap(), Ok(7));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(c.in_flight.lock().unwrap().is_empty(), "gates released");
    }
}

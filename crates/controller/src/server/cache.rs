//! A small TTL cache of name → ID lookups (images, flavors, server groups, networks, subnets,
//! security groups), shared by every OpenStackServer reconcile, so machines of one cluster
//! resolve the same selectors once per TTL instead of once each.
//!
//! Keys carry the session's identity (auth URL, region, project), so two clouds or projects
//! never see each other's answers. Only successful lookups are cached: a missing image is
//! looked up again on the next attempt.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use capo_openstack::Session;

/// Cached lookups with a time to live.
#[derive(Debug)]
pub struct LookupCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (String, Instant)>>,
}

impl LookupCache {
    /// A cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

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

    /// The cached value of `key`, else the value `lookup` produces (cached on success).
    pub async fn get_or<E, F>(&self, key: String, lookup: F) -> Result<String, E>
    where
        F: Future<Output = Result<String, E>>,
    {
        if let Some(v) = self.get(&key) {
            return Ok(v);
        }
        let v = lookup.await?;
        if let Ok(mut m) = self.entries.lock() {
            m.retain(|_, (_, at)| at.elapsed() < self.ttl);
            m.insert(key, (v.clone(), Instant::now()));
        }
        Ok(v)
    }

    fn get(&self, key: &str) -> Option<String> {
        let m = self.entries.lock().ok()?;
        m.get(key)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(v, _)| v.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! Bounded LRU of sessions keyed by SHA-256 of (cloud entry, region, effective CA, verify), plus
//! the connection pools they share.
//!
//! One HTTP client (= one connection pool) exists per distinct trust setting, not per
//! credential: 50 credentials on one cloud share one pool, so connections are bounded by
//! `max_idle_per_host` × hosts, not by the number of credentials (upstream opens a transport per
//! credential and never closes it, issue 3227). When the last cached session of a trust setting is
//! evicted, its pool is dropped from the cache; it closes once in-flight users let go of it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::credentials::Credentials;
use crate::error::Result;
use crate::metrics::ApiMetrics;
use crate::retry::{RateLimit, RateLimiter, RetryPolicy};
use crate::session::Session;
use crate::tls::{ConnectionCounter, HttpOptions, TlsSettings, build_client};

/// Settings for every session the cache creates.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Maximum cached sessions (LRU beyond that). 0 keeps none: every call makes a fresh
    /// session on a connection pool of its own, which authenticates anew (upstream's
    /// `--scope-cache-max-size=0`, "no cache").
    pub capacity: usize,
    /// CA bundle from the manager's `--ca-certs` (see [`crate::tls::load_manager_ca`]).
    pub manager_ca: Option<Arc<Vec<u8>>>,
    /// HTTP timeouts and pool sizes.
    pub http: HttpOptions,
    /// Retries of idempotent requests.
    pub retry: RetryPolicy,
    /// Token bucket per cloud (Keystone auth URL), shared by all its sessions.
    pub rate_limit: RateLimit,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            capacity: 64,
            manager_ca: None,
            http: HttpOptions::default(),
            retry: RetryPolicy::default(),
            rate_limit: RateLimit::default(),
        }
    }
}

struct Entry {
    session: Session,
    pool_key: [u8; 32],
    last_used: u64,
}

#[derive(Default)]
struct State {
    sessions: HashMap<[u8; 32], Entry>,
    pools: HashMap<[u8; 32], reqwest::Client>,
    limiters: HashMap<String, Arc<RateLimiter>>,
    tick: u64,
    created: u64,
}

/// The session cache. Share one per manager (`Arc<SessionCache>`).
pub struct SessionCache {
    config: ClientConfig,
    metrics: ApiMetrics,
    connections: ConnectionCounter,
    state: Mutex<State>,
}

impl std::fmt::Debug for SessionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCache")
            .field("capacity", &self.config.capacity)
            .field("len", &self.len())
            .finish()
    }
}

/// The cache key: SHA-256 over the credentials' digest ([`Credentials::digest`]) and the
/// effective CA and verify.
pub fn session_key(creds: &Credentials, tls: &TlsSettings) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(creds.digest());
    h.update(tls.pool_key());
    h.finalize().into()
}

impl SessionCache {
    /// An empty cache.
    pub fn new(config: ClientConfig, metrics: ApiMetrics) -> Self {
        Self {
            config,
            metrics,
            connections: ConnectionCounter::default(),
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Cached sessions.
    pub fn len(&self) -> usize {
        self.lock().sessions.len()
    }

    /// True when no session is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Connection pools currently held.
    pub fn pools(&self) -> usize {
        self.lock().pools.len()
    }

    /// HTTP connections opened by all pools since start.
    pub fn connections_opened(&self) -> u64 {
        self.connections.opened()
    }

    /// Sessions created since start (a miss creates one).
    pub fn sessions_created(&self) -> u64 {
        self.lock().created
    }

    /// The session for these credentials, created on a miss (no IO: it authenticates lazily).
    pub fn session(&self, creds: &Credentials) -> Result<Session> {
        let tls = TlsSettings {
            secret_ca: creds.ca_pem.clone(),
            manager_ca: self.config.manager_ca.clone(),
            verify: creds.entry.verify.unwrap_or(true),
        };
        let key = session_key(creds, &tls);
        let mut st = self.lock();
        if self.config.capacity == 0 {
            return self.uncached(&mut st, creds, &tls);
        }
        st.tick += 1;
        let tick = st.tick;
        if let Some(e) = st.sessions.get_mut(&key) {
            e.last_used = tick;
            return Ok(e.session.clone());
        }
        let pool_key = tls.pool_key();
        let http = match st.pools.get(&pool_key) {
            Some(c) => c.clone(),
            None => {
                let c = build_client(&tls, &self.config.http, &self.connections)?;
                st.pools.insert(pool_key, c.clone());
                c
            }
        };
        let session = self.new_session(&mut st, creds, http);
        st.sessions.insert(
            key,
            Entry {
                session: session.clone(),
                pool_key,
                last_used: tick,
            },
        );
        while st.sessions.len() > self.config.capacity {
            evict_lru(&mut st);
        }
        Ok(session)
    }

    /// Without a cache: a session and a connection pool for this caller alone, neither kept.
    /// The cloud's rate limiter is still shared (it bounds the cloud's load, and holds nothing
    /// of the credentials).
    fn uncached(&self, st: &mut State, creds: &Credentials, tls: &TlsSettings) -> Result<Session> {
        let http = build_client(tls, &self.config.http, &self.connections)?;
        Ok(self.new_session(st, creds, http))
    }

    /// A new session over `http`, with the cloud's shared rate limiter; counted as created.
    fn new_session(&self, st: &mut State, creds: &Credentials, http: reqwest::Client) -> Session {
        let limiter = st
            .limiters
            .entry(creds.auth_url().to_owned())
            .or_insert_with(|| Arc::new(RateLimiter::new(self.config.rate_limit)))
            .clone();
        st.created += 1;
        Session::new(
            creds.clone(),
            http,
            self.metrics.clone(),
            limiter,
            self.config.retry.clone(),
        )
    }

    /// Drop a session (e.g. after its Secret changed or its identity was deleted).
    pub fn remove(&self, creds: &Credentials) {
        let tls = TlsSettings {
            secret_ca: creds.ca_pem.clone(),
            manager_ca: self.config.manager_ca.clone(),
            verify: creds.entry.verify.unwrap_or(true),
        };
        let key = session_key(creds, &tls);
        let mut st = self.lock();
        if let Some(e) = st.sessions.remove(&key) {
            release_pool_if_unused(&mut st, e.pool_key);
        }
    }
}

fn evict_lru(st: &mut State) {
    let Some(victim) = st
        .sessions
        .iter()
        .min_by_key(|(_, e)| e.last_used)
        .map(|(k, _)| *k)
    else {
        return;
    };
    if let Some(e) = st.sessions.remove(&victim) {
        release_pool_if_unused(st, e.pool_key);
    }
}

fn release_pool_if_unused(st: &mut State, pool_key: [u8; 32]) {
    if !st.sessions.values().any(|e| e.pool_key == pool_key) {
        st.pools.remove(&pool_key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(user: &str, region: Option<&str>) -> Credentials {
        let yaml = format!(
            "clouds:\n  c:\n    auth:\n      auth_url: http://127.0.0.1:1/identity\n      username: {user}\n      password: p\n      user_domain_name: Default\n      project_name: demo\n      project_domain_name: Default\n"
        );
        Credentials::from_clouds_yaml(&yaml, "c", region, None).unwrap()
    }

    #[test]
    fn digest_changes_with_any_credential_field_and_shows_none() {
        let a = creds("u", None);
        assert_eq!(a.digest(), creds("u", None).digest());
        assert_ne!(a.digest(), creds("v", None).digest());
        assert_ne!(a.digest(), creds("u", Some("R1")).digest());
        let mut rotated = a.clone();
        rotated.entry.auth.password = Some(crate::credentials::Secret::new("p2"));
        assert_ne!(a.digest(), rotated.digest());
    }

    #[test]
    fn key_covers_region_and_ca() {
        let a = creds("u", Some("R1"));
        let b = creds("u", Some("R2"));
        let tls = TlsSettings {
            verify: true,
            ..Default::default()
        };
        assert_ne!(session_key(&a, &tls), session_key(&b, &tls));
        let other_ca = TlsSettings {
            manager_ca: Some(Arc::new(b"x".to_vec())),
            ..tls.clone()
        };
        assert_ne!(session_key(&a, &tls), session_key(&a, &other_ca));
        assert_eq!(
            session_key(&a, &tls),
            session_key(&creds("u", Some("R1")), &tls)
        );
    }

    #[tokio::test]
    async fn lru_is_bounded_and_pools_shared() {
        let cache = SessionCache::new(
            ClientConfig {
                capacity: 3,
                ..Default::default()
            },
            ApiMetrics::unregistered(),
        );
        for i in 0..10 {
            cache.session(&creds(&format!("u{i}"), None)).unwrap();
        }
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.pools(), 1);
        assert_eq!(cache.sessions_created(), 10);
        // u9 is cached: no new session.
        cache.session(&creds("u9", None)).unwrap();
        assert_eq!(cache.sessions_created(), 10);
        for i in 0..10 {
            cache.remove(&creds(&format!("u{i}"), None));
        }
        assert_eq!((cache.len(), cache.pools()), (0, 0));
    }

    #[tokio::test]
    async fn capacity_zero_keeps_no_session() {
        let cache = SessionCache::new(
            ClientConfig {
                capacity: 0,
                ..Default::default()
            },
            ApiMetrics::unregistered(),
        );
        let a = creds("u", None);
        cache.session(&a).unwrap();
        assert_eq!((cache.len(), cache.pools()), (0, 0), "nothing is kept");
        // The same credentials again: a new session, as upstream's factory without a cache.
        cache.session(&a).unwrap();
        assert_eq!(cache.sessions_created(), 2);
        assert_eq!((cache.len(), cache.pools()), (0, 0));
        cache.remove(&a);
        assert!(cache.is_empty());
    }
}

//! A session: one credential + region + trust settings, one Keystone token reused until shortly
//! before it expires, one version discovery per service, and the request loop with re-auth on
//! 401, retries with jittered backoff for idempotent requests, rate limiting and metrics.

mod auth;
mod catalog;
mod send;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use chrono::Utc;
use secrecy::SecretString;
use tokio::sync::{Mutex, OnceCell, RwLock};

pub use auth::TOKEN_LABEL;
pub(crate) use auth::transport_error;

use crate::credentials::Credentials;
use crate::error::{Error, Result};
use crate::metrics::ApiMetrics;
use crate::request::{ApiVersion, Service};
use crate::retry::{RateLimiter, RetryPolicy};
use auth::TokenState;

/// Version range a service endpoint announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRange {
    /// Minimum supported.
    pub min: ApiVersion,
    /// Maximum supported.
    pub max: ApiVersion,
}

/// A cheap-to-clone handle on one authenticated session.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

struct Inner {
    creds: Credentials,
    http: reqwest::Client,
    metrics: ApiMetrics,
    limiter: Arc<RateLimiter>,
    retry: RetryPolicy,
    token: RwLock<Option<Arc<TokenState>>>,
    /// Single flight for authentication.
    auth_lock: Mutex<()>,
    generation: AtomicU64,
    token_requests: AtomicU64,
    /// Whether the last token request succeeded ([`Session::authenticated`]).
    authenticated: AtomicBool,
    versions: std::sync::Mutex<HashMap<Service, Arc<OnceCell<VersionRange>>>>,
    /// Neutron's extension aliases, listed once ([`Session::network_extensions`]).
    network_extensions: OnceCell<Arc<BTreeSet<String>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("credentials", &self.inner.creds)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session that authenticates lazily on its first request. `http` is a (shared) pool.
    pub fn new(
        creds: Credentials,
        http: reqwest::Client,
        metrics: ApiMetrics,
        limiter: Arc<RateLimiter>,
        retry: RetryPolicy,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                creds,
                http,
                metrics,
                limiter,
                retry,
                token: RwLock::new(None),
                auth_lock: Mutex::new(()),
                generation: AtomicU64::new(0),
                token_requests: AtomicU64::new(0),
                authenticated: AtomicBool::new(false),
                versions: std::sync::Mutex::new(HashMap::new()),
                network_extensions: OnceCell::new(),
            }),
        }
    }

    /// The credentials this session uses.
    pub fn credentials(&self) -> &Credentials {
        &self.inner.creds
    }

    /// Effective region.
    pub fn region(&self) -> Option<&str> {
        self.inner.creds.region.as_deref()
    }

    /// Keystone token requests made by this session so far.
    pub fn token_requests(&self) -> u64 {
        self.inner.token_requests.load(Ordering::Relaxed)
    }

    /// Whether Keystone issued this session a token at its last request for one: false before
    /// the session's first request (it authenticates lazily) and after a token request that
    /// failed (credentials refused, Keystone unreachable), true once one succeeded.
    pub fn authenticated(&self) -> bool {
        self.inner.authenticated.load(Ordering::Relaxed)
    }

    /// Project ID from the token (authenticates if needed).
    pub async fn project_id(&self) -> Result<String> {
        let (state, _) = self.token().await?;
        state.project_id.clone().ok_or_else(|| {
            Error::Credentials(format!(
                "cloud {:?}: the token is not scoped to a project",
                self.inner.creds.cloud_name
            ))
        })
    }

    /// Project name from the token, if Keystone returned one.
    pub async fn project_name(&self) -> Result<Option<String>> {
        Ok(self.token().await?.0.project_name.clone())
    }

    /// The configured region, else the catalog's only region for this session's interface
    /// (what clients would use, and what a clouds.yaml written for the nodes must name).
    pub async fn effective_region(&self) -> Result<Option<String>> {
        if let Some(r) = self.region() {
            return Ok(Some(r.to_owned()));
        }
        let (state, _) = self.token().await?;
        Ok(catalog::single_region(
            &state.catalog,
            self.inner.creds.interface(),
        ))
    }

    /// Name of the project's domain from the token, if Keystone returned one.
    pub async fn project_domain_name(&self) -> Result<Option<String>> {
        Ok(self.token().await?.0.project_domain_name.clone())
    }

    /// Keystone ID of the token's user: the owner of the application credentials this
    /// session creates (`/v3/users/{user_id}/application_credentials`).
    pub async fn user_id(&self) -> Result<String> {
        let (state, _) = self.token().await?;
        Some(state.user_id.clone())
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                Error::Credentials(format!(
                    "cloud {:?}: the token names no user",
                    self.inner.creds.cloud_name
                ))
            })
    }

    /// Versioned endpoint URL of a service from the token's catalog. Keystone is the
    /// exception: its calls go to the auth URL the token came from (`.../v3/`), which is
    /// reachable by definition, whereas the catalog's identity entry may be an address only
    /// the cloud's own network reaches.
    pub async fn endpoint(&self, service: Service) -> Result<url::Url> {
        if service == Service::Identity {
            return auth::identity_url(self.inner.creds.auth_url());
        }
        let (state, _) = self.token().await?;
        catalog::endpoint_url(
            &state.catalog,
            service,
            self.region(),
            self.inner.creds.interface(),
        )
    }

    /// Host of every catalog service's endpoint for this session's interface and region, by
    /// catalog type (`identity`, `compute`, `network`, `volumev3`, ...), plus `auth` for the
    /// Keystone auth URL. No credentials: meant for status fields such as the BA/ACP
    /// `openstack_auth_domain` / `openstack_nova` variables.
    pub async fn endpoint_hosts(&self) -> Result<BTreeMap<String, String>> {
        let (state, _) = self.token().await?;
        let mut out = BTreeMap::new();
        let host = |u: &str| {
            url::Url::parse(u)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
        };
        if let Some(h) = host(self.inner.creds.auth_url()) {
            out.insert("auth".to_owned(), h);
        }
        for svc in &state.catalog {
            let ep = svc.endpoints.iter().find(|e| {
                e.interface == self.inner.creds.interface()
                    && self.region().is_none_or(|r| e.region.as_deref() == Some(r))
            });
            if let Some(h) = ep.and_then(|e| host(&e.url)) {
                out.insert(svc.service_type.clone(), h);
            }
        }
        Ok(out)
    }

    /// Supported version range of a service, discovered once per session (one GET).
    pub async fn versions(&self, service: Service) -> Result<VersionRange> {
        let cell = {
            let mut map = self
                .inner
                .versions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            map.entry(service).or_default().clone()
        };
        cell.get_or_try_init(|| self.discover(service))
            .await
            .copied()
    }

    /// The aliases of Neutron's extensions (such as `port-trusted-vif`), listed once per
    /// session (one GET) the first time a caller needs one; a failed list is not kept.
    pub async fn network_extensions(&self) -> Result<Arc<BTreeSet<String>>> {
        self.inner
            .network_extensions
            .get_or_try_init(|| async {
                let listed = crate::network::list_extensions(self).await?;
                Ok(Arc::new(listed.into_iter().map(|e| e.alias).collect()))
            })
            .await
            .cloned()
    }

    /// A valid token (fresh, or newly requested) and its generation.
    async fn token(&self) -> Result<(Arc<TokenState>, SecretString)> {
        if let Some(t) = self.inner.token.read().await.as_ref()
            && t.is_fresh(Utc::now())
        {
            return Ok((t.clone(), t.token.clone()));
        }
        self.reauthenticate(None).await
    }

    /// Get a new token unless another task already replaced generation `stale`.
    async fn reauthenticate(&self, stale: Option<u64>) -> Result<(Arc<TokenState>, SecretString)> {
        let _single = self.inner.auth_lock.lock().await;
        if let Some(t) = self.inner.token.read().await.as_ref()
            && t.is_fresh(Utc::now())
            && stale != Some(t.generation)
        {
            return Ok((t.clone(), t.token.clone()));
        }
        let mut attempt = 0;
        let state = loop {
            attempt += 1;
            self.inner.limiter.acquire().await;
            self.inner.token_requests.fetch_add(1, Ordering::Relaxed);
            let generation = self.inner.generation.fetch_add(1, Ordering::Relaxed) + 1;
            match auth::authenticate(
                &self.inner.http,
                &self.inner.creds,
                &self.inner.metrics,
                generation,
            )
            .await
            {
                Ok(s) => break s,
                Err(e)
                    if attempt < self.inner.retry.max_attempts
                        && e.kind().is_some_and(|k| k.is_retryable()) =>
                {
                    tokio::time::sleep(self.inner.retry.backoff(attempt)).await;
                }
                Err(e) => {
                    self.inner.authenticated.store(false, Ordering::Relaxed);
                    return Err(e);
                }
            }
        };
        self.inner.authenticated.store(true, Ordering::Relaxed);
        let state = Arc::new(state);
        *self.inner.token.write().await = Some(state.clone());
        let token = state.token.clone();
        Ok((state, token))
    }
}

//! Live reads by name that concurrent reconciles share for a short while.
//!
//! The identity Secret (and, through an OpenStackClusterIdentity, its namespace's labels) is
//! read by name, never watched, so the manager needs no list/watch on Secrets. Every reconcile
//! that talks to the cloud needs it, though: ten machines building poll their servers every
//! few seconds, each with a GET of the same Secret. A read is therefore reused by every
//! reconcile that asks within `max_age` of it, and reconciles that ask together wait for one
//! read instead of each making their own. A changed Secret (rotated credentials) is seen at
//! most `max_age` late, and at once when the old credentials stop working (the reads are then
//! forgotten); a zero `max_age` reads every time.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capo_openstack::credentials::ClusterIdentitySpec;

use crate::error::Result;

/// Entries kept before stale ones are dropped (each is one Secret, identity or namespace).
const PRUNE_ABOVE: usize = 1024;

/// One name's last read: when, and what it returned (None: not found).
type Slot<T> = Arc<tokio::sync::Mutex<Option<(Instant, Option<T>)>>>;

/// Recent reads of one kind of object, by key (`namespace/name`).
#[derive(Debug)]
pub struct RecentReads<T> {
    max_age: Duration,
    slots: Mutex<HashMap<String, Slot<T>>>,
}

impl<T: Clone> RecentReads<T> {
    /// Reads reused for `max_age`.
    pub fn new(max_age: Duration) -> Self {
        Self {
            max_age,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// What `read` returns for `key`, or what it returned less than `max_age` ago. Callers
    /// asking for the same key while a read is under way wait for it. A failed read is not
    /// remembered.
    pub async fn get<F, Fut>(&self, key: &str, read: F) -> Result<Option<T>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<T>>>,
    {
        if self.max_age.is_zero() {
            return read().await;
        }
        let Some(slot) = self.slot(key) else {
            return read().await;
        };
        let mut last = slot.lock().await;
        if let Some((at, value)) = last.as_ref()
            && at.elapsed() < self.max_age
        {
            return Ok(value.clone());
        }
        let value = read().await?;
        *last = Some((Instant::now(), value.clone()));
        Ok(value)
    }

    /// Drop what was read for `key` (the next `get` reads again).
    pub fn forget(&self, key: &str) {
        if let Ok(mut slots) = self.slots.lock() {
            slots.remove(key);
        }
    }

    /// Drop every read (the next `get` of each key reads again).
    pub fn forget_all(&self) {
        if let Ok(mut slots) = self.slots.lock() {
            slots.clear();
        }
    }

    fn slot(&self, key: &str) -> Option<Slot<T>> {
        let mut slots = self.slots.lock().ok()?;
        if slots.len() > PRUNE_ABOVE {
            let max_age = self.max_age;
            // A slot being read (locked) is in use: kept.
            slots.retain(|_, s| {
                s.try_lock()
                    .map(|g| g.as_ref().is_some_and(|(at, _)| at.elapsed() < max_age))
                    .unwrap_or(true)
            });
        }
        Some(slots.entry(key.to_owned()).or_default().clone())
    }
}

/// The live reads behind a session, shared by every controller of the manager for
/// `Options::identity_read_max_age`: a rotated Secret is used at most that late, and at once
/// when the credentials read before are refused or unusable ([`IdentityReads::forget_all`]
/// after a reconcile failed with [`crate::error::Error::is_credentials_problem`]).
#[derive(Debug)]
pub struct IdentityReads {
    pub(crate) secrets: RecentReads<BTreeMap<String, Vec<u8>>>,
    pub(crate) identities: RecentReads<ClusterIdentitySpec>,
    pub(crate) namespaces: RecentReads<BTreeMap<String, String>>,
}

impl IdentityReads {
    /// Reads reused for `max_age`.
    pub fn new(max_age: Duration) -> Self {
        Self {
            secrets: RecentReads::new(max_age),
            identities: RecentReads::new(max_age),
            namespaces: RecentReads::new(max_age),
        }
    }
}

impl IdentityReads {
    /// Forget every read: the next reconcile of each identity reads it again. Called when a
    /// reconcile's credentials were refused or unusable, which is how a rotation that revoked
    /// the old credentials, or a Secret fixed after a bad one, shows.
    pub fn forget_all(&self) {
        self.secrets.forget_all();
        self.identities.forget_all();
        self.namespaces.forget_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn concurrent_and_recent_asks_share_one_read() {
        let reads = Arc::new(RecentReads::new(Duration::from_secs(60)));
        let count = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let (reads, count) = (reads.clone(), count.clone());
            tasks.push(tokio::spawn(async move {
                reads
                    .get("ns/a", || async {
                        count.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok(Some(7))
                    })
                    .await
            }));
        }
        for t in tasks {
            assert_eq!(t.await.ok().and_then(Result::ok), Some(Some(7)));
        }
        assert_eq!(count.load(Ordering::SeqCst), 1);
        let other = reads.get("ns/b", || async { Ok(None::<i32>) }).await;
        assert_eq!(other.ok(), Some(None), "keys are apart");
        reads.forget("ns/a");
        let again = reads.get("ns/a", || async { Ok(Some(8)) }).await;
        assert_eq!(again.ok(), Some(Some(8)), "forgotten: read again");
    }

    #[tokio::test]
    async fn zero_max_age_reads_every_time_and_failures_are_not_kept() {
        let reads = RecentReads::new(Duration::ZERO);
        assert_eq!(
            reads.get("k", || async { Ok(Some(1)) }).await.ok(),
            Some(Some(1))
        );
        assert_eq!(
            reads.get("k", || async { Ok(Some(2)) }).await.ok(),
            Some(Some(2))
        );
        let reads = RecentReads::new(Duration::from_secs(60));
        let failed = reads
            .get("k", || async {
                Err::<Option<i32>, _>(crate::error::Error::InvalidSpec("x".into()))
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(
            reads.get("k", || async { Ok(Some(3)) }).await.ok(),
            Some(Some(3))
        );
    }

    #[tokio::test]
    async fn an_old_read_is_read_again() {
        let reads = RecentReads::new(Duration::from_millis(20));
        assert_eq!(
            reads.get("k", || async { Ok(Some(1)) }).await.ok(),
            Some(Some(1))
        );
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            reads.get("k", || async { Ok(Some(2)) }).await.ok(),
            Some(Some(2))
        );
    }
}

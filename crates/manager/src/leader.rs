//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's algorithm and record
//! format, so a capo replica and an upstream replica configured with the same Lease exclude each
//! other, and tools that read the Lease (kubectl, dashboards) understand it.
//!
//! - A follower tries every retry period (with jitter). It takes the Lease when nobody holds it
//!   or when the record has not changed for a whole lease duration *as measured on this
//!   replica's clock* (clock skew between replicas does not matter, as in client-go).
//! - Every write is a create, or a replace carrying the read resourceVersion: two replicas
//!   racing for the Lease get one success and one conflict.
//! - The leader renews every retry period; if no renewal succeeds within the renew deadline it
//!   reports [`LeaderState::Lost`] and the manager stops (another replica may already lead).
//! - [`Elector::release`] (graceful shutdown, after the controllers stopped) empties the holder
//!   and shortens the duration to 1 s so a successor takes over at once.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tokio::sync::watch;

use crate::error::{Error, Result};

/// Name of the Lease: upstream CAPO's leader-election ID, so the two never lead together.
pub const LEASE_NAME: &str = "controller-leader-election-capo";

/// Leader-election settings.
#[derive(Debug, Clone)]
pub struct LeaderConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This replica's identity (`<hostname>_<uuid>`, as controller-runtime).
    pub identity: String,
    /// Validity of the Lease without renewal.
    pub lease_duration: Duration,
    /// How long the leader tries to renew before giving up.
    pub renew_deadline: Duration,
    /// Interval between attempts.
    pub retry_period: Duration,
}

/// What this replica knows about the leadership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaderState {
    /// No attempt finished yet.
    Unknown,
    /// Another replica holds the Lease (its identity, possibly empty while released).
    Follower(String),
    /// This replica leads.
    Leader,
    /// This replica led and could not renew within the deadline.
    Lost,
}

/// Result of one acquire-or-renew attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Attempt {
    Acquired,
    HeldBy(String),
    Conflict,
}

/// The elector of one replica.
#[derive(Debug)]
pub struct Elector {
    api: Api<Lease>,
    config: LeaderConfig,
    /// The last record seen (holder, renew time, duration) and when it was first seen.
    observed: Option<(ObservedRecord, Instant)>,
    leading: bool,
}

type ObservedRecord = (String, Option<MicroTime>, Option<i32>);

/// `<hostname>_<random uuid>`, controller-runtime's identity format.
pub fn default_identity() -> String {
    let host = std::env::var("POD_NAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "capo-controller-manager".to_owned());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

fn secs_i32(d: Duration) -> i32 {
    i32::try_from(d.as_secs().max(1)).unwrap_or(i32::MAX)
}

impl Elector {
    /// An elector for `config` using `client`.
    pub fn new(client: kube::Client, config: LeaderConfig) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
            leading: false,
        }
    }

    /// `namespace/name` of the Lease.
    pub fn lease_ref(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    /// Try to acquire or renew until `stop` is set. Publishes every state change on `state`.
    /// Returns `Err(LeaderLost)` when leadership was lost (the caller must stop the
    /// controllers); `Ok` when stopped.
    pub async fn run(
        &mut self,
        state: &watch::Sender<LeaderState>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<()> {
        let mut last_renew = Instant::now();
        loop {
            let attempt = self.attempt().await;
            if attempt == Attempt::Acquired {
                last_renew = Instant::now();
            }
            let current = state.borrow().clone();
            let next = transition(
                &attempt,
                self.leading,
                last_renew.elapsed(),
                self.config.renew_deadline,
                &current,
            );
            let next = match next {
                Ok(next) => next,
                Err(reason) => {
                    self.publish(state, LeaderState::Lost);
                    self.leading = false;
                    return Err(Error::LeaderLost {
                        lease: self.lease_ref(),
                        reason,
                    });
                }
            };
            self.leading = next == LeaderState::Leader;
            self.publish(state, next);
            let wait = self.wait_time();
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = stop.wait_for(|s| *s) => return Ok(()),
            }
        }
    }

    /// One attempt, bounded by the renew deadline; API errors count as a lost race.
    async fn attempt(&mut self) -> Attempt {
        match tokio::time::timeout(self.config.renew_deadline, self.try_once()).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                tracing::warn!(lease = %self.lease_ref(), error = %e, "leader election attempt failed");
                Attempt::Conflict
            }
            Err(_) => Attempt::Conflict,
        }
    }

    fn publish(&self, state: &watch::Sender<LeaderState>, next: LeaderState) {
        let changed = *state.borrow() != next;
        if changed {
            match &next {
                LeaderState::Leader => {
                    tracing::info!(lease = %self.lease_ref(), identity = %self.config.identity, "acquired the leader lease")
                }
                LeaderState::Follower(h) => {
                    tracing::info!(lease = %self.lease_ref(), holder = %h, "waiting for the leader lease")
                }
                LeaderState::Lost => {
                    tracing::error!(lease = %self.lease_ref(), "leader lease lost")
                }
                LeaderState::Unknown => {}
            }
            state.send_replace(next);
        }
    }

    /// The leader renews every retry period; followers add up to 120% jitter (client-go's
    /// JitterFactor 1.2), so replicas do not hammer the API server in step.
    fn wait_time(&self) -> Duration {
        if self.leading {
            return self.config.retry_period;
        }
        let jitter = rand_fraction() * 1.2;
        self.config.retry_period.mul_f64(1.0 + jitter)
    }

    async fn try_once(&mut self) -> kube::Result<Attempt> {
        let now = MicroTime(Timestamp::now());
        let Some(lease) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.record(None, now)),
            };
            return conflict_is_ok(self.api.create(&PostParams::default(), &lease).await);
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.config.lease_duration, Duration::from_secs);
        let record = (
            holder.clone(),
            spec.renew_time.clone(),
            spec.lease_duration_seconds,
        );
        let seen_at = match &self.observed {
            Some((r, at)) if *r == record => *at,
            _ => {
                let at = Instant::now();
                self.observed = Some((record, at));
                at
            }
        };
        let held_by_other = !holder.is_empty() && holder != self.config.identity;
        if held_by_other && seen_at.elapsed() < duration {
            return Ok(Attempt::HeldBy(holder));
        }
        let mut updated = lease;
        updated.spec = Some(self.record(Some(&spec), now));
        conflict_is_ok(
            self.api
                .replace(&self.config.name, &PostParams::default(), &updated)
                .await,
        )
    }

    /// The record this replica writes, continuing `previous` (acquire time and transitions
    /// change only when the holder changes, as in client-go).
    fn record(&self, previous: Option<&LeaseSpec>, now: MicroTime) -> LeaseSpec {
        let prev_holder = previous.and_then(|p| p.holder_identity.clone());
        let ours = prev_holder.as_deref() == Some(self.config.identity.as_str());
        let transitions = previous.and_then(|p| p.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(secs_i32(self.config.lease_duration)),
            acquire_time: if ours {
                previous.and_then(|p| p.acquire_time.clone())
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if ours || previous.is_none() {
                transitions
            } else {
                transitions + 1
            }),
            ..LeaseSpec::default()
        }
    }

    /// Give up the Lease if this replica holds it (empty holder, 1 s duration), so another
    /// replica can take over immediately instead of waiting out the lease duration.
    pub async fn release(&mut self) -> Result<bool> {
        let lease = self
            .api
            .get_opt(&self.config.name)
            .await
            .map_err(Error::kube(format!("reading lease {}", self.lease_ref())))?;
        let Some(mut lease) = lease else {
            return Ok(false);
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(false);
        }
        let now = MicroTime(Timestamp::now());
        spec.holder_identity = Some(String::new());
        spec.lease_duration_seconds = Some(1);
        spec.acquire_time = Some(now.clone());
        spec.renew_time = Some(now);
        lease.spec = Some(spec);
        self.api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
            .map_err(Error::kube(format!("releasing lease {}", self.lease_ref())))?;
        self.leading = false;
        tracing::info!(lease = %self.lease_ref(), "released the leader lease");
        Ok(true)
    }
}

/// The state after an attempt, or `Err(reason)` when a leader lost the lease: another holder
/// appeared, or no renewal succeeded for `renew_deadline`.
fn transition(
    attempt: &Attempt,
    leading: bool,
    since_renew: Duration,
    renew_deadline: Duration,
    current: &LeaderState,
) -> std::result::Result<LeaderState, String> {
    match (attempt, leading) {
        (Attempt::Acquired, _) => Ok(LeaderState::Leader),
        (Attempt::HeldBy(other), true) => Err(format!("taken over by {other}")),
        (Attempt::Conflict, true) if since_renew < renew_deadline => Ok(LeaderState::Leader),
        (Attempt::Conflict, true) => Err(format!(
            "not renewed within {} s",
            renew_deadline.as_secs_f64()
        )),
        (Attempt::HeldBy(other), false) => Ok(LeaderState::Follower(other.clone())),
        (Attempt::Conflict, false) => Ok(match current {
            LeaderState::Unknown => LeaderState::Follower(String::new()),
            s => s.clone(),
        }),
    }
}

/// A write that lost a race (409) is not an error: someone else wrote first.
fn conflict_is_ok(r: kube::Result<Lease>) -> kube::Result<Attempt> {
    match r {
        Ok(_) => Ok(Attempt::Acquired),
        Err(kube::Error::Api(ae)) if ae.code == 409 => Ok(Attempt::Conflict),
        Err(e) => Err(e),
    }
}

/// A pseudo-random fraction in [0, 1) from the clock: jitter needs no quality.
fn rand_fraction() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINE: Duration = Duration::from_secs(10);

    #[test]
    fn leader_keeps_leading_through_conflicts_until_the_deadline() {
        let t = |a: Attempt, since: u64| {
            transition(
                &a,
                true,
                Duration::from_secs(since),
                DEADLINE,
                &LeaderState::Leader,
            )
        };
        assert_eq!(t(Attempt::Acquired, 0), Ok(LeaderState::Leader));
        assert_eq!(t(Attempt::Conflict, 9), Ok(LeaderState::Leader));
        assert!(
            t(Attempt::Conflict, 10)
                .unwrap_err()
                .contains("not renewed within 10 s")
        );
        assert_eq!(
            t(Attempt::HeldBy("b".into()), 1),
            Err("taken over by b".to_owned())
        );
    }

    #[test]
    fn follower_reports_the_holder() {
        let t = |a: Attempt, current: LeaderState| {
            transition(&a, false, Duration::ZERO, DEADLINE, &current)
        };
        assert_eq!(
            t(Attempt::HeldBy("a".into()), LeaderState::Unknown),
            Ok(LeaderState::Follower("a".into()))
        );
        assert_eq!(
            t(Attempt::Conflict, LeaderState::Unknown),
            Ok(LeaderState::Follower(String::new()))
        );
        assert_eq!(
            t(Attempt::Conflict, LeaderState::Follower("a".into())),
            Ok(LeaderState::Follower("a".into()))
        );
        assert_eq!(
            t(Attempt::Acquired, LeaderState::Follower("a".into())),
            Ok(LeaderState::Leader)
        );
    }

    fn elector(identity: &str) -> Elector {
        // A client that is never used: `record` is pure.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        Elector::new(
            client,
            LeaderConfig {
                namespace: "ns".into(),
                name: LEASE_NAME.into(),
                identity: identity.into(),
                lease_duration: Duration::from_secs(15),
                renew_deadline: DEADLINE,
                retry_period: Duration::from_secs(2),
            },
        )
    }

    #[tokio::test]
    async fn record_counts_transitions_only_on_a_new_holder() {
        let now = MicroTime(Timestamp::now());
        let e = elector("me");
        let first = e.record(None, now.clone());
        assert_eq!(first.holder_identity.as_deref(), Some("me"));
        assert_eq!(first.lease_duration_seconds, Some(15));
        assert_eq!(first.lease_transitions, Some(0));
        let renewed = e.record(Some(&first), now.clone());
        assert_eq!(renewed.lease_transitions, Some(0));
        assert_eq!(renewed.acquire_time, first.acquire_time);
        let taken = elector("other").record(Some(&renewed), now);
        assert_eq!(taken.holder_identity.as_deref(), Some("other"));
        assert_eq!(taken.lease_transitions, Some(1));
    }
}

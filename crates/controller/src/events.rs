//! Kubernetes events (`events.k8s.io/v1`) about the provider's objects.
//!
//! A repeat of an event (same object, type, reason, action and note) within [`SERIES_WINDOW`]
//! is folded into the first one's `series` (one PATCH of the count) instead of a new Event, as
//! client-go's recorder does. Only a digest of each recent event is remembered, with the name
//! it was created under: kube-runtime's `Recorder` keeps every event of the last six minutes
//! whole, which at 1,000 machines was the largest thing on the manager's heap after the
//! watched objects.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::events::EventType;
use kube::{Api, Client};

/// How long a repeat joins the earlier event's series (client-go and kube-runtime use six
/// minutes too).
pub const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// Remembered events above which the expired ones are dropped at the next publish.
const PRUNE_ABOVE: usize = 1024;

/// Remembered events above which the memory is given up (repeats then start new Events):
/// bounds what a storm of distinct events can hold.
const FORGET_ABOVE: usize = 16_384;

/// Longest note sent (the API server refuses notes over 1 KiB).
const MAX_NOTE_CHARS: usize = 1000;

/// What is remembered of a recent event: enough to extend its series.
struct Recent {
    name: String,
    namespace: String,
    count: i32,
    last: Instant,
}

/// Publishes events for one manager; share one (it is `Sync`).
pub struct Events {
    client: Client,
    controller: String,
    instance: String,
    recent: Mutex<HashMap<u64, Recent>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

/// One event to publish.
#[derive(Debug, Clone)]
pub struct Note<'a> {
    /// Normal or Warning.
    pub type_: EventType,
    /// CamelCase reason (`Provisioned`, `InvalidMachineSpec`, ...).
    pub reason: &'a str,
    /// What the controller was doing (`Reconcile`, `Delete`, ...).
    pub action: &'a str,
    /// Human-readable detail, capped at 1000 characters.
    pub note: Option<String>,
}

impl Events {
    /// Events reported by `controller` (the manager's field manager) from `instance` (the pod,
    /// else the controller's name).
    pub fn new(client: Client, controller: &str, instance: Option<String>) -> Self {
        Self {
            client,
            controller: controller.to_owned(),
            instance: instance.unwrap_or_else(|| controller.to_owned()),
            recent: Mutex::new(HashMap::new()),
        }
    }

    /// Publish `ev` about `regarding`: a new Event, or the next count of a recent identical one.
    pub async fn publish(
        &self,
        ev: Note<'_>,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let note = ev
            .note
            .as_ref()
            .map(|n| n.chars().take(MAX_NOTE_CHARS).collect());
        let key = digest(&ev, note.as_deref(), regarding);
        let now = Instant::now();
        if let Some((name, namespace, count)) = self.next_in_series(key, now) {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
            let patch = serde_json::json!({"series": {
                "count": count,
                "lastObservedTime": MicroTime(Timestamp::now()),
            }});
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                // Gone meanwhile (the API server expires events after an hour by default):
                // start a new one.
                Err(kube::Error::Api(ae)) if ae.code == 404 => self.forget(key),
                Err(e) => {
                    self.forget(key);
                    return Err(e);
                }
            }
        }
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let stamp = Timestamp::now();
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or(&self.controller),
            stamp.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            action: Some(ev.action.to_owned()),
            reason: Some(ev.reason.to_owned()),
            note,
            type_: Some(type_name(ev.type_).to_owned()),
            event_time: Some(MicroTime(stamp)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &event).await?;
        self.remember(key, name, namespace, now);
        Ok(())
    }

    /// Events remembered for their series (for tests and metrics).
    pub fn remembered(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Recent>> {
        self.recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The name, namespace and next count of a recent identical event, counted now.
    fn next_in_series(&self, key: u64, now: Instant) -> Option<(String, String, i32)> {
        let mut recent = self.lock();
        let r = recent.get_mut(&key)?;
        if now.duration_since(r.last) >= SERIES_WINDOW {
            recent.remove(&key);
            return None;
        }
        r.count = r.count.saturating_add(1);
        r.last = now;
        Some((r.name.clone(), r.namespace.clone(), r.count))
    }

    fn remember(&self, key: u64, name: String, namespace: String, now: Instant) {
        let mut recent = self.lock();
        if recent.len() >= PRUNE_ABOVE {
            recent.retain(|_, r| now.duration_since(r.last) < SERIES_WINDOW);
        }
        if recent.len() >= FORGET_ABOVE {
            recent.clear();
        }
        recent.insert(
            key,
            Recent {
                name,
                namespace,
                count: 1,
                last: now,
            },
        );
    }

    fn forget(&self, key: u64) {
        self.lock().remove(&key);
    }
}

fn type_name(t: EventType) -> &'static str {
    match t {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

/// Identity of an event for its series: the object (by UID where known), type, reason, action
/// and note.
fn digest(ev: &Note<'_>, note: Option<&str>, regarding: &ObjectReference) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    type_name(ev.type_).hash(&mut h);
    ev.reason.hash(&mut h);
    ev.action.hash(&mut h);
    note.hash(&mut h);
    regarding.uid.hash(&mut h);
    regarding.kind.hash(&mut h);
    regarding.namespace.hash(&mut h);
    regarding.name.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str, uid: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("OpenStackMachine".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..Default::default()
        }
    }

    fn note<'a>(reason: &'a str, text: &str) -> Note<'a> {
        Note {
            type_: EventType::Warning,
            reason,
            action: "Reconcile",
            note: Some(text.into()),
        }
    }

    #[test]
    fn identity_covers_object_reason_and_note() {
        let a = reference("m", "u1");
        let base = digest(&note("R", "x"), Some("x"), &a);
        assert_eq!(base, digest(&note("R", "x"), Some("x"), &a));
        assert_ne!(base, digest(&note("Other", "x"), Some("x"), &a));
        assert_ne!(base, digest(&note("R", "y"), Some("y"), &a));
        assert_ne!(
            base,
            digest(&note("R", "x"), Some("x"), &reference("m", "u2"))
        );
        let mut normal = note("R", "x");
        normal.type_ = EventType::Normal;
        assert_ne!(base, digest(&normal, Some("x"), &a));
    }

    #[tokio::test]
    async fn repeats_count_up_within_the_window_then_start_over() {
        let Ok(client) = test_client() else {
            return;
        };
        let events = Events::new(client, "capo", None);
        let now = Instant::now();
        assert!(events.next_in_series(1, now).is_none());
        events.remember(1, "m.1".into(), "ns".into(), now);
        let (name, ns, count) = events.next_in_series(1, now).unwrap_or_default();
        assert_eq!((name.as_str(), ns.as_str(), count), ("m.1", "ns", 2));
        assert_eq!(events.next_in_series(1, now).map(|n| n.2), Some(3));
        // After the window the repeat is a new event, and the old entry is gone.
        assert!(events.next_in_series(1, now + SERIES_WINDOW).is_none());
        assert_eq!(events.remembered(), 0);
    }

    #[tokio::test]
    async fn memory_is_bounded() {
        let Ok(client) = test_client() else {
            return;
        };
        let events = Events::new(client, "capo", None);
        let now = Instant::now();
        for k in 0..(FORGET_ABOVE as u64 + 10) {
            events.remember(k, "e".into(), "ns".into(), now);
        }
        assert!(events.remembered() <= FORGET_ABOVE);
        // Over the pruning threshold, expired entries go at the next publish.
        let events = Events::new(test_client().expect("client"), "capo", None);
        for k in 0..PRUNE_ABOVE as u64 {
            events.remember(k, "e".into(), "ns".into(), now);
        }
        events.remember(u64::MAX, "e".into(), "ns".into(), now + SERIES_WINDOW);
        assert_eq!(events.remembered(), 1);
    }

    /// A client that is never used for a request (these tests exercise the memory only).
    fn test_client() -> Result<Client, kube::Error> {
        let url = "http://127.0.0.1:9".parse().expect("a valid URL");
        Client::try_from(kube::Config::new(url))
    }
}

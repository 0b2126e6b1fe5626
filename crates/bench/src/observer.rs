//! Watches OpenStackClusters and OpenStackMachines and remembers when each first became ready
//! and when it disappeared, so that waits and per-machine times need no polling of the server.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;

use crate::cluster_api::{Objects, osc_ready, osm_ready};

/// The infrastructure kinds watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Infra {
    /// OpenStackCluster.
    Cluster,
    /// OpenStackMachine.
    Machine,
}

#[derive(Default)]
struct Seen {
    ready: HashMap<(Infra, String), (Instant, DynamicObject)>,
    gone: HashSet<(Infra, String)>,
}

/// What the watches saw; cheap to clone.
#[derive(Clone, Default)]
pub struct Observer {
    seen: Arc<Mutex<Seen>>,
}

impl Observer {
    /// Starts the two watches; they end when the returned handles are aborted.
    pub fn start(objects: &Objects) -> (Self, Vec<tokio::task::JoinHandle<()>>) {
        let observer = Observer::default();
        let tasks = vec![
            tokio::spawn(observer.clone().watch(objects.osc.clone(), Infra::Cluster)),
            tokio::spawn(observer.clone().watch(objects.osm.clone(), Infra::Machine)),
        ];
        (observer, tasks)
    }

    fn seen(&self) -> MutexGuard<'_, Seen> {
        // A poisoned lock means a watch task panicked mid-update of plain maps; what it
        // recorded is still consistent enough to read.
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn watch(self, api: Api<DynamicObject>, kind: Infra) {
        let ready = match kind {
            Infra::Cluster => osc_ready,
            Infra::Machine => osm_ready,
        };
        let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
        while let Some(event) = events.next().await {
            // Watch errors are retried by the watcher itself.
            let Ok(event) = event else { continue };
            let now = Instant::now();
            match event {
                watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => {
                    let name = obj.metadata.name.clone().unwrap_or_default();
                    if ready(&obj) {
                        self.seen().ready.entry((kind, name)).or_insert((now, obj));
                    }
                }
                watcher::Event::Delete(obj) => {
                    let name = obj.metadata.name.clone().unwrap_or_default();
                    self.seen().gone.insert((kind, name));
                }
                watcher::Event::Init | watcher::Event::InitDone => {}
            }
        }
    }

    /// When `name` was first seen ready.
    pub fn ready_at(&self, kind: Infra, name: &str) -> Option<Instant> {
        self.seen()
            .ready
            .get(&(kind, name.to_owned()))
            .map(|(t, _)| *t)
    }

    /// The object as it was when first seen ready.
    pub fn ready_object(&self, kind: Infra, name: &str) -> Option<DynamicObject> {
        self.seen()
            .ready
            .get(&(kind, name.to_owned()))
            .map(|(_, o)| o.clone())
    }

    /// Whether a deletion of `name` was seen.
    pub fn is_gone(&self, kind: Infra, name: &str) -> bool {
        self.seen().gone.contains(&(kind, name.to_owned()))
    }

    /// Waits until `name` is ready; fails after `timeout`.
    pub async fn wait_ready(&self, kind: Infra, name: &str, timeout: Duration) -> Result<Instant> {
        let start = Instant::now();
        loop {
            if let Some(t) = self.ready_at(kind, name) {
                return Ok(t);
            }
            if start.elapsed() > timeout {
                bail!("{kind:?} {name} not ready after {} s", timeout.as_secs());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `name` is gone (seen deleted, or, every 10 s, not found by `api`); fails
    /// after `timeout`.
    pub async fn wait_gone(
        &self,
        kind: Infra,
        name: &str,
        api: &Api<DynamicObject>,
        timeout: Duration,
    ) -> Result<()> {
        let start = Instant::now();
        let mut checked = Instant::now();
        loop {
            if self.is_gone(kind, name) {
                return Ok(());
            }
            // A watch that lost events relists without reporting deletions: check directly now
            // and then.
            if checked.elapsed() > Duration::from_secs(10) {
                checked = Instant::now();
                if api.get_opt(name).await?.is_none() {
                    return Ok(());
                }
            }
            if start.elapsed() > timeout {
                bail!("{kind:?} {name} not deleted after {} s", timeout.as_secs());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

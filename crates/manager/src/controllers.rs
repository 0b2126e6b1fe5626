//! The one place where controllers are started: each gets a context (its own concurrency and
//! backoff, shared session cache and metrics) and the shutdown signal.

use std::sync::Arc;

use capo_controller::credentials::IdentityReads;
use capo_controller::informers::Informers;
use capo_controller::metrics::ReconcileMetrics;
use capo_controller::{Context, Options};
use capo_openstack::SessionCache;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Controller names this build runs, in start order (also shown by the demo).
pub const CONTROLLERS: [&str; 5] = [
    capo_controller::cluster::CONTROLLER,
    capo_controller::machine::CONTROLLER,
    capo_controller::server::CONTROLLER,
    capo_controller::pool::CONTROLLER,
    capo_controller::identity_secret::CONTROLLER,
];

/// What every controller is built from.
#[derive(Clone)]
pub struct Shared {
    /// Kubernetes client.
    pub client: kube::Client,
    /// OpenStack sessions (one cache for all controllers).
    pub sessions: Arc<SessionCache>,
    /// Options common to all controllers (concurrency is set per controller).
    pub options: Options,
    /// Reconcile metrics, registered once and shared by all controllers.
    pub metrics: ReconcileMetrics,
    /// The watched stores, one set for all controllers (each object held once).
    pub informers: Arc<Informers>,
    /// Recent identity reads, one set for all controllers.
    pub identity_reads: Arc<IdentityReads>,
}

/// Per-controller concurrency (`--openstackcluster-concurrency`, `--openstackmachine-concurrency`).
#[derive(Debug, Clone, Copy)]
pub struct Concurrency {
    /// OpenStackCluster reconciles.
    pub cluster: u16,
    /// OpenStackMachine and OpenStackServer reconciles.
    pub machine: u16,
    /// OpenStackMachineTemplate reconciles (`--openstackmachinetemplate-concurrency`); `None`
    /// when the AutoScaleFromZero gate is off, and the controller does not run.
    pub machine_template: Option<u16>,
}

impl Shared {
    /// A context with `concurrency` whose metrics are the shared, registered ones.
    fn context(&self, concurrency: u16) -> Arc<Context> {
        let options = Options {
            concurrency,
            ..self.options.clone()
        };
        let ctx = Context::new(self.client.clone(), self.sessions.clone(), options);
        // A fresh Arc has no other owner, so unwrapping succeeds; if it ever did not, the
        // context would keep its own (unexported) metrics, which is harmless.
        match Arc::try_unwrap(ctx) {
            Ok(mut ctx) => {
                ctx.metrics = self.metrics.clone();
                ctx.informers = self.informers.clone();
                ctx.identity_reads = self.identity_reads.clone();
                Arc::new(ctx)
            }
            Err(ctx) => ctx,
        }
    }
}

async fn until(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Start every controller; each task ends after `stop` is set and its in-flight reconciles
/// finished.
pub fn spawn_all(
    shared: &Shared,
    concurrency: Concurrency,
    stop: &watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    // Upstream's --openstackmachine-concurrency also applies to OpenStackServers.
    let mut tasks = vec![
        tokio::spawn(capo_controller::cluster::run(
            shared.context(concurrency.cluster),
            until(stop.clone()),
        )),
        tokio::spawn(capo_controller::machine::run(
            shared.context(concurrency.machine),
            until(stop.clone()),
        )),
        tokio::spawn(capo_controller::server::run(
            shared.context(concurrency.machine),
            until(stop.clone()),
        )),
        // Upstream runs the pool controller at the default concurrency of one.
        tokio::spawn(capo_controller::pool::run(
            shared.context(1),
            until(stop.clone()),
        )),
        // One reconcile at a time: a Secret's finalizer has one writer, and requests for the
        // same Secret are merged while it waits.
        tokio::spawn(capo_controller::identity_secret::run(
            shared.context(1),
            until(stop.clone()),
        )),
    ];
    // Objects stored by an older release are rewritten in the storage version once; the
    // controllers do not wait for it (reads convert them meanwhile).
    tasks.push(tokio::spawn(capo_controller::storage_migration::run(
        shared.client.clone(),
        until(stop.clone()),
    )));
    if let Some(n) = concurrency.machine_template {
        tasks.push(tokio::spawn(capo_controller::machine_template::run(
            shared.context(n),
            until(stop.clone()),
        )));
    }
    tasks
}

//! The one place where controllers are started: each gets a context over the manager's
//! [`Shared`] (its own concurrency, backoff and memo) and the shutdown signal.

use std::sync::Arc;

use capo_controller::context::Shared;
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

async fn until(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Start every controller, and the storage-version migration unless `migrate_storage` is off
/// (`--skip-crd-migration-phases=StorageVersionMigration`); each task ends after `stop` is set
/// and its in-flight reconciles finished.
pub fn spawn_all(
    shared: &Arc<Shared>,
    concurrency: Concurrency,
    migrate_storage: bool,
    stop: &watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    // Upstream's --openstackmachine-concurrency also applies to OpenStackServers.
    let mut tasks = vec![
        tokio::spawn(capo_controller::cluster::run(
            shared.context_with(concurrency.cluster),
            until(stop.clone()),
        )),
        tokio::spawn(capo_controller::machine::run(
            shared.context_with(concurrency.machine),
            until(stop.clone()),
        )),
        tokio::spawn(capo_controller::server::run(
            shared.context_with(concurrency.machine),
            until(stop.clone()),
        )),
        // Upstream runs the pool controller at the default concurrency of one.
        tokio::spawn(capo_controller::pool::run(
            shared.context_with(1),
            until(stop.clone()),
        )),
        // One reconcile at a time: a Secret's finalizer has one writer, and requests for the
        // same Secret are merged while it waits.
        tokio::spawn(capo_controller::identity_secret::run(
            shared.context_with(1),
            until(stop.clone()),
        )),
    ];
    // Objects stored by an older release are rewritten in the storage version once; the
    // controllers do not wait for it (reads convert them meanwhile).
    if migrate_storage {
        tasks.push(tokio::spawn(capo_controller::storage_migration::run(
            shared.client.clone(),
            until(stop.clone()),
        )));
    }
    if let Some(n) = concurrency.machine_template {
        tasks.push(tokio::spawn(capo_controller::machine_template::run(
            shared.context_with(n),
            until(stop.clone()),
        )));
    }
    tasks
}

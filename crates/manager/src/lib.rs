//! `capo-controller-manager`: runs capo's controllers and admission webhooks with upstream
//! CAPO v0.14's flags (see docs/manager.md).
//!
//! - [`flags`]: the command line (upstream names and defaults), [`duration`]: Go durations.
//! - [`manager::run`]: the manager's life, usable in-process (the demo and the end-to-end tier run it so).
//! - [`leader`]: Lease-based leader election compatible with client-go's.
//! - [`kube_rate`]: `--kube-api-qps`/`--kube-api-burst` as a token bucket in the kube client.
//! - [`diagnostics`]: `/healthz`, `/readyz`, `/metrics`; [`process_metrics`]: `process_*`.
//! - [`controllers`]: the single place where controllers are started.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod controllers;
pub mod diagnostics;
pub mod duration;
pub mod error;
pub mod flags;
pub mod kube_rate;
pub mod kube_requests;
pub mod leader;
pub mod logging;
pub mod manager;
pub mod process_metrics;

pub use capo_controller::Options as ControllerOptions;
pub use error::{Error, Result};
pub use flags::Flags;
pub use manager::{run, run_with};

/// A future resolving on SIGTERM or SIGINT (Ctrl-C). The handlers are installed when this is
/// called, so signals arriving before the future is polled are not lost.
pub fn shutdown_signal_future() -> Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(Error::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(Error::Signal)?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("received SIGTERM"),
            _ = int.recv() => tracing::info!("received SIGINT"),
        }
    })
}

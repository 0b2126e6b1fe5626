//! `capo-controller-manager` entry point: parse flags, set up logging, run until SIGTERM/SIGINT.

use std::process::ExitCode;

use capo_manager::{Flags, logging};

#[tokio::main]
async fn main() -> ExitCode {
    let flags = match Flags::parse_go_style(std::env::args()) {
        Ok(f) => f,
        Err(e) => {
            // Prints help/version to stdout (exit 0) or the usage error to stderr (exit 2).
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    logging::init(flags.verbosity, flags.log_format);
    // Signal handlers are installed before anything starts, so an early SIGTERM is graceful.
    let shutdown = match capo_manager::shutdown_signal_future() {
        Ok(f) => f,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::FAILURE;
        }
    };
    match capo_manager::run(flags, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "capo-controller-manager stopped with an error");
            ExitCode::FAILURE
        }
    }
}

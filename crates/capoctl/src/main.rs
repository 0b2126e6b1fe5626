//! `capoctl`: operator CLI for capo. See docs/capoctl.md.

mod cli;
mod cloud_conf;
mod cloud_provider;
mod clouds;
mod env;
mod error;
mod inventory;
mod yaml;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    match cli::run(cli::Cli::parse()) {
        Ok(out) => {
            // A closed pipe (`capoctl env | head -1`) is not worth a panic.
            let _ = std::io::stdout().write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("capoctl: {err}");
            ExitCode::FAILURE
        }
    }
}

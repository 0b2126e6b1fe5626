//! Logging set-up: klog-style verbosity (`-v`) mapped to tracing levels, text or JSON output.

use tracing_subscriber::EnvFilter;

use crate::flags::LogFormat;

/// The filter for a klog verbosity: 0-2 info, 3-4 debug for capo's crates, 5 and above trace
/// for capo's crates and debug for the libraries.
pub fn filter_for(verbosity: u8) -> String {
    const OURS: [&str; 5] = [
        "capo_manager",
        "capo_controller",
        "capo_cloud",
        "capo_openstack",
        "capo_webhook",
    ];
    let (ours, rest) = match verbosity {
        0..=2 => ("info", "info"),
        3..=4 => ("debug", "info"),
        _ => ("trace", "debug"),
    };
    let mut parts = vec![rest.to_owned()];
    parts.extend(OURS.iter().map(|c| format!("{c}={ours}")));
    parts.join(",")
}

/// Install the global subscriber (stderr). `RUST_LOG`, when set, replaces the `-v` mapping.
/// Text is coloured only on a terminal: in a Pod, stderr is a pipe the container runtime
/// writes to a file, where escape codes would only garble `kubectl logs` and log collectors.
/// Calling it twice (tests, the demo) keeps the first subscriber.
pub fn init(verbosity: u8, format: LogFormat) {
    use std::io::IsTerminal;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(filter_for(verbosity)));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_maps_to_levels() {
        assert!(
            filter_for(0).starts_with("info,") && filter_for(2).contains("capo_controller=info")
        );
        assert!(filter_for(3).contains("capo_controller=debug"));
        assert!(filter_for(5).starts_with("debug,") && filter_for(9).contains("capo_cloud=trace"));
        for v in [0, 3, 5] {
            assert!(EnvFilter::try_new(filter_for(v)).is_ok());
        }
    }
}

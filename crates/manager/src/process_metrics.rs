//! `process_*` metrics (as Prometheus' Go and client_golang process collectors name them), read
//! from `/proc/self` at scrape time; on systems without procfs only the start time is exported.
//! [`cpu_seconds`] and [`resident_bytes`] read any process (the installed tier measures the
//! manager's pod with them).

use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

/// Clock ticks per second of `/proc/<pid>/stat`'s CPU times: USER_HZ, fixed at 100 by the
/// Linux user-space ABI on every architecture capo is built for.
const USER_HZ: f64 = 100.0;

#[derive(Debug)]
struct ProcessCollector {
    /// Seconds since the epoch when the manager registered its metrics (right after start).
    start_time: f64,
}

/// Register the process collector.
pub fn register(registry: &mut Registry) {
    let start_time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    registry.register_collector(Box::new(ProcessCollector { start_time }));
}

/// CPU seconds (user + system) of process `pid` (`self` for this one) from `/proc/<pid>/stat`.
pub fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at `state`.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// Resident memory in bytes of process `pid` (`self` for this one) from `/proc/<pid>/status`
/// (`VmRSS: N kB`).
pub fn resident_bytes(pid: &str) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn open_fds() -> Option<i64> {
    let n = std::fs::read_dir("/proc/self/fd").ok()?.count();
    i64::try_from(n).ok()
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let e = encoder.encode_descriptor(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.start_time).encode(e)?;
        if let Some(cpu) = cpu_seconds("self") {
            let e = encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                MetricType::Counter,
            )?;
            ConstCounter::new(cpu).encode(e)?;
        }
        if let Some(rss) = resident_bytes("self") {
            let e = encoder.encode_descriptor(
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(rss).encode(e)?;
        }
        if let Some(fds) = open_fds() {
            let e = encoder.encode_descriptor(
                "process_open_fds",
                "Number of open file descriptors",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(fds).encode(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_process_metrics() {
        let mut registry = Registry::default();
        register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        assert!(out.contains("process_start_time_seconds "), "{out}");
        assert!(out.contains("process_cpu_seconds_total "), "{out}");
        assert!(out.contains("process_resident_memory_bytes "), "{out}");
        assert!(out.contains("process_open_fds "), "{out}");
    }
}

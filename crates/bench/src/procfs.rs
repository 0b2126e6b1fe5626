//! What /proc says about a manager process: peak resident memory, CPU time, open connections.

use std::collections::HashSet;

use anyhow::{Context as _, Result};

/// Peak resident set size (VmHWM) of `pid`, in KiB.
pub fn peak_rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/<pid>/status")
}

/// User plus system CPU time of `pid` (all its threads), in seconds.
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // The command name may hold spaces and parentheses; the fields after its last ')' start
    // with the state (field 3), so utime (14) and stime (15) are the 12th and 13th of them.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .context("malformed /proc/<pid>/stat")
    };
    Ok((ticks(11)? + ticks(12)?) as f64 / clock_ticks() as f64)
}

/// Clock ticks per second (`getconf CLK_TCK`; 100, Linux's value everywhere, if that fails).
fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// Established TCP connections of `pid` to `127.0.0.1:port` (or `[::1]:port`): the sockets
/// among its file descriptors whose remote end, in /proc/<pid>/net/tcp{,6}, is that port.
pub fn connections_to(pid: u32, port: u16) -> Result<usize> {
    let mut inodes = HashSet::new();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .with_context(|| format!("listing /proc/{pid}/fd"))?;
    for fd in fds.flatten() {
        // A descriptor closed between the listing and the read is simply skipped.
        if let Ok(target) = std::fs::read_link(fd.path())
            && let Some(inode) = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
        {
            inodes.insert(inode.to_owned());
        }
    }
    let mut count = 0;
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(state), Some(inode)) = (cols.get(2), cols.get(3), cols.get(9))
            else {
                continue;
            };
            let remote_port = remote
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            // State 01 is ESTABLISHED.
            if *state == "01" && remote_port == Some(port) && inodes.contains(*inode) {
                count += 1;
            }
        }
    }
    Ok(count)
}

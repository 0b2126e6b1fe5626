//! Child processes (etcd, kube-apiserver, and the Cluster API managers of [`crate::capi`]) and
//! the watchdog that ends them.
//!
//! All servers of one environment run in one process group. A small `sh` watchdog reads a pipe
//! whose only writer is the test process: when the test process goes away for any reason
//! (normal exit, panic, SIGKILL), the pipe closes and the watchdog kills the group and removes
//! the temporary directory. This matters because a shared environment lives in a `static`,
//! which Rust never drops.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::error::{Error, Result};

/// A free TCP port on 127.0.0.1, as the kernel hands it out. The port is released before
/// the server binds it, so another process could take it in between; callers retry.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(Error::io("binding a free port"))?;
    let addr = listener
        .local_addr()
        .map_err(Error::io("reading a bound port"))?;
    Ok(addr.port())
}

/// The lowest port the kernel may hand out as the source port of an outgoing connection (the
/// low end of `net.ipv4.ip_local_port_range`; 32768, the kernel default, if unreadable).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// Ports handed out by [`stable_port`] in this process, never handed out twice.
static STABLE_PORTS: std::sync::Mutex<std::collections::BTreeSet<u16>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A free TCP port below the kernel's ephemeral range, free on all interfaces when picked.
///
/// Unlike [`free_port`]'s, such a port stays free while nobody listens on it: the kernel never
/// uses it as the source port of an outgoing connection (the API server opens many to etcd and
/// to webhooks). Use it for a port that is named long before its server starts, or for a
/// server that binds all interfaces. No port is returned twice in one process.
pub fn stable_port() -> Result<u16> {
    const LOW: u16 = 10_000;
    let high = ephemeral_low().max(LOW + 1_000);
    let mut taken = STABLE_PORTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for _ in 0..200 {
        let port = rand::random_range(LOW..high);
        if taken.contains(&port) {
            continue;
        }
        let free = TcpListener::bind(("0.0.0.0", port)).is_ok()
            && TcpListener::bind(("127.0.0.1", port)).is_ok();
        if free {
            taken.insert(port);
            return Ok(port);
        }
    }
    Err(Error::Io {
        context: format!("finding a free port in {LOW}..{high}"),
        source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
    })
}

/// A running server with its log file.
#[derive(Debug)]
pub struct Server {
    /// Short name used in messages ("etcd", "kube-apiserver").
    pub name: &'static str,
    /// Its combined stdout/stderr log.
    pub log: PathBuf,
    child: Child,
}

impl Server {
    /// Starts `bin args..` with output to `log`, in process group `group` (0: a new group
    /// led by this process).
    pub fn spawn(
        name: &'static str,
        bin: &Path,
        args: &[String],
        log: PathBuf,
        group: u32,
    ) -> Result<Self> {
        let out = File::create(&log).map_err(Error::io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(Error::io(format!("opening {}", log.display())))?;
        let child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(i32::try_from(group).unwrap_or(0))
            .spawn()
            .map_err(Error::io(format!("starting {}", bin.display())))?;
        Ok(Self { name, log, child })
    }

    /// The process id (the group id too when spawned with group 0).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(err) => Some(err.to_string()),
        }
    }

    /// Kills the process (SIGKILL) and waits for it; a no-op once it has been reaped.
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }

    /// An error for "did not become ready" carrying the log tail.
    pub fn not_ready(&self, reason: impl Into<String>) -> Error {
        Error::NotReady {
            what: self.name,
            reason: reason.into(),
            log: self.log.clone(),
            tail: log_tail(&self.log, 40),
        }
    }
}

/// The last `lines` lines of a log file (at most the last 64 KiB are read).
pub fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(mut file) = File::open(path) else {
        return format!("(cannot open {})", path.display());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut buf = Vec::new();
    let _ = file.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Kills a process group and removes a directory once the test process is gone or
/// [`Watchdog::fire`] is called.
#[derive(Debug)]
pub struct Watchdog {
    stdin: Option<ChildStdin>,
    child: Child,
}

/// `$1` process group, `$2` directory to remove. `read` returns at EOF, i.e. when the
/// test process closed its end of the pipe, deliberately or by dying.
const WATCHDOG: &str = r#"read -r _
kill -TERM -"$1" 2>/dev/null
i=0
while kill -0 -"$1" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
kill -KILL -"$1" 2>/dev/null
[ -n "$2" ] && rm -rf "$2""#;

impl Watchdog {
    /// Starts a watchdog for process group `group` and directory `dir`.
    pub fn start(group: u32, dir: &Path) -> Result<Self> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("capo-testkit-watchdog")
            .arg(group.to_string())
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group, so killing the servers' group does not kill the watchdog.
            .process_group(0)
            .spawn()
            .map_err(Error::io("starting the watchdog"))?;
        Ok(Self {
            stdin: child.stdin.take(),
            child,
        })
    }

    /// Stops the servers and removes the directory now, waiting until that is done.
    pub fn fire(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.fire();
    }
}

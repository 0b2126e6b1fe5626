//! capo's manager as a child process (the `capo-controller-manager` binary), for the fault soak:
//! unlike the in-process manager, it can be SIGKILLed at any moment and started again with the
//! same flags, as a pod's container is after an OOM kill or a node loss.
//!
//! The child runs in the management cluster's process group, so it ends with the other servers
//! even when the soak itself is killed; each start appends to the same log file.

use std::fs::OpenOptions;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

/// The manager process, its command line, and how often it was killed.
pub struct ChildManager {
    bin: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    group: u32,
    state: Mutex<State>,
}

struct State {
    child: Option<Child>,
    kills: u32,
}

impl ChildManager {
    /// Starts `bin args..` in process group `group`, its output appended to `log`.
    pub fn start(bin: &Path, args: Vec<String>, log: &Path, group: u32) -> Result<Self, String> {
        let manager = ChildManager {
            bin: bin.to_owned(),
            args,
            log: log.to_owned(),
            group,
            state: Mutex::new(State {
                child: None,
                kills: 0,
            }),
        };
        manager.ensure_running()?;
        Ok(manager)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts the process again unless it is running; returns whether it had to be started.
    pub fn ensure_running(&self) -> Result<bool, String> {
        let mut state = self.lock();
        if let Some(child) = state.child.as_mut()
            && matches!(child.try_wait(), Ok(None))
        {
            return Ok(false);
        }
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("opening {}: {e}", self.log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("opening {}: {e}", self.log.display()))?;
        let child = Command::new(&self.bin)
            .args(&self.args)
            // A log file, not a terminal: no colour codes in it.
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(i32::try_from(self.group).unwrap_or(0))
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.bin.display()))?;
        state.child = Some(child);
        Ok(true)
    }

    /// SIGKILLs the process (no graceful shutdown, as after an OOM kill) and reaps it; returns
    /// false when it was not running.
    pub fn kill(&self) -> bool {
        let mut state = self.lock();
        let Some(mut child) = state.child.take() else {
            return false;
        };
        let running = matches!(child.try_wait(), Ok(None));
        // `Child::kill` sends SIGKILL on Unix.
        let _ = child.kill();
        let _ = child.wait();
        if running {
            state.kills += 1;
        }
        running
    }

    /// How many times [`ChildManager::kill`] killed a running process.
    pub fn kills(&self) -> u32 {
        self.lock().kills
    }

    /// `Some(status)` when the process ended on its own (not by [`ChildManager::kill`]).
    pub fn exited(&self) -> Option<String> {
        let mut state = self.lock();
        let child = state.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(e.to_string()),
        }
    }
}

impl Drop for ChildManager {
    fn drop(&mut self) {
        self.kill();
    }
}

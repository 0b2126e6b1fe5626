//! The test partners: real consumers of capo's BA/ACP extension (the Ansible bootstrap provider of
//! the Goend Cluster API fork), built by `hack/partners.sh build` from `../shared/partners` and
//! cached outside the repository (docs/partners.md).
//!
//! Tests find the build through `$CAPO_PARTNERS_BUILD_DIR` (the last line `hack/partners.sh build`
//! prints; `hack/test.sh` exports it). Unlike [`crate::paths::EnvDir`], an unset variable does not
//! trigger a build: a first build takes minutes, so a test without the variable reports that it
//! skipped and why.
//!
//! Cluster API versions: the fork's consumer reads `cluster.x-k8s.io/v1beta2` Clusters and
//! Machines, and Cluster API v1.12's CRDs (installed by [`crate::TestEnv`]) store and serve
//! v1beta2 as well, so the fork's own core CRDs (kept in `crds/core/`) are not installed: no
//! conversion is ever asked for, and capo's tests keep the CRDs the rest of the suite runs on.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kube::Client;

use crate::crds;
use crate::error::{Error, Result};
use crate::process::log_tail;

/// Environment variable naming the directory `hack/partners.sh build` printed.
pub const BUILD_DIR_VAR: &str = "CAPO_PARTNERS_BUILD_DIR";

/// A partners build: `bin/{ansible-bootstrap,capo-test-sshd}`, `crds/`, `src/`.
#[derive(Debug, Clone)]
pub struct PartnersDir {
    /// The directory itself.
    pub root: PathBuf,
}

impl PartnersDir {
    /// The build named by `$CAPO_PARTNERS_BUILD_DIR`: `Ok(None)` when the variable is unset or
    /// empty, an error when it names an incomplete directory.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var_os(BUILD_DIR_VAR) {
            Some(dir) if !dir.is_empty() => {
                let dir = Self {
                    root: PathBuf::from(dir),
                };
                dir.check()?;
                Ok(Some(dir))
            }
            _ => Ok(None),
        }
    }

    /// Path of one of the binaries.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.root.join("bin").join(name)
    }

    /// Directory of the partner CRDs (Ansible providers, Kubean).
    pub fn crds(&self) -> PathBuf {
        self.root.join("crds")
    }

    /// Installs the partner CRDs (not the fork's core ones: see the module documentation) and
    /// waits until they are Established; returns their names.
    ///
    /// A file that is not valid YAML is skipped with a warning naming it: the snapshot's
    /// `bootstrap.cluster.x-k8s.io_ansibleconfigtemplates.yaml` is one (a hand-edited
    /// description block, rejected by kubectl as well), and only the control-plane provider
    /// needs that kind.
    pub async fn install_crds(&self, client: &Client) -> Result<Vec<String>> {
        let mut all = Vec::new();
        for file in crds::yaml_files(&self.crds())? {
            match crds::load(std::slice::from_ref(&file)) {
                Ok(loaded) => all.extend(loaded),
                Err(err) => eprintln!("capo-testkit: WARNING: partner CRD skipped: {err}"),
            }
        }
        crds::install(client, &all).await
    }

    fn check(&self) -> Result<()> {
        let wanted = ["bin/ansible-bootstrap", "bin/capo-test-sshd", "crds"];
        match wanted.iter().find(|p| !self.root.join(p).exists()) {
            None => Ok(()),
            Some(missing) => Err(Error::Incomplete {
                dir: self.root.clone(),
                missing: (*missing).to_owned(),
            }),
        }
    }
}

/// A partner program run by a test, with its output in a log file; killed (by its own process
/// id) when dropped.
#[derive(Debug)]
pub struct PartnerProcess {
    /// Short name for messages.
    pub name: String,
    /// Its combined stdout/stderr.
    pub log: PathBuf,
    child: Child,
}

impl PartnerProcess {
    /// Starts `bin args..` with stdout and stderr to `log`.
    pub fn spawn(name: &str, bin: &Path, args: &[String], log: PathBuf) -> Result<Self> {
        let out = File::create(&log).map_err(Error::io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(Error::io(format!("opening {}", log.display())))?;
        let child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(Error::io(format!("starting {}", bin.display())))?;
        Ok(Self {
            name: name.to_owned(),
            log,
            child,
        })
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(err) => Some(err.to_string()),
        }
    }

    /// The whole log so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of the log.
    pub fn tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }
}

impl Drop for PartnerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

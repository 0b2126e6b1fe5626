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
use std::os::unix::process::CommandExt;
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
    /// Two things an installation of the providers does (or would have to do) are done here:
    /// - the snapshot's `bootstrap.cluster.x-k8s.io_ansibleconfigtemplates.yaml` is not valid
    ///   YAML (a hand-edited description whose first line lost its indentation; kubectl rejects
    ///   it too): [`repair_block_scalars`] puts that line back at its block's indentation. A
    ///   file still invalid after it is skipped with a warning naming it;
    /// - the Ansible providers' CRDs get Cluster API's contract label
    ///   (`cluster.x-k8s.io/v1beta2: <versions>`), which their kustomizations would add and
    ///   without which Cluster API v1.14 cannot resolve a reference to an AnsibleControlPlane
    ///   or an AnsibleConfigTemplate (the labels change nothing for older Cluster API).
    pub async fn install_crds(&self, client: &Client) -> Result<Vec<String>> {
        let mut all = Vec::new();
        for file in crds::yaml_files(&self.crds())? {
            let text = std::fs::read_to_string(&file)
                .map_err(Error::io(format!("reading {}", file.display())))?;
            match crds::parse(&repair_block_scalars(&text), &file.display().to_string()) {
                Ok(loaded) => all.extend(loaded),
                Err(err) => eprintln!("capo-testkit: WARNING: partner CRD skipped: {err}"),
            }
        }
        for crd in &mut all {
            if CONTRACT_GROUPS.contains(&crd.spec.group.as_str()) {
                let versions: Vec<&str> =
                    crd.spec.versions.iter().map(|v| v.name.as_str()).collect();
                crd.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(CONTRACT_LABEL.to_owned(), versions.join("_"));
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

/// The Cluster API contract the fork's providers implement, as the label their CRDs carry.
const CONTRACT_LABEL: &str = "cluster.x-k8s.io/v1beta2";
/// The groups of the Ansible providers' kinds (shared with kubeadm's providers).
const CONTRACT_GROUPS: [&str; 2] = [
    "bootstrap.cluster.x-k8s.io",
    "controlplane.cluster.x-k8s.io",
];

/// Re-indents the first line of a `|-` block scalar that sits at (or left of) its key's
/// indentation while the block's next line is deeper: the one defect that makes the snapshot's
/// AnsibleConfigTemplate CRD unreadable. Any other text comes back unchanged.
pub fn repair_block_scalars(text: &str) -> String {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let opener = i
            .checked_sub(1)
            .map(|p| lines[p])
            .filter(|p| p.trim_end().ends_with(": |-"));
        let next = lines.get(i + 1);
        match (opener, next) {
            (Some(p), Some(n))
                if !line.trim().is_empty()
                    && !is_mapping_key(line)
                    && indent(line) <= indent(p)
                    && indent(n) > indent(p) =>
            {
                out.push(format!("{}{}", " ".repeat(indent(n)), line.trim_start()));
            }
            _ => out.push((*line).to_owned()),
        }
    }
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    joined
}

/// `key:` or `key: value` (a plain key), which a block scalar's first line never is here.
fn is_mapping_key(line: &str) -> bool {
    let t = line.trim_start();
    t.split_once(':').is_some_and(|(key, rest)| {
        !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            && (rest.is_empty() || rest.starts_with(' '))
    })
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
        Self::start(name, bin, args, log, None)
    }

    /// Like [`PartnerProcess::spawn`], in process group `group` (a [`crate::TestEnv`]'s
    /// [`process_group`](crate::TestEnv::process_group)), so that the environment's watchdog
    /// ends it even when the test process is killed and cannot drop the handle.
    pub fn spawn_in_group(
        name: &str,
        bin: &Path,
        args: &[String],
        log: PathBuf,
        group: u32,
    ) -> Result<Self> {
        Self::start(name, bin, args, log, Some(group))
    }

    fn start(
        name: &str,
        bin: &Path,
        args: &[String],
        log: PathBuf,
        group: Option<u32>,
    ) -> Result<Self> {
        let out = File::create(&log).map_err(Error::io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(Error::io(format!("opening {}", log.display())))?;
        let mut cmd = Command::new(bin);
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
        if let Some(group) = group {
            cmd.process_group(i32::try_from(group).unwrap_or(0));
        }
        let child = cmd
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

#[cfg(test)]
mod tests {
    use super::repair_block_scalars;

    #[test]
    fn a_block_scalar_line_at_its_keys_indentation_is_put_back_in_the_block() {
        let broken = "  d: |-\n  First line.\n    Second line.\n  e: 1\n";
        let fixed = repair_block_scalars(broken);
        assert_eq!(
            fixed,
            "  d: |-\n    First line.\n    Second line.\n  e: 1\n"
        );
        let valid = "a: |-\nb:\n  c: 1\n";
        assert_eq!(repair_block_scalars(valid), valid);
        assert_eq!(repair_block_scalars(&fixed), fixed);
    }
}

//! Where the binaries and CRDs come from.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// Environment variable naming a prepared test-env directory (skips running the script).
pub const ENV_DIR_VAR: &str = "CAPO_TEST_ENV_DIR";
/// Environment variable overriding the directory of our own CRDs (default `config/crd/bases`).
pub const CRD_DIR_VAR: &str = "CAPO_TEST_CRD_DIR";

/// The repository root: the workspace (the directory holding `Cargo.lock`) of the manifest
/// directory cargo names when it runs a test or binary, else of the one compiled in. The run
/// time one comes first because cargo reuses an artefact built from another checkout of the
/// same workspace when its sources look unchanged (its hashes do not depend on the checkout's
/// path), and the compiled-in path then names that other checkout.
pub fn repo_root() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let at_run = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    at_run
        .iter()
        .chain(std::iter::once(&built))
        .find_map(|dir| dir.ancestors().find(|d| d.join("Cargo.lock").is_file()))
        .map(Path::to_path_buf)
        .unwrap_or_else(|| {
            built
                .ancestors()
                .nth(2)
                .map_or_else(|| built.clone(), Path::to_path_buf)
        })
}

/// The directory holding our generated CRDs.
pub fn our_crd_dir() -> PathBuf {
    std::env::var_os(CRD_DIR_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("config/crd/bases"))
}

/// The prepared environment: `bin/{kube-apiserver,etcd,kubectl}` and `crds/`.
#[derive(Debug, Clone)]
pub struct EnvDir {
    /// The directory itself.
    pub root: PathBuf,
}

impl EnvDir {
    /// Uses `$CAPO_TEST_ENV_DIR`, else runs `hack/test-env.sh` (building on first use) and
    /// takes the last line it prints.
    pub fn locate() -> Result<Self> {
        let root = match std::env::var_os(ENV_DIR_VAR) {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => run_script()?,
        };
        let dir = Self { root };
        dir.check()?;
        Ok(dir)
    }

    /// Path of one of the binaries.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.root.join("bin").join(name)
    }

    /// Directory of the Cluster API and ORC CRDs.
    pub fn crds(&self) -> PathBuf {
        self.root.join("crds")
    }

    fn check(&self) -> Result<()> {
        let wanted = ["bin/kube-apiserver", "bin/etcd", "bin/kubectl", "crds"];
        match wanted.iter().find(|p| !self.root.join(p).exists()) {
            None => Ok(()),
            Some(missing) => Err(Error::Incomplete {
                dir: self.root.clone(),
                missing: (*missing).to_owned(),
            }),
        }
    }
}

fn run_script() -> Result<PathBuf> {
    let script = repo_root().join("hack/test-env.sh");
    // stderr is inherited so a first-time build shows its progress.
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(Error::io(format!("running {}", script.display())))?;
    if !out.status.success() {
        return Err(Error::Script(format!("exit status {}", out.status)));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| PathBuf::from(l.trim()))
        .ok_or_else(|| Error::Script("it printed no directory".into()))
}

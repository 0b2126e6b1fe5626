//! The manager under test as a child process: upstream's Go binary or capo's, with the same
//! flags where both have them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};

use crate::settings::Settings;

/// Which manager runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Upstream CAPO v0.14.7, built from the Go module proxy.
    Upstream,
    /// capo's `capo-controller-manager`.
    Capo,
}

impl Kind {
    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Upstream => "upstream",
            Kind::Capo => "capo",
        }
    }

    /// The infrastructure CRDs it is installed with: each manager gets its own.
    pub fn crds(self, settings: &Settings) -> Option<PathBuf> {
        match self {
            Kind::Upstream => Some(settings.upstream_dir.join("crds")),
            Kind::Capo => None,
        }
    }
}

/// A running manager; killed when dropped.
pub struct Manager {
    child: tokio::process::Child,
    pid: u32,
    /// Its log file (stdout and stderr).
    pub log: PathBuf,
}

impl Manager {
    /// Starts `kind` with `kubeconfig` (its own user), logging into `dir`.
    pub fn start(kind: Kind, settings: &Settings, kubeconfig: &Path, dir: &Path) -> Result<Self> {
        let health = free_port()?;
        let mut args = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            "--leader-elect=false".into(),
            format!("--kube-api-qps={}", settings.kube_api_qps),
            format!("--kube-api-burst={}", settings.kube_api_burst),
            format!("--openstackcluster-concurrency={}", settings.concurrency),
            format!("--openstackmachine-concurrency={}", settings.concurrency),
            // "0" disables the metrics server in both.
            "--diagnostics-address=0".into(),
            format!("--health-addr=127.0.0.1:{health}"),
        ];
        let binary = match kind {
            Kind::Upstream => {
                // Upstream cannot turn its webhook server off; it needs a certificate, and
                // listens on every interface (hence the loopback-only namespace of hack/bench.sh).
                let certs = dir.join("webhook-certs");
                write_webhook_certs(&certs)?;
                args.push(format!("--webhook-port={}", free_port()?));
                args.push(format!("--webhook-cert-dir={}", certs.display()));
                settings.upstream_dir.join("bin/capo-upstream")
            }
            Kind::Capo => {
                // No admission webhook is registered for either manager in this benchmark.
                args.push("--webhook-port=0".into());
                settings.capo_manager.clone()
            }
        };
        if !binary.is_file() {
            bail!(
                "{} manager binary not found at {}",
                kind.name(),
                binary.display()
            );
        }
        let log = dir.join(format!("{}.log", kind.name()));
        let out =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone().context("duplicating the log file")?;
        let child = tokio::process::Command::new(&binary)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let pid = child.id().context("the manager exited at once")?;
        Ok(Self { child, pid, log })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Fails when the process has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait().context("polling the manager")? {
            bail!(
                "the manager exited with {status} (log: {})",
                self.log.display()
            );
        }
        Ok(())
    }

    /// SIGTERM, then SIGKILL after 15 s.
    pub async fn stop(mut self) -> Result<()> {
        let status = tokio::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .await
            .context("running kill")?;
        if !status.success() {
            bail!("kill -TERM {} failed", self.pid);
        }
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await.context("killing the manager")?;
        }
        Ok(())
    }
}

/// A free port on 127.0.0.1 (handed to the manager, which binds it shortly after).
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding a free port")?;
    Ok(listener
        .local_addr()
        .context("reading a bound port")?
        .port())
}

/// A throw-away serving certificate for 127.0.0.1 in `dir` (tls.crt, tls.key).
fn write_webhook_certs(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let ca = capo_tls::Ca::new("capo-bench-webhook-ca")?;
    let leaf = ca.issue("capo-bench-webhook", capo_tls::LOOPBACK)?;
    std::fs::write(dir.join(capo_tls::CERT_FILE), leaf.cert_pem()).context("writing tls.crt")?;
    std::fs::write(dir.join(capo_tls::KEY_FILE), leaf.key_pem()).context("writing tls.key")?;
    Ok(())
}

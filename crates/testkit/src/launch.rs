//! Command lines and readiness checks for etcd and kube-apiserver.

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::certs::Credentials;
use crate::error::{Error, Result};
use crate::process::Server;

/// How long etcd and the API server may take to come up (2 busy cores can be slow).
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// etcd on 127.0.0.1 with a data directory inside `dir`.
pub fn etcd_args(dir: &Path, client_port: u16, peer_port: u16) -> Vec<String> {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    vec![
        format!("--data-dir={}", dir.join("etcd").display()),
        "--name=capo-testkit".into(),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=capo-testkit={peer}"),
        // Test data is disposable: skipping fsync makes every write much cheaper.
        "--unsafe-no-fsync=true".into(),
        "--log-level=warn".into(),
    ]
}

/// kube-apiserver flags in the spirit of envtest: token auth, RBAC, no ServiceAccount admission
/// (no controller-manager creates tokens), loopback only.
pub fn apiserver_args(creds: &Credentials, etcd_port: u16, port: u16) -> Vec<String> {
    vec![
        format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
        format!("--secure-port={port}"),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--tls-cert-file={}", creds.serving_cert.display()),
        format!("--tls-private-key-file={}", creds.serving_key.display()),
        format!("--token-auth-file={}", creds.token_file.display()),
        "--authorization-mode=RBAC".into(),
        format!("--service-account-issuer=https://127.0.0.1:{port}"),
        format!("--service-account-key-file={}", creds.sa_pub.display()),
        format!(
            "--service-account-signing-key-file={}",
            creds.sa_key.display()
        ),
        "--service-cluster-ip-range=10.0.0.0/24".into(),
        "--disable-admission-plugins=ServiceAccount".into(),
        "--allow-privileged=true".into(),
        // Keeps the server lighter; priority and fairness only matters under real load.
        "--enable-priority-and-fairness=false".into(),
        "--v=1".into(),
    ]
}

/// The audit policy of [`audit_args`]: every request once it completes (and a watch when it
/// starts), at level Metadata, which records who asked for what but never a body.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
";

/// kube-apiserver flags writing an audit log into `dir` (policy [`AUDIT_POLICY`]); returns them
/// and the log's path.
pub fn audit_args(dir: &Path) -> Result<(Vec<String>, std::path::PathBuf)> {
    let policy = dir.join("audit-policy.yaml");
    std::fs::write(&policy, AUDIT_POLICY)
        .map_err(Error::io(format!("writing {}", policy.display())))?;
    let log = dir.join("audit.log");
    let args = vec![
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", log.display()),
        // One file, never rotated, written before the reply: a count after the run is complete.
        "--audit-log-maxsize=0".into(),
        "--audit-log-mode=blocking".into(),
        "--audit-log-format=json".into(),
    ];
    Ok((args, log))
}

/// Waits until `server` accepts TCP connections on `port`.
pub async fn wait_port(server: &mut Server, port: u16) -> Result<()> {
    let start = Instant::now();
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if let Some(status) = server.exited() {
            return Err(server.not_ready(format!("exited with {status}")));
        }
        if start.elapsed() > READY_TIMEOUT {
            return Err(server.not_ready(format!("port {port} closed after {READY_TIMEOUT:?}")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes an admin kubeconfig for `https://127.0.0.1:<port>` and returns its client config.
pub async fn write_kubeconfig(path: &Path, port: u16, creds: &Credentials) -> Result<Config> {
    let ca = base64::engine::general_purpose::STANDARD.encode(&creds.ca_pem);
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: capo-testkit\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority-data: {ca}\nusers:\n- name: capo-admin\n  user:\n    token: {token}\ncontexts:\n- name: capo-testkit\n  context:\n    cluster: capo-testkit\n    user: capo-admin\n    namespace: default\ncurrent-context: capo-testkit\n",
        token = creds.token()
    );
    std::fs::write(path, yaml).map_err(Error::io(format!("writing {}", path.display())))?;
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| Error::Client(e.to_string()))?;
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Client(e.to_string()))
}

/// Waits until `/readyz` answers `ok`.
pub async fn wait_ready(server: &mut Server, client: &Client) -> Result<()> {
    let start = Instant::now();
    loop {
        let last = match http::Request::get("/readyz").body(Vec::new()) {
            Ok(req) => match client.request_text(req).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => body,
                Err(err) => err.to_string(),
            },
            Err(err) => err.to_string(),
        };
        if let Some(status) = server.exited() {
            return Err(server.not_ready(format!("exited with {status}")));
        }
        if start.elapsed() > READY_TIMEOUT {
            return Err(server.not_ready(format!("/readyz after {READY_TIMEOUT:?}: {last}")));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

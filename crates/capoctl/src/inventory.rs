//! `capoctl inventory`: a cluster's Ansible inventory and variables (the `<cluster>-ansible`
//! Secret the provider writes for BA/ACP), read from the management cluster. Optionally
//! writes them, with the cluster's generated SSH key (mode 0600), into a directory ready for
//! `ansible-playbook -i inventory.yaml -e @vars.yaml --private-key id_ed25519`.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Secret;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::error::{Error, Result};

/// Secret keys written by the provider.
const INVENTORY: &str = "inventory.yaml";
const VARS: &str = "vars.yaml";
const SSH_PRIVATE: &str = "ssh-privatekey";

/// What to print or write.
#[derive(Debug, Clone)]
pub struct InventoryOptions {
    /// kubeconfig of the management cluster (else KUBECONFIG / in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// Namespace of the cluster.
    pub namespace: String,
    /// Cluster name.
    pub cluster: String,
    /// Print `vars.yaml` instead of `inventory.yaml`.
    pub vars: bool,
    /// Write inventory.yaml, vars.yaml and id_ed25519 (when generated) into this directory.
    pub write_to: Option<PathBuf>,
}

fn err(what: impl Into<String>) -> Error {
    Error::Inventory(what.into())
}

async fn client(kubeconfig: Option<&Path>) -> Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| err(format!("read kubeconfig {}: {e}", path.display())))?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|e| err(format!("kubeconfig {}: {e}", path.display())))?
        }
        None => Config::infer().await.map_err(|e| {
            err(format!(
                "no kubeconfig (set --kubeconfig or KUBECONFIG): {e}"
            ))
        })?,
    };
    Client::try_from(config).map_err(|e| err(format!("Kubernetes client: {e}")))
}

fn key(secret: &Secret, name: &str, k: &str) -> Result<String> {
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(k))
        .ok_or_else(|| err(format!("Secret {name} has no key {k}")))?;
    String::from_utf8(bytes.0.clone())
        .map_err(|_| err(format!("Secret {name}: key {k} is not UTF-8")))
}

/// Run: the text to print (empty when writing to a directory, which prints the paths).
pub fn run(opts: &InventoryOptions) -> Result<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| err(format!("runtime: {e}")))?;
    rt.block_on(fetch(opts))
}

async fn fetch(opts: &InventoryOptions) -> Result<String> {
    capo_openstack::tls::ensure_crypto_provider();
    let client = client(opts.kubeconfig.as_deref()).await?;
    let api: Api<Secret> = Api::namespaced(client, &opts.namespace);
    let name = format!("{}-ansible", opts.cluster);
    let secret = api
        .get_opt(&name)
        .await
        .map_err(|e| err(format!("get Secret {}/{name}: {e}", opts.namespace)))?
        .ok_or_else(|| {
            err(format!(
                "Secret {}/{name} not found: the OpenStackCluster needs spec.extensions and must have been reconciled",
                opts.namespace
            ))
        })?;
    let inventory = key(&secret, &name, INVENTORY)?;
    let vars = key(&secret, &name, VARS)?;
    let Some(dir) = &opts.write_to else {
        return Ok(if opts.vars { vars } else { inventory });
    };
    std::fs::create_dir_all(dir).map_err(|e| err(format!("create {}: {e}", dir.display())))?;
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| err(format!("write {}: {e}", path.display())))?;
        Ok::<PathBuf, Error>(path)
    };
    let mut out = vec![write(INVENTORY, &inventory)?, write(VARS, &vars)?];
    let ssh_name = format!("{}-ssh", opts.cluster);
    if let Some(ssh) = api
        .get_opt(&ssh_name)
        .await
        .map_err(|e| err(format!("get Secret {}/{ssh_name}: {e}", opts.namespace)))?
    {
        let private = key(&ssh, &ssh_name, SSH_PRIVATE)?;
        let path = dir.join("id_ed25519");
        write_private(&path, &private)?;
        out.push(path);
    }
    Ok(out.iter().map(|p| format!("{}\n", p.display())).collect())
}

/// Write a private key readable by its owner only (ssh refuses group/world-readable keys).
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| err(format!("write {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .map_err(|e| err(format!("write {}: {e}", path.display())))
}

//! The Ansible bootstrap and control-plane providers of the Goend Cluster API fork (the
//! consumers of capo's BA/ACP extension, `../shared/partners`, built by `hack/partners.sh build`)
//! run beside Cluster API's managers, and the stand-ins for what nobody runs in this tier:
//!
//! - **Kubean** ([`spawn_kubean_stand_in`]): the bootstrap provider creates a Kubean `Cluster`
//!   and a `ClusterOperation` per machine and waits until the operation carries the Cluster's
//!   `hostsConfRef`/`varsConfRef`/`sshAuthRef`, which Kubean's operator copies into it before
//!   its job runs Kubespray. The stand-in copies exactly those three references; no job runs,
//!   nothing is installed on the machines (the workload-cluster emulator plays the nodes).
//! - **Kubernetes' garbage collector** ([`spawn_garbage_collector_stand_in`]): the
//!   AnsibleControlPlane removes its finalizer at once when deleted and leaves its Machines to
//!   the garbage collector (they name it as their controller), which runs in
//!   kube-controller-manager; the tier's management cluster is a bare kube-apiserver. The
//!   stand-in deletes a Machine whose controlling AnsibleControlPlane is gone, as background
//!   propagation would.
//! - **sshd** ([`Sshd`]): `capo-test-sshd` answers the bootstrap provider's SSH probe on the
//!   bastion's floating IP (a loopback address of capo-sim's external network), port 22.

use std::path::PathBuf;
use std::time::Duration;

use capo_testkit::partners::{PartnerProcess, PartnersDir};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::cluster::api;
use crate::management::Management;

/// Group and version of Kubean's kinds (its CRDs in `../shared/partners/kubean-crds`).
pub const KUBEAN_API: (&str, &str) = ("kubean.io", "v1alpha1");

/// The two providers, running against a management cluster; killed when dropped.
pub struct AnsibleProviders {
    /// The partners build they come from.
    pub partners: PartnersDir,
    bootstrap: PartnerProcess,
    control_plane: PartnerProcess,
    dir: TempDir,
}

impl AnsibleProviders {
    /// Installs the partner CRDs (the providers', with Cluster API's contract label, and
    /// Kubean's) and starts both providers with the management cluster's kubeconfig.
    pub async fn start(m: &Management) -> Result<AnsibleProviders, String> {
        let partners = PartnersDir::from_env()
            .map_err(|e| e.to_string())?
            .ok_or("CAPO_PARTNERS_BUILD_DIR is unset: run hack/e2e.sh (it builds the partners)")?;
        let control_plane_bin = partners.bin("ansible-controlplane");
        if !control_plane_bin.is_file() {
            return Err(format!(
                "{} is missing: hack/partners.sh could not build the control-plane provider \
                 (see its build.log)",
                control_plane_bin.display()
            ));
        }
        partners
            .install_crds(&m.client())
            .await
            .map_err(|e| format!("partner CRDs: {e}"))?;
        // Kept, like the environment's directory, with CAPO_TEST_KEEP_DIR set.
        let dir = tempfile::Builder::new()
            .prefix("capo-e2e-ansible-")
            .disable_cleanup(std::env::var_os("CAPO_TEST_KEEP_DIR").is_some())
            .tempdir()
            .map_err(|e| format!("log directory: {e}"))?;
        let kubeconfig = format!("--kubeconfig={}", m.kubeconfig().display());
        let group = m.process_group();
        let bootstrap = PartnerProcess::spawn_in_group(
            "ansible-bootstrap",
            &partners.bin("ansible-bootstrap"),
            &[
                kubeconfig.clone(),
                "--diagnostics-address=0".into(),
                "--health-addr=0".into(),
                "--leader-elect=false".into(),
                // capo uses no MachinePools; the provider's MachinePool watch is not needed.
                "--feature-gates=MachinePool=false".into(),
            ],
            dir.path().join("ansible-bootstrap.log"),
            group,
        )
        .map_err(|e| format!("starting the bootstrap provider: {e}"))?;
        // Its only flags are these two; it serves metrics on :8080 (controller-runtime's
        // default, no flag), which in the tier's namespace is loopback only.
        let control_plane = PartnerProcess::spawn_in_group(
            "ansible-controlplane",
            &control_plane_bin,
            &[kubeconfig, "--leader-elect=false".into()],
            dir.path().join("ansible-controlplane.log"),
            group,
        )
        .map_err(|e| format!("starting the control-plane provider: {e}"))?;
        Ok(AnsibleProviders {
            partners,
            bootstrap,
            control_plane,
            dir,
        })
    }

    /// Where the providers' (and the scenario's sshd's) logs are.
    pub fn log_dir(&self) -> PathBuf {
        self.dir.path().to_owned()
    }

    /// The last `lines` lines of both providers' logs.
    pub fn log_tails(&self, lines: usize) -> String {
        [&self.bootstrap, &self.control_plane]
            .iter()
            .map(|p| {
                format!(
                    "--- {} ({}) ---\n{}",
                    p.name,
                    p.log.display(),
                    p.tail(lines)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `Some(reason)` when a provider has exited.
    pub fn exited(&mut self) -> Option<String> {
        for p in [&mut self.bootstrap, &mut self.control_plane] {
            if let Some(status) = p.exited() {
                return Some(format!("{} exited ({status})", p.name));
            }
        }
        None
    }
}

/// `capo-test-sshd`: the bastion's and the machines' SSH daemons for the bootstrap provider's
/// probe. Killed when dropped.
pub struct Sshd {
    /// The process (its log records each login and tunnel, never key material).
    pub process: PartnerProcess,
}

impl Sshd {
    /// Listens on `<listen>:22`, lets `root` in with `public_key` only, and tunnels from the
    /// bastion to port 22 of `targets` only.
    pub async fn start(
        m: &Management,
        partners: &PartnersDir,
        log_dir: &std::path::Path,
        listen: &str,
        public_key: &str,
        targets: &[String],
    ) -> Result<Sshd, String> {
        let keys = log_dir.join("authorized_keys");
        std::fs::write(&keys, public_key).map_err(|e| format!("authorized_keys: {e}"))?;
        let process = PartnerProcess::spawn_in_group(
            "capo-test-sshd",
            &partners.bin("capo-test-sshd"),
            &[
                format!("-listen={listen}:22"),
                format!("-authorized-keys={}", keys.display()),
                "-users=root".into(),
                format!("-targets={}", targets.join(",")),
            ],
            log_dir.join("sshd.log"),
            m.process_group(),
        )
        .map_err(|e| format!("starting capo-test-sshd: {e}"))?;
        let sshd = Sshd { process };
        crate::cluster::poll("capo-test-sshd listening", Duration::from_secs(10), || {
            let out = sshd.process.output();
            async move {
                if out.contains("listening") {
                    Ok(())
                } else {
                    Err(out)
                }
            }
        })
        .await?;
        Ok(sshd)
    }
}

/// Aborts a background task when dropped.
pub struct Background(tokio::task::JoinHandle<()>);

impl Background {
    /// Runs `task` until the returned handle is dropped.
    pub fn spawn(task: impl std::future::Future<Output = ()> + Send + 'static) -> Background {
        Background(tokio::spawn(task))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn kubean(client: &Client, kind: &str) -> Api<DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk(KUBEAN_API.0, KUBEAN_API.1, kind);
    Api::all_with(client.clone(), &kube::api::ApiResource::from_gvk(&gvk))
}

/// The Kubean stand-in (see the module documentation): every 500 ms, each ClusterOperation
/// without a `hostsConfRef` gets the three references of the Kubean Cluster it names.
pub fn spawn_kubean_stand_in(client: Client) -> Background {
    Background(tokio::spawn(async move {
        let ops = kubean(&client, "ClusterOperation");
        let clusters = kubean(&client, "Cluster");
        loop {
            if let Ok(list) = ops.list(&ListParams::default()).await {
                for op in list.items {
                    let spec = &op.data["spec"];
                    if !spec["hostsConfRef"].is_null() {
                        continue;
                    }
                    let Some(cluster) = spec["cluster"].as_str() else {
                        continue;
                    };
                    let Ok(c) = clusters.get(cluster).await else {
                        continue;
                    };
                    let refs: serde_json::Map<String, Value> =
                        ["hostsConfRef", "varsConfRef", "sshAuthRef"]
                            .into_iter()
                            .filter(|k| !c.data["spec"][*k].is_null())
                            .map(|k| (k.to_owned(), c.data["spec"][k].clone()))
                            .collect();
                    let _ = ops
                        .patch(
                            &op.name_any(),
                            &PatchParams::default(),
                            &Patch::Merge(json!({ "spec": refs })),
                        )
                        .await;
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }))
}

/// The garbage-collector stand-in (see the module documentation): every 500 ms, a Machine of
/// `ns` whose controller is an AnsibleControlPlane that no longer exists (or is another object
/// of that name) is deleted.
pub fn spawn_garbage_collector_stand_in(client: Client, ns: String) -> Background {
    Background(tokio::spawn(async move {
        let machines = crate::cluster::capi(&client, &ns, "Machine");
        let acps = api(
            &client,
            &ns,
            "controlplane.cluster.x-k8s.io",
            "v1alpha1",
            "AnsibleControlPlane",
        );
        loop {
            if let Ok(list) = machines.list(&ListParams::default()).await {
                for m in list.items {
                    let Some(owner) = m
                        .owner_references()
                        .iter()
                        .find(|o| o.controller == Some(true) && o.kind == "AnsibleControlPlane")
                        .cloned()
                    else {
                        continue;
                    };
                    let gone = match acps.get_opt(&owner.name).await {
                        Ok(None) => true,
                        Ok(Some(acp)) => acp.uid().as_deref() != Some(owner.uid.as_str()),
                        Err(_) => false,
                    };
                    if gone && m.metadata.deletion_timestamp.is_none() {
                        let _ = machines
                            .delete(&m.name_any(), &DeleteParams::background())
                            .await;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }))
}

/// The peer's `cluster-template-with-acp.yaml` (`$CAPO_PARTNERS_DIR`, default
/// `../shared/partners` beside the repository).
pub fn peer_template_path() -> PathBuf {
    std::env::var_os("CAPO_PARTNERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| capo_testkit::paths::repo_root().join("../shared/partners"))
        .join("peer-capo/templates/cluster-template-with-acp.yaml")
}

/// The changes the peer's template needs here, each with its reason: (what, replacement, why).
pub const PEER_TEMPLATE_CHANGES: &[(&str, &str, &str)] = &[
    (
        "apiVersion: cluster.kubean.io/v1alpha1",
        "apiVersion: kubean.io/v1alpha1",
        "Kubean serves Cluster as kubean.io/v1alpha1 (its CRDs in ../shared/partners/kubean-crds); \
         the template names a group no Kubean CRD defines, and the bootstrap provider would fail \
         to create the object",
    ),
    (
        "apiVersion: clusterops.kubean.io/v1alpha1",
        "apiVersion: kubean.io/v1alpha1",
        "the same for ClusterOperation",
    ),
    (
        "  apiServerLoadBalancer:\n    enabled: true\n",
        "  apiServerLoadBalancer:\n    enabled: true\n  bastion:\n    enabled: true\n    spec:\n      \
         flavor: ${OPENSTACK_NODE_MACHINE_FLAVOR}\n      image:\n        filter:\n          \
         name: ${OPENSTACK_IMAGE_NAME}\n      sshKeyName: ${OPENSTACK_SSH_KEY_NAME}\n",
        "the AnsibleControlPlane creates no Machine until status.bastion.state is ACTIVE unless \
         spec.bastion.enabled is false, and the bootstrap provider reaches the machines through \
         the bastion only; the template asks for no bastion and capo makes none by default",
    ),
    (
        "  machineTemplate:\n    spec:\n      infrastructureRef:\n",
        "  machineTemplate:\n    spec:\n      bootstrap: {}\n      clusterName: ${CLUSTER_NAME}\n      \
         infrastructureRef:\n",
        "the fork's own AnsibleControlPlane CRD requires spec.machineTemplate.spec.bootstrap and \
         .clusterName (a full Machine spec), and the API server refuses the template's object \
         without them; the provider overwrites both on the Machines it creates",
    ),
];

/// The peer's template with [`PEER_TEMPLATE_CHANGES`] applied (every occurrence); each must
/// match at least once, so a changed template is noticed.
pub fn adapted_peer_template() -> Result<String, String> {
    let path = peer_template_path();
    let mut text = std::fs::read_to_string(&path)
        .map_err(|e| format!("reading the peer's template {}: {e}", path.display()))?;
    for (from, to, why) in PEER_TEMPLATE_CHANGES {
        if !text.contains(from) {
            return Err(format!(
                "the peer's template changed: {from:?} not found ({why})"
            ));
        }
        text = text.replace(from, to);
    }
    Ok(text)
}

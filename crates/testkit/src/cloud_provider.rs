//! The real cloud-provider-openstack (CPO) as local processes against a [`TestEnv`] that plays a
//! workload cluster, so a test can make the OpenStack resources a workload cluster's cloud
//! controller manager and Cinder CSI driver create (Octavia load balancers, floating IPs and
//! security groups for `type: LoadBalancer` Services, Cinder volumes for PVCs, Cinder snapshots
//! for VolumeSnapshots) and then check what capo does with them.
//!
//! # The build
//!
//! `hack/cloud-provider.sh build` builds CPO's `openstack-cloud-controller-manager` and
//! `cinder-csi-plugin`, the kubernetes-csi `csi-provisioner`, `csi-snapshotter` and
//! `snapshot-controller`, and copies the VolumeSnapshot CRDs of the pinned external-snapshotter
//! (outside the repository, cached), then prints its directory. Tests find it through
//! `$CAPO_CLOUD_PROVIDER_DIR` ([`BUILD_DIR_VAR`]); an unset variable does not trigger a build (it
//! takes many minutes): [`CloudProviderDir::from_env`] returns `None` and the test reports that
//! it skipped.
//!
//! # Which API server is the workload cluster
//!
//! The processes talk to the API server of the [`TestEnv`] given to [`CloudProvider::start`]. Use
//! a second environment ([`TestEnv::start`]) rather than the management cluster's shared one:
//! the controller manager and the CSI sidecars watch Nodes, Services, PersistentVolumes and
//! VolumeSnapshotContents cluster-wide, so on a shared server they would act on other tests'
//! objects, and a workload cluster is a separate API server in production too. Its Nodes are
//! made by the test ([`create_node`]); no kubelet runs.
//!
//! # How it runs
//!
//! [`CloudProvider::start`] installs the VolumeSnapshot CRDs, writes the cloud.conf (it holds a
//! password: mode 0600, never printed) and starts, in the environment's process group (so its
//! watchdog ends them when the test process dies; dropping the [`CloudProvider`] ends them
//! sooner), each with its log in a directory under the environment's:
//!
//! - `openstack-cloud-controller-manager` with the `cloud-node`, `cloud-node-lifecycle` and
//!   `service` controllers, `--cluster-name`, no leader election, and `--secure-port=0` (no
//!   serving at all, hence no delegated authentication against the API server either) and
//!   `--webhook-secure-port=0`;
//! - `cinder-csi-plugin` as a controller only (`--provide-node-service=false`, no topology), on a
//!   unix socket in that directory, with `--cluster` (its volumes and snapshots carry the
//!   property `cinder.csi.openstack.org/cluster=<name>`);
//! - `csi-provisioner` and `csi-snapshotter` on that socket, with `--extra-create-metadata` (the
//!   PVC's and VolumeSnapshot's names go into the Cinder metadata);
//! - `snapshot-controller`.
//!
//! None of them listens on TCP: the HTTP/metrics endpoints of the CSI programs are off by
//! default and the controller manager's ports are 0. Leader election is off everywhere.
//!
//! # What stands in for kube-controller-manager
//!
//! A [`TestEnv`] runs no kube-controller-manager, so the helpers do the little of its PV
//! controller that the CSI programs rely on: [`create_pvc`] annotates the claim with its
//! provisioner (csi-provisioner ignores a claim without it), [`wait_pvc_bound`] binds the claim
//! to the PersistentVolume csi-provisioner made (`spec.volumeName`, both `Bound`; the snapshot
//! controller only snapshots a bound claim), and [`delete_pvc`] drops the claim's protection
//! finalizer and marks the volume `Released` (csi-provisioner then deletes the Cinder volume).
//! Everything that touches OpenStack is CPO's own code. Load balancers need no such help: the
//! controller manager's service controller acts on the Service and Nodes alone.
//!
//! ```no_run
//! # async fn demo(cloud_conf: &str) -> capo_testkit::Result<()> {
//! use capo_testkit::TestEnv;
//! use capo_testkit::cloud_provider::{CloudProvider, CloudProviderDir};
//! let Some(dir) = CloudProviderDir::from_env()? else { return Ok(()) };
//! let workload = TestEnv::start().await?;
//! let cpo = CloudProvider::start(&workload, &dir, cloud_conf, "ns-cluster").await?;
//! let _logs = cpo.logs_on_failure();
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

use crate::crds;
use crate::env::TestEnv;
use crate::error::{Error, Result};
use crate::process::{Server, log_tail};
use crate::{FIELD_MANAGER, apply_yaml};

/// Environment variable naming the directory `hack/cloud-provider.sh build` printed.
pub const BUILD_DIR_VAR: &str = "CAPO_CLOUD_PROVIDER_DIR";

/// The CSI driver name of CPO's Cinder plugin.
pub const CINDER_DRIVER: &str = "cinder.csi.openstack.org";

/// The Cinder volume and snapshot property the plugin sets to its `--cluster`.
pub const CLUSTER_PROPERTY: &str = "cinder.csi.openstack.org/cluster";

/// The programs of a build, in start order.
const BINARIES: [&str; 5] = [
    "openstack-cloud-controller-manager",
    "cinder-csi-plugin",
    "csi-provisioner",
    "csi-snapshotter",
    "snapshot-controller",
];

/// A cloud-provider build: `bin/<the five programs>`, `crds/*.yaml`, `VERSION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudProviderDir {
    /// The directory itself.
    pub root: PathBuf,
}

impl CloudProviderDir {
    /// The build named by `$CAPO_CLOUD_PROVIDER_DIR`: `Ok(None)` when the variable is unset or
    /// empty, an error when it names an incomplete directory.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var_os(BUILD_DIR_VAR) {
            Some(dir) if !dir.is_empty() => Self::new(dir).map(Some),
            _ => Ok(None),
        }
    }

    /// The build in `root`, checked for completeness.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let dir = Self { root: root.into() };
        let mut wanted: Vec<PathBuf> = BINARIES.iter().map(|b| dir.bin(b)).collect();
        wanted.push(dir.crds());
        wanted.push(dir.root.join("VERSION"));
        match wanted.iter().find(|p| !p.exists()) {
            None => Ok(dir),
            Some(missing) => Err(Error::Incomplete {
                dir: dir.root.clone(),
                missing: missing
                    .strip_prefix(&dir.root)
                    .unwrap_or(missing)
                    .display()
                    .to_string(),
            }),
        }
    }

    /// Path of one of the binaries.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.root.join("bin").join(name)
    }

    /// The VolumeSnapshot, VolumeSnapshotContent and VolumeSnapshotClass CRDs.
    pub fn crds(&self) -> PathBuf {
        self.root.join("crds")
    }

    /// The `VERSION` file: one `<component> <version>` a line.
    pub fn versions(&self) -> Result<String> {
        let path = self.root.join("VERSION");
        std::fs::read_to_string(&path).map_err(Error::io(format!("reading {}", path.display())))
    }
}

/// The controller manager, the Cinder CSI controller and its sidecars, running against one
/// [`TestEnv`]; stopped on drop.
#[derive(Debug)]
pub struct CloudProvider {
    dir: PathBuf,
    servers: Vec<Server>,
}

impl CloudProvider {
    /// Installs the VolumeSnapshot CRDs into `env`, writes `cloud_conf` (the `[Global]`
    /// credentials and the `[LoadBalancer]`/`[BlockStorage]` options, INI as CPO reads it) to a
    /// 0600 file and starts the five programs with `cluster_name` as the controller manager's
    /// `--cluster-name` and the CSI plugin's `--cluster` (capo names them
    /// `capo_api::names::cloud_provider_cluster_name`). Returns once the CSI socket is up and
    /// every process is still running a few seconds later.
    pub async fn start(
        env: &TestEnv,
        build: &CloudProviderDir,
        cloud_conf: &str,
        cluster_name: &str,
    ) -> Result<Self> {
        let started = Instant::now();
        let client = env.client();
        crds::install(&client, &crds::load(&crds::yaml_files(&build.crds())?)?).await?;

        let tmp = tempfile::Builder::new()
            .prefix("cloud-provider-")
            .tempdir_in(env.dir())
            .map_err(Error::io("creating the cloud-provider directory"))?;
        // The environment's watchdog removes it with the environment's directory.
        let dir = tmp.keep();
        let conf = dir.join("cloud.conf");
        write_private(&conf, cloud_conf)?;
        let socket = dir.join("csi.sock");
        let endpoint = format!("unix://{}", socket.display());
        let kubeconfig = env.kubeconfig_path().display().to_string();
        let conf = conf.display().to_string();
        let group = env.process_group();

        let mut me = Self {
            dir: dir.clone(),
            servers: Vec::new(),
        };
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let ccm_args = args(&[
            "--cloud-provider=openstack",
            &format!("--cloud-config={conf}"),
            &format!("--kubeconfig={kubeconfig}"),
            &format!("--cluster-name={cluster_name}"),
            "--controllers=cloud-node,cloud-node-lifecycle,service",
            "--leader-elect=false",
            "--secure-port=0",
            "--webhook-secure-port=0",
            "--bind-address=127.0.0.1",
            // Node status is re-read from Nova every few seconds rather than every 5 min.
            "--node-status-update-frequency=10s",
            "--v=2",
        ]);
        let csi_args = args(&[
            &format!("--endpoint={endpoint}"),
            &format!("--cloud-config={conf}"),
            &format!("--cluster={cluster_name}"),
            "--provide-node-service=false",
            "--with-topology=false",
            "--v=3",
        ]);
        let sidecar = |extra: &[&str]| {
            let mut a = args(&[
                &format!("--csi-address={}", socket.display()),
                &format!("--kubeconfig={kubeconfig}"),
                "--leader-election=false",
                "--extra-create-metadata",
                // The plugin waits for Cinder to finish; the default 10 s is short for it.
                "--timeout=120s",
                "--v=3",
            ]);
            a.extend(args(extra));
            a
        };
        let plan: [(&'static str, Vec<String>); 5] = [
            ("openstack-cloud-controller-manager", ccm_args),
            ("cinder-csi-plugin", csi_args),
            ("csi-provisioner", sidecar(&[])),
            ("csi-snapshotter", sidecar(&[])),
            (
                "snapshot-controller",
                args(&[&format!("--kubeconfig={kubeconfig}"), "--v=3"]),
            ),
        ];
        for (name, args) in plan {
            let log = dir.join(format!("{name}.log"));
            me.servers
                .push(Server::spawn(name, &build.bin(name), &args, log, group)?);
            if name == "cinder-csi-plugin" {
                me.wait_socket(&socket, Duration::from_secs(30)).await?;
            }
        }
        // A bad flag or an unreadable cloud.conf ends a program within a second or two.
        tokio::time::sleep(Duration::from_secs(3)).await;
        me.check_running()?;
        eprintln!(
            "capo-testkit: cloud-provider-openstack for cluster {cluster_name} running in {:.1} s (logs in {})",
            started.elapsed().as_secs_f64(),
            dir.display()
        );
        Ok(me)
    }

    async fn wait_socket(&mut self, socket: &Path, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while !socket.exists() {
            self.check_running()?;
            if Instant::now() > deadline {
                let plugin = self.servers.last().map_or("cinder-csi-plugin", |s| s.name);
                return Err(Error::Usage(format!(
                    "{plugin} did not create {} within {} s; log tails:\n{}",
                    socket.display(),
                    timeout.as_secs(),
                    self.log_tails(40)
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }

    /// An error naming the first program that has exited, with its log tail.
    pub fn check_running(&mut self) -> Result<()> {
        for server in &mut self.servers {
            if let Some(status) = server.exited() {
                return Err(server.not_ready(format!("exited ({status})")));
            }
        }
        Ok(())
    }

    /// The directory holding `cloud.conf` (0600), the CSI socket and one log per program.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log file of one program (`openstack-cloud-controller-manager`, ...).
    pub fn log_path(&self, program: &str) -> PathBuf {
        self.dir.join(format!("{program}.log"))
    }

    /// The last `lines` lines of every program's log, each headed by its path.
    pub fn log_tails(&self, lines: usize) -> String {
        tails(&self.log_paths(), lines)
    }

    fn log_paths(&self) -> Vec<PathBuf> {
        self.servers.iter().map(|s| s.log.clone()).collect()
    }

    /// A guard that prints the log tails if the current test panics while it is alive (it
    /// holds the paths only, so the [`CloudProvider`] stays free to be stopped or dropped).
    pub fn logs_on_failure(&self) -> CloudProviderFailureLogs {
        CloudProviderFailureLogs {
            logs: self.log_paths(),
        }
    }

    /// Stops every program (also done on drop).
    pub fn stop(&mut self) {
        for server in self.servers.iter_mut().rev() {
            server.stop();
        }
    }
}

impl Drop for CloudProvider {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Prints the programs' log tails when dropped during a panic (see
/// [`CloudProvider::logs_on_failure`]).
#[derive(Debug)]
pub struct CloudProviderFailureLogs {
    logs: Vec<PathBuf>,
}

impl Drop for CloudProviderFailureLogs {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "capo-testkit: test failed; cloud-provider logs:\n{}",
                tails(&self.logs, 60)
            );
        }
    }
}

/// The last `lines` lines of each log, each headed by its path.
fn tails(logs: &[PathBuf], lines: usize) -> String {
    logs.iter()
        .map(|log| format!("--- {} ---\n{}", log.display(), log_tail(log, lines)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes `text` to a new file readable by its owner only.
fn write_private(path: &Path, text: &str) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(Error::io(format!("creating {}", path.display())))?;
    file.write_all(text.as_bytes())
        .map_err(Error::io(format!("writing {}", path.display())))
}

/// Applies `yaml` into `ns`; a rejection becomes an error.
async fn apply(client: &Client, ns: &str, yaml: &str, what: &str) -> Result<Vec<DynamicObject>> {
    apply_yaml(client, ns, yaml, false)
        .await?
        .map_err(|rejected| Error::Api {
            context: format!("creating {what}"),
            message: rejected.to_string(),
        })
}

/// Creates Node `name` as a kubelet would register it on an OpenStack server: `spec.providerID`
/// `openstack:///<server_id>` and, in its status, the address `internal_ip` (InternalIP) and a
/// Ready condition. The controller manager's `cloud-node` controller then fills in the rest from
/// Nova, and its `service` controller makes the node a member of every load balancer.
pub async fn create_node(
    client: &Client,
    name: &str,
    server_id: &str,
    internal_ip: &str,
) -> Result<()> {
    let yaml = format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\nspec:\n  providerID: openstack:///{server_id}\n"
    );
    apply(client, "", &yaml, &format!("Node {name}")).await?;
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let status = json!({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": internal_ip},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "made by capo-testkit", "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }],
        },
    });
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    nodes
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&status),
        )
        .await
        .map_err(Error::kube(format!("setting the status of Node {name}")))?;
    Ok(())
}

/// Creates Service `name` in `ns` of `type: LoadBalancer` forwarding TCP `port` (to pods
/// labelled `app: <name>`, of which there are none: the load balancer's members are the nodes).
pub async fn create_load_balancer_service(
    client: &Client,
    ns: &str,
    name: &str,
    port: u16,
) -> Result<()> {
    let yaml = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n  type: LoadBalancer\n  selector:\n    app: {name}\n  ports:\n  - name: p\n    protocol: TCP\n    port: {port}\n    targetPort: {port}\n"
    );
    apply(client, ns, &yaml, &format!("Service {ns}/{name}")).await?;
    Ok(())
}

/// Creates StorageClass `name` for the Cinder CSI driver with immediate binding (no pod, no
/// scheduler: the provisioner acts as soon as a PVC appears) and `Delete` reclaim.
pub async fn create_storage_class(client: &Client, name: &str) -> Result<()> {
    let yaml = format!(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: {name}\nprovisioner: {CINDER_DRIVER}\nreclaimPolicy: Delete\nvolumeBindingMode: Immediate\nallowVolumeExpansion: true\n"
    );
    apply(client, "", &yaml, &format!("StorageClass {name}")).await?;
    Ok(())
}

/// Creates PVC `name` in `ns` of `size_gib` GiB from StorageClass `class`, annotated with the
/// Cinder CSI driver as its provisioner (what kube-controller-manager's PV controller would add,
/// and what csi-provisioner waits for: see [`wait_pvc_bound`]).
pub async fn create_pvc(
    client: &Client,
    ns: &str,
    name: &str,
    class: &str,
    size_gib: u32,
) -> Result<()> {
    let yaml = format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\n  annotations:\n    volume.kubernetes.io/storage-provisioner: {CINDER_DRIVER}\n    volume.beta.kubernetes.io/storage-provisioner: {CINDER_DRIVER}\nspec:\n  storageClassName: {class}\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: {size_gib}Gi\n"
    );
    apply(client, ns, &yaml, &format!("PVC {ns}/{name}")).await?;
    Ok(())
}

/// Deletes PVC `ns/name` and does what kube-controller-manager would do next: drops the PVC's
/// `kubernetes.io/pvc-protection` finalizer (no pod uses it) and marks its PersistentVolume
/// `Released`, upon which csi-provisioner deletes the Cinder volume (reclaim policy `Delete`).
pub async fn delete_pvc(client: &Client, ns: &str, name: &str) -> Result<()> {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let Some(pvc) = pvcs
        .get_opt(name)
        .await
        .map_err(Error::kube(format!("reading PVC {ns}/{name}")))?
    else {
        return Ok(());
    };
    pvcs.delete(name, &Default::default())
        .await
        .map_err(Error::kube(format!("deleting PVC {ns}/{name}")))?;
    let unfinalize = json!({"metadata": {"finalizers": null}});
    match pvcs
        .patch(name, &PatchParams::default(), &Patch::Merge(&unfinalize))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(err) => return Err(Error::kube(format!("unfinalizing PVC {ns}/{name}"))(err)),
    }
    if let Some(pv) = pvc.spec.and_then(|s| s.volume_name) {
        let pvs: Api<PersistentVolume> = Api::all(client.clone());
        let released = json!({"status": {"phase": "Released"}});
        pvs.patch_status(&pv, &PatchParams::default(), &Patch::Merge(&released))
            .await
            .map_err(Error::kube(format!("releasing PersistentVolume {pv}")))?;
    }
    Ok(())
}

/// Creates VolumeSnapshotClass `name` for the Cinder CSI driver (`Delete` policy).
pub async fn create_snapshot_class(client: &Client, name: &str) -> Result<()> {
    let yaml = format!(
        "apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotClass\nmetadata:\n  name: {name}\ndriver: {CINDER_DRIVER}\ndeletionPolicy: Delete\n"
    );
    apply(client, "", &yaml, &format!("VolumeSnapshotClass {name}")).await?;
    Ok(())
}

/// Creates VolumeSnapshot `name` in `ns` of PVC `pvc` with VolumeSnapshotClass `class`.
pub async fn create_snapshot(
    client: &Client,
    ns: &str,
    name: &str,
    class: &str,
    pvc: &str,
) -> Result<()> {
    let yaml = format!(
        "apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshot\nmetadata:\n  name: {name}\nspec:\n  volumeSnapshotClassName: {class}\n  source:\n    persistentVolumeClaimName: {pvc}\n"
    );
    apply(client, ns, &yaml, &format!("VolumeSnapshot {ns}/{name}")).await?;
    Ok(())
}

/// Polls `probe` every 500 ms until it returns `Some`, for at most `timeout`; the error names
/// `what` and the last state `probe` saw (its `Err` text, or the object as JSON).
async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, mut probe: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(Option<T>, String)>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match probe().await {
            Ok((Some(found), _)) => return Ok(found),
            Ok((None, seen)) => seen,
            Err(err) => err.to_string(),
        };
        if Instant::now() > deadline {
            return Err(Error::Usage(format!(
                "timed out after {} s waiting for {what}; last seen: {last}",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A namespaced or cluster-wide object as JSON (`None` when absent).
async fn get_json(
    client: &Client,
    ns: Option<&str>,
    gvk: (&str, &str, &str),
    plural: &str,
    name: &str,
) -> Result<Option<Value>> {
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural);
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let found = api
        .get_opt(name)
        .await
        .map_err(Error::kube(format!("reading {plural} {name}")))?;
    found
        .map(|o| serde_json::to_value(&o))
        .transpose()
        .map_err(|e| Error::Api {
            context: format!("encoding {plural} {name}"),
            message: e.to_string(),
        })
}

/// Waits until Service `ns/name` has a load balancer ingress IP and returns it.
pub async fn wait_service_ingress(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> Result<String> {
    wait_for(
        timeout,
        &format!("an ingress IP of Service {ns}/{name}"),
        || async {
            let svc = get_json(client, Some(ns), ("", "v1", "Service"), "services", name).await?;
            let ip = svc
                .as_ref()
                .and_then(|s| s["status"]["loadBalancer"]["ingress"][0]["ip"].as_str())
                .map(str::to_owned);
            Ok((ip, status_text(svc.as_ref())))
        },
    )
    .await
}

/// Waits until PVC `ns/name` is Bound and returns its PersistentVolume's `volumeHandle` (the
/// Cinder volume ID).
///
/// No kube-controller-manager runs, so this plays its PV controller's part: once csi-provisioner
/// has made the PersistentVolume for the claim (`pvc-<claim uid>`, with a `claimRef` to it), it
/// sets the claim's `spec.volumeName` and marks both `Bound`.
pub async fn wait_pvc_bound(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> Result<String> {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    wait_for(timeout, &format!("PVC {ns}/{name} Bound"), || async {
        let pvc = pvcs
            .get(name)
            .await
            .map_err(Error::kube(format!("reading PVC {ns}/{name}")))?;
        let uid = pvc.metadata.uid.clone().unwrap_or_default();
        let pv_name = format!("pvc-{uid}");
        let Some(pv) = pvs
            .get_opt(&pv_name)
            .await
            .map_err(Error::kube(format!("reading PersistentVolume {pv_name}")))?
        else {
            return Ok((
                None,
                format!(
                    "no PersistentVolume {pv_name} yet; PVC status {:?}",
                    pvc.status
                ),
            ));
        };
        let handle = pv
            .spec
            .as_ref()
            .and_then(|s| s.csi.as_ref())
            .map(|c| c.volume_handle.clone());
        let bound = |phase: Option<&String>| phase.is_some_and(|p| p == "Bound");
        if !bound(pvc.status.as_ref().and_then(|s| s.phase.as_ref())) {
            let spec = json!({"spec": {"volumeName": pv_name}});
            pvcs.patch(name, &PatchParams::default(), &Patch::Merge(&spec))
                .await
                .map_err(Error::kube(format!("binding PVC {ns}/{name}")))?;
            let capacity = pv.spec.as_ref().and_then(|s| s.capacity.clone());
            let modes = pv.spec.as_ref().and_then(|s| s.access_modes.clone());
            let status =
                json!({"status": {"phase": "Bound", "capacity": capacity, "accessModes": modes}});
            pvcs.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map_err(Error::kube(format!("marking PVC {ns}/{name} Bound")))?;
        }
        if !bound(pv.status.as_ref().and_then(|s| s.phase.as_ref())) {
            let status = json!({"status": {"phase": "Bound"}});
            pvs.patch_status(&pv_name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map_err(Error::kube(format!(
                    "marking PersistentVolume {pv_name} Bound"
                )))?;
        }
        Ok((
            handle,
            "PersistentVolume without a CSI volume handle".to_owned(),
        ))
    })
    .await
}

/// Waits until VolumeSnapshot `ns/name` is `readyToUse` and returns its content's
/// `snapshotHandle` (the Cinder snapshot ID).
pub async fn wait_snapshot_ready(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> Result<String> {
    const GROUP: &str = "snapshot.storage.k8s.io";
    wait_for(
        timeout,
        &format!("VolumeSnapshot {ns}/{name} readyToUse"),
        || async {
            let snap = get_json(
                client,
                Some(ns),
                (GROUP, "v1", "VolumeSnapshot"),
                "volumesnapshots",
                name,
            )
            .await?;
            let content = snap.as_ref().and_then(|s| {
                (s["status"]["readyToUse"] == true)
                    .then(|| {
                        s["status"]["boundVolumeSnapshotContentName"]
                            .as_str()
                            .map(str::to_owned)
                    })
                    .flatten()
            });
            let Some(content) = content else {
                return Ok((None, status_text(snap.as_ref())));
            };
            let content = get_json(
                client,
                None,
                (GROUP, "v1", "VolumeSnapshotContent"),
                "volumesnapshotcontents",
                &content,
            )
            .await?;
            let handle = content
                .as_ref()
                .and_then(|c| c["status"]["snapshotHandle"].as_str())
                .map(str::to_owned);
            Ok((handle, status_text(content.as_ref())))
        },
    )
    .await
}

/// The status of an object as compact JSON, or "absent".
fn status_text(object: Option<&Value>) -> String {
    object.map_or_else(|| "absent".to_owned(), |o| o["status"].to_string())
}

/// A cloud.conf for CPO from one cloud of a clouds.yaml (`auth.auth_url`, `username`,
/// `password`, `project_name`, `user_domain_name`, `project_domain_name`, and `region_name`),
/// followed by `extra` (the `[LoadBalancer]` and `[BlockStorage]` sections, say). The result
/// holds the password: write it only where [`CloudProvider::start`] does.
pub fn cloud_conf_from_clouds_yaml(clouds_yaml: &str, cloud: &str, extra: &str) -> Result<String> {
    let doc: yaml_serde::Value =
        yaml_serde::from_str(clouds_yaml).map_err(|source| Error::Yaml {
            context: "clouds.yaml".into(),
            source,
        })?;
    let entry = &doc["clouds"][cloud];
    let auth = &entry["auth"];
    let get = |v: &yaml_serde::Value, key: &str| v[key].as_str().map(str::to_owned);
    let mut global = BTreeMap::new();
    for (from, to) in [
        ("auth_url", "auth-url"),
        ("username", "username"),
        ("password", "password"),
        ("project_name", "tenant-name"),
        ("project_id", "tenant-id"),
        ("user_domain_name", "user-domain-name"),
        ("project_domain_name", "tenant-domain-name"),
    ] {
        if let Some(value) = get(auth, from) {
            global.insert(to, value);
        }
    }
    if let Some(region) = get(entry, "region_name") {
        global.insert("region", region);
    }
    for required in ["auth-url", "username", "password"] {
        if !global.contains_key(required) {
            return Err(Error::Usage(format!(
                "cloud {cloud} of the clouds.yaml has no {required}"
            )));
        }
    }
    let mut text = String::from("[Global]\n");
    for (key, value) in &global {
        // gcfg reads a quoted value verbatim but for \" and \\ escapes.
        let quoted = value.replace('\\', "\\\\").replace('"', "\\\"");
        text.push_str(&format!("{key} = \"{quoted}\"\n"));
    }
    text.push('\n');
    text.push_str(extra);
    Ok(text)
}

/// The names CPO gives a Service's OpenStack resources, for assertions.
pub mod names {
    /// The Octavia load balancer of Service `ns/svc` in cluster `cluster`.
    pub fn load_balancer(cluster: &str, ns: &str, svc: &str) -> String {
        format!("kube_service_{cluster}_{ns}_{svc}")
    }

    /// The load balancer's description.
    pub fn load_balancer_description(cluster: &str, ns: &str, svc: &str) -> String {
        format!("Kubernetes external service {ns}/{svc} from cluster {cluster}")
    }

    /// The floating IP's description.
    pub fn floating_ip_description(cluster: &str, ns: &str, svc: &str) -> String {
        format!("Floating IP for Kubernetes external service {ns}/{svc} from cluster {cluster}")
    }

    /// The security group of `manage-security-groups=true`.
    pub fn security_group(svc_uid: &str, ns: &str, svc: &str) -> String {
        format!("lb-sg-{svc_uid}-{ns}-{svc}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cloud_conf_maps_the_clouds_yaml_and_quotes_values() {
        let yaml = "clouds:\n  openstack:\n    auth:\n      auth_url: http://127.0.0.1:5000/v3\n      username: u\n      password: 'p\"w'\n      project_name: p\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: RegionOne\n";
        let conf =
            cloud_conf_from_clouds_yaml(yaml, "openstack", "[LoadBalancer]\nenabled = true\n")
                .unwrap();
        assert!(conf.starts_with("[Global]\n"), "{conf}");
        assert!(conf.contains("auth-url = \"http://127.0.0.1:5000/v3\"\n"));
        assert!(conf.contains("password = \"p\\\"w\"\n"));
        assert!(conf.contains("tenant-name = \"p\"\n"));
        assert!(conf.contains("region = \"RegionOne\"\n"));
        assert!(conf.ends_with("[LoadBalancer]\nenabled = true\n"));
        assert!(cloud_conf_from_clouds_yaml(yaml, "other", "").is_err());
    }

    #[test]
    fn resource_names_follow_cpo() {
        assert_eq!(
            names::load_balancer("ns-c", "default", "web"),
            "kube_service_ns-c_default_web"
        );
        assert_eq!(
            names::security_group("u1", "default", "web"),
            "lb-sg-u1-default-web"
        );
    }

    #[test]
    fn private_file_is_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cloud.conf");
        write_private(&path, "x").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

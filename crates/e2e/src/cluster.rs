//! One workload cluster as an operator handles it: `clusterctl generate cluster` from one of
//! `templates/`, applied unchanged, then watched, scaled and deleted through Cluster API's own
//! objects only (capo's objects are read, never written).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::cloud::{CLOUD, Cloud, KEY_NAME};

/// Kubernetes version of every generated cluster (one the seeded image is named after).
pub const KUBERNETES_VERSION: &str = "v1.34.3";
/// The version a control-plane upgrade moves to.
pub const UPGRADE_VERSION: &str = "v1.34.4";

/// Dynamic access to a Cluster API v1beta2 kind (or any group/version/kind).
pub fn api(
    client: &Client,
    ns: &str,
    group: &str,
    version: &str,
    kind: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(client.clone(), ns, &ApiResource::from_gvk(&gvk))
}

/// `cluster.x-k8s.io/v1beta2` `kind` in `ns`.
pub fn capi(client: &Client, ns: &str, kind: &str) -> Api<DynamicObject> {
    api(client, ns, "cluster.x-k8s.io", "v1beta2", kind)
}

/// `controlplane.cluster.x-k8s.io/v1beta2 KubeadmControlPlane` in `ns`.
pub fn kcp(client: &Client, ns: &str) -> Api<DynamicObject> {
    api(
        client,
        ns,
        "controlplane.cluster.x-k8s.io",
        "v1beta2",
        "KubeadmControlPlane",
    )
}

/// `infrastructure.cluster.x-k8s.io/v1beta1 <kind>` in `ns`.
pub fn infra(client: &Client, ns: &str, kind: &str) -> Api<DynamicObject> {
    api(
        client,
        ns,
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        kind,
    )
}

/// `infrastructure.cluster.x-k8s.io/v1beta2 <kind>` in `ns`: the version Cluster API v1.14 reads,
/// served through capo's conversion webhook.
pub fn infra_v1beta2(client: &Client, ns: &str, kind: &str) -> Api<DynamicObject> {
    api(
        client,
        ns,
        "infrastructure.cluster.x-k8s.io",
        "v1beta2",
        kind,
    )
}

/// The variables `clusterctl generate cluster` needs for capo's templates on `cloud`.
pub fn template_env(cloud: &Cloud) -> BTreeMap<String, String> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    [
        ("OPENSTACK_CLOUD", CLOUD.to_owned()),
        ("OPENSTACK_CLOUD_YAML_B64", b64(&cloud.clouds_yaml())),
        ("OPENSTACK_CLOUD_CACERT_B64", b64("")),
        (
            "OPENSTACK_EXTERNAL_NETWORK_ID",
            cloud.external_network_id.clone(),
        ),
        ("OPENSTACK_DNS_NAMESERVERS", "127.0.0.53".to_owned()),
        ("OPENSTACK_FAILURE_DOMAIN", "nova".to_owned()),
        (
            "OPENSTACK_CONTROL_PLANE_MACHINE_FLAVOR",
            "m1.medium".to_owned(),
        ),
        ("OPENSTACK_NODE_MACHINE_FLAVOR", "m1.small".to_owned()),
        ("OPENSTACK_IMAGE_NAME", "ubuntu-2404-kube-v1.34".to_owned()),
        ("OPENSTACK_SSH_KEY_NAME", KEY_NAME.to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// A `clusterctl` command that sees nothing of the caller's environment or clusterctl
/// configuration: its home is the returned directory (keep it until the command has run), and
/// it does not look for a newer version.
pub fn clusterctl_command(clusterctl: &Path) -> Result<(Command, TempDir), String> {
    let home = tempfile::tempdir().map_err(|e| format!("clusterctl home: {e}"))?;
    let mut cmd = Command::new(clusterctl);
    cmd.env_clear()
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env("CLUSTERCTL_DISABLE_VERSIONCHECK", "true");
    Ok((cmd, home))
}

/// Runs `clusterctl` with `args` and `vars` in the environment (see [`clusterctl_command`]);
/// returns its standard output.
fn clusterctl_output(
    clusterctl: &Path,
    args: &[OsString],
    vars: &BTreeMap<String, String>,
) -> Result<String, String> {
    let (mut cmd, _home) = clusterctl_command(clusterctl)?;
    let out = cmd
        .args(args)
        .envs(vars)
        .output()
        .map_err(|e| format!("running {}: {e}", clusterctl.display()))?;
    if !out.status.success() {
        // clusterctl's error names the missing variable; the manifest is not printed.
        return Err(format!(
            "clusterctl {} failed ({}): {}",
            args.first()
                .map(|a| a.to_string_lossy())
                .unwrap_or_default(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("clusterctl output: {e}"))
}

/// `clusterctl generate yaml --from <file>`: a manifest that is not a cluster (a ClusterClass)
/// with its variables substituted.
pub fn generate_yaml(
    clusterctl: &Path,
    file: &Path,
    vars: &BTreeMap<String, String>,
) -> Result<String, String> {
    clusterctl_output(
        clusterctl,
        &[
            "generate".into(),
            "yaml".into(),
            "--from".into(),
            file.into(),
        ],
        vars,
    )
}

/// Runs `clusterctl generate cluster <name> --from <template>` with `vars` in the environment
/// (and nothing of the caller's clusterctl configuration) and returns the manifest.
pub fn generate(
    clusterctl: &Path,
    template: &Path,
    name: &str,
    ns: &str,
    control_planes: u32,
    workers: u32,
    vars: &BTreeMap<String, String>,
) -> Result<String, String> {
    let mut args: Vec<OsString> = ["generate", "cluster", name, "--from"]
        .map(OsString::from)
        .to_vec();
    args.push(template.into());
    for (flag, value) in [
        ("--target-namespace", ns.to_owned()),
        ("--kubernetes-version", KUBERNETES_VERSION.to_owned()),
        ("--control-plane-machine-count", control_planes.to_string()),
        ("--worker-machine-count", workers.to_string()),
    ] {
        args.extend([flag.into(), value.into()]);
    }
    clusterctl_output(clusterctl, &args, vars)
}

/// A condition's status (`"True"`, `"False"`, `"Unknown"`) on an object, if present.
pub fn condition(obj: &Value, kind: &str) -> Option<String> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["status"].as_str())
        .map(str::to_owned)
}

/// A condition's reason and message, for failure messages.
pub fn condition_text(obj: &Value, kind: &str) -> String {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .map(|c| format!("{} {}: {}", c["status"], c["reason"], c["message"]))
        .unwrap_or_else(|| format!("no {kind} condition"))
}

/// Machines of `cluster`, as JSON.
pub async fn machines(client: &Client, ns: &str, cluster: &str) -> Vec<Value> {
    let lp = ListParams::default().labels(&format!("cluster.x-k8s.io/cluster-name={cluster}"));
    match capi(client, ns, "Machine").list(&lp).await {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// True when the Machine is Running with a node reference.
pub fn machine_running(m: &Value) -> bool {
    m["status"]["phase"] == "Running" && m["status"]["nodeRef"]["name"].is_string()
}

/// A one-line summary of each Machine (phase, node, conditions that are not True).
pub fn describe_machines(ms: &[Value]) -> String {
    ms.iter()
        .map(|m| {
            let not_true: Vec<String> = m["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["status"] != "True")
                .map(|c| format!("{}={} {}", c["type"], c["status"], c["reason"]))
                .collect();
            format!(
                "{} phase={} node={} {}",
                m["metadata"]["name"].as_str().unwrap_or_default(),
                m["status"]["phase"],
                m["status"]["nodeRef"]["name"],
                not_true.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Polls `check` every 250 ms until it returns `Some`, or fails after `timeout` with the last
/// description `check` gave.
pub async fn poll<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let start = Instant::now();
    loop {
        match check().await {
            Ok(v) => return Ok(v),
            Err(last) if start.elapsed() >= timeout => {
                return Err(format!(
                    "{what}: not after {:.0} s; last seen:\n  {last}",
                    timeout.as_secs_f64()
                ));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Waits until `cluster` has exactly `count` Machines, all Running with a node, and none
/// being deleted; returns them.
pub async fn wait_machines_running(
    client: &Client,
    ns: &str,
    cluster: &str,
    count: usize,
    timeout: Duration,
) -> Result<Vec<Value>, String> {
    poll(
        &format!("{count} Machines of {cluster} Running"),
        timeout,
        || async {
            let ms = machines(client, ns, cluster).await;
            let settled = ms.len() == count
                && ms.iter().all(machine_running)
                && ms
                    .iter()
                    .all(|m| m["metadata"]["deletionTimestamp"].is_null());
            if settled {
                Ok(ms)
            } else {
                Err(format!(
                    "{} Machines:\n  {}",
                    ms.len(),
                    describe_machines(&ms)
                ))
            }
        },
    )
    .await
}

/// Waits until the Cluster's condition `kind` is True.
pub async fn wait_cluster_condition(
    client: &Client,
    ns: &str,
    cluster: &str,
    kind: &str,
    timeout: Duration,
) -> Result<Value, String> {
    let clusters = capi(client, ns, "Cluster");
    poll(&format!("Cluster {cluster} {kind}"), timeout, || async {
        let c = clusters
            .get(cluster)
            .await
            .map_err(|e| format!("get: {e}"))?;
        let v = serde_json::to_value(&c).map_err(|e| e.to_string())?;
        if condition(&v, kind).as_deref() == Some("True") {
            Ok(v)
        } else {
            Err(condition_text(&v, kind))
        }
    })
    .await
}

/// Sets the KubeadmControlPlane's replicas (as `kubectl scale` would).
pub async fn scale_control_plane(
    client: &Client,
    ns: &str,
    name: &str,
    replicas: u32,
) -> Result<(), String> {
    kcp(client, ns)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .map(|_| ())
        .map_err(|e| format!("scaling {name} to {replicas}: {e}"))
}

/// Deletes the Cluster (Cluster API deletes the rest in its own order) and waits until it and
/// every OpenStack* object of the namespace are gone.
pub async fn delete_cluster(
    client: &Client,
    ns: &str,
    cluster: &str,
    timeout: Duration,
) -> Result<(), String> {
    let clusters = capi(client, ns, "Cluster");
    clusters
        .delete(cluster, &DeleteParams::default())
        .await
        .map_err(|e| format!("deleting Cluster {cluster}: {e}"))?;
    poll(&format!("Cluster {cluster} gone"), timeout, || async {
        let mut left = Vec::new();
        if let Ok(c) = clusters.get(cluster).await {
            let v = serde_json::to_value(&c).unwrap_or_default();
            left.push(format!("Cluster ({})", condition_text(&v, "Deleting")));
        }
        for kind in ["OpenStackCluster", "OpenStackMachine", "OpenStackServer"] {
            let api = if kind == "OpenStackServer" {
                api(
                    client,
                    ns,
                    "infrastructure.cluster.x-k8s.io",
                    "v1alpha1",
                    kind,
                )
            } else {
                infra(client, ns, kind)
            };
            if let Ok(list) = api.list(&ListParams::default()).await {
                left.extend(
                    list.items
                        .iter()
                        .map(|o| format!("{kind} {}", o.name_any())),
                );
            }
        }
        let ms = machines(client, ns, cluster).await;
        left.extend(
            ms.iter()
                .map(|m| format!("Machine {}", m["metadata"]["name"])),
        );
        if left.is_empty() {
            Ok(())
        } else {
            Err(left.join(", "))
        }
    })
    .await
}

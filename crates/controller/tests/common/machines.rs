//! Helpers of the machine and server tests: all three controllers started together (the
//! shared `Harness::start` runs only the cluster controller), Cluster API Machines with their
//! bootstrap Secret and OpenStackMachine, waits, and a session on the simulator.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::OpenStackMachine;
use capo_openstack::{ApiMetrics, ClientConfig, Session, SessionCache};
use kube::Api;
use serde_json::Value;

use crate::common::{Harness, patience, poll, spawn_controllers, status_json};

/// The cluster, machine and server controllers of one test; stopped on drop.
pub struct Controllers {
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Controllers {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Start the three controllers on a fresh context (nothing remembered: like a restart).
pub fn start(h: &Harness) -> Controllers {
    let (_, stop, tasks) = spawn_controllers(h, true, true);
    Controllers { stop, tasks }
}

/// A test named `prefix` with the three controllers running and cluster `c1` of `spec` ready.
pub async fn ready_cluster(prefix: &str, spec: &str) -> (Harness, Controllers) {
    let h = Harness::new(prefix).await;
    let c = start(&h);
    h.create_cluster("c1", spec).await;
    h.wait_ready("c1").await;
    (h, c)
}

/// Start only the machine and server controllers (to measure their requests alone, once the
/// cluster is ready).
pub fn start_machine_controllers(h: &Harness) -> Controllers {
    let (_, stop, tasks) = spawn_controllers(h, false, true);
    Controllers { stop, tasks }
}

/// Cluster with a managed network and the API load balancer.
pub const CLUSTER_LB: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.6.0.0/24
apiServerLoadBalancer:
  enabled: true
managedSecurityGroups: {}
";

/// Cluster with a managed network and an API floating IP (no load balancer).
pub const CLUSTER_FIP: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.7.0.0/24
managedSecurityGroups: {}
";

/// A worker/control-plane machine spec: seeded flavor and image (by Glance name filter).
pub const MACHINE: &str = "flavor: m1.small
image:
  filter:
    name: ubuntu-2404-kube-v1.34
";

/// [`MACHINE`] booting from a 10 GiB Cinder volume.
pub const BOOT_FROM_VOLUME: &str = "flavor: m1.small
image:
  filter:
    name: ubuntu-2404-kube-v1.34
rootVolume:
  sizeGiB: 10
";

/// Bootstrap data of every test machine (must never show up in logs or status).
pub const BOOTSTRAP: &str = "#cloud-config\nruncmd: [echo not-a-real-secret]\n";

/// A Cluster API Machine `name` of `cluster` (control plane when `cp`), its bootstrap Secret
/// and its OpenStackMachine with `spec_yaml`, owned by the Machine.
pub async fn create_machine(h: &Harness, cluster: &str, name: &str, cp: bool, spec_yaml: &str) {
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("{name}-bootstrap"), "namespace": h.ns},
        "stringData": {"value": BOOTSTRAP, "format": "cloud-config"},
    }))
    .expect("secret");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(h.client.clone(), &h.ns);
    match secrets.create(&Default::default(), &secret).await {
        Ok(_) => {}
        Err(kube::Error::Api(ae)) if ae.code == 409 => {}
        Err(e) => panic!("create bootstrap secret: {e}"),
    }
    let bootstrap = format!("  bootstrap:\n    dataSecretName: {name}-bootstrap\n");
    apply_capi_machine(h, cluster, name, cp, &bootstrap).await;
    apply_osm(h, cluster, name, cp, spec_yaml).await;
}

/// The label lines of a control-plane object (none for a worker).
fn control_plane_label(cp: bool) -> &'static str {
    if cp {
        "    cluster.x-k8s.io/control-plane: \"\"\n"
    } else {
        ""
    }
}

/// Apply Cluster API Machine `name` of `cluster` (control plane when `cp`) whose spec has the
/// `spec_lines` (indented by 2) and refers to OpenStackMachine `name`.
pub async fn apply_capi_machine(
    h: &Harness,
    cluster: &str,
    name: &str,
    cp: bool,
    spec_lines: &str,
) {
    let cp_label = control_plane_label(cp);
    h.apply(&format!(
        "apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: {name}
  labels:
    cluster.x-k8s.io/cluster-name: {cluster}
{cp_label}spec:
  clusterName: {cluster}
{spec_lines}  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: OpenStackMachine
    name: {name}
"
    ))
    .await;
}

/// Apply OpenStackMachine `name` with `spec_yaml`, owned by Machine `name` of `cluster`.
pub async fn apply_osm(h: &Harness, cluster: &str, name: &str, cp: bool, spec_yaml: &str) {
    let uid = h.uid("Machine", name).await;
    let owner = ("Machine", uid.as_str());
    let cp_label = control_plane_label(cp);
    h.apply_infra(
        "OpenStackMachine",
        name,
        cluster,
        cp_label,
        owner,
        spec_yaml,
    )
    .await;
}

/// OpenStackMachine API of the namespace.
pub fn machines(h: &Harness) -> Api<OpenStackMachine> {
    Api::namespaced(h.client.clone(), &h.ns)
}

/// OpenStackServer API of the namespace.
pub fn servers(h: &Harness) -> Api<OpenStackServer> {
    Api::namespaced(h.client.clone(), &h.ns)
}

/// Wait until `pred` holds for OpenStackMachine `name` (panics after `secs`).
pub async fn wait_machine(
    h: &Harness,
    name: &str,
    secs: u64,
    what: &str,
    pred: impl Fn(&OpenStackMachine) -> bool,
) -> OpenStackMachine {
    poll(
        secs,
        || async {
            let o = machines(h).get_opt(name).await.expect("get");
            o.filter(|o| pred(o))
        },
        || async {
            let (m, s) = machine_and_server(h, name).await;
            format!("timed out waiting for {what}: machine {m}\nserver {s}")
        },
    )
    .await
}

/// The status of OpenStackMachine `name` and of its OpenStackServer, as JSON.
async fn machine_and_server(h: &Harness, name: &str) -> (String, String) {
    let m = machines(h).get_opt(name).await.ok().flatten();
    let s = servers(h).get_opt(name).await.ok().flatten();
    (status_json(m), status_json(s))
}

/// Wait for OpenStackMachine `name` to be ready.
pub async fn wait_machine_ready(h: &Harness, name: &str) -> OpenStackMachine {
    wait_machine(h, name, 60, "machine ready", |o| {
        o.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await
}

/// Create machines of cluster `c1` (control plane when `cp`) with [`MACHINE`], then wait
/// until every one is ready.
pub async fn add_machines(h: &Harness, names: &[&str], cp: bool) {
    for n in names {
        create_machine(h, "c1", n, cp, MACHINE).await;
    }
    for n in names {
        wait_machine_ready(h, n).await;
    }
}

/// Delete machines, then wait until every one is gone.
pub async fn remove_machines(h: &Harness, names: &[&str]) {
    for n in names {
        delete_machine(h, n).await;
    }
    for n in names {
        wait_machine_gone(h, n, 120).await;
    }
}

/// Delete the OpenStackMachine and its Machine (Cluster API deletes the infrastructure
/// machine first).
pub async fn delete_machine(h: &Harness, name: &str) {
    let _ = machines(h).delete(name, &Default::default()).await;
    let capi: Api<capo_controller::capi::Machine> = Api::namespaced(h.client.clone(), &h.ns);
    let _ = capi.delete(name, &Default::default()).await;
}

/// Wait until OpenStackMachine `name` and its OpenStackServer are gone.
pub async fn wait_machine_gone(h: &Harness, name: &str, secs: u64) {
    poll(
        secs,
        || async {
            let m = machines(h).get_opt(name).await.expect("get");
            let s = servers(h).get_opt(name).await.expect("get");
            (m.is_none() && s.is_none()).then_some(())
        },
        || async {
            let (m, s) = machine_and_server(h, name).await;
            format!("machine {name} not deleted: {m}\nserver {s}")
        },
    )
    .await
}

/// Items of a simulator collection in the test project (simulator only: synchronous, for
/// tests that also inject faults).
pub fn sim_items(h: &Harness, collection: &str) -> Vec<Value> {
    let state = h.sim().control().state(Some(&h.project()));
    state[collection].as_array().cloned().unwrap_or_default()
}

/// Items of a collection in the test project, on capo-sim or the real services.
pub async fn items(h: &Harness, collection: &str) -> Vec<Value> {
    h.items().await.remove(collection).unwrap_or_default()
}

/// Port `name` of the test project (panics when there is none).
pub async fn port(h: &Harness, name: &str) -> Value {
    let ports = items(h, "ports").await;
    let port = ports.into_iter().find(|p| p["name"] == name);
    port.unwrap_or_else(|| panic!("no port {name}"))
}

/// A session of the test project's member, with a cache of its own (to act behind the
/// controllers' back).
pub async fn session(h: &Harness) -> Session {
    let cache = SessionCache::new(ClientConfig::default(), ApiMetrics::unregistered());
    h.cloud.session(&cache)
}

/// Wait until `pred` holds (panics after `secs` with `what`).
pub async fn wait_for(secs: u64, what: &str, mut pred: impl FnMut() -> bool) {
    let deadline = Instant::now() + patience(secs);
    while !pred() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Count requests by `METHOD template`.
pub fn histogram(reqs: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in reqs {
        *out.entry(r.clone()).or_insert(0) += 1;
    }
    out
}

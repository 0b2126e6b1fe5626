//! The OpenStackMachineTemplate controller against a real kube-apiserver and capo-sim:
//! capacity and nodeInfo from flavors with and without root volumes and ephemeral disks,
//! images with and without `os_type`, recomputation when the flavor changes (in the spec,
//! and in the cloud behind an unchanged name), a missing flavor or image reported and then
//! converged, and the request economy of many templates sharing one flavor and image.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use capo_api::v1beta1::OpenStackMachineTemplate;
use capo_controller::{Context, Options};
use capo_openstack::{Credentials, Request, Service, Session};
use common::{Harness, poll};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

/// The template controller, running until dropped.
struct Running {
    ctx: Arc<Context>,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

fn start(h: &Harness, options: Options) -> Running {
    let ctx = Context::new(h.client.clone(), h.sessions.clone(), options);
    let (stop, mut rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(capo_controller::machine_template::run(
        ctx.clone(),
        async move {
            let _ = rx.wait_for(|v| *v).await;
        },
    ));
    Running { ctx, stop, task }
}

/// Options of these tests: quick resyncs and lookup expiry when `fast_resync`.
fn options(h: &Harness, fast_resync: bool) -> Options {
    let mut o = h.options.clone();
    if fast_resync {
        o.sync_period = Duration::from_millis(500);
        o.lookup_ttl = Duration::from_millis(300);
    }
    o
}

/// A Cluster API Cluster `name` (pointing at OpenStackCluster `name`); its UID.
async fn cluster(h: &Harness, name: &str) -> String {
    h.set_cluster_paused(name, false).await;
    h.uid("Cluster", name).await
}

/// Apply template `name` owned by Cluster (`cluster`, `uid`) with `spec` under
/// `spec.template.spec`.
async fn template(h: &Harness, name: &str, (cluster, uid): (&str, &str), spec: &str) {
    let spec = common::indent(spec, 6);
    h.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata:
  name: {name}
  ownerReferences:
  - apiVersion: cluster.x-k8s.io/v1beta2
    kind: Cluster
    name: {cluster}
    uid: {uid}
spec:
  template:
    spec:
{spec}"
    ))
    .await;
}

/// `OpenStackAuthenticationSucceeded` of `t`: (status, reason, message).
fn authentication(t: &OpenStackMachineTemplate) -> Option<(String, String, String)> {
    let c = t
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.r#type == "OpenStackAuthenticationSucceeded")?;
    Some((
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

/// A template spec on `flavor` and the image named `image`, with the test identity.
fn spec(flavor: &str, image: &str, rest: &str) -> String {
    format!(
        "flavor: {flavor}
image:
  filter:
    name: {image}
identityRef:
  name: cloud-config
  cloudName: openstack
{rest}"
    )
}

const IMAGE: &str = "ubuntu-2404-kube-v1.34";

fn templates(h: &Harness) -> Api<OpenStackMachineTemplate> {
    Api::namespaced(h.client.clone(), &h.ns)
}

/// The template's capacity as strings.
fn capacity(t: &OpenStackMachineTemplate) -> BTreeMap<String, String> {
    t.status
        .as_ref()
        .map(|s| {
            s.capacity
                .iter()
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn os(t: &OpenStackMachineTemplate) -> Option<String> {
    t.status
        .as_ref()?
        .node_info
        .as_ref()?
        .operating_system
        .clone()
}

/// The Ready condition: (status, reason, message).
fn ready(t: &OpenStackMachineTemplate) -> Option<(String, String, String)> {
    let c = t
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.r#type == "Ready")?;
    Some((
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

fn cap(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Wait until `pred` holds for template `name`.
async fn wait(
    h: &Harness,
    name: &str,
    secs: u64,
    what: &str,
    pred: impl Fn(&OpenStackMachineTemplate) -> bool,
) -> OpenStackMachineTemplate {
    let api = templates(h);
    poll(
        secs,
        || async { api.get_opt(name).await.unwrap().filter(|t| pred(t)) },
        || async {
            let t = api.get_opt(name).await.unwrap();
            format!(
                "{name}: timed out waiting for {what}: {}",
                common::status_json(t)
            )
        },
    )
    .await
}

/// Wait for the template's capacity to equal `want`, with Ready True.
async fn wait_capacity(
    h: &Harness,
    name: &str,
    want: &BTreeMap<String, String>,
) -> OpenStackMachineTemplate {
    wait(h, name, 30, &format!("capacity {want:?}"), |t| {
        &capacity(t) == want && ready(t).is_some_and(|r| r.0 == "True")
    })
    .await
}

fn admin(h: &Harness) -> Session {
    let creds = Credentials::from_clouds_yaml(
        &h.cloud.admin_clouds_yaml(),
        common::cloud::ADMIN,
        None,
        None,
    )
    .unwrap();
    h.sessions.session(&creds).unwrap()
}

/// A flavor name of this test's own: flavors are global to a cloud (the real services keep
/// them across tests), so each test names its flavors after its namespace.
fn flavor(h: &Harness, base: &str) -> String {
    format!("{}-{base}", h.ns)
}

/// Create a flavor as the cloud's admin; its ID.
async fn create_flavor(
    h: &Harness,
    name: &str,
    vcpus: u32,
    ram: u64,
    disk: u64,
    eph: u64,
) -> String {
    let body = json!({"flavor": {"name": name, "vcpus": vcpus, "ram": ram, "disk": disk,
                                 "OS-FLV-EXT-DATA:ephemeral": eph}});
    let f: Value = admin(h)
        .fetch(
            &Request::post(Service::Compute, "flavors", "test_flavor_create", body),
            "flavor",
        )
        .await
        .unwrap();
    f["id"].as_str().unwrap().to_owned()
}

async fn delete_flavor(h: &Harness, id: &str) {
    admin(h)
        .send(&Request::delete(
            Service::Compute,
            format!("flavors/{id}"),
            "test_flavor_delete",
        ))
        .await
        .unwrap();
}

/// Warning or Normal events about template `name`, as `type reason`.
async fn events(h: &Harness, name: &str) -> Vec<String> {
    let list = Api::<k8s_openapi::api::core::v1::Event>::namespaced(h.client.clone(), &h.ns)
        .list(&Default::default())
        .await
        .unwrap();
    list.items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .map(|e| {
            format!(
                "{} {}",
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default()
            )
        })
        .collect()
}

/// Wait for an event `"<type> <reason>"` about `name`: events are recorded after the status
/// write a test waits for, so reading them once races with the controller.
async fn wait_event(h: &Harness, name: &str, event: &str) {
    poll(
        10,
        || async {
            let found = events(h, name).await.iter().any(|e| e == event);
            found.then_some(())
        },
        || async { format!("{name}: no {event} event in {:?}", events(h, name).await) },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_from_flavor_root_volume_ephemeral_disk_and_image() {
    let h = Harness::new("osmt-cap").await;
    let _run = start(&h, options(&h, false));
    let uid = cluster(&h, "c1").await;
    let owner = ("c1", uid.as_str());
    create_flavor(&h, &flavor(&h, "m1.eph"), 2, 3072, 20, 15).await;
    // An image of the project without os_type.
    let img: Value = h
        .session()
        .send_json(&Request::post(
            Service::Image,
            "images",
            "test_image_create",
            json!({"name": "no-os", "disk_format": "qcow2", "container_format": "bare"}),
        ))
        .await
        .unwrap();
    assert!(img["id"].is_string());

    template(&h, "disk", owner, &spec("m1.large", IMAGE, "")).await;
    let bfv = "rootVolume:\n  sizeGiB: 120\n";
    template(&h, "bfv", owner, &spec("m1.large", IMAGE, bfv)).await;
    template(&h, "eph", owner, &spec(&flavor(&h, "m1.eph"), IMAGE, "")).await;
    template(&h, "no-os", owner, &spec("m1.small", "no-os", "")).await;

    let large = [("cpu", "4"), ("memory", "8Gi"), ("storage", "80Gi")];
    let t = wait_capacity(&h, "disk", &cap(&large)).await;
    assert_eq!(os(&t).as_deref(), Some("linux"));
    assert_eq!(
        authentication(&t),
        Some(("True".into(), "Ready".into(), String::new())),
        "the template's lookups authenticated"
    );
    assert!(t.finalizers().is_empty(), "a template gets no finalizer");
    let bfv = [("cpu", "4"), ("memory", "8Gi"), ("storage", "120Gi")];
    wait_capacity(&h, "bfv", &cap(&bfv)).await;
    let eph = [
        ("cpu", "2"),
        ("ephemeral-storage", "15Gi"),
        ("memory", "3Gi"),
        ("storage", "20Gi"),
    ];
    wait_capacity(&h, "eph", &cap(&eph)).await;
    let small = [("cpu", "1"), ("memory", "2Gi"), ("storage", "20Gi")];
    let t = wait_capacity(&h, "no-os", &cap(&small)).await;
    assert_eq!(
        t.status.as_ref().unwrap().node_info,
        None,
        "no os_type, no nodeInfo"
    );
    wait_event(&h, "disk", "Normal CapacityUpdated").await;

    // Without identityRef of its own, a template uses its cluster's OpenStackCluster's.
    let osc_spec = "identityRef:\n  name: cloud-config\n  cloudName: openstack\n";
    h.apply_osc("c1", &uid, osc_spec).await;
    let no_identity = "flavor: m1.medium\nimage:\n  filter:\n    name: ubuntu-2404-kube-v1.34\n";
    template(&h, "inherits", owner, no_identity).await;
    let medium = [("cpu", "2"), ("memory", "4Gi"), ("storage", "40Gi")];
    wait_capacity(&h, "inherits", &cap(&medium)).await;

    // A template whose identity Secret does not exist says so, without authenticating.
    let missing = "flavor: m1.medium\nimage:\n  filter:\n    name: ubuntu-2404-kube-v1.34\nidentityRef:\n  name: no-such-secret\n  cloudName: openstack\n";
    template(&h, "no-secret", owner, missing).await;
    let t = wait(&h, "no-secret", 30, "authentication failure", |t| {
        authentication(t).is_some_and(|(s, _, _)| s == "False")
    })
    .await;
    let (_, reason, message) = authentication(&t).unwrap_or_default();
    assert_eq!(reason, "OpenStackAuthenticationFailed");
    assert!(
        message.contains("no-such-secret") && message.contains("not found"),
        "{message}"
    );
    assert_eq!(
        ready(&t).map(|r| r.1).as_deref(),
        Some("InvalidCredentials")
    );
    templates(&h)
        .delete("no-secret", &Default::default())
        .await
        .unwrap();

    // A template without an owner Cluster (a ClusterClass's) is left alone.
    h.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata:
  name: class-template
spec:
  template:
    spec:
{}",
        common::indent(&spec("m1.large", IMAGE, ""), 6)
    ))
    .await;
    // Converged templates write nothing more; the unowned one never got a status.
    let writes_before = status_versions(&h).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let t = templates(&h).get("class-template").await.unwrap();
    assert!(
        t.status.is_none(),
        "unowned template reconciled: {:?}",
        t.status
    );
    assert_eq!(
        status_versions(&h).await,
        writes_before,
        "steady templates wrote status"
    );
}

/// resourceVersion of every template (a write changes it).
async fn status_versions(h: &Harness) -> BTreeMap<String, String> {
    templates(h)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|t| (t.name_any(), t.resource_version().unwrap_or_default()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recomputed_when_the_flavor_changes_in_the_spec_or_the_cloud() {
    let h = Harness::new("osmt-change").await;
    let _run = start(&h, options(&h, true));
    let uid = cluster(&h, "c1").await;
    let owner = ("c1", uid.as_str());
    create_flavor(&h, &flavor(&h, "m1.eph"), 2, 3072, 20, 15).await;
    template(&h, "t", owner, &spec(&flavor(&h, "m1.eph"), IMAGE, "")).await;
    let eph = [
        ("cpu", "2"),
        ("ephemeral-storage", "15Gi"),
        ("memory", "3Gi"),
        ("storage", "20Gi"),
    ];
    wait_capacity(&h, "t", &cap(&eph)).await;

    // The spec names another flavor: the ephemeral disk it lacks is dropped.
    template(&h, "t", owner, &spec("m1.small", IMAGE, "")).await;
    let small = [("cpu", "1"), ("memory", "2Gi"), ("storage", "20Gi")];
    wait_capacity(&h, "t", &cap(&small)).await;

    // The operator replaces a flavor under the same name (Nova flavors cannot be edited):
    // seen once the cached entry expired, with no change to the template.
    let old = create_flavor(&h, &flavor(&h, "m1.ops"), 2, 4096, 40, 0).await;
    template(&h, "t", owner, &spec(&flavor(&h, "m1.ops"), IMAGE, "")).await;
    let before = [("cpu", "2"), ("memory", "4Gi"), ("storage", "40Gi")];
    wait_capacity(&h, "t", &cap(&before)).await;
    delete_flavor(&h, &old).await;
    create_flavor(&h, &flavor(&h, "m1.ops"), 8, 16384, 160, 0).await;
    let after = [("cpu", "8"), ("memory", "16Gi"), ("storage", "160Gi")];
    wait_capacity(&h, "t", &cap(&after)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_flavor_or_image_is_reported_then_converges() {
    let h = Harness::new("osmt-bad").await;
    let _run = start(&h, options(&h, false));
    let uid = cluster(&h, "c1").await;
    let owner = ("c1", uid.as_str());
    template(&h, "t", owner, &spec(&flavor(&h, "m1.gone"), IMAGE, "")).await;
    template(&h, "img", owner, &spec("m1.small", "no-such-image", "")).await;
    let t = wait(&h, "t", 30, "Ready False", |t| {
        ready(t).is_some_and(|r| r.0 == "False")
    })
    .await;
    let (_, reason, message) = ready(&t).unwrap();
    assert_eq!(reason, "InvalidMachineSpec");
    assert!(
        message.contains("flavor not found") && message.contains("m1.gone"),
        "{message}"
    );
    assert!(capacity(&t).is_empty());
    let t = wait(&h, "img", 30, "Ready False", |t| {
        ready(t).is_some_and(|r| r.0 == "False")
    })
    .await;
    let message = ready(&t).unwrap().2;
    assert!(message.contains("image not found"), "{message}");
    wait_event(&h, "t", "Warning InvalidMachineSpec").await;

    // Retried on the slow backoff, not at full speed: count the flavor lists over 3 s.
    let lists = || {
        h.requests()
            .into_iter()
            .filter(|r| r.contains("/flavors"))
            .count()
    };
    let before = lists();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let retries = lists() - before;
    println!(
        "missing flavor: {retries} flavor lists in 3 s (slow retry {:?})",
        h.options.slow_retry
    );
    assert!(retries <= 4, "{retries} flavor lists in 3 s");

    // The cloud gets the flavor: the next retry converges, without a spec change.
    create_flavor(&h, &flavor(&h, "m1.gone"), 1, 1024, 10, 0).await;
    let back = [("cpu", "1"), ("memory", "1Gi"), ("storage", "10Gi")];
    wait_capacity(&h, "t", &cap(&back)).await;
    // The spec is fixed: converges at once.
    template(&h, "img", owner, &spec("m1.small", IMAGE, "")).await;
    let small = [("cpu", "1"), ("memory", "2Gi"), ("storage", "20Gi")];
    wait_capacity(&h, "img", &cap(&small)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_templates_sharing_a_flavor_cost_one_lookup_each() {
    const N: usize = 100;
    let h = Harness::new("osmt-econ").await;
    let uid = cluster(&h, "c1").await;
    for i in 0..N {
        template(
            &h,
            &format!("t{i}"),
            ("c1", &uid),
            &spec("m1.large", IMAGE, ""),
        )
        .await;
    }
    let requests_before = h.requests().len();
    let run = start(&h, options(&h, false));
    let large = cap(&[("cpu", "4"), ("memory", "8Gi"), ("storage", "80Gi")]);
    for i in 0..N {
        wait_capacity(&h, &format!("t{i}"), &large).await;
    }
    drop(run);
    let reqs: Vec<String> = h.requests().split_off(requests_before);
    let flavors = reqs.iter().filter(|r| r.contains("/flavors")).count();
    let images = reqs.iter().filter(|r| r.contains("/images")).count();
    println!(
        "template economy: {N} templates sharing one flavor and image: {} OpenStack requests \
         (flavor {flavors}, image {images}; identity excluded); uncached: {}",
        reqs.len(),
        2 * N
    );
    assert_eq!((flavors, images), (1, 1), "{reqs:?}");

    // Resyncs every 500 ms for 3 s on a fresh context (entries live the default 5 min): the
    // first reconcile of each template after the restart and every resync share one
    // lookup of the flavor and one of the image.
    let before = h.requests().len();
    let mut o = options(&h, false);
    o.sync_period = Duration::from_millis(500);
    let run = start(&h, o);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let reconciles = run
        .ctx
        .shared
        .metrics
        .reconciles(capo_controller::machine_template::CONTROLLER);
    drop(run);
    let resync = h.requests().len() - before;
    println!(
        "template economy: {N} templates resynced every 500 ms for 3 s after a restart: \
         {reconciles} reconciles, {resync} OpenStack requests"
    );
    assert!(reconciles >= 2 * N as u64, "{reconciles} reconciles");
    assert!(resync <= 2, "{resync} requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_cluster_gets_no_cloud_call_until_resumed() {
    let h = Harness::new("osmt-pause").await;
    let _run = start(&h, options(&h, false));
    h.set_cluster_paused("c1", true).await;
    let uid = h.uid("Cluster", "c1").await;
    template(&h, "t", ("c1", &uid), &spec("m1.large", IMAGE, "")).await;
    let paused = |t: &OpenStackMachineTemplate| {
        t.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.r#type == "Paused" && c.status == "True")
        })
    };
    let t = wait(&h, "t", 30, "Paused", paused).await;
    assert!(capacity(&t).is_empty());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cloud = h.requests();
    assert!(cloud.is_empty(), "requests while paused: {cloud:?}");
    // Resuming the Cluster (its spec.paused flips) wakes the template.
    h.set_cluster_paused("c1", false).await;
    let large = [("cpu", "4"), ("memory", "8Gi"), ("storage", "80Gi")];
    let t = wait_capacity(&h, "t", &cap(&large)).await;
    assert!(!paused(&t));
}

/// The template's own `cluster.x-k8s.io/paused` annotation pauses it like its Cluster's
/// `spec.paused` (upstream's "paused tpl" case): no cloud call until the annotation goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_template_gets_no_cloud_call_until_its_annotation_goes() {
    let h = Harness::new("osmt-tpl-pause").await;
    let _run = start(&h, options(&h, false));
    let uid = cluster(&h, "c1").await;
    let yaml = |annotations: &str| {
        format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata:
  name: t
{annotations}  ownerReferences:
  - apiVersion: cluster.x-k8s.io/v1beta2
    kind: Cluster
    name: c1
    uid: {uid}
spec:
  template:
    spec:
{}",
            common::indent(&spec("m1.large", IMAGE, ""), 6)
        )
    };
    h.apply(&yaml("  annotations:\n    cluster.x-k8s.io/paused: \"\"\n"))
        .await;
    let paused = |t: &OpenStackMachineTemplate| {
        t.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.r#type == "Paused" && c.status == "True")
        })
    };
    let t = wait(&h, "t", 30, "Paused", paused).await;
    assert!(capacity(&t).is_empty());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cloud = h.requests();
    assert!(cloud.is_empty(), "requests while paused: {cloud:?}");
    // The annotation removed: the template is reconciled.
    h.apply(&yaml("")).await;
    let large = [("cpu", "4"), ("memory", "8Gi"), ("storage", "80Gi")];
    let t = wait_capacity(&h, "t", &cap(&large)).await;
    assert!(!paused(&t));
}

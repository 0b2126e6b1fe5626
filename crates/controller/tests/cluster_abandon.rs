//! The abandon path (`infrastructure.cluster.x-k8s.io/capo-abandon`): a cluster whose
//! credentials can no longer work (its project gone, its identity Secret force-deleted) stalls
//! on deletion with a condition naming the annotation; annotated, its finalizers go and an event
//! lists what was left behind. On a healthy cluster the annotation is ignored with a warning.
//!
//! "Project gone" is made by pointing the identity Secret's clouds.yaml at a project that does
//! not exist: Keystone answers a scoped authentication for a deleted project exactly so (401,
//! `Unauthorized` wrapping `ProjectNotFound`), on the real services as on capo-sim.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::OpenStackCluster;
use capo_controller::abandon::ABANDON_ANNOTATION;
use common::{Harness, poll};
use k8s_openapi::api::core::v1::{Event, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams};

const SPEC: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.7.0.0/24
apiServerLoadBalancer:
  enabled: true
managedSecurityGroups: {}
";

/// A harness whose controllers read the identity Secret again after 100 ms (60 s by default),
/// so a Secret changed or deleted by the test is seen at once.
async fn harness(prefix: &str) -> Harness {
    let mut h = Harness::new(prefix).await;
    h.options.identity_read_max_age = std::time::Duration::from_millis(100);
    h
}

/// `type reason: message` of the events about `name`.
async fn events(h: &Harness, name: &str) -> Vec<String> {
    let list = Api::<Event>::namespaced(h.client.clone(), &h.ns)
        .list(&Default::default())
        .await
        .unwrap();
    list.items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .map(|e| {
            format!(
                "{} {}: {}",
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default()
            )
        })
        .collect()
}

/// The first event about `name` starting with `prefix` (`"Warning Abandoned"`).
async fn wait_event(h: &Harness, name: &str, prefix: &str) -> String {
    poll(
        20,
        || async {
            events(h, name)
                .await
                .into_iter()
                .find(|e| e.starts_with(prefix))
        },
        || async {
            format!(
                "no {prefix} event about {name}: {:?}",
                events(h, name).await
            )
        },
    )
    .await
}

async fn annotate<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = serde_json::json!({"metadata": {"annotations": {ABANDON_ANNOTATION: "true"}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

fn secrets(h: &Harness) -> Api<Secret> {
    Api::namespaced(h.client.clone(), &h.ns)
}

/// Ready of `o` as `reason: message`.
fn ready(o: &OpenStackCluster) -> String {
    o.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.r#type == "Ready"))
        .map(|c| {
            format!(
                "{}: {}",
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default()
            )
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_gone_blocks_deletion_until_abandoned() {
    let mut h = harness("abandon").await;
    h.start();
    h.create_cluster("c1", SPEC).await;
    let o = h.wait_ready("c1").await;
    let st = o.status.clone().unwrap();
    let network = st.network.clone().unwrap();
    let router = st.router.clone().unwrap().id;
    let lb = st.api_server_load_balancer.clone().unwrap().id;
    let sg = st.control_plane_security_group.clone().unwrap().id;

    h.remove_project().await;
    h.delete_cluster("c1").await;
    let want = format!(
        "annotate OpenStackCluster {}/c1 with {ABANDON_ANNOTATION}=true",
        h.ns
    );
    let o = h
        .wait_cluster("c1", 30, "deletion blocked", |o| ready(o).contains(&want))
        .await;
    let r = ready(&o);
    assert!(r.starts_with("InvalidCredentials: "), "{r}");
    assert!(r.contains("cannot delete"), "{r}");
    assert!(r.contains("401"), "{r}");
    // Blocked, not abandoned: the finalizer stays while nobody annotates.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let o = h.clusters().get("c1").await.unwrap();
    assert!(!o.metadata.finalizers.unwrap_or_default().is_empty());

    annotate(&h.clusters(), "c1").await;
    h.wait_gone("c1", 30).await;
    let ev = wait_event(&h, "c1", "Warning Abandoned").await;
    for id in [&network.id, &network.subnets[0].id, &router, &lb, &sg] {
        assert!(ev.contains(id.as_str()), "{id} not in {ev}");
    }
    // Left behind, as the event says.
    let inv = h.inventory().await;
    assert!(inv.contains_key("networks"), "{inv:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotation_on_a_healthy_cluster_is_ignored() {
    let mut h = harness("abandon-ok").await;
    h.start();
    h.create_cluster("c2", SPEC).await;
    h.wait_ready("c2").await;
    // Not being deleted: a warning, nothing else.
    annotate(&h.clusters(), "c2").await;
    let ev = wait_event(&h, "c2", "Warning AbandonIgnored").await;
    assert!(ev.contains("not being deleted"), "{ev}");
    assert!(h.clusters().get("c2").await.unwrap().status.unwrap().ready);
    // Deleted with working credentials: everything goes, and the warning says so.
    h.delete_cluster_leaving_nothing("c2").await;
    let ev = poll(
        20,
        || async {
            events(&h, "c2")
                .await
                .into_iter()
                .find(|e| e.contains("completed with working credentials"))
        },
        || async { format!("no deleted-normally warning: {:?}", events(&h, "c2").await) },
    )
    .await;
    assert!(ev.starts_with("Warning AbandonIgnored"), "{ev}");
    assert!(
        !events(&h, "c2")
            .await
            .iter()
            .any(|e| e.starts_with("Warning Abandoned")),
        "nothing abandoned"
    );
}

const BASTION_SPEC: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.8.0.0/24
managedSecurityGroups: {}
bastion:
  enabled: true
  spec:
    flavor: m1.small
    image:
      filter:
        name: ubuntu-2404-kube-v1.34
";

/// The identity Secret force-deleted under a cluster with a bastion: the cluster's annotation
/// lets the cluster go and is passed on to the bastion's OpenStackServer, which follows once
/// deleted (garbage collection's part, done by hand: the test API server runs no collector).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_gone_cluster_and_bastion_abandoned_by_one_annotation() {
    let mut h = harness("abandon-secret").await;
    h.start_all();
    h.create_cluster("c3", BASTION_SPEC).await;
    let o = h
        .wait_cluster("c3", 60, "bastion ready", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.bastion.as_ref())
                .is_some_and(|b| b.state.as_deref() == Some("ACTIVE"))
        })
        .await;
    let bastion_id = o.status.unwrap().bastion.unwrap().id.unwrap();
    secrets(&h)
        .delete("cloud-config", &Default::default())
        .await
        .unwrap();
    h.delete_cluster("c3").await;
    let want = format!(
        "annotate OpenStackCluster {}/c3 with {ABANDON_ANNOTATION}=true",
        h.ns
    );
    let o = h
        .wait_cluster("c3", 30, "deletion blocked", |o| ready(o).contains(&want))
        .await;
    assert!(ready(&o).contains("Secret"), "{}", ready(&o));
    let auth = o.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.r#type == "OpenStackAuthenticationSucceeded")
    });
    assert_eq!(
        auth.map(|c| (c.status.as_str(), c.reason.as_deref())),
        Some(("False", Some("OpenStackAuthenticationFailed"))),
        "{auth:?}"
    );
    let message = auth.and_then(|c| c.message.clone()).unwrap_or_default();
    assert!(
        message.contains("cloud-config") && message.contains("not found"),
        "{message}"
    );

    annotate(&h.clusters(), "c3").await;
    h.wait_gone("c3", 30).await;
    let ev = wait_event(&h, "c3", "Warning Abandoned").await;
    assert!(ev.contains(&bastion_id), "{ev}");
    let servers: Api<OpenStackServer> = Api::namespaced(h.client.clone(), &h.ns);
    let name = capo_api::names::bastion_server_name("c3");
    let oss = servers.get(&name).await.unwrap();
    assert_eq!(
        oss.metadata
            .annotations
            .unwrap_or_default()
            .get(ABANDON_ANNOTATION)
            .map(String::as_str),
        Some("true")
    );
    servers.delete(&name, &Default::default()).await.unwrap();
    poll(
        30,
        || async {
            servers
                .get_opt(&name)
                .await
                .unwrap()
                .is_none()
                .then_some(())
        },
        || async {
            format!(
                "bastion server not abandoned: {:?}",
                events(&h, &name).await
            )
        },
    )
    .await;
    let ev = wait_event(&h, &name, "Warning Abandoned").await;
    assert!(ev.contains(&bastion_id), "{ev}");
}

//! Events on a real kube-apiserver: the first occurrence is an `events.k8s.io/v1` Event, a
//! repeat within the series window raises that Event's series count instead of creating
//! another, and a different note is a different Event.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use capo_controller::events::{Events, Note};
use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{ListParams, PostParams};
use kube::runtime::events::EventType;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_fold_into_a_series() {
    let env = capo_testkit::shared_env().await.unwrap();
    let client = env.client();
    let ns = format!("events-{}", uuid::Uuid::new_v4().simple());
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(ns.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let regarding = ObjectReference {
        api_version: Some("infrastructure.cluster.x-k8s.io/v1beta1".into()),
        kind: Some("OpenStackMachine".into()),
        namespace: Some(ns.clone()),
        name: Some("m0".into()),
        uid: Some("9b7a4c1e-0000-4000-8000-000000000001".into()),
        ..Default::default()
    };
    let events = Events::new(client.clone(), "capo-test", Some("pod-0".into()));
    let warning = |text: &str| Note {
        type_: EventType::Warning,
        reason: "OpenStackError",
        action: "Reconcile",
        note: Some(text.into()),
    };
    for _ in 0..3 {
        events
            .publish(warning("quota exceeded"), &regarding)
            .await
            .unwrap();
    }
    events
        .publish(warning("another failure"), &regarding)
        .await
        .unwrap();

    let api: Api<Event> = Api::namespaced(client, &ns);
    let mut list = api.list(&ListParams::default()).await.unwrap().items;
    list.sort_by_key(|e| e.note.clone());
    assert_eq!(list.len(), 2, "{list:#?}");
    let other = &list[0];
    assert_eq!(other.note.as_deref(), Some("another failure"));
    assert!(other.series.is_none());
    let repeated = &list[1];
    assert_eq!(repeated.note.as_deref(), Some("quota exceeded"));
    assert_eq!(repeated.type_.as_deref(), Some("Warning"));
    assert_eq!(repeated.reason.as_deref(), Some("OpenStackError"));
    assert_eq!(repeated.reporting_controller.as_deref(), Some("capo-test"));
    assert_eq!(repeated.reporting_instance.as_deref(), Some("pod-0"));
    assert_eq!(repeated.regarding.as_ref(), Some(&regarding));
    assert_eq!(repeated.series.as_ref().map(|s| s.count), Some(3));
    assert_eq!(events.remembered(), 2);
}

//! Deleting a machine after `clusterctl move` (OpenStackServer recreated with a new UID and
//! no status) and after its image was deleted still removes the server, its port and volume.
use std::time::Duration;

use crate::common::Harness;
use crate::machines::*;
use capo_api::v1alpha1::OpenStackServer;
use capo_openstack::image::{self, ImageFilter};
use capo_openstack::request::{Request, Service};
use capo_openstack::{ApiMetrics, ClientConfig, Credentials, SessionCache};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};

fn named(h: &Harness, col: &str, prefix: &str) -> usize {
    sim_items(h, col)
        .iter()
        .filter(|i| i["name"].as_str().unwrap_or_default().starts_with(prefix))
        .count()
}

/// What `clusterctl move` does to an object: recreated (new UID) from its metadata and spec,
/// without status.
async fn move_server(h: &Harness, name: &str) {
    let api = servers(h);
    let old = api.get(name).await.unwrap();
    let pp = PatchParams::default();
    api.patch(
        name,
        &pp,
        &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    api.delete(name, &Default::default()).await.unwrap();
    while api.get_opt(name).await.unwrap().is_some() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let moved = OpenStackServer {
        metadata: ObjectMeta {
            name: old.metadata.name.clone(),
            namespace: old.metadata.namespace.clone(),
            labels: old.metadata.labels.clone(),
            annotations: old.metadata.annotations.clone(),
            owner_references: old.metadata.owner_references.clone(),
            finalizers: old.metadata.finalizers.clone(),
            ..Default::default()
        },
        spec: old.spec.clone(),
        status: None,
    };
    let created = api.create(&PostParams::default(), &moved).await.unwrap();
    assert_ne!(
        created.metadata.uid, old.metadata.uid,
        "a new UID, as after a move"
    );
    machines(h)
        .patch_status(
            name,
            &pp,
            &Patch::Merge(serde_json::json!({"status": null})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_after_move_and_image_deletion_leaves_nothing() {
    let (h, c) = ready_cluster("move", CLUSTER_FIP).await;
    create_machine(&h, "c1", "w-mv", false, BOOT_FROM_VOLUME).await;
    wait_machine_ready(&h, "w-mv").await;
    drop(c);
    assert_eq!(
        ["servers", "ports", "volumes"].map(|col| named(&h, col, "w-mv")),
        [1, 1, 1]
    );
    move_server(&h, "w-mv").await;
    // The image goes away meanwhile (admin deletes the public image).
    let cache = SessionCache::new(ClientConfig::default(), ApiMetrics::unregistered());
    let admin =
        Credentials::from_clouds_yaml(&h.sim().clouds_yaml(), capo_sim::clouds::ADMIN, None, None)
            .unwrap();
    let admin = cache.session(&admin).unwrap();
    let filter = ImageFilter {
        name: Some("ubuntu-2404-kube-v1.34".into()),
        ..Default::default()
    };
    let img = image::list_images(&admin, &filter).await.unwrap()[0]
        .id
        .clone();
    admin
        .send(&Request::delete(
            Service::Image,
            format!("images/{img}"),
            "image_delete",
        ))
        .await
        .unwrap();
    assert!(
        image::list_images(&admin, &filter)
            .await
            .unwrap()
            .is_empty()
    );

    delete_machine(&h, "w-mv").await;
    let _c = start(&h);
    wait_machine_gone(&h, "w-mv", 60).await;
    assert_eq!(
        ["servers", "ports", "volumes", "trunks"].map(|col| named(&h, col, "w-mv")),
        [0, 0, 0, 0]
    );
}

/// `clusterctl move` recreates the servers while their Cluster is paused and resumes the
/// Cluster afterwards: the servers, untouched since they were created, must pick up again when
/// the Cluster resumes (found by the end-to-end `clusterctl move` scenario).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_server_resumes_with_its_cluster() {
    let (h, c) = ready_cluster("move-resume", CLUSTER_FIP).await;
    create_machine(&h, "c1", "w-rs", false, MACHINE).await;
    wait_machine_ready(&h, "w-rs").await;
    let instance = servers(&h)
        .get("w-rs")
        .await
        .unwrap()
        .status
        .and_then(|s| s.instance_id)
        .expect("instance id");
    drop(c);
    h.set_cluster_paused("c1", true).await;
    move_server(&h, "w-rs").await;
    let _c = start(&h);
    // The new manager sees the paused Cluster and records it on the server.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let s = servers(&h).get("w-rs").await.unwrap();
        let paused = s.status.as_ref().is_some_and(|st| {
            st.conditions
                .iter()
                .any(|c| c.type_ == "Paused" && c.status == "True")
        });
        if paused {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "server never paused");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    h.set_cluster_paused("c1", false).await;
    // Nothing touches the server: resuming the Cluster alone brings it back.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let s = servers(&h).get("w-rs").await.unwrap();
        if let Some(st) = s.status.as_ref().filter(|st| st.ready) {
            assert_eq!(
                st.instance_id.as_deref(),
                Some(instance.as_str()),
                "same server"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not resume with its Cluster: {:?}",
            s.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(named(&h, "servers", "w-rs"), 1, "no second server");
    delete_machine(&h, "w-rs").await;
    wait_machine_gone(&h, "w-rs", 60).await;
}

//! Deleting a cluster removes what its cloud-provider-openstack left in the project (load
//! balancers, their floating IPs and security groups; CSI volumes and snapshots by policy),
//! and nothing of another cluster of the same project or of the user's own.
//!
//! Here the CCM's and the CSI plugin's resources are made by the test, named and described
//! exactly as cloud-provider-openstack v1.34 names them (capo-sim, or the real services with
//! `CAPO_CLOUD=real`). `cloud_provider_openstack.rs` runs the real programs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use capo_api::names::cloud_provider_cluster_name;
use capo_controller::cluster::cloud_provider::{
    CLOUD_PROVIDER_RESOURCES_DELETED, VOLUMES_ANNOTATION,
};
use capo_openstack::Session;
use capo_openstack::blockstorage::VolumeCreate;
use capo_openstack::{blockstorage, loadbalancer as lbaas, network};
use common::{Harness, poll};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

/// One cluster's worth of what the CCM and the CSI plugin make.
struct Made {
    lbs: Vec<String>,
    fips: Vec<String>,
    groups: Vec<String>,
    volumes: Vec<String>,
    snapshots: Vec<String>,
}

async fn post(s: &Session, r: capo_openstack::resource::Resource, body: Value) -> Value {
    capo_openstack::resource::create::<Value>(s, r, &body)
        .await
        .unwrap_or_else(|e| panic!("create {}: {e}", r.singular))
}

/// A `type: LoadBalancer` Service `svc` of namespace `default` as the CCM of `ccm` realises it
/// on `subnet`: the load balancer (active), the floating IP on its VIP port, the security group.
async fn service(s: &Session, ccm: &str, svc: &str, subnet: &str, ext: &str, made: &mut Made) {
    let lb = post(
        s,
        lbaas::LOAD_BALANCER,
        json!({"name": format!("kube_service_{ccm}_default_{svc}"),
               "description": format!("Kubernetes external service default/{svc} from cluster {ccm}"),
               "vip_subnet_id": subnet}),
    )
    .await;
    let id = lb["id"].as_str().unwrap().to_owned();
    poll(
        120,
        || async {
            let l: Value = lbaas::get(s, lbaas::LOAD_BALANCER, &id).await.ok()?;
            (l["provisioning_status"] == "ACTIVE").then_some(())
        },
        || async { format!("load balancer {id} not ACTIVE") },
    )
    .await;
    let fip = post(
        s,
        network::FLOATING_IP,
        json!({"floating_network_id": ext, "port_id": lb["vip_port_id"],
               "description": format!("Floating IP for Kubernetes external service default/{svc} from cluster {ccm}")}),
    )
    .await;
    let sg = post(
        s,
        network::SECURITY_GROUP,
        json!({"name": format!("lb-sg-0b4e-{svc}-default-{svc}"),
               "description": format!("Security Group for default/{svc} Service LoadBalancer in cluster {ccm}")}),
    )
    .await;
    made.lbs.push(id);
    made.fips.push(fip["id"].as_str().unwrap().to_owned());
    made.groups.push(sg["id"].as_str().unwrap().to_owned());
}

/// A PVC's volume and a snapshot of it, as the CSI plugin of `ccm` makes them.
async fn pvc(s: &Session, ccm: &str, name: &str, made: &mut Made) -> String {
    let meta = json!({"cinder.csi.openstack.org/cluster": ccm,
                      "csi.storage.k8s.io/pvc/name": name, "csi.storage.k8s.io/pvc/namespace": "default"});
    let v = blockstorage::create_volume(
        s,
        &VolumeCreate {
            name: format!("pvc-{name}"),
            size: 1,
            metadata: serde_json::from_value(meta.clone()).unwrap(),
            ..Default::default()
        },
    )
    .await
    .expect("create volume");
    poll(
        120,
        || async {
            let v = blockstorage::get_volume(s, &v.id).await.ok()?;
            (v.status == "available").then_some(())
        },
        || async { format!("volume {} not available", v.id) },
    )
    .await;
    let snap = snapshot(s, &v.id, &format!("snapshot-{name}"), meta).await;
    made.volumes.push(v.id.clone());
    made.snapshots.push(snap);
    v.id
}

async fn snapshot(s: &Session, volume: &str, name: &str, metadata: Value) -> String {
    let req = capo_openstack::Request::post(
        capo_openstack::Service::BlockStorage,
        "snapshots",
        "snapshot_create",
        json!({"snapshot": {"volume_id": volume, "name": name, "metadata": metadata}}),
    );
    let snap: Value = s.fetch(&req, "snapshot").await.expect("create snapshot");
    let id = snap["id"].as_str().unwrap().to_owned();
    poll(
        120,
        || async {
            let all = blockstorage::list_snapshots(s).await.ok()?;
            all.iter()
                .any(|x| x.id == id && x.status == "available")
                .then_some(())
        },
        || async { format!("snapshot {id} not available") },
    )
    .await;
    id
}

/// IDs present in collection `kind` of the project.
async fn ids(h: &Harness, kind: &str) -> Vec<String> {
    h.items()
        .await
        .get(kind)
        .map(|v| {
            v.iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

async fn assert_all(h: &Harness, kind: &str, want: &[String], present: bool) {
    let have = ids(h, kind).await;
    for id in want {
        assert_eq!(
            have.contains(id),
            present,
            "{kind} {id} present={present}: {have:?}"
        );
    }
}

/// The message of condition `type_` of OpenStackCluster `name` once it contains `needle`.
async fn message(h: &Harness, name: &str, type_: &str, needle: &str) -> String {
    let text = |o: &capo_api::v1beta1::OpenStackCluster| {
        let st = o.status.as_ref()?;
        capo_controller::conditions::get(&st.conditions, type_).map(|c| c.message.clone())
    };
    let o = h
        .wait_cluster(name, 120, needle, |o| {
            text(o).is_some_and(|m| format!("{m:?}").contains(needle))
        })
        .await;
    format!("{:?}", text(&o))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_of_the_deleted_cluster_go_and_nothing_else() {
    let mut h = Harness::new("ccm").await;
    h.start();
    let spec = common::open_spec("10.8.0.0/24", "");
    h.create_cluster("a", &spec).await;
    h.create_cluster("b", &spec).await;
    let a = h.wait_ready("a").await.status.unwrap();
    let b = h.wait_ready("b").await.status.unwrap();
    let ext = a.external_network.as_ref().unwrap().id.clone();
    let subnet = |st: &capo_api::v1beta1::OpenStackClusterStatus| {
        st.network.as_ref().unwrap().subnets[0].id.clone()
    };
    let s = h.session();
    let (ccm_a, ccm_b) = (
        cloud_provider_cluster_name(&h.ns, "a"),
        cloud_provider_cluster_name(&h.ns, "b"),
    );
    let none = || Made {
        lbs: vec![],
        fips: vec![],
        groups: vec![],
        volumes: vec![],
        snapshots: vec![],
    };
    let (mut of_a, mut of_b, mut user) = (none(), none(), none());
    service(&s, &ccm_a, "web", &subnet(&a), &ext, &mut of_a).await;
    // A CCM left with its default name: its load balancer is on a's network all the same.
    // Its security group names no cluster capo can tell, so it stays (docs/deletion.md).
    let mut default_named = none();
    service(
        &s,
        "kubernetes",
        "db",
        &subnet(&a),
        &ext,
        &mut default_named,
    )
    .await;
    of_a.lbs.append(&mut default_named.lbs);
    of_a.fips.append(&mut default_named.fips);
    user.groups.append(&mut default_named.groups);
    let volume_a = pvc(&s, &ccm_a, "data", &mut of_a).await;
    service(&s, &ccm_b, "web", &subnet(&b), &ext, &mut of_b).await;
    pvc(&s, &ccm_b, "data", &mut of_b).await;
    // The user's own: a floating IP, a security group, a volume, and a snapshot of a's CSI
    // volume that holds it.
    let fip = post(
        &s,
        network::FLOATING_IP,
        json!({"floating_network_id": ext}),
    )
    .await;
    user.fips.push(fip["id"].as_str().unwrap().to_owned());
    let sg = post(&s, network::SECURITY_GROUP, json!({"name": "mine"})).await;
    user.groups.push(sg["id"].as_str().unwrap().to_owned());
    let v = blockstorage::create_volume(
        &s,
        &VolumeCreate {
            name: "mine".into(),
            size: 1,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    user.volumes.push(v.id);
    let hold = snapshot(&s, &volume_a, "by-hand", json!({})).await;

    // a deletes its volumes; its CSI volume waits for the user's snapshot, with Cinder's reason.
    h.clusters()
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {VOLUMES_ANNOTATION: "delete"}}})),
        )
        .await
        .unwrap();
    h.delete_cluster("a").await;
    let waiting = message(&h, "a", CLOUD_PROVIDER_RESOURCES_DELETED, &volume_a).await;
    assert!(waiting.contains("snapshot"), "{waiting}");
    assert_all(&h, "loadbalancers", &of_a.lbs, false).await;
    assert_all(&h, "floatingips", &of_a.fips, false).await;
    assert_all(&h, "security_groups", &of_a.groups, false).await;
    assert_all(&h, "snapshots", &of_a.snapshots, false).await;
    let req = blockstorage::delete_snapshot_request(&hold);
    s.send(&req).await.expect("delete the user's snapshot");
    h.wait_gone("a", 120).await;
    assert_all(&h, "volumes", &of_a.volumes, false).await;
    if !common::cloud::is_real() {
        // What the sweep cost: a pass is the five lists; the deletes are one request each.
        let reqs = h.requests();
        let passes = reqs
            .iter()
            .filter(|r| r.starts_with("GET ") && r.ends_with("/snapshots/detail"))
            .count();
        let deletes: Vec<&String> = reqs
            .iter()
            .filter(|r| {
                r.starts_with("DELETE ")
                    && [
                        "/snapshots/",
                        "/volumes/",
                        "/floatingips/",
                        "/security-groups/",
                        "/loadbalancers/",
                    ]
                    .iter()
                    .any(|k| r.contains(k))
            })
            .collect();
        eprintln!(
            "COST sweep of cluster a: {passes} passes x 5 GETs, {} DELETEs in all of a's deletion (with capo's own): {deletes:?}",
            deletes.len()
        );
        assert!(passes >= 2, "one pass to delete, one to confirm: {passes}");
    }
    let deleted = h
        .event_messages("a", "CloudProviderResourcesDeleted")
        .await
        .join("\n");
    for id in of_a.lbs.iter().chain(&of_a.volumes) {
        assert!(deleted.contains(id), "{id} not in events: {deleted}");
    }
    // b's and the user's are all there.
    for (kind, list) in [
        ("loadbalancers", &of_b.lbs),
        ("floatingips", &of_b.fips),
        ("security_groups", &of_b.groups),
        ("volumes", &of_b.volumes),
        ("snapshots", &of_b.snapshots),
        ("floatingips", &user.fips),
        ("security_groups", &user.groups),
        ("volumes", &user.volumes),
    ] {
        assert_all(&h, kind, list, true).await;
    }

    // b keeps its volumes (no annotation) and says so.
    h.delete_cluster("b").await;
    h.wait_gone("b", 120).await;
    assert_all(&h, "loadbalancers", &of_b.lbs, false).await;
    assert_all(&h, "security_groups", &of_b.groups, false).await;
    assert_all(&h, "volumes", &of_b.volumes, true).await;
    assert_all(&h, "snapshots", &of_b.snapshots, true).await;
    let kept = h
        .event_messages("b", "CloudProviderVolumesKept")
        .await
        .join("\n");
    assert!(kept.contains(&of_b.volumes[0]), "{kept}");

    // What is left is exactly b's kept data and the user's own.
    for id in &of_b.snapshots {
        s.send(&blockstorage::delete_snapshot_request(id))
            .await
            .unwrap();
    }
    poll(
        60,
        || async { ids(&h, "snapshots").await.is_empty().then_some(()) },
        || async { "snapshots left".to_owned() },
    )
    .await;
    for id in of_b.volumes.iter().chain(&user.volumes) {
        blockstorage::delete_volume(&s, id).await.unwrap();
    }
    for id in &user.fips {
        network::delete(&s, network::FLOATING_IP, id).await.unwrap();
    }
    for id in &user.groups {
        network::delete(&s, network::SECURITY_GROUP, id)
            .await
            .unwrap();
    }
    poll(
        60,
        || async { ids(&h, "volumes").await.is_empty().then_some(()) },
        || async { "volumes left".to_owned() },
    )
    .await;
    let inv = h.inventory().await;
    assert!(inv.is_empty(), "left behind: {inv:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_policy_that_is_neither_keep_nor_delete_is_named_and_nothing_is_deleted() {
    let mut h = Harness::new("ccmbad").await;
    h.start();
    h.create_cluster("c", &common::open_spec("10.9.0.0/24", ""))
        .await;
    h.wait_ready("c").await;
    h.clusters()
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {VOLUMES_ANNOTATION: "yes"}}})),
        )
        .await
        .unwrap();
    h.delete_cluster("c").await;
    let message = message(&h, "c", "Ready", VOLUMES_ANNOTATION).await;
    assert!(message.contains("yes"), "{message}");
    assert_eq!(h.inventory().await.get("networks"), Some(&1));
    h.clusters()
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {VOLUMES_ANNOTATION: "keep"}}})),
        )
        .await
        .unwrap();
    h.wait_gone("c", 120).await;
    assert!(h.inventory().await.is_empty());
}

/// A CCM load balancer still `PENDING_CREATE` when the cluster is deleted, then refused by
/// Octavia with 409 twice: the sweep waits, the condition says why in the cloud's words, and the
/// deletion finishes with nothing left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_load_balancer_and_octavias_409_are_waited_for_with_the_reason() {
    let mut h = Harness::new("ccmbusy").await;
    h.start();
    h.create_cluster("c", &common::open_spec("10.10.0.0/24", ""))
        .await;
    let st = h.wait_ready("c").await.status.unwrap();
    let subnet = st.network.as_ref().unwrap().subnets[0].id.clone();
    // Long enough for the deletion to reach the sweep while Octavia still builds, on a busy
    // machine too.
    let mut delays = common::fast_delays();
    delays.lb_provision_ms = 10_000;
    h.sim().control().set_delays(delays);
    let s = h.session();
    let ccm = cloud_provider_cluster_name(&h.ns, "c");
    let lb = post(
        &s,
        lbaas::LOAD_BALANCER,
        json!({"name": format!("kube_service_{ccm}_default_web"),
               "description": format!("Kubernetes external service default/web from cluster {ccm}"),
               "vip_subnet_id": subnet}),
    )
    .await;
    let id = lb["id"].as_str().unwrap().to_owned();
    let fault: capo_sim::FaultSpec = serde_json::from_value(json!({
        "method": "DELETE",
        "path_regex": format!("/lbaas/loadbalancers/{id}$"),
        "status": 409,
        "body": {"faultcode": "Client", "faultstring": format!("Invalid state PENDING_UPDATE of loadbalancer resource {id}"), "debuginfo": null},
        "count": 2,
    }))
    .unwrap();
    h.sim().control().add_faults(vec![fault]).unwrap();
    h.delete_cluster("c").await;
    let pending = message(&h, "c", CLOUD_PROVIDER_RESOURCES_DELETED, "PENDING_CREATE").await;
    assert!(pending.contains(&id), "{pending}");
    let refused = message(&h, "c", CLOUD_PROVIDER_RESOURCES_DELETED, "HTTP 409").await;
    assert!(
        refused.contains("Invalid state PENDING_UPDATE"),
        "{refused}"
    );
    h.wait_gone("c", 120).await;
    assert!(ids(&h, "loadbalancers").await.is_empty());
    let inv = h.inventory().await;
    assert!(inv.is_empty(), "left behind: {inv:?}");
}

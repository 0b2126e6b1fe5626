//! OpenStackCluster under failure: the controller killed after every OpenStack write (create
//! and delete), replies lost after the cloud acted, and transient 5xx/409/429 on every step.
//! Each case must converge to exactly one set of resources and delete to nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capo_sim::FaultSpec;
use common::Harness;

const SPEC: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.8.0.0/24
apiServerLoadBalancer:
  enabled: true
managedSecurityGroups: {}
";

/// What one managed cluster with an API load balancer consists of in the simulator.
fn one_set() -> BTreeMap<String, usize> {
    [
        ("floatingips", 1),
        ("healthmonitors", 1),
        ("listeners", 1),
        ("loadbalancers", 1),
        ("networks", 1),
        ("pools", 1),
        ("routers", 1),
        ("security_groups", 2),
        ("subnets", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The inventory without ports and rules (their counts follow from the rest).
async fn resources(h: &Harness) -> BTreeMap<String, usize> {
    let mut inv = h.inventory().await;
    inv.remove("ports");
    inv.remove("security_group_rules");
    inv
}

async fn rules(h: &Harness) -> usize {
    h.inventory()
        .await
        .get("security_group_rules")
        .copied()
        .unwrap_or(0)
}

/// Restart the controllers after every new OpenStack write until `done` holds.
async fn restart_after_every_write(
    h: &mut Harness,
    secs: u64,
    done: impl AsyncFn(&Harness) -> bool,
) -> usize {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut seen = h.writes().len();
    let mut restarts = 0;
    while !done(h).await {
        let now = h.writes().len();
        if now > seen {
            seen = now;
            h.start();
            restarts += 1;
        }
        assert!(
            Instant::now() < deadline,
            "did not converge; resources {:?}",
            h.inventory().await
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    restarts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_every_write_converges_to_one_set_and_deletes_everything() {
    let mut h = Harness::new("restart").await;
    // Slow every OpenStack call a little, so the 5 ms poll sees each write on its own and
    // the kill lands between two writes (without latency several writes can land between
    // two polls on a loaded machine).
    let latency = ["network", "load-balancer", "compute"]
        .map(|s| (s.to_owned(), 25))
        .into_iter()
        .collect();
    h.sim().control().set_latency(latency);
    h.start();
    h.create_cluster("r1", SPEC).await;
    let restarts = restart_after_every_write(&mut h, 120, async |h: &Harness| {
        h.clusters()
            .get_opt("r1")
            .await
            .unwrap()
            .is_some_and(|o| o.status.is_some_and(|s| s.ready))
    })
    .await;
    println!("create: controller restarted {restarts} times");
    assert!(
        restarts >= 12,
        "too few restarts to mean anything: {restarts}"
    );
    assert_eq!(resources(&h).await, one_set());
    let rules_once = rules(&h).await;
    h.delete_cluster("r1").await;
    let restarts = restart_after_every_write(&mut h, 120, async |h: &Harness| {
        h.clusters().get_opt("r1").await.unwrap().is_none()
    })
    .await;
    println!("delete: controller restarted {restarts} times");
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
    assert!(rules_once > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_replies_on_every_create_never_duplicate() {
    let mut h = Harness::new("lost").await;
    let paths = [
        "/networks$",
        "/subnets$",
        "/routers$",
        "/security-groups$",
        "/security-group-rules$",
        // The load balancer is created with its listeners, pools and monitors in one request;
        // lost replies on creating them one by one (after a provider refused the tree) are
        // covered in capo-cloud's `lost_replies_on_child_creates_leave_one_of_each`.
        "/lbaas/loadbalancers$",
        "/floatingips$",
        "/add_router_interface$",
    ];
    let faults: Vec<FaultSpec> = paths
        .iter()
        .map(|p| FaultSpec {
            method: Some(
                if p.contains("interface") {
                    "PUT"
                } else {
                    "POST"
                }
                .into(),
            ),
            path_regex: (*p).into(),
            status: 500,
            count: Some(1),
            after_action: true,
            ..Default::default()
        })
        .collect();
    h.sim().control().add_faults(faults).unwrap();
    h.start();
    h.create_cluster("l1", SPEC).await;
    h.wait_ready("l1").await;
    let fired: Vec<_> = h
        .sim()
        .control()
        .requests()
        .into_iter()
        .filter(|r| r.injected)
        .collect();
    assert_eq!(
        fired.len(),
        paths.len(),
        "every lost reply fired: {fired:?}"
    );
    assert_eq!(resources(&h).await, one_set());
    h.delete_cluster("l1").await;
    h.wait_gone("l1", 60).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_5xx_409_429_on_every_step_recover() {
    let mut h = Harness::new("transient").await;
    let mut faults = Vec::new();
    for (i, p) in [
        "/networks",
        "/subnets",
        "/routers",
        "/security-groups",
        "/security-group-rules",
        "/lbaas/loadbalancers",
        "/lbaas/listeners",
        "/lbaas/pools",
        "/lbaas/healthmonitors",
        "/floatingips",
        "/os-availability-zone",
    ]
    .iter()
    .enumerate()
    {
        let (status, headers) = match i % 3 {
            0 => (503, BTreeMap::new()),
            1 => (409, BTreeMap::new()),
            _ => (
                429,
                BTreeMap::from([("Retry-After".to_owned(), "1".to_owned())]),
            ),
        };
        faults.push(FaultSpec {
            path_regex: (*p).into(),
            status,
            headers,
            count: Some(2),
            ..Default::default()
        });
    }
    h.sim().control().add_faults(faults).unwrap();
    h.start();
    h.create_cluster("t1", SPEC).await;
    let o = h.wait_ready("t1").await;
    assert!(o.status.unwrap().ready);
    assert_eq!(resources(&h).await, one_set());
    // Deletes fail transiently too.
    let mut faults = Vec::new();
    for p in [
        "/lbaas/loadbalancers/",
        "/routers/",
        "/networks/",
        "/security-groups/",
        "/floatingips/",
    ] {
        faults.push(FaultSpec {
            method: Some("DELETE".into()),
            path_regex: p.into(),
            status: 503,
            count: Some(1),
            ..Default::default()
        });
    }
    h.sim().control().add_faults(faults).unwrap();
    h.delete_cluster("t1").await;
    h.wait_gone("t1", 90).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_named_by_upstream_without_tags_are_adopted_not_recreated() {
    use capo_openstack::network::{self as net, Network, Subnet};
    let mut h = Harness::new("adopt").await;
    h.create_cluster_paused("up", SPEC, true).await;
    let ns = h.ns.clone();
    let base = format!("k8s-clusterapi-cluster-{ns}-up");
    let s = h.session();
    // What upstream CAPO would have made: same names, no ownership tag.
    let n: Network = net::create(&s, net::NETWORK, &serde_json::json!({"name": base}))
        .await
        .unwrap();
    let sn: Subnet = net::create(
        &s,
        net::SUBNET,
        &serde_json::json!({"name": base, "network_id": n.id, "cidr": "10.8.0.0/24", "ip_version": 4}),
    )
    .await
    .unwrap();
    for role in ["controlplane", "worker"] {
        let _: serde_json::Value = net::create(
            &s,
            net::SECURITY_GROUP,
            &serde_json::json!({"name": format!("k8s-cluster-{ns}-up-secgroup-{role}")}),
        )
        .await
        .unwrap();
    }
    h.start();
    h.set_cluster_paused("up", false).await;
    let o = h.wait_ready("up").await;
    let st = o.status.unwrap();
    assert_eq!(st.network.as_ref().unwrap().id, n.id, "network adopted");
    assert_eq!(
        st.network.as_ref().unwrap().subnets[0].id,
        sn.id,
        "subnet adopted"
    );
    assert_eq!(resources(&h).await, one_set());
    let uid = o.metadata.uid.unwrap();
    let got: Network = net::get(&s, net::NETWORK, &n.id).await.unwrap();
    assert!(
        got.tags.contains(&format!("capo-cluster-uid={uid}")),
        "{:?}",
        got.tags
    );
    h.delete_cluster("up").await;
    h.wait_gone("up", 60).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusterctl_move_with_lost_status_keeps_the_same_resources() {
    let mut h = Harness::new("move").await;
    h.start();
    h.create_cluster("mv", SPEC).await;
    let before = h.wait_ready("mv").await;
    let net_id = before.status.clone().unwrap().network.unwrap().id;
    let owner_id = before
        .metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .get(capo_controller::runtime::OWNER_ID_ANNOTATION)
        .cloned()
        .expect("owner-id annotation set with the finalizer");
    assert_eq!(Some(&owner_id), before.metadata.uid.as_ref());
    // What `clusterctl move` does to the source: pause, drop finalizers, delete.
    h.set_cluster_paused("mv", true).await;
    let patch = serde_json::json!({"metadata": {"finalizers": null}});
    h.clusters()
        .patch(
            "mv",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(patch),
        )
        .await
        .unwrap();
    h.delete_cluster("mv").await;
    h.wait_gone("mv", 30).await;
    // ...and to the target: the same objects with new UIDs, annotations kept, status lost.
    h.stop();
    h.set_cluster_paused("mv", true).await;
    let uid = h.uid("Cluster", "mv").await;
    let ep = before.spec.control_plane_endpoint.clone().unwrap();
    h.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackCluster
metadata:
  name: mv
  labels:
    cluster.x-k8s.io/cluster-name: mv
  annotations:
    {ann}: {owner_id}
  ownerReferences:
  - apiVersion: cluster.x-k8s.io/v1beta2
    kind: Cluster
    name: mv
    uid: {uid}
spec:
  controlPlaneEndpoint:
    host: {host}
    port: {port}
{spec}",
        ann = capo_controller::runtime::OWNER_ID_ANNOTATION,
        host = ep.host.unwrap(),
        port = ep.port.unwrap(),
        spec = common::indent(SPEC, 2),
    ))
    .await;
    h.start();
    h.set_cluster_paused("mv", false).await;
    let after = h.wait_ready("mv").await;
    assert_ne!(after.metadata.uid, before.metadata.uid);
    assert_eq!(
        after.status.unwrap().network.unwrap().id,
        net_id,
        "same network adopted"
    );
    assert_eq!(resources(&h).await, one_set());
    h.delete_cluster("mv").await;
    h.wait_gone("mv", 60).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
}

/// The identity Secret's clouds.yaml with the cloud moved to `region` and the given endpoint
/// keys (`interface`, `endpoint_type`) set.
fn in_region(clouds_yaml: &str, region: &str, keys: &[(&str, &str)]) -> String {
    let mut doc: serde_json::Value = yaml_serde::from_str(clouds_yaml).unwrap();
    let cloud = &mut doc["clouds"][common::cloud::CLOUD];
    cloud["region_name"] = region.into();
    for (k, v) in keys {
        cloud[*k] = (*v).into();
    }
    yaml_serde::to_string(&doc).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_type_internal_works_in_a_region_whose_public_endpoints_are_closed() {
    use capo_openstack::Credentials;
    use capo_openstack::request::{Request, Service};
    let mut h = Harness::new("internal").await;
    let region = h.cloud.internal_only_region().await;
    let clouds = h.cloud.clouds_yaml();
    // `endpoint_type` wins over `interface` (as upstream reads it): internal endpoints only.
    let internal = in_region(
        &clouds,
        &region,
        &[("interface", "public"), ("endpoint_type", "internal")],
    );
    let public = in_region(&clouds, &region, &[("endpoint_type", "publicURL")]);
    let session = |yaml: &str| {
        let creds = Credentials::from_clouds_yaml(yaml, common::cloud::CLOUD, None, None).unwrap();
        h.sessions.session(&creds).unwrap()
    };
    // The region's public endpoints really are closed.
    let networks = Request::get(Service::Network, "networks", "test_networks");
    let err = session(&public)
        .list::<serde_json::Value>(&networks, "networks")
        .await
        .expect_err("a public endpoint of the internal-only region answered");
    println!("public endpoint: {err}");
    // Every service capo calls answers on its internal endpoint.
    let s = session(&internal);
    for (service, path, key) in [
        (Service::Network, "networks", "networks"),
        (Service::Compute, "flavors", "flavors"),
        (Service::Image, "images", "images"),
        (Service::BlockStorage, "volumes", "volumes"),
        (
            Service::LoadBalancer,
            "lbaas/loadbalancers",
            "loadbalancers",
        ),
    ] {
        let req = Request::get(service, path, "test_list");
        s.list::<serde_json::Value>(&req, key)
            .await
            .unwrap_or_else(|e| panic!("{path} on the internal endpoint: {e}"));
    }
    // A cluster whose identity names that region and endpoint_type: made and deleted.
    h.apply(
        &serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "internal-config"},
            "stringData": {"clouds.yaml": internal},
        })
        .to_string(),
    )
    .await;
    h.start();
    h.create_cluster(
        "int",
        "identityRef:\n  name: internal-config\n  cloudName: openstack\nmanagedSubnets:\n- cidr: 10.8.0.0/24\nmanagedSecurityGroups: {}\n",
    )
    .await;
    let o = h.wait_ready("int").await;
    assert!(o.status.unwrap().network.is_some(), "network made");
    assert!(h.inventory().await.contains_key("networks"));
    h.delete_cluster("int").await;
    h.wait_gone("int", 60).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
    h.cloud.remove_internal_only_region(&region).await;
}

//! The real cloud-provider-openstack (controller manager, Cinder CSI controller and the CSI
//! sidecars, `capo_testkit::cloud_provider`) against the real OpenStack services: what a workload
//! cluster of a capo cluster creates in OpenStack, named as CPO names it, so that later tests can
//! check what capo does with it at cluster deletion.
//!
//! Runs only with `CAPO_CLOUD=real` and `CAPO_CLOUD_PROVIDER_DIR` (the directory
//! `hack/cloud-provider.sh build` prints); otherwise it says why it skipped and passes:
//!
//! ```text
//! export CAPO_TEST_ENV_DIR="$(hack/test-env.sh | tail -n 1)"
//! export CAPO_CLOUD_PROVIDER_DIR="$(hack/cloud-provider.sh build | tail -n 1)"
//! export CAPO_REAL_CLOUDS_YAML="$(hack/openstack-env.sh start | tail -n 1)" CAPO_CLOUD=real
//! cargo test -p capo-controller --test cloud_provider_openstack -- --nocapture
//! ```
//!
//! It prints `TIMING` lines: the Service's ingress IP, the PVC bound, the VolumeSnapshot ready,
//! CPO's own deletion of all three.
//!
//! The management cluster is the test binary's shared API server, where capo's controllers make
//! the OpenStackCluster (network, subnet, router, security groups) and one worker machine (a Nova
//! server). The workload cluster is a second API server of its own: its one Node stands for that
//! server (providerID, InternalIP), and CPO's programs run against it with a cloud.conf holding
//! the test project's member credentials.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/machines.rs"]
mod machines;

use std::time::{Duration, Instant};

use capo_openstack::request::{Request, Service as OsService};
use capo_testkit::cloud_provider::{
    self as cpo, CLUSTER_PROPERTY, CloudProvider, CloudProviderDir, names,
};
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind};
use serde_json::Value;

const CLUSTER: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.8.0.0/24
managedSecurityGroups: {}
";

/// The workload namespace of the Service, PVC and VolumeSnapshot.
const WNS: &str = "default";
const SVC: &str = "web";
const PVC: &str = "data";
const SNAP: &str = "data-snap";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balancer_service_volume_and_snapshot_are_made_by_the_real_cloud_provider() {
    if !common::cloud::is_real() {
        eprintln!(
            "SKIPPED: runs cloud-provider-openstack against the real services only (CAPO_CLOUD=real)"
        );
        return;
    }
    let Some(build) = CloudProviderDir::from_env().expect("cloud-provider build") else {
        eprintln!(
            "SKIPPED: {} is not set (export it from `hack/cloud-provider.sh build | tail -n 1`)",
            cpo::BUILD_DIR_VAR
        );
        return;
    };
    let t0 = Instant::now();

    // Management side: the cluster's network and one worker server, made by capo.
    let (h, _controllers) = machines::ready_cluster("cpo", CLUSTER).await;
    machines::create_machine(&h, "c1", "w1", false, machines::MACHINE).await;
    let m = machines::wait_machine_ready(&h, "w1").await;
    let provider_id = m.spec.provider_id.clone().expect("providerID");
    let server_id = provider_id
        .strip_prefix("openstack:///")
        .expect("openstack:/// providerID");
    let ip = m
        .status
        .as_ref()
        .and_then(|s| s.addresses.iter().find(|a| a.r#type == "InternalIP"))
        .map(|a| a.address.clone())
        .expect("InternalIP");
    let st = serde_json::to_value(h.cluster_status("c1").await).unwrap();
    let subnet = st["network"]["subnets"][0]["id"]
        .as_str()
        .expect("subnet")
        .to_owned();
    let external = st["externalNetwork"]["id"]
        .as_str()
        .expect("external network")
        .to_owned();
    eprintln!(
        "cluster and worker ready in {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    // Workload side: its own API server, the Node, CPO.
    let workload = capo_testkit::TestEnv::start()
        .await
        .expect("workload API server");
    let wc = workload.client();
    let cluster = capo_api::names::cloud_provider_cluster_name(&h.ns, "c1");
    let conf = cpo::cloud_conf_from_clouds_yaml(
        &h.cloud.clouds_yaml(),
        common::cloud::CLOUD,
        &format!(
            "[LoadBalancer]\nfloating-network-id = {external}\nsubnet-id = {subnet}\nmanage-security-groups = true\n"
        ),
    )
    .expect("cloud.conf");
    let mut provider = CloudProvider::start(&workload, &build, &conf, &cluster)
        .await
        .expect("cloud-provider-openstack");
    let _logs = provider.logs_on_failure();
    cpo::create_node(&wc, "w1", server_id, &ip)
        .await
        .expect("node");

    // A LoadBalancer Service: Octavia LB, floating IP, security group.
    let started = Instant::now();
    cpo::create_load_balancer_service(&wc, WNS, SVC, 80)
        .await
        .expect("service");
    let ingress = cpo::wait_service_ingress(&wc, WNS, SVC, Duration::from_secs(300))
        .await
        .expect("ingress");
    eprintln!(
        "TIMING LoadBalancer Service ingress {ingress} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let uid = Api::<Service>::namespaced(wc.clone(), WNS)
        .get(SVC)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let items = h.items().await;
    let lb = find(
        &items["loadbalancers"],
        "name",
        &names::load_balancer(&cluster, WNS, SVC),
    );
    assert_eq!(
        lb["description"],
        names::load_balancer_description(&cluster, WNS, SVC),
        "{lb}"
    );
    assert_eq!(lb["vip_subnet_id"], subnet.as_str(), "{lb}");
    let fip = find(&items["floatingips"], "floating_ip_address", &ingress);
    assert_eq!(
        fip["description"],
        names::floating_ip_description(&cluster, WNS, SVC),
        "{fip}"
    );
    assert_eq!(fip["floating_network_id"], external.as_str(), "{fip}");
    let sg = find(
        &items["security_groups"],
        "name",
        &names::security_group(&uid, WNS, SVC),
    );
    let members: Vec<&str> = items["members"]
        .iter()
        .filter_map(|m| m["address"].as_str())
        .collect();
    assert!(
        members.contains(&ip.as_str()),
        "node {ip} not a member: {members:?}"
    );
    let worker_port = items["ports"]
        .iter()
        .find(|p| p["device_id"] == server_id)
        .expect("the worker's port");
    let port_sgs = worker_port["security_groups"].as_array().unwrap();
    assert!(
        port_sgs.contains(&sg["id"]),
        "LB security group not on the worker's port: {worker_port}"
    );

    // A PVC: a Cinder volume with the cluster property.
    let started = Instant::now();
    cpo::create_storage_class(&wc, "cinder")
        .await
        .expect("storage class");
    cpo::create_pvc(&wc, WNS, PVC, "cinder", 1)
        .await
        .expect("pvc");
    let volume_id = cpo::wait_pvc_bound(&wc, WNS, PVC, Duration::from_secs(180))
        .await
        .expect("pvc bound");
    eprintln!(
        "TIMING PVC bound to volume {volume_id} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let items = h.items().await;
    let volume = find(&items["volumes"], "id", &volume_id);
    assert_eq!(
        volume["metadata"][CLUSTER_PROPERTY],
        cluster.as_str(),
        "{volume}"
    );
    assert_eq!(
        volume["metadata"]["csi.storage.k8s.io/pvc/name"], PVC,
        "{volume}"
    );

    // A VolumeSnapshot: a Cinder snapshot with the cluster property.
    let started = Instant::now();
    cpo::create_snapshot_class(&wc, "cinder")
        .await
        .expect("snapshot class");
    cpo::create_snapshot(&wc, WNS, SNAP, "cinder", PVC)
        .await
        .expect("snapshot");
    let snapshot_id = cpo::wait_snapshot_ready(&wc, WNS, SNAP, Duration::from_secs(180))
        .await
        .expect("snapshot ready");
    eprintln!(
        "TIMING VolumeSnapshot ready as {snapshot_id} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let snapshots = snapshots(&h).await;
    let snapshot = find(&snapshots, "id", &snapshot_id);
    assert_eq!(
        snapshot["metadata"][CLUSTER_PROPERTY],
        cluster.as_str(),
        "{snapshot}"
    );
    assert_eq!(snapshot["volume_id"], volume_id.as_str(), "{snapshot}");
    provider
        .check_running()
        .expect("every program still running");

    // Teardown through the workload cluster, so the next step (the cluster's deletion by capo)
    // finds only capo's own resources: CPO deletes what it made.
    let started = Instant::now();
    let dp = DeleteParams::default();
    Api::<Service>::namespaced(wc.clone(), WNS)
        .delete(SVC, &dp)
        .await
        .unwrap();
    let snap_res = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("snapshot.storage.k8s.io", "v1", "VolumeSnapshot"),
        "volumesnapshots",
    );
    Api::<DynamicObject>::namespaced_with(wc.clone(), WNS, &snap_res)
        .delete(SNAP, &dp)
        .await
        .unwrap();
    wait_openstack(
        &h,
        300,
        "the snapshot and the LB's resources gone",
        |items, snaps| {
            snaps.is_empty()
                && items["loadbalancers"].is_empty()
                && !items["floatingips"]
                    .iter()
                    .any(|f| f["floating_ip_address"] == ingress.as_str())
                && !items["security_groups"].iter().any(|g| g["id"] == sg["id"])
        },
    )
    .await;
    cpo::delete_pvc(&wc, WNS, PVC).await.expect("delete pvc");
    wait_openstack(&h, 300, "the volume gone", |items, _| {
        items["volumes"].is_empty()
    })
    .await;
    eprintln!(
        "TIMING CPO's resources deleted in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    drop(provider);

    machines::delete_machine(&h, "w1").await;
    machines::wait_machine_gone(&h, "w1", 120).await;
    h.delete_cluster_leaving_nothing("c1").await;
    eprintln!("TIMING whole test {:.1} s", t0.elapsed().as_secs_f64());
}

/// The one item of `items` whose `key` is `value`.
fn find<'a>(items: &'a [Value], key: &str, value: &str) -> &'a Value {
    let found: Vec<&Value> = items.iter().filter(|i| i[key] == value).collect();
    assert_eq!(found.len(), 1, "want one with {key}={value} in {items:#?}");
    found[0]
}

/// The test project's Cinder snapshots (the shared inventory does not list them).
async fn snapshots(h: &common::Harness) -> Vec<Value> {
    h.session()
        .list(
            &Request::get(
                OsService::BlockStorage,
                "snapshots/detail",
                "test_inventory",
            ),
            "snapshots",
        )
        .await
        .expect("list snapshots")
}

/// Polls the project's inventory and snapshots every 2 s until `done`, for at most `secs`.
async fn wait_openstack(
    h: &common::Harness,
    secs: u64,
    what: &str,
    done: impl Fn(&std::collections::BTreeMap<String, Vec<Value>>, &[Value]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let items = h.items().await;
        let snaps = snapshots(h).await;
        if done(&items, &snaps) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {items:#?}\nsnapshots {snaps:#?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

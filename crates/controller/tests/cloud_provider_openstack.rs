//! The real cloud-provider-openstack (controller manager, Cinder CSI controller and the CSI
//! sidecars, `capo_testkit::cloud_provider`) against the real OpenStack services, then the
//! cluster deleted by capo: nothing of it is left in the project, and nothing of a second
//! cluster of the same project is touched (docs/deletion.md).
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
//! It prints `TIMING` lines: each Service's ingress IP, the PVC bound, the VolumeSnapshot ready,
//! the cluster's deletion by capo (from the delete to the sweep's condition True, and to gone).
//!
//! The management cluster is the test binary's shared API server, where capo's controllers make
//! two OpenStackClusters (c1, c2) in one project, each with a worker machine (a Nova server).
//! Each workload cluster is an API server of its own: its one Node stands for that cluster's
//! server (providerID, InternalIP), and CPO's programs run against it with a cloud.conf holding
//! the test project's member credentials and the cluster name `<namespace>-<cluster>`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/machines.rs"]
mod machines;

use std::time::{Duration, Instant};

use capo_controller::cluster::cloud_provider::{
    CLOUD_PROVIDER_RESOURCES_DELETED, VOLUMES_ANNOTATION,
};
use capo_openstack::request::{Request, Service as OsService};
use capo_testkit::cloud_provider::{
    self as cpo, CLUSTER_PROPERTY, CloudProvider, CloudProviderDir, names,
};
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
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
const SVC2: &str = "api";
const PVC: &str = "data";
const SNAP: &str = "data-snap";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_real_cloud_provider_made_goes_with_the_cluster_and_nothing_of_another() {
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

    // Management side: two clusters in one project, each with one worker server, made by capo.
    let (h, _controllers) = machines::ready_cluster("cpo", CLUSTER).await;
    h.create_cluster("c2", &CLUSTER.replace("10.8.0.0/24", "10.9.0.0/24"))
        .await;
    h.wait_ready("c2").await;
    machines::create_machine(&h, "c1", "w1", false, machines::MACHINE).await;
    machines::create_machine(&h, "c2", "w2", false, machines::MACHINE).await;
    let (server_id, ip) = worker(&h, "w1").await;
    let (server2, ip2) = worker(&h, "w2").await;
    eprintln!(
        "clusters and workers ready in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let c1 = Workload::start(&h, &build, "c1", "w1", &server_id, &ip).await;
    let _logs1 = c1.provider.logs_on_failure();
    let (wc, cluster, subnet, external) = (
        c1.env.client(),
        c1.cluster.clone(),
        c1.subnet.clone(),
        c1.external.clone(),
    );
    let server_id = server_id.as_str();

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
    // A second Service of c1, and one of c2 (its CCM, its name).
    cpo::create_load_balancer_service(&wc, WNS, SVC2, 443)
        .await
        .expect("second service");
    let c2 = Workload::start(&h, &build, "c2", "w2", &server2, &ip2).await;
    let _logs2 = c2.provider.logs_on_failure();
    cpo::create_load_balancer_service(&c2.env.client(), WNS, SVC, 80)
        .await
        .expect("c2's service");
    let ingress2 = cpo::wait_service_ingress(&wc, WNS, SVC2, Duration::from_secs(300))
        .await
        .expect("ingress of the second service");
    let ingress_c2 =
        cpo::wait_service_ingress(&c2.env.client(), WNS, SVC, Duration::from_secs(300))
            .await
            .expect("ingress of c2's service");
    eprintln!(
        "TIMING two more LoadBalancer Services ({ingress2}, c2's {ingress_c2}) {:.1} s after the first",
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
    let made = snapshots(&h).await;
    let snapshot = find(&made, "id", &snapshot_id);
    assert_eq!(
        snapshot["metadata"][CLUSTER_PROPERTY],
        cluster.as_str(),
        "{snapshot}"
    );
    assert_eq!(snapshot["volume_id"], volume_id.as_str(), "{snapshot}");
    let mut c1 = c1;
    c1.provider
        .check_running()
        .expect("every program still running");

    // Cluster API deletes the machines (the CCM and CSI plugin go with them), then the cluster;
    // c1 asks for its CSI volumes to go too. Nothing is deleted in the workload cluster first.
    drop(c1);
    let dp = DeleteParams::default();
    h.clusters()
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(
                serde_json::json!({"metadata": {"annotations": {VOLUMES_ANNOTATION: "delete"}}}),
            ),
        )
        .await
        .unwrap();
    let started = Instant::now();
    machines::delete_machine(&h, "w1").await;
    machines::wait_machine_gone(&h, "w1", 300).await;
    eprintln!(
        "TIMING machine w1 deleted by capo in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    h.clusters().delete("c1", &dp).await.unwrap();
    // The sweep's condition turns True just before the network goes; the cluster may be gone
    // before a poll sees it.
    let mut swept_after = None;
    let deadline = Instant::now() + Duration::from_secs(600);
    while let Some(o) = h.clusters().get_opt("c1").await.unwrap() {
        let done = o.status.as_ref().is_some_and(|st| {
            capo_controller::conditions::is_true(&st.conditions, CLOUD_PROVIDER_RESOURCES_DELETED)
        });
        if done && swept_after.is_none() {
            swept_after = Some(started.elapsed().as_secs_f64());
        }
        assert!(
            Instant::now() < deadline,
            "c1 not deleted: {}",
            common::status_json(Some(o))
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "TIMING cluster c1 deleted by capo: what CPO left swept after {} s, the cluster gone in {:.1} s",
        swept_after.map_or("(not seen)".to_owned(), |t| format!("{t:.1}")),
        started.elapsed().as_secs_f64()
    );
    let items = h.items().await;
    let snaps = snapshots(&h).await;
    let prefix = format!("kube_service_{cluster}_");
    assert!(
        !items["loadbalancers"]
            .iter()
            .any(|l| l["name"].as_str().is_some_and(|n| n.starts_with(&prefix))),
        "c1's load balancers left: {:#?}",
        items["loadbalancers"]
    );
    for address in [&ingress, &ingress2] {
        assert!(
            !items["floatingips"]
                .iter()
                .any(|f| f["floating_ip_address"] == address.as_str()),
            "floating IP {address} left"
        );
    }
    assert!(
        !items["security_groups"].iter().any(|g| g["id"] == sg["id"]),
        "c1's Service security group left"
    );
    assert!(
        !items["volumes"]
            .iter()
            .any(|v| v["id"] == volume_id.as_str()),
        "c1's CSI volume left"
    );
    assert!(snaps.is_empty(), "snapshots left: {snaps:#?}");
    // c2's Service is untouched: its load balancer ACTIVE, its floating IP, its security group.
    let c2_lb = find(
        &items["loadbalancers"],
        "name",
        &names::load_balancer(&c2.cluster, WNS, SVC),
    );
    assert_eq!(c2_lb["provisioning_status"], "ACTIVE", "{c2_lb}");
    find(&items["floatingips"], "floating_ip_address", &ingress_c2);
    let c2_groups = items["security_groups"]
        .iter()
        .filter(|g| g["name"].as_str().is_some_and(|n| n.starts_with("lb-sg-")))
        .count();
    assert_eq!(c2_groups, 1, "{:#?}", items["security_groups"]);

    // c2 goes the same way, keeping nothing (it has no volumes): the project is empty.
    drop(c2);
    machines::delete_machine(&h, "w2").await;
    machines::wait_machine_gone(&h, "w2", 300).await;
    h.delete_cluster_leaving_nothing("c2").await;
    assert!(snapshots(&h).await.is_empty());
    eprintln!("TIMING whole test {:.1} s", t0.elapsed().as_secs_f64());
}

/// The Nova server ID and InternalIP of machine `name`, once ready.
async fn worker(h: &common::Harness, name: &str) -> (String, String) {
    let m = machines::wait_machine_ready(h, name).await;
    let provider_id = m.spec.provider_id.clone().expect("providerID");
    let server = provider_id
        .strip_prefix("openstack:///")
        .expect("openstack:/// providerID")
        .to_owned();
    let ip = m
        .status
        .as_ref()
        .and_then(|s| s.addresses.iter().find(|a| a.r#type == "InternalIP"))
        .map(|a| a.address.clone())
        .expect("InternalIP");
    (server, ip)
}

/// A workload cluster: its own API server, one Node for the cluster's worker server, and CPO
/// run with the cluster's name and the project's member credentials.
struct Workload {
    provider: CloudProvider,
    env: capo_testkit::TestEnv,
    cluster: String,
    subnet: String,
    external: String,
}

impl Workload {
    async fn start(
        h: &common::Harness,
        build: &CloudProviderDir,
        name: &str,
        node: &str,
        server: &str,
        ip: &str,
    ) -> Workload {
        let st = serde_json::to_value(h.cluster_status(name).await).unwrap();
        let subnet = st["network"]["subnets"][0]["id"]
            .as_str()
            .expect("subnet")
            .to_owned();
        let external = st["externalNetwork"]["id"]
            .as_str()
            .expect("external network")
            .to_owned();
        let env = capo_testkit::TestEnv::start()
            .await
            .expect("workload API server");
        let cluster = capo_api::names::cloud_provider_cluster_name(&h.ns, name);
        let conf = cpo::cloud_conf_from_clouds_yaml(
            &h.cloud.clouds_yaml(),
            common::cloud::CLOUD,
            &format!(
                "[LoadBalancer]\nfloating-network-id = {external}\nsubnet-id = {subnet}\nmanage-security-groups = true\n"
            ),
        )
        .expect("cloud.conf");
        let provider = CloudProvider::start(&env, build, &conf, &cluster)
            .await
            .expect("cloud-provider-openstack");
        cpo::create_node(&env.client(), node, server, ip)
            .await
            .expect("node");
        Workload {
            provider,
            env,
            cluster,
            subnet,
            external,
        }
    }
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

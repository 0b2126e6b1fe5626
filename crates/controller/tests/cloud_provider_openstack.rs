//! The real cloud-provider-openstack (controller manager, Cinder CSI controller and the CSI
//! sidecars, `capo_testkit::cloud_provider`) against the real OpenStack services, then the
//! cluster deleted by the real Cluster API v1.14 controllers and capo: nothing of it is left in
//! the project, and nothing of a second cluster of the same project is touched
//! (docs/deletion.md).
//!
//! Runs only with `CAPO_CLOUD=real`, `CAPO_CLOUD_PROVIDER_DIR` (the directory
//! `hack/cloud-provider.sh build` prints) and `CAPO_CAPI_BUILD_DIR` (`hack/capi.sh build`);
//! otherwise it says why it skipped and passes. Cluster API's managers bind their webhook
//! servers on every interface, so the test runs in a network namespace with only a loopback,
//! into which `netns_bridge` (hack/lib/netns.sh) carries the real services' ports through unix
//! sockets; it fails when run anywhere else:
//!
//! ```text
//! source hack/lib/netns.sh; say() { echo "$*" >&2; }
//! export CAPO_TEST_ENV_DIR="$(hack/test-env.sh | tail -n 1)"
//! export CAPO_CLOUD_PROVIDER_DIR="$(hack/cloud-provider.sh build | tail -n 1)"
//! export CAPO_CAPI_BUILD_DIR="$(hack/capi.sh build | tail -n 1)"
//! export CAPO_REAL_CLOUDS_YAML="$(hack/openstack-env.sh start | tail -n 1)" CAPO_CLOUD=real
//! cargo test -p capo-controller --test cloud_provider_openstack --no-run
//! netns_bridge "$(mktemp -d)" "${NETNS_OPENSTACK_PORTS[@]}"
//! (netns_exec cargo test --offline -p capo-controller --test cloud_provider_openstack -- --nocapture)
//! netns_bridge_stop
//! ```
//!
//! It prints `TIMING` lines: each Service's ingress IP, the PVC bound, the VolumeSnapshot ready,
//! the worker Machine's deletion by Cluster API, each Cluster's deletion by Cluster API (from the
//! delete to the OpenStackCluster gone, and to the Cluster gone).
//!
//! The management cluster is the test binary's shared API server, started with Cluster API's
//! CRDs, where Cluster API's core, kubeadm bootstrap and control-plane managers run (watching
//! the test's namespace) beside capo's controllers. Two Clusters (c1, c2) of one project, with
//! no control-plane provider: c1 has a stand-alone control-plane Machine and a worker Machine,
//! c2 a worker Machine, each a Nova server made by capo; bootstrap data is a plain Secret
//! (`spec.bootstrap.dataSecretName`). Each workload cluster is an API server of its own, which
//! Cluster API reaches through the Secret `<cluster>-kubeconfig`: a Node stands for each worker
//! server (providerID, InternalIP), and CPO's programs run against it with a cloud.conf holding
//! the test project's member credentials and the cluster name `<namespace>-<cluster>`. c1's
//! control-plane Machine has no Node: it is there because Cluster API drains and deletes a
//! worker's Node only while the cluster keeps a control-plane Machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/machines.rs"]
mod machines;

use std::time::{Duration, Instant};

use capo_controller::cluster::cloud_provider::VOLUMES_ANNOTATION;
use capo_openstack::request::{Request, Service as OsService};
use capo_testkit::capi::{self, CapiDir, ClusterApi, ClusterApiOptions};
use capo_testkit::cloud_provider::{
    self as cpo, CLUSTER_PROPERTY, CloudProvider, CloudProviderDir, names,
};
use capo_testkit::{TestEnv, TestEnvOptions};
use k8s_openapi::api::core::v1::{Node, Secret, Service};
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
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
    let Some(capi_dir) = CapiDir::from_env().expect("Cluster API build") else {
        eprintln!(
            "SKIPPED: {} is not set (export it from `hack/capi.sh build | tail -n 1`)",
            capi::BUILD_DIR_VAR
        );
        return;
    };
    assert!(
        capi::loopback_only_network(),
        "Cluster API's managers listen on every interface: run this test in a network namespace \
         with only a loopback (hack/lib/netns.sh: netns_bridge, then netns_exec)"
    );
    let t0 = Instant::now();

    // Management side: Cluster API's managers on the test binary's API server, watching the
    // test's namespace, and capo's three controllers. The workload clusters' API servers start
    // meanwhile, and come before the clusters, so that each kubeconfig Secret is there when
    // Cluster API first connects (as soon as the infrastructure is provisioned; a failed
    // connection is retried only 30 s later).
    let management = async {
        let env =
            capo_testkit::shared_env_with(TestEnvOptions::default().cluster_api(capi_dir.clone()))
                .await
                .expect("management API server with Cluster API's CRDs");
        let h = common::Harness::new("cpo").await;
        let capi = ClusterApi::start(
            env,
            &capi_dir,
            ClusterApiOptions::default().namespace(h.ns.clone()),
        )
        .await
        .expect("Cluster API managers");
        eprintln!(
            "TIMING Cluster API {} managers ready {:.1} s into the test",
            capi.version(),
            t0.elapsed().as_secs_f64()
        );
        (h, capi)
    };
    let ((h, capi), e1, e2) = tokio::join!(management, TestEnv::start(), TestEnv::start());
    let _capi_logs = capi.logs_on_failure();
    let (e1, e2) = (e1.expect("c1's API server"), e2.expect("c2's API server"));
    kubeconfig_secret(&h, "c1", &e1).await;
    kubeconfig_secret(&h, "c2", &e2).await;
    let _controllers = machines::start(&h);
    h.create_cluster("c1", CLUSTER).await;
    h.create_cluster("c2", &CLUSTER.replace("10.8.0.0/24", "10.9.0.0/24"))
        .await;
    h.wait_ready("c1").await;
    h.wait_ready("c2").await;
    machines::create_machine(&h, "c1", "cp1", true, machines::MACHINE).await;
    machines::create_machine(&h, "c1", "w1", false, machines::MACHINE).await;
    machines::create_machine(&h, "c2", "w2", false, machines::MACHINE).await;
    let (server_id, ip) = worker(&h, "w1").await;
    let (server2, ip2) = worker(&h, "w2").await;
    machines::wait_machine_ready(&h, "cp1").await;
    eprintln!(
        "clusters and machines ready in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let c1 = Workload::start(&h, &build, e1, "c1", "w1", &server_id, &ip).await;
    let _logs1 = c1.provider.logs_on_failure();
    wait_node_ref(&h, "w1", "w1").await;
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
    let c2 = Workload::start(&h, &build, e2, "c2", "w2", &server2, &ip2).await;
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

    // Cluster API deletes the worker Machine while the CCM and CSI plugin keep running (on the
    // control plane): it drains the Node through c1's API server, has capo delete the
    // OpenStackMachine, then deletes the Node. Nothing is deleted in the workload cluster first.
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
    let dp = DeleteParams::default();
    let started = Instant::now();
    capi_api(&h, "Machine").delete("w1", &dp).await.unwrap();
    let mut drained = false;
    let deadline = Instant::now() + Duration::from_secs(300);
    while let Some(m) = capi_api(&h, "Machine").get_opt("w1").await.unwrap() {
        let m = serde_json::to_value(m).unwrap();
        drained |= !m["status"]["deletion"]["nodeDrainStartTime"].is_null();
        assert!(Instant::now() < deadline, "Machine w1 not deleted: {m:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "TIMING machine w1 deleted by Cluster API (drained, OpenStackMachine deleted by capo, Node deleted) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(drained, "Cluster API did not drain Node w1");
    machines::wait_machine_gone(&h, "w1", 10).await;
    let node = Api::<Node>::all(c1.env.client())
        .get_opt("w1")
        .await
        .unwrap();
    assert!(node.is_none(), "Node w1 left in c1: {node:?}");
    c1.provider
        .check_running()
        .expect("every program still running");

    // Then the Cluster: Cluster API deletes the control-plane Machine, then the OpenStackCluster;
    // c1 asks for its CSI volumes to go too. c1's API server, CCM and CSI plugin, which would go
    // with its control plane, are stopped first (Cluster API no longer reaches the workload
    // cluster once the Cluster is being deleted).
    drop(c1);
    let started = Instant::now();
    capi_api(&h, "Cluster").delete("c1", &dp).await.unwrap();
    let mut osc_gone_after = None;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let o = h.clusters().get_opt("c1").await.unwrap();
        if o.is_none() && osc_gone_after.is_none() {
            osc_gone_after = Some(started.elapsed().as_secs_f64());
        }
        if capi_api(&h, "Cluster")
            .get_opt("c1")
            .await
            .unwrap()
            .is_none()
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Cluster c1 not deleted: {}",
            common::status_json(o)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let gone_after = started.elapsed().as_secs_f64();
    let osc_gone_after = osc_gone_after.map_or("(not seen)".to_owned(), |t| format!("{t:.1} s"));
    // capo's sweep of what CPO left says what it deleted in events on the OpenStackCluster.
    let sweeps = h
        .event_messages("c1", "CloudProviderResourcesDeleted")
        .await;
    eprintln!(
        "TIMING cluster c1 deleted by Cluster API: the OpenStackCluster gone after {osc_gone_after} ({} sweep passes deleted what CPO left), the Cluster gone in {gone_after:.1} s",
        sweeps.len()
    );
    assert!(!sweeps.is_empty(), "no CloudProviderResourcesDeleted event");
    assert!(h.clusters().get_opt("c1").await.unwrap().is_none());
    machines::wait_machine_gone(&h, "cp1", 10).await;
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

    // c2 goes the same way, its worker Machine with it, keeping nothing (it has no volumes):
    // the project is empty.
    drop(c2);
    let started = Instant::now();
    capi_api(&h, "Cluster").delete("c2", &dp).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    while let Some(o) = capi_api(&h, "Cluster").get_opt("c2").await.unwrap() {
        assert!(
            Instant::now() < deadline,
            "Cluster c2 not deleted: {:#}",
            serde_json::to_value(o).unwrap()["status"]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "TIMING cluster c2 deleted by Cluster API (its worker Machine, then the OpenStackCluster) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        capi_api(&h, "Machine")
            .get_opt("w2")
            .await
            .unwrap()
            .is_none()
    );
    machines::wait_machine_gone(&h, "w2", 10).await;
    let inv = h.inventory().await;
    assert!(inv.is_empty(), "left behind: {inv:?}");
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
    env: TestEnv,
    cluster: String,
    subnet: String,
    external: String,
}

impl Workload {
    async fn start(
        h: &common::Harness,
        build: &CloudProviderDir,
        env: TestEnv,
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

/// Cluster API v1beta2 `kind` in the test namespace.
fn capi_api(h: &common::Harness, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", kind);
    Api::namespaced_with(h.client.clone(), &h.ns, &ApiResource::from_gvk(&gvk))
}

/// The Secret `<cluster>-kubeconfig` through which Cluster API reaches the workload cluster
/// (key `value`: the API server's kubeconfig, its CA and an administrator token inline).
async fn kubeconfig_secret(h: &common::Harness, cluster: &str, env: &TestEnv) {
    let kubeconfig = std::fs::read_to_string(env.kubeconfig_path()).expect("kubeconfig");
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": format!("{cluster}-kubeconfig"),
            "namespace": h.ns,
            "labels": {"cluster.x-k8s.io/cluster-name": cluster},
        },
        "type": "cluster.x-k8s.io/secret",
        "stringData": {"value": kubeconfig},
    }))
    .unwrap();
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .create(&Default::default(), &secret)
        .await
        .expect("create the kubeconfig Secret");
}

/// Wait until Cluster API has set `status.nodeRef` of Machine `name` to Node `node`: it found,
/// through the workload cluster's API server, the Node with the Machine's providerID. Cluster
/// API watches a workload cluster's Nodes only once its control plane is initialized (a
/// control-plane Machine with a Node), which never happens here, so it looks for the Node when
/// it next reconciles the Machine; an annotation on the Machine brings that reconcile now
/// rather than at the next resync.
async fn wait_node_ref(h: &common::Harness, name: &str, node: &str) {
    let started = Instant::now();
    let poke = serde_json::json!({"metadata": {"annotations": {"capo-test/node": node}}});
    capi_api(h, "Machine")
        .patch(name, &PatchParams::default(), &Patch::Merge(&poke))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let m = serde_json::to_value(capi_api(h, "Machine").get(name).await.unwrap()).unwrap();
        if m["status"]["nodeRef"]["name"] == node {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Machine {name} has no nodeRef: {:#}",
            m["status"]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "Machine {name} refers to Node {node} {:.1} s after the annotation",
        started.elapsed().as_secs_f64()
    );
}

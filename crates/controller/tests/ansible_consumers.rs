//! The real consumer of capo's BA/ACP extension: the Ansible bootstrap provider of the Goend
//! Cluster API fork (`../shared/partners`, built by `hack/partners.sh build`), run as a process
//! against the test kube-apiserver while capo's controllers run on capo-sim. The test plays the
//! parts nobody runs here: Cluster API core (it copies controlPlaneEndpoint, bootstrap data
//! secret names, infrastructure readiness, addresses and node info between objects), the
//! AnsibleControlPlane (it marks the initial control-plane machine) and the machines' SSH daemons
//! (`capo-test-sshd` on the bastion's floating IP, port 22, which capo-sim allocates from a
//! loopback external network, 127.77.0.0/24, so nothing listens beyond loopback).
//!
//! It then reads what the consumer rendered (ConfigMaps `<cluster>-vars-conf` / `group_vars.yml`
//! and `<cluster>-hosts-conf` / `hosts.yml`, and the bootstrap data Secret of a control-plane
//! machine) and prints every variable with its value. `consumer_renders_what_capo_provides`
//! checks what capo provides today; `consumer_renders_fields_added_by_issue_14` checks the fields
//! another change adds (and prints which are missing). Both share one run (a `OnceCell`).
//!
//! Without `$CAPO_PARTNERS_BUILD_DIR` both print why and pass (outside CI; in CI they fail).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/machines.rs"]
mod machines;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capo_sim::SimConfig;
use capo_sim::seed::{Seed, SeedExtNet};
use capo_testkit::partners::{PartnerProcess, PartnersDir};
use common::Harness;
use common::cloud::TestCloud;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use machines::*;
use serde_json::{Value, json};

const CLUSTER: &str = "a1";
/// capo-sim's external network: loopback, so the bastion's floating IP is reachable here.
const EXTERNAL_CIDR: &str = "127.77.0.0/24";
const K8S_VERSION: &str = "v1.34.3";

/// The cluster: a bastion and the Ansible extensions.
fn spec() -> String {
    let ext = common::keepalived_extensions("root");
    common::open_spec("10.8.0.0/24", &format!("{}{ext}", common::BASTION))
}

/// The user's memory reservation (the peer provider's `spec.extensions.memory.reserved`).
const RESERVED: i64 = -2048;

/// A control-plane machine naming its keepalived interface, with [`RESERVED`].
fn cp_machine() -> String {
    let ext = "extensions:\n  networkInterfaces:\n    keepalived: ens3\n";
    common::machine_spec(
        "m1.medium",
        &format!("{ext}  memory:\n    reserved: \"{RESERVED}\"\n"),
    )
}

/// A worker with [`RESERVED`].
fn worker() -> String {
    common::machine_spec(
        "m1.small",
        &format!("extensions:\n  memory:\n    reserved: \"{RESERVED}\"\n"),
    )
}

/// Variable → the field of capo's objects the consumer reads it from (its `vars_renderer.go`).
const SOURCES: &[(&str, &str)] = &[
    (
        "kube_network_plugin",
        "OSC spec.extensions.networking.kubeNetworkPlugin",
    ),
    (
        "cilium_openstack_project_id",
        "OSC status.extensions.networking.cilium.projectID",
    ),
    (
        "cilium_openstack_default_subnet_id",
        "OSC status.extensions.networking.cilium.defaultSubnetID",
    ),
    (
        "cilium_openstack_security_group_ids",
        "OSC status.extensions.networking.cilium.securityGroupIDs[0]",
    ),
    (
        "vpc_cni_webhook_enable",
        "OSC status.extensions.networking.cilium.webhookEnable",
    ),
    (
        "master_virtual_vip",
        "OSC status.extensions.loadBalancers.controlPlane.vip",
    ),
    (
        "ingress_virtual_vip",
        "OSC status.extensions.loadBalancers.ingress.vip",
    ),
    (
        "harbor_addr",
        "OSC status.extensions.loadBalancers.ingress.vip",
    ),
    ("cloud_master_vip", "OSC status.extensions.openStack.mgmt"),
    (
        "openstack_auth_domain",
        "OSC status.extensions.endpoints.keystone",
    ),
    (
        "openstack_cinder_domain",
        "OSC status.extensions.endpoints.cinder",
    ),
    (
        "openstack_nova_domain",
        "OSC status.extensions.endpoints.nova",
    ),
    (
        "openstack_neutron_domain",
        "OSC status.extensions.endpoints.neutron",
    ),
    (
        "openstack_project_name",
        "OSC status.extensions.openStack.project",
    ),
    (
        "openstack_project_domain_name",
        "OSC status.extensions.openStack.projectDomain",
    ),
    (
        "openstack_region_name",
        "OSC status.extensions.openStack.region",
    ),
    ("ntp_server", "OSC status.extensions.platform.ntp.server"),
    (
        "vip_mgmt",
        "Cluster spec.controlPlaneEndpoint.host (overrides OSC status.extensions.platform.management.vip)",
    ),
    (
        "flannel_interface",
        "OSC spec.extensions.networkInterfaces.flannel",
    ),
    (
        "keepalived_interface",
        "host OSM spec.extensions.networkInterfaces.keepalived",
    ),
    (
        "node_resources",
        "OSM spec.extensions.memory.reserved of the host and anchor machines",
    ),
    (
        "cloud_provider_openstack_lb_floating_network_id",
        "OSC status.externalNetwork.id",
    ),
    (
        "cloud_provider_openstack_lb_subnet_id",
        "OSC status.network.subnets[0].id",
    ),
    (
        "supplementary_addresses_in_ssl_keys",
        "OSC status.bastion.floatingIP + Cluster spec.controlPlaneEndpoint.host",
    ),
    (
        "kube_service_addresses",
        "Cluster spec.clusterNetwork.services.cidrBlocks[0]",
    ),
    (
        "kube_pods_subnet",
        "Cluster spec.clusterNetwork.pods.cidrBlocks[0]",
    ),
    ("kube_version", "Machine spec.version"),
    ("hyperkube_image_tag", "Machine spec.version"),
];

/// What one run of the consumer produced, and capo's objects it was rendered from.
struct Rendered {
    group_vars: yaml_serde::Value,
    hosts: yaml_serde::Value,
    osc: Value,
    cluster: Value,
    /// Machine name → its InternalIP as capo reported it.
    addresses: BTreeMap<String, String>,
    sshd_log: String,
    /// Did capo itself write `<cluster>-ssh-auth` (the Secret the consumer logs in with)?
    ssh_auth_from_capo: bool,
    /// Paths of the files in the bootstrap data the consumer rendered for control plane cp-2.
    cp2_files: Vec<String>,
}

static RUN: tokio::sync::OnceCell<Result<Option<Rendered>, String>> =
    tokio::sync::OnceCell::const_new();

/// The shared run; `None` when the partners are not built (printed). A failed run fails both
/// tests with its message, without running again.
async fn rendered() -> Option<&'static Rendered> {
    let run = RUN
        .get_or_init(|| async {
            tokio::spawn(run()).await.map_err(|e| {
                let payload = e.into_panic();
                payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default()
            })
        })
        .await;
    match run {
        Ok(r) => r.as_ref(),
        Err(msg) => panic!("the shared run of the consumer failed:\n{msg}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_renders_what_capo_provides() {
    let Some(r) = rendered().await else { return };
    print_table(r);
    let v = &r.group_vars;
    let ext = &r.osc["status"]["extensions"];
    let want = |var: &str, expected: &Value| {
        let got = v.get(var).and_then(|x| x.as_str()).map(str::to_owned);
        assert_eq!(
            got.as_deref(),
            expected.as_str(),
            "{var}: consumer rendered {got:?}, capo has {expected}"
        );
    };
    want(
        "master_virtual_vip",
        &ext["loadBalancers"]["controlPlane"]["vip"],
    );
    want(
        "ingress_virtual_vip",
        &ext["loadBalancers"]["ingress"]["vip"],
    );
    want("openstack_project_name", &json!("capo"));
    want("openstack_region_name", &json!("RegionOne"));
    want("openstack_project_name", &ext["openStack"]["project"]);
    want("openstack_region_name", &ext["openStack"]["region"]);
    want("cloud_master_vip", &ext["openStack"]["mgmt"]);
    want("ntp_server", &json!("ntp.example.org"));
    want("kube_network_plugin", &json!("cilium"));
    let cilium = &ext["networking"]["cilium"];
    want("cilium_openstack_project_id", &cilium["projectID"]);
    want(
        "cilium_openstack_default_subnet_id",
        &cilium["defaultSubnetID"],
    );
    want(
        "cilium_openstack_security_group_ids",
        &cilium["securityGroupIDs"][0],
    );
    // Cilium's pod network, not the nodes' subnet and groups.
    let pods = &ext["networking"]["podNetwork"];
    want("cilium_openstack_default_subnet_id", &pods["subnetID"]);
    want(
        "cilium_openstack_security_group_ids",
        &pods["securityGroupID"],
    );
    assert_eq!(v["vpc_cni_webhook_enable"].as_bool(), Some(true));
    want(
        "vip_mgmt",
        &r.cluster["spec"]["controlPlaneEndpoint"]["host"],
    );
    want(
        "cloud_provider_openstack_lb_floating_network_id",
        &r.osc["status"]["externalNetwork"]["id"],
    );
    want(
        "cloud_provider_openstack_lb_subnet_id",
        &r.osc["status"]["network"]["subnets"][0]["id"],
    );
    want("kube_service_addresses", &json!("10.96.0.0/12"));
    want("kube_pods_subnet", &json!("10.244.0.0/16"));
    want("kube_version", &json!(K8S_VERSION));
    let bastion_fip = r.osc["status"]["bastion"]["floatingIP"].as_str().unwrap();
    let sans: Vec<&str> = v["supplementary_addresses_in_ssl_keys"]
        .as_sequence()
        .map(|s| s.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    assert!(sans.contains(&bastion_fip), "{sans:?}");

    // hosts.yml: the bastion (capo's floating IP) and every machine at capo's address.
    let hosts = &r.hosts["all"]["hosts"];
    assert_eq!(hosts["bastion"]["ansible_host"].as_str(), Some(bastion_fip));
    assert_eq!(hosts["bastion"]["ansible_user"].as_str(), Some("root"));
    for (name, ip) in &r.addresses {
        let h = &hosts[name.as_str()];
        assert_eq!(h["ansible_host"].as_str(), Some(ip.as_str()), "{name}");
        assert_eq!(h["ip"].as_str(), Some(ip.as_str()), "{name}");
        assert_eq!(h["access_ip"].as_str(), Some(ip.as_str()), "{name}");
    }
    let children = &r.hosts["all"]["children"];
    let members = |g: &str| -> Vec<String> {
        let mut m: Vec<String> = children[g]["hosts"]
            .as_mapping()
            .map(|m| {
                m.keys()
                    .filter_map(|k| k.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        m.sort();
        m
    };
    assert_eq!(members("kube-master"), ["cp-0", "cp-1"]);
    assert_eq!(members("etcd"), ["cp-0", "cp-1"]);
    assert_eq!(members("kube-node"), ["w-0"]);

    // The consumer's SSH probe went root@bastion, then through it to the worker.
    eprintln!("capo-test-sshd:\n{}", r.sshd_log);
    let w0 = &r.addresses["w-0"];
    assert!(
        r.sshd_log.contains("login user=root") && r.sshd_log.contains("via=bastion"),
        "{}",
        r.sshd_log
    );
    assert!(
        r.sshd_log.contains(&format!("tunnel to={w0}:22")),
        "{}",
        r.sshd_log
    );
}

/// The consumer inputs issue 14 adds to capo (status endpoints, application credential, the
/// machine memory reservation, the consumer's SSH Secret). Prints every missing one, then fails
/// if any is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_renders_fields_added_by_issue_14() {
    let Some(r) = rendered().await else { return };
    eprintln!("files in cp-2's bootstrap data: {:?}", r.cp2_files);
    let v = &r.group_vars;
    let ext = &r.osc["status"]["extensions"];
    let mut missing = Vec::new();
    for (var, service) in [
        ("openstack_auth_domain", "keystone"),
        ("openstack_nova_domain", "nova"),
        ("openstack_neutron_domain", "neutron"),
        ("openstack_cinder_domain", "cinder"),
    ] {
        let got = v.get(var).and_then(|x| x.as_str());
        // capo knows the endpoint host today under openStack.<service>; the consumer reads
        // endpoints.<service>.
        let capo = ext["endpoints"][service]
            .as_str()
            .or(ext["openStack"][service].as_str());
        if got.is_none() || got != capo {
            missing.push(format!(
                "{var}: rendered {got:?}, want {capo:?} (consumer reads OSC status.extensions.endpoints.{service})"
            ));
        }
    }
    if v.get("harbor_addr").and_then(|x| x.as_str())
        != ext["loadBalancers"]["ingress"]["vip"].as_str()
    {
        missing.push(
            "harbor_addr: not the ingress VIP (consumer reads OSC status.extensions.loadBalancers.ingress.vip)"
                .into(),
        );
    }
    // node_resources: one entry per machine the consumer renders for (host and anchors), from
    // each OpenStackMachine's spec.extensions.memory.reserved.
    for name in ["w-0", "cp-0"] {
        let entry = v
            .get("node_resources")
            .and_then(|n| n.get(name))
            .and_then(|e| e.get("memory"))
            .and_then(yaml_serde::Value::as_i64);
        if entry != Some(RESERVED) {
            missing.push(format!(
                "node_resources.{name}.memory: rendered {entry:?}, want {RESERVED} (consumer reads OpenStackMachine {name} spec.extensions.memory.reserved)"
            ));
        }
    }
    if v.get("keepalived_interface").is_some() {
        missing.push("keepalived_interface rendered for a worker that has none".into());
    }
    for file in ["/opt/auth-opts", "/opt/cloud_config"] {
        if !r.cp2_files.iter().any(|f| f == file) {
            missing.push(format!(
                "{file}: not in the control plane's bootstrap data (consumer reads OSC status.extensions.openStack.appCredential.ref → Secret with clouds.yaml)"
            ));
        }
    }
    if !r.ssh_auth_from_capo {
        missing.push(format!(
            "Secret {CLUSTER}-ssh-auth: not written by capo (the consumer logs in as root with its ssh-privatekey; capo writes {CLUSTER}-ssh, which the test copied)"
        ));
    }
    if !missing.is_empty() {
        eprintln!("MISSING ({}):", missing.len());
        for m in &missing {
            eprintln!("  - {m}");
        }
    }
    assert!(
        missing.is_empty(),
        "{} consumer inputs missing:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

fn print_table(r: &Rendered) {
    let sources: BTreeMap<&str, &str> = SOURCES.iter().copied().collect();
    let mut rows: Vec<(String, String, String)> = Vec::new();
    if let Some(map) = r.group_vars.as_mapping() {
        for (k, val) in map {
            let k = k.as_str().unwrap_or_default().to_owned();
            let shown = match val {
                yaml_serde::Value::String(s) => s.clone(),
                other => yaml_serde::to_string(other)
                    .unwrap_or_default()
                    .trim()
                    .replace('\n', " "),
            };
            let src = sources
                .get(k.as_str())
                .copied()
                .unwrap_or("consumer default / Config override")
                .to_owned();
            rows.push((k, shown, src));
        }
    }
    rows.sort();
    eprintln!("\ngroup_vars.yml rendered by the Ansible bootstrap provider (host w-0):");
    eprintln!("{:<50} {:<42} source", "variable", "value");
    for (k, val, src) in &rows {
        eprintln!("{k:<50} {val:<42} {src}");
    }
    for (var, src) in SOURCES {
        if r.group_vars.get(*var).is_none() {
            eprintln!("{var:<50} {:<42} {src}", "(NOT RENDERED)");
        }
    }
    eprintln!(
        "\nhosts.yml:\n{}",
        yaml_serde::to_string(&r.hosts).unwrap_or_default()
    );
}

/// The scenario behind both tests.
async fn run() -> Option<Rendered> {
    let partners = match PartnersDir::from_env().expect("partners build") {
        Some(p) => p,
        None => {
            let why = format!(
                "{} is not set: run `export {}=$(hack/partners.sh build | tail -1)`",
                capo_testkit::partners::BUILD_DIR_VAR,
                capo_testkit::partners::BUILD_DIR_VAR
            );
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{why}");
            eprintln!("SKIPPED the Ansible consumer tests: {why}");
            return None;
        }
    };
    assert!(
        !common::cloud::is_real(),
        "the consumer test needs capo-sim (a loopback external network)"
    );
    let env = capo_testkit::shared_env().await.expect("test environment");
    let _logs = env.logs_on_failure();
    let mut h = Harness::new("abp").await;
    use_loopback_external_network(&mut h).await;
    partners
        .install_crds(&h.client)
        .await
        .expect("partner CRDs");
    let _controllers = start(&h);

    // Cluster API's Cluster, with what its controllers would copy from the OpenStackCluster.
    h.create_cluster(CLUSTER, &spec()).await;
    let osc = h
        .wait_cluster(
            CLUSTER,
            90,
            "cluster, bastion and extensions ready",
            common::bastion_and_extensions_ready,
        )
        .await;
    let endpoint = osc.spec.control_plane_endpoint.clone().unwrap();
    h.apply_capi_cluster(
        CLUSTER,
        &format!(
            "  paused: false
  clusterNetwork:
    pods:
      cidrBlocks: [10.244.0.0/16]
    services:
      cidrBlocks: [10.96.0.0/12]
  controlPlaneEndpoint:
    host: {}
    port: {}
",
            endpoint.host.clone().unwrap(),
            endpoint.port.unwrap()
        ),
    )
    .await;
    patch_status(
        &h,
        &capi("Cluster"),
        CLUSTER,
        json!({"status": {
            "initialization": {"infrastructureProvisioned": true, "controlPlaneInitialized": true},
            "conditions": [condition("ControlPlaneInitialized")],
        }}),
    )
    .await;

    // The control plane, up and initialized (as the AnsibleControlPlane would leave it).
    for name in ["cp-0", "cp-1"] {
        create_machine(&h, CLUSTER, name, true, &cp_machine()).await;
    }
    let mut addresses = BTreeMap::new();
    for name in ["cp-0", "cp-1"] {
        let ip = machine_up(&h, name, true).await;
        addresses.insert(name.to_owned(), ip);
    }
    annotate(
        &h,
        "cp-0",
        json!({
            "controlplane.cluster.x-k8s.io/ansible-initial-machine": "true",
            "controlplane.cluster.x-k8s.io/ansible-etcd-anchor": "true",
        }),
    )
    .await;

    // The consumer logs in with `<cluster>-ssh-auth`; capo generates `<cluster>-ssh`.
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), &h.ns);
    let ssh_auth_from_capo = secrets
        .get_opt(&format!("{CLUSTER}-ssh-auth"))
        .await
        .unwrap()
        .is_some();
    let capo_ssh = secrets.get(&format!("{CLUSTER}-ssh")).await.unwrap();
    let capo_data = capo_ssh.data.clone().unwrap();
    if !ssh_auth_from_capo {
        let auth: Secret = serde_json::from_value(json!({
            "metadata": {"name": format!("{CLUSTER}-ssh-auth"),
                         "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
            "type": "kubernetes.io/ssh-auth",
            "data": {"ssh-privatekey": capo_data["ssh-privatekey"]},
        }))
        .unwrap();
        secrets.create(&Default::default(), &auth).await.unwrap();
    }
    // The cluster CA the consumer writes into bootstrap data (content irrelevant here).
    let ca: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{CLUSTER}-ca")},
        "stringData": {"tls.crt": "test CA certificate", "tls.key": "test CA key"},
    }))
    .unwrap();
    secrets.create(&Default::default(), &ca).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let consumer = PartnerProcess::spawn(
        "ansible-bootstrap",
        &partners.bin("ansible-bootstrap"),
        &[
            format!("--kubeconfig={}", env.kubeconfig_path().display()),
            "--diagnostics-address=0".into(),
            "--health-addr=0".into(),
            "--leader-elect=false".into(),
            // The test environment has no MachinePool CRD (nor does capo use one); with the
            // gate on, the provider's MachinePool watch never syncs and it reconciles nothing.
            "--feature-gates=MachinePool=false".into(),
        ],
        dir.path().join("ansible-bootstrap.log"),
    )
    .expect("start the bootstrap provider");

    // A worker bootstrapped by the consumer: it renders the bootstrap data, capo builds the
    // server from it.
    apply_ansible_machine(&h, "w-0", false, None).await;
    apply_ansible_config(&h, "w-0", &["kube-node"]).await;
    let data_secret = wait_data_secret(&h, &consumer, "w-0").await;
    apply_ansible_machine(&h, "w-0", false, Some(&data_secret)).await;
    wait_machine_ready(&h, "w-0").await;
    let w0_ip = osm_address(&h, "w-0").await;
    addresses.insert("w-0".into(), w0_ip);

    // The bastion's and machines' SSH daemons, on the bastion's (loopback) floating IP.
    let bastion_fip = osc.status.as_ref().unwrap().bastion.as_ref().unwrap();
    let bastion_fip = bastion_fip.floating_ip.clone().unwrap();
    let keys = dir.path().join("authorized_keys");
    std::fs::write(&keys, &capo_data["ssh-publickey"].0).unwrap();
    let targets: Vec<&str> = addresses.values().map(String::as_str).collect();
    let sshd = PartnerProcess::spawn(
        "capo-test-sshd",
        &partners.bin("capo-test-sshd"),
        &[
            format!("-listen={bastion_fip}:22"),
            format!("-authorized-keys={}", keys.display()),
            "-users=root".into(),
            format!("-targets={}", targets.join(",")),
        ],
        dir.path().join("sshd.log"),
    )
    .expect("start capo-test-sshd");
    wait_log(&sshd, "listening", 10).await;

    machine_up(&h, "w-0", false).await;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), &h.ns);
    let (group_vars, hosts) = wait_rendered(&cms, &consumer, &sshd).await;

    // A control-plane scale-up: the consumer renders its bootstrap data (the OpenStack
    // application-credential files go to control-plane machines only).
    apply_ansible_machine(&h, "cp-2", true, None).await;
    apply_ansible_config(&h, "cp-2", &["kube-master", "etcd"]).await;
    let cp2_secret = wait_data_secret(&h, &consumer, "cp-2").await;
    let cp2_data = secrets.get(&cp2_secret).await.unwrap().data.unwrap();
    let cp2_files = cloud_init_paths(&String::from_utf8_lossy(&cp2_data["value"].0));

    let osc = h.get_dynamic(
        "infrastructure.cluster.x-k8s.io/v1beta1",
        "OpenStackCluster",
        CLUSTER,
    );
    let cluster = h.get_dynamic("cluster.x-k8s.io/v1beta2", "Cluster", CLUSTER);
    let rendered = Rendered {
        group_vars: yaml_serde::from_str(&group_vars).expect("group_vars.yml is YAML"),
        hosts: yaml_serde::from_str(&hosts).expect("hosts.yml is YAML"),
        osc: osc.await,
        cluster: cluster.await,
        addresses,
        sshd_log: sshd.output(),
        ssh_auth_from_capo,
        cp2_files,
    };
    drop(consumer);
    drop(sshd);
    Some(rendered)
}

/// Replace the harness's simulator by one whose external network is loopback (the bastion's
/// floating IP must be reachable from the consumer's SSH probe), and point `cloud-config` at it.
async fn use_loopback_external_network(h: &mut Harness) {
    let seed = Seed {
        external_networks: vec![SeedExtNet {
            name: "public".into(),
            cidr: EXTERNAL_CIDR.into(),
            mtu: 1500,
        }],
        ..Seed::default()
    };
    h.cloud = TestCloud::start(
        "abp",
        SimConfig {
            delays: common::fast_delays(),
            seed,
            ..Default::default()
        },
    )
    .await;
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .patch(
            "cloud-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"clouds.yaml": h.cloud.clouds_yaml()}})),
        )
        .await
        .unwrap();
}

fn capi(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", kind))
}

fn condition(type_: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": "Test", "message": "",
           "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

async fn patch_status(h: &Harness, ar: &ApiResource, name: &str, patch: Value) {
    Api::<DynamicObject>::namespaced_with(h.client.clone(), &h.ns, ar)
        .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap_or_else(|e| panic!("status of {name}: {e}"));
}

async fn annotate(h: &Harness, machine: &str, annotations: Value) {
    Api::<DynamicObject>::namespaced_with(h.client.clone(), &h.ns, &capi("Machine"))
        .patch(
            machine,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": annotations}})),
        )
        .await
        .unwrap();
}

/// The first InternalIP capo reported for OpenStackMachine `name`.
async fn osm_address(h: &Harness, name: &str) -> String {
    let m = machines(h).get(name).await.unwrap();
    let v = serde_json::to_value(&m.status).unwrap();
    v["addresses"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"))
        .and_then(|x| x["address"].as_str())
        .unwrap_or_else(|| panic!("{name} has no InternalIP: {v}"))
        .to_owned()
}

/// Wait until capo reports OpenStackMachine `name` ready, then do what Cluster API's machine
/// controller does (infrastructure provisioned, addresses) and, when `node`, what a kubelet
/// joining does (node info). Returns the InternalIP.
async fn machine_up(h: &Harness, name: &str, node: bool) -> String {
    let m = wait_machine_ready(h, name).await;
    let v = serde_json::to_value(&m.status).unwrap();
    let ip = osm_address(h, name).await;
    let mut status = json!({
        "initialization": {"infrastructureProvisioned": true},
        "addresses": v["addresses"],
    });
    if node {
        status["nodeRef"] = json!({"name": name});
        status["nodeInfo"] = json!({
            "machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.8",
            "osImage": "Ubuntu 24.04", "containerRuntimeVersion": "containerd://2.1",
            "kubeletVersion": K8S_VERSION, "kubeProxyVersion": K8S_VERSION,
            "operatingSystem": "linux", "architecture": "amd64",
        });
    }
    patch_status(h, &capi("Machine"), name, json!({"status": status})).await;
    ip
}

/// A Machine bootstrapped by AnsibleConfig `name` (with `dataSecretName` once the consumer made
/// it), and its OpenStackMachine. cp-2 gets no OpenStackMachine: only its bootstrap data is
/// looked at.
async fn apply_ansible_machine(h: &Harness, name: &str, cp: bool, data: Option<&str>) {
    let data = data.map_or(String::new(), |d| format!("    dataSecretName: {d}\n"));
    let spec = format!(
        "  version: {K8S_VERSION}
  bootstrap:
    configRef:
      apiGroup: bootstrap.cluster.x-k8s.io
      kind: AnsibleConfig
      name: {name}
{data}"
    );
    apply_capi_machine(h, CLUSTER, name, cp, &spec).await;
    if !cp {
        apply_osm(h, CLUSTER, name, false, &worker()).await;
    }
}

/// AnsibleConfig `name` owned by Machine `name` (as the MachineSet or control plane makes it),
/// with Kubean targets as the peer provider's cluster template writes them.
async fn apply_ansible_config(h: &Harness, name: &str, roles: &[&str]) {
    let uid = h.uid("Machine", name).await;
    h.apply(&format!(
        "apiVersion: bootstrap.cluster.x-k8s.io/v1alpha1
kind: AnsibleConfig
metadata:
  name: {name}
  labels:
    cluster.x-k8s.io/cluster-name: {CLUSTER}
  ownerReferences:
  - apiVersion: cluster.x-k8s.io/v1beta2
    kind: Machine
    name: {name}
    uid: {uid}
    controller: true
spec:
  role: {roles:?}
  varsConfigRefs:
    business:
      name: {CLUSTER}-vars-business
    fixed:
      name: {CLUSTER}-vars-fixed
  clusterTemplate:
    apiVersion: kubean.io/v1alpha1
    kind: Cluster
  clusterOperationTemplate:
    apiVersion: kubean.io/v1alpha1
    kind: ClusterOperation
    spec:
      image: kubean-job:test
"
    ))
    .await;
}

fn ac_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "bootstrap.cluster.x-k8s.io",
        "v1alpha1",
        "AnsibleConfig",
    ))
}

/// Wait until AnsibleConfig `name` names its bootstrap data Secret.
async fn wait_data_secret(h: &Harness, consumer: &PartnerProcess, name: &str) -> String {
    let api: Api<DynamicObject> = Api::namespaced_with(h.client.clone(), &h.ns, &ac_resource());
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let ac = api.get(name).await.unwrap();
        if let Some(s) = ac.data["status"]["dataSecretName"].as_str() {
            return s.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "AnsibleConfig {name} got no bootstrap data: {}\n--- {} ---\n{}",
            ac.data["status"],
            consumer.log.display(),
            consumer.tail(40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn wait_log(p: &PartnerProcess, what: &str, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !p.output().contains(what) {
        assert!(
            Instant::now() < deadline,
            "{} never logged {what:?} (it needs to bind port 22 on a loopback address: root or \
             CAP_NET_BIND_SERVICE):\n{}",
            p.name,
            p.tail(20)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Wait for the consumer's `group_vars.yml` and `hosts.yml` ConfigMaps.
async fn wait_rendered(
    cms: &Api<ConfigMap>,
    consumer: &PartnerProcess,
    sshd: &PartnerProcess,
) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let vars = cms.get_opt(&format!("{CLUSTER}-vars-conf")).await.unwrap();
        let hosts = cms.get_opt(&format!("{CLUSTER}-hosts-conf")).await.unwrap();
        let key = |cm: &Option<ConfigMap>, k: &str| {
            cm.as_ref()
                .and_then(|c| c.data.as_ref())
                .and_then(|d| d.get(k).cloned())
        };
        if let (Some(v), Some(h)) = (key(&vars, "group_vars.yml"), key(&hosts, "hosts.yml")) {
            return (v, h);
        }
        assert!(
            Instant::now() < deadline,
            "the consumer rendered nothing\n--- {} ---\n{}\n--- {} ---\n{}",
            consumer.log.display(),
            consumer.tail(40),
            sshd.log.display(),
            sshd.tail(20)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `write_files[].path` of a cloud-config document.
fn cloud_init_paths(text: &str) -> Vec<String> {
    let doc: yaml_serde::Value = yaml_serde::from_str(text).unwrap_or_default();
    doc["write_files"]
        .as_sequence()
        .map(|files| {
            files
                .iter()
                .filter_map(|f| f["path"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

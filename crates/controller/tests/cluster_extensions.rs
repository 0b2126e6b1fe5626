//! The BA/ACP extension end to end against a real kube-apiserver and capo-sim: a keepalived
//! control-plane VIP and ingress VIP (no Octavia), an SSH key pair, `status.extensions`, and
//! the `<cluster>-ansible` Secret whose inventory real Ansible parses; scaling the control
//! plane; deleting everything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/machines.rs"]
mod machines;

use std::path::{Path, PathBuf};

use capo_api::v1beta1::OpenStackCluster;
use common::Harness;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use machines::*;
use serde_json::Value;

/// The cluster: a bastion and the Ansible extensions.
fn spec() -> String {
    let ext = common::keepalived_extensions("ubuntu");
    common::open_spec("10.4.0.0/24", &format!("{}{ext}", common::BASTION))
}

/// A control-plane machine naming its keepalived interface.
fn cp_machine() -> String {
    common::machine_spec(
        "m1.medium",
        "extensions:\n  networkInterfaces:\n    keepalived: ens3\n",
    )
}

/// `bin/<tool>` of the project virtualenv; absent outside CI → None (printed), in CI → panic.
fn venv_tool(tool: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("CAPO_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv"));
    let path = venv.join("bin").join(tool);
    if path.is_file() {
        return Some(path);
    }
    let why = format!("{} not found: run hack/python-env.sh", path.display());
    assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{why}");
    eprintln!("SKIPPED ansible-inventory check: {why}");
    None
}

async fn secret(h: &Harness, name: &str) -> Option<Secret> {
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .get_opt(name)
        .await
        .unwrap()
}

fn key(s: &Secret, k: &str) -> String {
    String::from_utf8(s.data.as_ref().unwrap()[k].0.clone()).unwrap()
}

/// Hosts per group as `ansible-inventory --list` reports them.
fn ansible_groups(inventory: &str) -> Option<Value> {
    let tool = venv_tool("ansible-inventory")?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("inventory.yaml"), inventory).unwrap();
    let out = std::process::Command::new(tool)
        .args(["-i", "inventory.yaml", "--list"])
        .current_dir(dir.path())
        .env("ANSIBLE_LOCAL_TEMP", dir.path())
        .env("ANSIBLE_HOME", dir.path())
        .env("ANSIBLE_INVENTORY_UNPARSED_FAILED", "true")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn hosts(groups: &Value, group: &str) -> Vec<String> {
    let mut v: Vec<String> = groups[group]["hosts"]
        .as_array()
        .map(|a| a.iter().map(|h| h.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn ext_status(o: &OpenStackCluster) -> capo_api::extensions::OpenStackClusterStatusExtensions {
    o.status.clone().unwrap().extensions.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalived_cluster_with_machines_vars_inventory_scale_and_delete() {
    let h = Harness::new("ext").await;
    let _c = start(&h);
    h.create_cluster("e1", &spec()).await;
    let o = h
        .wait_cluster(
            "e1",
            90,
            "cluster and bastion ready",
            common::bastion_and_extensions_ready,
        )
        .await;
    let ext = ext_status(&o);
    let cp = ext.load_balancers.clone().unwrap().control_plane.unwrap();
    let ep = o.spec.control_plane_endpoint.clone().unwrap();
    assert_eq!(ep.host, cp.floating_ip, "endpoint is the VIP's floating IP");
    assert!(
        o.status
            .as_ref()
            .unwrap()
            .api_server_load_balancer
            .is_none(),
        "no Octavia"
    );
    let fip = h.items().await["floatingips"]
        .iter()
        .find(|f| Some(f["floating_ip_address"].as_str().unwrap()) == cp.floating_ip.as_deref())
        .cloned()
        .unwrap();
    assert_eq!(
        fip["port_id"].as_str(),
        cp.port_id.as_deref(),
        "FIP on the VIP port"
    );
    let networking = ext.networking.clone().unwrap();
    let cilium = networking.cilium.unwrap();
    assert_eq!(cilium.project_id, Some(h.project()));
    assert_eq!(cilium.webhook_enable, Some(true));
    let pods = networking.pod_network.expect("pod network recorded");
    let pod_subnet = check_pod_network(&h, &o, &pods).await;
    assert_eq!(
        cilium.default_subnet_id.as_deref(),
        Some(pod_subnet.as_str())
    );
    let st = o.status.as_ref().unwrap();
    let managed = [&st.control_plane_security_group, &st.worker_security_group]
        .map(|g| g.as_ref().unwrap().id.clone());
    assert_eq!(
        cilium.security_group_ids,
        [
            pods.security_group_id.clone(),
            managed[0].clone(),
            managed[1].clone()
        ],
        "the pods' group first (the consumer keeps only the first), then control plane, workers"
    );
    let os = ext.open_stack.clone().unwrap();
    assert_eq!(os.hosts.keystone.as_deref(), Some("127.0.0.1"));
    assert_eq!(os.hosts.nova.as_deref(), Some("127.0.0.1"));
    assert_eq!(os.project.as_deref(), Some(h.cloud.project_name().as_str()));
    assert_eq!(os.region.as_deref(), Some("RegionOne"));
    let platform = ext.platform.clone().unwrap();
    assert_eq!(
        platform.ntp.unwrap().server.as_deref(),
        Some("ntp.example.org")
    );
    assert!(platform.management.unwrap().vip.is_some());
    let ingress = ext.load_balancers.clone().unwrap().ingress.unwrap();
    assert!(ingress.vip.is_some() && ingress.floating_ip.is_some());
    let ssh = secret(&h, "e1-ssh").await.expect("ssh secret");
    assert_eq!(ssh.type_.as_deref(), Some("kubernetes.io/ssh-auth"));
    assert!(key(&ssh, "ssh-privatekey").contains("OPENSSH PRIVATE KEY"));
    let keypair = ext.ssh.clone().unwrap().key_pair_name.unwrap();
    let s = h.session();
    let kp = capo_openstack::compute::get_keypair(&s, &keypair)
        .await
        .unwrap();
    assert_eq!(kp.public_key.trim(), key(&ssh, "ssh-publickey").trim());

    for (name, is_cp) in [
        ("cp-0", true),
        ("cp-1", true),
        ("cp-2", true),
        ("w-0", false),
        ("w-1", false),
    ] {
        let spec = if is_cp { cp_machine() } else { MACHINE.into() };
        create_machine(&h, "e1", name, is_cp, &spec).await;
    }
    for name in ["cp-0", "cp-1", "cp-2", "w-0", "w-1"] {
        wait_machine_ready(&h, name).await;
    }
    // Keepalived: every control-plane port accepts the control-plane VIP, workers the
    // ingress VIP; machines naming no key pair get the generated one.
    let cp0 = servers(&h).get("cp-0").await.unwrap();
    let pairs: Vec<String> = cp0.spec.ports[0]
        .opts
        .allowed_address_pairs
        .iter()
        .map(|p| p.ip_address.clone())
        .collect();
    assert_eq!(pairs, vec![cp.vip.clone().unwrap()]);
    assert_eq!(cp0.spec.ssh_key_name, keypair);
    let w0 = servers(&h).get("w-0").await.unwrap();
    assert_eq!(
        w0.spec.ports[0].opts.allowed_address_pairs[0].ip_address,
        ingress.vip.clone().unwrap()
    );
    let port = &items(&h, "ports")
        .await
        .into_iter()
        .find(|p| p["device_id"].as_str() == cp0.status.as_ref().unwrap().instance_id.as_deref())
        .unwrap();
    assert_eq!(
        port["allowed_address_pairs"][0]["ip_address"].as_str(),
        cp.vip.as_deref(),
        "in Neutron too"
    );
    let reserved = machines(&h)
        .get("cp-0")
        .await
        .unwrap()
        .status
        .unwrap()
        .extensions
        .unwrap();
    assert!(
        reserved
            .node_resources
            .unwrap()
            .reserved
            .unwrap()
            .kube_memory_reserved
            .is_some()
    );
    let inventory = wait_inventory(&h, 5).await;
    let vars = key(&secret(&h, "e1-ansible").await.unwrap(), "vars.yaml");
    let vars: yaml_serde::Value = yaml_serde::from_str(&vars).unwrap();
    for v in [
        "kube_network_plugin",
        "cilium_openstack_project_id",
        "cilium_openstack_default_subnet_id",
        "cilium_openstack_security_group_ids",
        "vpc_cni_webhook_enable",
        "master_virtual_vip",
        "ingress_virtual_vip",
        "harbor_addr",
        "cloud_master_vip",
        "openstack_auth_domain",
        "openstack_project_name",
        "openstack_region_name",
        "ntp_server",
        "vip_mgmt",
        "node_resources",
    ] {
        assert!(vars.get(v).is_some(), "vars.yaml lacks {v}: {vars:?}");
    }
    assert_eq!(vars["master_virtual_vip"].as_str(), cp.vip.as_deref());
    if let Some(groups) = ansible_groups(&inventory) {
        assert_eq!(
            hosts(&groups, "kube_control_plane"),
            ["cp-0", "cp-1", "cp-2"]
        );
        assert_eq!(hosts(&groups, "etcd"), ["cp-0", "cp-1", "cp-2"]);
        assert_eq!(hosts(&groups, "kube_node"), ["w-0", "w-1"]);
        let cp0 = &groups["_meta"]["hostvars"]["cp-0"];
        assert_eq!(cp0["keepalived_interface"], "ens3");
        assert!(cp0["ansible_host"].as_str().unwrap().starts_with("10.4.0."));
    }
    // Steady: rendering again gives the same bytes (the Secret is not rewritten).
    let rv = secret(&h, "e1-ansible")
        .await
        .unwrap()
        .metadata
        .resource_version;
    let osc = h.clusters().get("e1").await.unwrap();
    let ctx =
        capo_controller::Context::new(h.client.clone(), h.sessions.clone(), h.options.clone());
    capo_controller::cluster::reconcile(
        std::sync::Arc::new(capo_controller::stored::Stored(osc)),
        capo_controller::lifecycle::Reconciler::new(ctx),
    )
    .await
    .unwrap();
    assert_eq!(
        secret(&h, "e1-ansible")
            .await
            .unwrap()
            .metadata
            .resource_version,
        rv
    );

    // Scale the control plane down and up: inventory follows, the floating IP stays put.
    delete_machine(&h, "cp-2").await;
    wait_machine_gone(&h, "cp-2", 60).await;
    let inventory = wait_inventory(&h, 4).await;
    assert!(!inventory.contains("cp-2"));
    create_machine(&h, "e1", "cp-3", true, &cp_machine()).await;
    wait_machine_ready(&h, "cp-3").await;
    let inventory = wait_inventory(&h, 5).await;
    assert!(inventory.contains("cp-3"));
    let cp3 = servers(&h).get("cp-3").await.unwrap();
    assert_eq!(
        cp3.spec.ports[0].opts.allowed_address_pairs[0].ip_address,
        cp.vip.clone().unwrap(),
        "the new control plane accepts the VIP too"
    );
    let o = h.clusters().get("e1").await.unwrap();
    let cp_after = ext_status(&o)
        .load_balancers
        .unwrap()
        .control_plane
        .unwrap();
    assert_eq!(cp_after.floating_ip, cp.floating_ip);
    assert_eq!(cp_after.port_id, cp.port_id);
    assert_eq!(o.spec.control_plane_endpoint, Some(ep));

    for name in ["cp-0", "cp-1", "cp-3", "w-0", "w-1"] {
        delete_machine(&h, name).await;
    }
    for name in ["cp-0", "cp-1", "cp-3", "w-0", "w-1"] {
        wait_machine_gone(&h, name, 60).await;
    }
    // A port Cilium made for a pod and never released (its node is gone): the pod network's
    // deletion removes it rather than failing on it.
    let leftover = serde_json::json!({"network_id": pods.network_id, "name": "cilium-pod"});
    capo_openstack::network::create::<Value>(&s, capo_openstack::network::PORT, &leftover)
        .await
        .unwrap();
    h.delete_cluster("e1").await;
    h.wait_gone("e1", 90).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
    assert!(secret(&h, "e1-ansible").await.is_none());
    assert!(secret(&h, "e1-ssh").await.is_none());
    assert!(
        capo_openstack::compute::get_keypair(&s, &keypair)
            .await
            .is_err()
    );
}

/// The Cilium pod network in Neutron: the network and subnet of the peer's names with the
/// Cluster's pod CIDR and no DHCP, on the cluster router, and the allow-all group. Returns the
/// subnet's ID.
async fn check_pod_network(
    h: &Harness,
    o: &OpenStackCluster,
    pods: &capo_api::extensions::PodNetworkStatus,
) -> String {
    let subnet = items(h, "subnets")
        .await
        .into_iter()
        .find(|sn| sn["id"].as_str() == Some(pods.subnet_id.as_str()))
        .expect("pod subnet in Neutron");
    assert_eq!(subnet["cidr"].as_str(), Some(common::POD_CIDR));
    assert_eq!(pods.cidr, common::POD_CIDR);
    assert_eq!(subnet["enable_dhcp"].as_bool(), Some(false));
    assert_eq!(
        subnet["network_id"].as_str(),
        Some(pods.network_id.as_str())
    );
    let name = format!("{}-{}-vpc-cni", h.ns, o.metadata.name.as_deref().unwrap());
    let network = items(h, "networks")
        .await
        .into_iter()
        .find(|n| n["id"].as_str() == Some(pods.network_id.as_str()))
        .expect("pod network in Neutron");
    assert_eq!(network["name"].as_str(), Some(name.as_str()));
    assert_eq!(
        subnet["name"].as_str(),
        Some(format!("{name}-subnet").as_str())
    );
    let router = o
        .status
        .as_ref()
        .unwrap()
        .router
        .as_ref()
        .unwrap()
        .id
        .clone();
    let on_router = items(h, "ports").await.into_iter().any(|p| {
        p["device_id"].as_str() == Some(router.as_str())
            && p["fixed_ips"]
                .as_array()
                .is_some_and(|ips| ips.iter().any(|ip| ip["subnet_id"] == subnet["id"]))
    });
    assert!(
        on_router,
        "the pod subnet has an interface on the cluster router"
    );
    let group: Value = capo_openstack::network::get(
        &h.session(),
        capo_openstack::network::SECURITY_GROUP,
        &pods.security_group_id,
    )
    .await
    .expect("pods' security group in Neutron");
    assert_eq!(
        group["name"].as_str(),
        Some(format!("{name}-secgroup").as_str())
    );
    let rules = group["security_group_rules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (direction, ethertype) in [
        ("ingress", "IPv4"),
        ("ingress", "IPv6"),
        ("egress", "IPv4"),
        ("egress", "IPv6"),
    ] {
        let open = rules.iter().any(|r| {
            r["direction"] == direction
                && r["ethertype"] == ethertype
                && r["protocol"].is_null()
                && r["remote_group_id"].is_null()
                && r["remote_ip_prefix"]
                    .as_str()
                    .is_none_or(|p| p == "0.0.0.0/0" || p == "::/0")
        });
        assert!(open, "{direction} {ethertype} allowed: {rules:?}");
    }
    pods.subnet_id.clone()
}

/// Wait until the Ansible inventory lists `n` machines; returns it.
async fn wait_inventory(h: &Harness, n: usize) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(s) = secret(h, "e1-ansible").await {
            let inv = key(&s, "inventory.yaml");
            let doc: yaml_serde::Value = yaml_serde::from_str(&inv).unwrap();
            let hosts = doc["all"]["hosts"].as_mapping().map_or(0, |m| {
                m.keys().filter(|k| k.as_str() != Some("bastion")).count()
            });
            if hosts == n {
                return inv;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "inventory never had {n} hosts:\n{inv}"
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

const OCTAVIA: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.3.0.0/24
managedSecurityGroups: {}
apiServerLoadBalancer:
  enabled: true
extensions:
  networking:
    kubeNetworkPlugin: calico
  loadBalancers:
    controlPlane:
      mode: Octavia
    ingress:
      mode: Octavia
      ports: [80, 443, 8443]
      floatingIP: true
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn octavia_mode_control_plane_and_ingress_load_balancers() {
    let mut h = Harness::new("octavia").await;
    h.start();
    h.create_cluster("o1", OCTAVIA).await;
    let o = h
        .wait_cluster("o1", 90, "ingress VIP", |o| {
            let lbs = o
                .status
                .as_ref()
                .and_then(|s| s.extensions.as_ref())
                .and_then(|e| e.load_balancers.as_ref());
            lbs.and_then(|l| l.ingress.as_ref())
                .is_some_and(|i| i.floating_ip.is_some())
                && lbs.is_some_and(|l| l.control_plane.is_some())
                && o.status.as_ref().is_some_and(|s| {
                    s.ready
                        && capo_controller::conditions::get(&s.conditions, "ExtensionsReady")
                            .is_some()
                })
        })
        .await;
    let st = o.status.clone().unwrap();
    let lbs = st.extensions.clone().unwrap().load_balancers.unwrap();
    let cp = lbs.control_plane.unwrap();
    let api = st.api_server_load_balancer.clone().unwrap();
    assert_eq!(
        cp.vip.as_deref(),
        Some(api.internal_ip.as_str()),
        "master_virtual_vip is the LB VIP"
    );
    assert_eq!(cp.load_balancer_id.as_deref(), Some(api.id.as_str()));
    let ingress = lbs.ingress.unwrap();
    assert_ne!(ingress.load_balancer_id, cp.load_balancer_id);
    let inv = h.inventory().await;
    assert_eq!(inv.get("loadbalancers"), Some(&2), "{inv:?}");
    assert_eq!(
        inv.get("listeners"),
        Some(&4),
        "1 API + 3 ingress listeners: {inv:?}"
    );
    assert_eq!(inv.get("floatingips"), Some(&2), "{inv:?}");
    // No bastion: ExtensionsReady names what Ansible will not get (vip_mgmt); NTP falls back
    // to the documented default.
    let ready = capo_controller::conditions::get(&st.conditions, "ExtensionsReady").unwrap();
    assert_eq!(ready.status, "False");
    let why = ready.message.clone().unwrap_or_default();
    assert!(
        why.contains("vip_mgmt") && !why.contains("ntp_server"),
        "{why}"
    );
    let vars = key(&secret(&h, "o1-ansible").await.unwrap(), "vars.yaml");
    assert!(
        vars.contains(&format!("ingress_virtual_vip: {}", ingress.vip.unwrap())),
        "{vars}"
    );
    h.delete_cluster("o1").await;
    h.wait_gone("o1", 90).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
    assert!(secret(&h, "o1-ansible").await.is_none());
}

/// An ingress load balancer that Octavia puts in ERROR (seen on the real services when the
/// service project ran out of security groups) is reported, not ignored: ExtensionsReady and
/// Ready say so as errors until the operator deletes it; capo then builds a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_load_balancer_in_error_is_reported_until_replaced() {
    let mut h = Harness::new("ingerr").await;
    let mut delays = common::fast_delays();
    delays.lb_provision_ms = 3000;
    h.sim().control().set_delays(delays);
    h.start();
    h.create_cluster("i1", OCTAVIA).await;
    let ingress_id = |o: &OpenStackCluster| {
        o.status
            .as_ref()
            .and_then(|s| s.extensions.as_ref())
            .and_then(|e| e.load_balancers.as_ref())
            .and_then(|l| l.ingress.as_ref())
            .and_then(|i| i.load_balancer_id.clone())
    };
    let o = h
        .wait_cluster("i1", 60, "ingress load balancer recorded", |o| {
            ingress_id(o).is_some()
        })
        .await;
    let id = ingress_id(&o).unwrap();
    let error_body = serde_json::json!({"loadbalancer": {
        "id": id, "name": "k8s-clusterapi-cluster-x-ingress", "provisioning_status": "ERROR",
        "operating_status": "ERROR", "vip_address": "10.3.0.9", "vip_port_id": "",
        "listeners": [], "tags": []}});
    let fault: capo_sim::FaultSpec = serde_json::from_value(serde_json::json!({
        "method": "GET",
        "path_regex": format!("/lbaas/loadbalancers/{id}$"),
        "status": 200,
        "body": error_body,
    }))
    .unwrap();
    h.sim().control().add_faults(vec![fault]).unwrap();
    let reason = |o: &OpenStackCluster, c: &str| {
        o.status
            .as_ref()
            .and_then(|s| capo_controller::conditions::get(&s.conditions, c))
            .and_then(|c| c.reason.clone())
    };
    let o = h
        .wait_cluster("i1", 60, "IngressLoadBalancerFailed", |o| {
            reason(o, "ExtensionsReady").as_deref() == Some("IngressLoadBalancerFailed")
        })
        .await;
    assert_eq!(
        reason(&o, "Ready").as_deref(),
        Some("IngressLoadBalancerFailed")
    );
    let st = o.status.unwrap();
    let c = capo_controller::conditions::get(&st.conditions, "ExtensionsReady").unwrap();
    assert!(
        c.message.as_deref().unwrap_or_default().contains("ERROR"),
        "{c:?}"
    );
    assert!(!st.ready, "not provisioned while the ingress is broken");
    // The operator deletes the broken load balancer; capo builds a new one. The load balancer
    // is deleted while capo still sees it broken (the fault answers its GETs), so capo cannot
    // have found it healthy and converged in between (a converged cluster would notice the
    // deletion only at its next resync).
    // (The simulated load balancer is still PENDING_CREATE underneath: retry its 409.)
    let s = h.session();
    let delete = capo_openstack::Request::delete(
        capo_openstack::Service::LoadBalancer,
        format!("lbaas/loadbalancers/{id}?cascade=true"),
        "test_delete",
    );
    for attempt in 0.. {
        match s.send(&delete).await {
            Ok(_) => break,
            Err(e) if attempt < 50 => {
                eprintln!("delete: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(e) => panic!("delete ingress load balancer: {e}"),
        }
    }
    h.sim().control().clear_faults();
    let o = h
        .wait_cluster("i1", 60, "ready with a new ingress", |o| {
            o.status.as_ref().is_some_and(|s| s.ready) && ingress_id(o).is_some_and(|new| new != id)
        })
        .await;
    assert!(ingress_id(&o).is_some());
    h.delete_cluster_leaving_nothing("i1").await;
}

const APP_CREDENTIAL: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.8.0.0/24
managedSecurityGroups: {}
extensions:
  networking:
    kubeNetworkPlugin: calico
";

/// The cluster's application credential as the Ansible bootstrap provider reads it: the
/// Secret named by `status.extensions.openStack.appCredential.ref` holds `clouds.yaml` with the
/// cloud `<namespace>-<cluster>` and the fields it requires; the credential authenticates and
/// works; status and events carry no secret; deleting the cluster deletes the credential in
/// Keystone and the Secret. With a restricted application credential as the cluster's identity
/// and sharing it turned off (capo-sim only), Keystone refuses a new one: the cluster is Ready
/// anyway and ExtensionsReady names the fields and the fixes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_credential_secret_authenticates_and_goes_with_the_cluster() {
    use capo_openstack::credentials::{AuthMethod, Credentials};
    let mut h = Harness::new("appcred").await;
    h.start();
    h.create_cluster("a1", APP_CREDENTIAL).await;
    let recorded = |o: &OpenStackCluster| {
        o.status
            .as_ref()
            .and_then(|s| s.extensions.as_ref())
            .and_then(|e| e.open_stack.as_ref())
            .and_then(|os| os.app_credential.clone())
    };
    let o = h
        .wait_cluster("a1", 90, "ready with an application credential", |o| {
            o.status.as_ref().is_some_and(|s| s.ready)
                && recorded(o).is_some_and(|r| r.id.is_some())
        })
        .await;
    let rec = recorded(&o).unwrap();
    assert_eq!(rec.secret_ref.as_deref(), Some("a1-app-credential"));
    let id = rec.id.clone().unwrap();
    let s = secret(&h, "a1-app-credential").await.unwrap();
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    let labels = s.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["cluster.x-k8s.io/cluster-name"], "a1");
    assert!(labels.contains_key("clusterctl.cluster.x-k8s.io/move"));
    let owner = &s.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("OpenStackCluster", "a1", Some(true))
    );
    // The fields the bootstrap provider requires, read as it reads them.
    let cloud = format!("{}-a1", h.ns);
    let clouds_yaml = key(&s, "clouds.yaml");
    let doc: yaml_serde::Value = yaml_serde::from_str(&clouds_yaml).unwrap();
    let entry = &doc["clouds"][cloud.as_str()];
    for field in [
        &entry["auth"]["auth_url"],
        &entry["auth"]["application_credential_id"],
        &entry["auth"]["application_credential_secret"],
        &entry["region_name"],
    ] {
        assert!(field.as_str().is_some_and(|v| !v.is_empty()));
    }
    assert_eq!(
        entry["auth"]["application_credential_id"].as_str(),
        Some(id.as_str())
    );
    assert_eq!(entry["auth_type"].as_str(), Some("v3applicationcredential"));
    // The credential works: a token for the test project, and a Neutron call with it.
    let data = s
        .data
        .clone()
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    let creds =
        Credentials::from_secret("test", &h.ns, "a1-app-credential", &data, &cloud, None).unwrap();
    assert_eq!(creds.method, AuthMethod::ApplicationCredential);
    let secret_value = creds
        .entry
        .auth
        .application_credential_secret
        .as_ref()
        .map(|v| v.expose().to_owned())
        .unwrap();
    let node_session = h.sessions.session(&creds).unwrap();
    assert_eq!(node_session.project_id().await.unwrap(), h.project());
    node_session
        .send(&capo_openstack::Request::get(
            capo_openstack::Service::Network,
            "networks",
            "test_network_list",
        ))
        .await
        .unwrap();
    // No secret in status or events.
    let status = serde_json::to_string(&o.status).unwrap();
    assert!(!status.contains(&secret_value), "secret in status");
    let events = Api::<k8s_openapi::api::core::v1::Event>::namespaced(h.client.clone(), &h.ns)
        .list(&Default::default())
        .await
        .unwrap();
    assert!(
        !serde_json::to_string(&events.items)
            .unwrap()
            .contains(&secret_value),
        "secret in an event"
    );
    // Deleting the cluster deletes the credential in Keystone and the Secret.
    h.delete_cluster("a1").await;
    h.wait_gone("a1", 90).await;
    assert!(secret(&h, "a1-app-credential").await.is_none());
    let gone = capo_cloud::identity::get_app_credential(&h.session(), &id)
        .await
        .unwrap();
    assert!(gone.is_none(), "application credential left in Keystone");
    if h.cloud.is_real() {
        return;
    }
    // A restricted application credential as the identity: Keystone refuses (403).
    let identity: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "appcred-identity", "namespace": h.ns},
        "stringData": {"clouds.yaml": h.sim().clouds_yaml()},
    }))
    .unwrap();
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .create(&Default::default(), &identity)
        .await
        .unwrap();
    // Sharing the identity's own credential turned off (the default shares it:
    // ansible_credentials.rs).
    let spec = format!(
        "{}  openStack:\n    shareIdentityCredential: false\n",
        APP_CREDENTIAL
            .replace("name: cloud-config", "name: appcred-identity")
            .replace("cloudName: openstack", "cloudName: capo-sim-appcred")
    );
    h.create_cluster("a2", &spec).await;
    let o = h
        .wait_cluster("a2", 90, "ready, ExtensionsReady explaining the 403", |o| {
            o.status.as_ref().is_some_and(|s| {
                s.ready
                    && capo_controller::conditions::get(&s.conditions, "ExtensionsReady")
                        .is_some_and(|c| c.reason.as_deref() == Some("AppCredentialForbidden"))
            })
        })
        .await;
    let st = o.status.clone().unwrap();
    let c = capo_controller::conditions::get(&st.conditions, "ExtensionsReady").unwrap();
    let why = c.message.clone().unwrap_or_default();
    assert!(
        why.contains("spec.extensions.openStack.appCredential")
            && why.contains("shareIdentityCredential")
            && why.contains("unrestricted"),
        "{why}"
    );
    assert!(recorded(&o).is_none());
    assert!(secret(&h, "a2-app-credential").await.is_none());
    h.delete_cluster_leaving_nothing("a2").await;
}

/// With `kubeNetworkPlugin: cilium`, a Cluster without pod CIDR, then one overlapping the
/// cluster subnet: the cluster is Ready, `ExtensionsReady` says why the pod network waits and
/// nothing is published for Cilium; a usable pod CIDR then brings the pod network.
#[tokio::test]
async fn cilium_pod_network_waits_for_a_usable_pod_cidr() {
    let mut h = Harness::new("podnet").await;
    h.start();
    let spec = common::open_spec(
        "10.4.0.0/24",
        "extensions:\n  networking:\n    kubeNetworkPlugin: cilium\n",
    );
    let cluster_network =
        |pods: &str| format!("  clusterNetwork:\n    serviceDomain: cluster.local\n{pods}");
    h.apply_capi_cluster("p1", &cluster_network("")).await;
    let uid = h.uid("Cluster", "p1").await;
    h.apply_osc("p1", &uid, &spec).await;
    let blocked = |needle: &'static str| {
        move |o: &OpenStackCluster| {
            o.status.as_ref().is_some_and(|s| {
                s.ready
                    && capo_controller::conditions::get(&s.conditions, "ExtensionsReady")
                        .is_some_and(|c| {
                            c.reason.as_deref() == Some("PodNetworkBlocked")
                                && c.message.as_deref().is_some_and(|m| m.contains(needle))
                        })
            })
        }
    };
    let o = h
        .wait_cluster(
            "p1",
            90,
            "Ready, pod network waiting for a pod CIDR",
            blocked("spec.clusterNetwork.pods.cidrBlocks"),
        )
        .await;
    let cilium = ext_status(&o).networking.unwrap().cilium.unwrap();
    assert_eq!(cilium.default_subnet_id, None, "never the nodes' subnet");
    assert!(
        cilium.security_group_ids.is_empty(),
        "never the nodes' groups"
    );
    h.apply_capi_cluster(
        "p1",
        &cluster_network("    pods:\n      cidrBlocks: [10.4.0.0/16]\n"),
    )
    .await;
    h.wait_cluster(
        "p1",
        60,
        "pod CIDR overlapping the cluster subnet reported",
        blocked("overlaps the cluster subnet 10.4.0.0/24"),
    )
    .await;
    assert!(
        !h.items().await["networks"]
            .iter()
            .any(|n| n["name"].as_str().is_some_and(|n| n.ends_with("-vpc-cni"))),
        "nothing made for an unusable CIDR"
    );
    h.apply_capi_cluster(
        "p1",
        &cluster_network(&format!(
            "    pods:\n      cidrBlocks: [{}]\n",
            common::POD_CIDR
        )),
    )
    .await;
    let o = h
        .wait_cluster("p1", 60, "pod network made and published", |o| {
            ext_status(o)
                .networking
                .and_then(|n| n.cilium)
                .is_some_and(|c| c.default_subnet_id.is_some())
        })
        .await;
    let networking = ext_status(&o).networking.unwrap();
    let pods = networking.pod_network.unwrap();
    check_pod_network(&h, &o, &pods).await;
    assert_eq!(
        networking.cilium.unwrap().security_group_ids[0],
        pods.security_group_id
    );
    h.delete_cluster_leaving_nothing("p1").await;
}

/// The owner Cluster's pod CIDR is read by the cluster reconcile besides the OpenStackCluster's
/// own spec: changed under a converged cluster whose pod network exists, it is seen within one
/// sync period (not one verify period) and refused, since a running cluster's pods cannot be
/// renumbered.
#[tokio::test]
async fn a_pod_cidr_changed_under_a_converged_cluster_is_seen_within_a_sync_period() {
    let mut h = Harness::new("podcidr").await;
    let sync = std::time::Duration::from_secs(2);
    h.options.sync_period = sync;
    h.options.verify_period = std::time::Duration::from_secs(3600);
    h.start();
    let spec = common::open_spec(
        "10.4.0.0/24",
        "extensions:\n  networking:\n    kubeNetworkPlugin: cilium\n",
    );
    h.create_cluster("q1", &spec).await;
    h.wait_cluster("q1", 60, "pod network made and published", |o| {
        o.status.as_ref().is_some_and(|s| {
            s.ready
                && s.extensions
                    .as_ref()
                    .and_then(|e| e.networking.as_ref())
                    .and_then(|n| n.cilium.as_ref())
                    .is_some_and(|c| c.default_subnet_id.is_some())
        })
    })
    .await;
    h.apply_capi_cluster(
        "q1",
        "  clusterNetwork:\n    pods:\n      cidrBlocks: [10.245.0.0/16]\n",
    )
    .await;
    h.wait_cluster(
        "q1",
        2 * sync.as_secs(),
        "the changed pod CIDR refused",
        |o| {
            o.status.as_ref().is_some_and(|s| {
                capo_controller::conditions::get(&s.conditions, "ExtensionsReady").is_some_and(
                    |c| {
                        c.message
                            .as_deref()
                            .is_some_and(|m| m.contains("pod CIDR cannot change"))
                    },
                )
            })
        },
    )
    .await;
    h.delete_cluster_leaving_nothing("q1").await;
}

/// `ntp_server` without an override: the bastion, which then serves time to the cluster network
/// (chrony in its user data, UDP 123 from the nodes' groups on its group); without a bastion the
/// documented default.
#[tokio::test]
async fn ntp_server_is_the_override_else_the_bastion_else_the_default() {
    let mut h = Harness::new("ntp").await;
    h.start_all();
    let ext = "extensions:\n  ssh:\n    generateKeyPair: true\n    user: root\n";
    h.create_cluster(
        "n1",
        &common::open_spec("10.4.0.0/24", &format!("{}{ext}", common::BASTION)),
    )
    .await;
    h.create_cluster("n2", &common::open_spec("10.5.0.0/24", ext))
        .await;
    // Polled from the first status write on, before the extensions are in it.
    let ntp = |o: &OpenStackCluster| {
        o.status
            .as_ref()
            .and_then(|s| s.extensions.clone())?
            .platform
            .and_then(|p| p.ntp)
            .and_then(|n| n.server)
    };
    let o = h
        .wait_cluster("n1", 90, "the bastion published as NTP server", |o| {
            let ip = o
                .status
                .as_ref()
                .and_then(|s| s.bastion.as_ref())
                .and_then(|b| b.ip.clone());
            ip.is_some() && ntp(o) == ip
        })
        .await;
    let st = o.status.clone().unwrap();
    let (cp, wk) = (
        st.control_plane_security_group.unwrap().id,
        st.worker_security_group.unwrap().id,
    );
    let bastion_group: Value = capo_openstack::network::get(
        &h.session(),
        capo_openstack::network::SECURITY_GROUP,
        &st.bastion_security_group.unwrap().id,
    )
    .await
    .unwrap();
    let rules = bastion_group["security_group_rules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for from in [&cp, &wk] {
        assert!(
            rules.iter().any(|r| r["direction"] == "ingress"
                && r["protocol"] == "udp"
                && r["port_range_min"] == 123
                && r["port_range_max"] == 123
                && r["remote_group_id"].as_str() == Some(from.as_str())),
            "NTP from {from} on the bastion's group: {rules:?}"
        );
    }
    let user_data = key(&secret(&h, "n1-bastion-userdata").await.unwrap(), "value");
    let doc: yaml_serde::Value = yaml_serde::from_str(&user_data).unwrap();
    assert_eq!(doc["packages"][0].as_str(), Some("chrony"));
    assert!(
        user_data.contains("allow 10.4.0.0/24"),
        "chrony serves the cluster subnet"
    );
    let o = h
        .wait_cluster("n2", 90, "the default NTP server without a bastion", |o| {
            ntp(o).is_some()
        })
        .await;
    assert_eq!(
        ntp(&o).as_deref(),
        Some(capo_api::extensions::DEFAULT_NTP_SERVER)
    );
    let st = o.status.clone().unwrap();
    let unresolved = capo_controller::conditions::get(&st.conditions, "ExtensionsReady")
        .and_then(|c| c.message.clone())
        .unwrap_or_default();
    assert!(!unresolved.contains("ntp_server"), "{unresolved}");
    h.delete_clusters_leaving_nothing(&["n2", "n1"]).await;
}

/// The identity's credentials are an input of the converged cluster (its steady fingerprint):
/// an identity Secret edited so that it still works but reads differently (`endpoint_type:
/// internal` added) is republished into the nodes' application-credential Secret within a sync
/// period, not the verify period (an hour here), whose steady probe alone would succeed and
/// change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_secret_edited_under_a_converged_cluster_is_republished_within_a_sync_period() {
    let mut h = Harness::new("republish").await;
    let sync = std::time::Duration::from_secs(2);
    h.options.identity_read_max_age = std::time::Duration::from_secs(1);
    h.options.sync_period = sync;
    h.options.verify_period = std::time::Duration::from_secs(3600);
    h.start();
    h.create_cluster("p1", APP_CREDENTIAL).await;
    let interface = |s: &Secret, cloud: &str| {
        let doc: yaml_serde::Value = yaml_serde::from_str(&key(s, "clouds.yaml")).unwrap();
        doc["clouds"][cloud]["interface"]
            .as_str()
            .map(str::to_owned)
    };
    let cloud = format!("{}-p1", h.ns);
    h.wait_cluster("p1", 90, "ready with an application credential", |o| {
        o.status.as_ref().is_some_and(|s| s.ready)
    })
    .await;
    let published = secret(&h, "p1-app-credential").await.unwrap();
    assert_eq!(interface(&published, &cloud).as_deref(), Some("public"));
    let mut doc: Value = yaml_serde::from_str(&h.cloud.clouds_yaml()).unwrap();
    doc["clouds"][common::cloud::CLOUD]["endpoint_type"] = "internal".into();
    let secrets = Api::<Secret>::namespaced(h.client.clone(), &h.ns);
    let mut identity = secrets.get("cloud-config").await.unwrap();
    identity.data = Some(
        [(
            "clouds.yaml".to_owned(),
            k8s_openapi::ByteString(yaml_serde::to_string(&doc).unwrap().into_bytes()),
        )]
        .into(),
    );
    secrets
        .replace("cloud-config", &Default::default(), &identity)
        .await
        .unwrap();
    common::poll(
        3 * sync.as_secs(),
        || async {
            let s = secret(&h, "p1-app-credential").await?;
            (interface(&s, &cloud).as_deref() == Some("internal")).then_some(())
        },
        || async { "the edited identity was not republished".to_owned() },
    )
    .await;
    h.delete_cluster_leaving_nothing("p1").await;
}

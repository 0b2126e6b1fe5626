//! The peer provider's extension API (`../shared/partners/peer-capo`, the Go provider the
//! Ansible bootstrap and control-plane providers were written against): its manifests are
//! accepted unchanged by a strict server-side dry run, and capo publishes every value at the
//! peer's path as well as the seed's, with one value for both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/machines.rs"]
mod machines;

use std::path::PathBuf;

use capo_api::v1beta1::{OpenStackCluster, OpenStackMachineTemplate};
use capo_api::validation::Validate;
use common::Harness;
use kube::Api;
use kube::api::{Patch, PatchParams};
use machines::*;
use serde_json::{Value, json};

/// The peer's cluster template, from `../shared/partners` (CAPO_SHARED_DIR overrides).
fn peer_template() -> Option<String> {
    let shared = std::env::var_os("CAPO_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let path = shared.join("partners/peer-capo/templates/cluster-template-with-acp.yaml");
    match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) => {
            let why = format!("{}: {e}", path.display());
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{why}");
            eprintln!("SKIPPED: peer template not found ({why})");
            None
        }
    }
}

/// `${VAR}` replaced by a value of the right shape (what `clusterctl generate` would do).
fn substitute(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find('}').map(|j| i + j).unwrap();
        let var = &rest[i + 2..end];
        out.push_str(match var {
            "CLUSTER_NAME" => "peer",
            "OPENSTACK_CLOUD" => "openstack",
            "KUBERNETES_VERSION" => "v1.34.3",
            "CONTROL_PLANE_MACHINE_COUNT" | "WORKER_MACHINE_COUNT" => "1",
            "OPENSTACK_EXTERNAL_NETWORK_ID" => "8a7ad3b6-3f0e-4a2c-9d57-4bd2b1e3c0a1",
            "OPENSTACK_DNS_NAMESERVERS" => "10.0.0.2",
            "OPENSTACK_CLOUD_YAML_B64" | "OPENSTACK_CLOUD_CACERT_B64" => "Cg==",
            _ => "placeholder",
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The template's infrastructure objects (capo's kinds), by kind.
fn infra_docs(yaml: &str) -> Vec<Value> {
    yaml.split("\n---")
        .filter_map(|d| yaml_serde::from_str::<Value>(d).ok())
        .filter(|d| {
            d["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("infrastructure.cluster.x-k8s.io/"))
        })
        .collect()
}

async fn strict_dry_run(h: &Harness, doc: &Value) -> Result<(), kube::Error> {
    let name = doc["metadata"]["name"].as_str().unwrap().to_owned();
    let pp = PatchParams::apply("peer-compat")
        .dry_run()
        .validation_strict();
    match doc["kind"].as_str().unwrap() {
        "OpenStackCluster" => Api::<OpenStackCluster>::namespaced(h.client.clone(), &h.ns)
            .patch(&name, &pp, &Patch::Apply(doc))
            .await
            .map(|_| ()),
        "OpenStackMachineTemplate" => {
            Api::<OpenStackMachineTemplate>::namespaced(h.client.clone(), &h.ns)
                .patch(&name, &pp, &Patch::Apply(doc))
                .await
                .map(|_| ())
        }
        other => panic!("unexpected infrastructure kind {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_templates_pass_a_strict_server_side_dry_run() {
    let Some(template) = peer_template() else {
        return;
    };
    let h = Harness::new("peer").await;
    let docs = infra_docs(&substitute(&template));
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "OpenStackCluster",
            "OpenStackMachineTemplate",
            "OpenStackMachineTemplate"
        ],
        "the peer template's infrastructure objects"
    );
    for doc in &docs {
        if let Err(e) = strict_dry_run(&h, doc).await {
            panic!("{} {} refused: {e}", doc["kind"], doc["metadata"]["name"]);
        }
        // The test apiserver calls no webhooks: run capo's admission validation directly.
        let admitted = match doc["kind"].as_str().unwrap() {
            "OpenStackCluster" => serde_json::from_value::<OpenStackCluster>(doc.clone())
                .unwrap()
                .validate_create(),
            _ => serde_json::from_value::<OpenStackMachineTemplate>(doc.clone())
                .unwrap()
                .validate_create(),
        };
        if let Err(e) = admitted {
            panic!("{} refused by the webhook: {e}", doc["kind"]);
        }
    }
    // The control: the same dry run refuses a field capo does not know, so passing above
    // means every peer field is in capo's schema.
    let mut bad = docs[1].clone();
    bad["spec"]["template"]["spec"]["extensions"]["notAPeerField"] = Value::Bool(true);
    let err = strict_dry_run(&h, &bad).await.unwrap_err().to_string();
    assert!(err.contains("notAPeerField"), "{err}");
}

/// A cluster with both keepalived VIPs.
fn cluster() -> String {
    common::open_spec("10.8.0.0/24", CLUSTER_EXTENSIONS)
}

const CLUSTER_EXTENSIONS: &str = "extensions:
  openStack: {}
  loadBalancers:
    controlPlane:
      mode: Keepalived
    ingress:
      mode: Keepalived
";

/// A control-plane machine as the peer's template writes it: both VIPs, a memory reservation.
fn cp_both_vips() -> String {
    common::machine_spec("m1.medium", CP_BOTH_VIPS_EXTENSIONS)
}

const CP_BOTH_VIPS_EXTENSIONS: &str = "extensions:
  loadBalancers:
    controlPlaneVIP: true
    ingressVIP: true
  memory:
    reserved: \"-4\"
";

/// A worker that takes no VIP.
fn worker_no_vip() -> String {
    common::machine_spec("m1.small", WORKER_NO_VIP_EXTENSIONS)
}

const WORKER_NO_VIP_EXTENSIONS: &str = "extensions:
  loadBalancers:
    ingressVIP: false
";

fn pairs(s: &capo_api::v1alpha1::OpenStackServer) -> Vec<String> {
    s.spec.ports[0]
        .opts
        .allowed_address_pairs
        .iter()
        .map(|p| p.ip_address.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_paths_carry_the_same_values_and_machine_vip_flags_choose_address_pairs() {
    let h = Harness::new("peerv").await;
    let _c = start(&h);
    h.create_cluster("p1", &cluster()).await;
    let o = h
        .wait_cluster("p1", 90, "cluster ready with its VIPs", |o| {
            o.status.as_ref().is_some_and(|s| {
                s.ready
                    && s.extensions
                        .as_ref()
                        .and_then(|e| e.load_balancers.as_ref())
                        .is_some_and(|l| l.harbor.is_some() && l.control_plane.is_some())
            })
        })
        .await;
    let ext = o.status.clone().unwrap().extensions.unwrap();
    let os = ext.open_stack.clone().unwrap();
    let ep = ext.endpoints.clone().expect("status.extensions.endpoints");
    assert!(ep.keystone.is_some() && ep.nova.is_some() && ep.neutron.is_some());
    assert_eq!(
        ep, os.hosts,
        "one value at the seed's and the consumers' paths"
    );
    assert_eq!(
        os.project_domain.as_deref(),
        Some("Default"),
        "the project's domain as the token names it"
    );
    let lbs = ext.load_balancers.clone().unwrap();
    let cp_vip = lbs.control_plane.unwrap().vip.unwrap();
    let ingress_vip = lbs.ingress.unwrap().vip.unwrap();
    assert_eq!(
        lbs.harbor.unwrap().vip.as_deref(),
        Some(ingress_vip.as_str())
    );

    create_machine(&h, "p1", "cp-0", true, &cp_both_vips()).await;
    create_machine(&h, "p1", "w-0", false, &worker_no_vip()).await;
    create_machine(&h, "p1", "w-1", false, MACHINE).await;
    for name in ["cp-0", "w-0", "w-1"] {
        wait_machine_ready(&h, name).await;
    }
    let cp0 = servers(&h).get("cp-0").await.unwrap();
    assert_eq!(pairs(&cp0), vec![cp_vip.clone(), ingress_vip.clone()]);
    let w0 = servers(&h).get("w-0").await.unwrap();
    assert!(pairs(&w0).is_empty(), "ingressVIP: false");
    let w1 = servers(&h).get("w-1").await.unwrap();
    assert_eq!(pairs(&w1), vec![ingress_vip.clone()], "the default");
    let port = items(&h, "ports")
        .await
        .into_iter()
        .find(|p| p["device_id"].as_str() == cp0.status.as_ref().unwrap().instance_id.as_deref())
        .unwrap();
    // Neutron keeps address pairs as a set: the real one lists them in its own order.
    let mut in_neutron: Vec<&str> = port["allowed_address_pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["ip_address"].as_str().unwrap())
        .collect();
    in_neutron.sort_unstable();
    let mut wanted = [cp_vip.as_str(), ingress_vip.as_str()];
    wanted.sort_unstable();
    assert_eq!(in_neutron, wanted);
    let cp0m = machines(&h).get("cp-0").await.unwrap();
    let memory = cp0m.spec.extensions.unwrap().memory.unwrap().reserved;
    assert_eq!(
        memory.as_deref(),
        Some("-4"),
        "kept as written for the consumer"
    );

    remove_machines(&h, &["cp-0", "w-0", "w-1"]).await;
    h.delete_cluster_leaving_nothing("p1").await;
}

const CLUSTER_SSH: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.9.0.0/24
managedSecurityGroups: {}
bastion:
  enabled: true
  spec:
    flavor: m1.small
    image:
      filter:
        name: ubuntu-2404-kube-v1.34
extensions:
  ssh:
    generateKeyPair: true
";

/// The Ansible bootstrap provider creates `<cluster>-ssh-auth` (a PKCS#1 RSA key) when it
/// finds none; when it came first, capo adopts that key instead of generating its own, so the
/// key the consumer logs in with is the key Nova puts on the machines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_written_ssh_auth_key_is_the_clusters_key() {
    use k8s_openapi::api::core::v1::Secret;
    use rsa::pkcs1::EncodeRsaPrivateKey;
    let h = Harness::new("peerk").await;
    let rsa = rsa::RsaPrivateKey::new(&mut rand_core_rng(), 2048).unwrap();
    let pem = rsa.to_pkcs1_pem(rsa::pkcs1::LineEnding::LF).unwrap();
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), &h.ns);
    let consumers: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "k1-ssh-auth"},
        "type": "kubernetes.io/ssh-auth",
        "stringData": {"ssh-privatekey": pem.as_str()}
    }))
    .unwrap();
    secrets
        .create(&Default::default(), &consumers)
        .await
        .unwrap();
    let _c = start(&h);
    h.create_cluster("k1", CLUSTER_SSH).await;
    let o = h
        .wait_cluster(
            "k1",
            90,
            "cluster ready with its key pair and bastion",
            |o| {
                o.status.as_ref().is_some_and(|s| {
                    s.ready
                        && s.bastion.as_ref().is_some_and(|b| b.floating_ip.is_some())
                        && s.extensions.as_ref().is_some_and(|e| {
                            e.ssh.as_ref().is_some_and(|k| k.key_pair_name.is_some())
                        })
                })
            },
        )
        .await;
    let expected = capo_ansible::SshKeyPair::from_private_any(&pem).unwrap();
    let ours = secrets.get("k1-ssh").await.unwrap();
    let public = String::from_utf8(ours.data.unwrap()["ssh-publickey"].0.clone()).unwrap();
    assert_eq!(
        public, expected.public_openssh,
        "capo's Secret holds the consumer's key"
    );
    let keypair = o
        .status
        .unwrap()
        .extensions
        .unwrap()
        .ssh
        .unwrap()
        .key_pair_name
        .unwrap();
    let kp = capo_openstack::compute::get_keypair(&h.session(), &keypair)
        .await
        .unwrap();
    assert_eq!(
        kp.public_key.trim(),
        expected.public_openssh.trim(),
        "and Nova's"
    );
    let after = secrets.get("k1-ssh-auth").await.unwrap();
    assert_eq!(
        after.data.unwrap()["ssh-privatekey"].0,
        pem.as_bytes(),
        "the consumer's Secret is never rewritten"
    );
    h.delete_cluster_leaving_nothing("k1").await;
    assert!(
        secrets.get_opt("k1-ssh-auth").await.unwrap().is_some(),
        "a Secret capo did not create stays"
    );
}

fn rand_core_rng() -> impl rsa::rand_core::CryptoRngCore {
    rsa::rand_core::OsRng
}

/// The peer's OpenStackCluster as its template writes it: no `spec.extensions`.
const PEER_CLUSTER: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.10.0.0/24
managedSecurityGroups: {}
";

async fn cluster_with_control_plane(h: &Harness, name: &str, kind: &str) {
    let control_plane = format!(
        "  controlPlaneRef:
    apiGroup: controlplane.cluster.x-k8s.io
    kind: {kind}
    name: {name}
"
    );
    h.apply_capi_cluster(name, &control_plane).await;
    let uid = h.uid("Cluster", name).await;
    h.apply_osc(name, &uid, PEER_CLUSTER).await;
}

/// A cluster driven by the AnsibleControlPlane gets the extension with the peer's defaults
/// although its OpenStackCluster has no `spec.extensions`; the same manifest under a
/// KubeadmControlPlane stays exactly upstream's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ansible_driven_clusters_get_the_peers_defaults_and_others_nothing() {
    let h = Harness::new("peerd").await;
    let _c = start(&h);
    cluster_with_control_plane(&h, "acp", "AnsibleControlPlane").await;
    cluster_with_control_plane(&h, "kcp", "KubeadmControlPlane").await;
    let acp = h
        .wait_cluster("acp", 90, "the peer's defaults published", |o| {
            o.status.as_ref().is_some_and(|s| {
                s.ready
                    && s.extensions.as_ref().is_some_and(|e| {
                        e.load_balancers
                            .as_ref()
                            .is_some_and(|l| l.harbor.is_some() && l.control_plane.is_some())
                            && e.open_stack
                                .as_ref()
                                .is_some_and(|o| o.app_credential.is_some())
                            && e.ssh.is_some()
                    })
            })
        })
        .await;
    let ext = acp.status.clone().unwrap().extensions.unwrap();
    let lbs = ext.load_balancers.unwrap();
    let cp = lbs.control_plane.unwrap();
    assert_eq!(
        cp.mode.as_deref(),
        Some("Keepalived"),
        "no API load balancer asked"
    );
    assert_eq!(
        acp.spec.control_plane_endpoint.unwrap().host,
        cp.floating_ip,
        "the endpoint is the control-plane VIP's floating IP"
    );
    assert_eq!(lbs.harbor.unwrap().vip, lbs.ingress.unwrap().vip);
    assert!(acp.spec.extensions.is_none(), "nothing written to the spec");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(h.client.clone(), &h.ns);
    for s in [
        "acp-ssh",
        "acp-ssh-auth",
        "acp-app-credential",
        "acp-ansible",
    ] {
        assert!(secrets.get_opt(s).await.unwrap().is_some(), "Secret {s}");
    }

    let kcp = h
        .wait_cluster("kcp", 90, "ready", |o| {
            o.status.as_ref().is_some_and(|s| s.ready)
        })
        .await;
    assert!(
        kcp.status.unwrap().extensions.is_none(),
        "a KubeadmControlPlane cluster gets no extension"
    );
    assert!(secrets.get_opt("kcp-ssh-auth").await.unwrap().is_none());

    h.delete_cluster("kcp").await;
    h.wait_gone("kcp", 120).await;
    h.delete_cluster_leaving_nothing("acp").await;
}

/// A cluster switched from the peer: the peer reserved its keepalived VIP ports under its own
/// names (`<ns>-<name>-controlplane-keepalived`, `…-ingress-keepalived`, untagged by capo).
/// capo adopts them rather than reserving new ports, so the VIPs running nodes use never move;
/// deleting the cluster removes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peers_keepalived_vip_ports_are_adopted() {
    use capo_openstack::network::{self as net, Network, Port, Subnet};
    let mut h = Harness::new("peervip").await;
    let s = h.session();
    let netw: Network = net::create(&s, net::NETWORK, &json!({"name": "peer-net"}))
        .await
        .unwrap();
    let subnet: Subnet = net::create(
        &s,
        net::SUBNET,
        &json!({"name": "peer-v4", "network_id": netw.id, "cidr": "10.12.0.0/24", "ip_version": 4}),
    )
    .await
    .unwrap();
    let mut peer_ports = Vec::new();
    for (role, ip) in [("controlplane", "10.12.0.50"), ("ingress", "10.12.0.51")] {
        let p: Port = net::create(
            &s,
            net::PORT,
            &json!({
                "name": format!("{}-v1-{role}-keepalived", h.ns),
                "network_id": netw.id,
                "admin_state_up": false,
                "fixed_ips": [{"subnet_id": subnet.id, "ip_address": ip}],
            }),
        )
        .await
        .unwrap();
        peer_ports.push((p.id, ip));
    }
    h.start();
    h.create_cluster(
        "v1",
        &format!(
            "identityRef:
  name: cloud-config
  cloudName: openstack
network:
  id: {}
disableAPIServerFloatingIP: true
{CLUSTER_EXTENSIONS}",
            netw.id
        ),
    )
    .await;
    let o = h
        .wait_cluster("v1", 90, "ready with both VIPs", |o| {
            let lbs = o
                .status
                .as_ref()
                .and_then(|s| s.extensions.as_ref())
                .and_then(|e| e.load_balancers.clone());
            o.status.as_ref().is_some_and(|s| s.ready)
                && lbs.is_some_and(|l| l.control_plane.is_some() && l.ingress.is_some())
        })
        .await;
    let lbs = o
        .status
        .unwrap()
        .extensions
        .unwrap()
        .load_balancers
        .unwrap();
    let (cp, ingress) = (lbs.control_plane.unwrap(), lbs.ingress.unwrap());
    assert_eq!(cp.port_id.as_deref(), Some(peer_ports[0].0.as_str()));
    assert_eq!(cp.vip.as_deref(), Some(peer_ports[0].1));
    assert_eq!(ingress.port_id.as_deref(), Some(peer_ports[1].0.as_str()));
    assert_eq!(ingress.vip.as_deref(), Some(peer_ports[1].1));
    let ports: Vec<Value> = h.items().await.remove("ports").unwrap_or_default();
    let vip_ports = ports
        .iter()
        .filter(|p| {
            p["name"]
                .as_str()
                .is_some_and(|n| n.contains("vip") || n.contains("keepalived"))
        })
        .count();
    assert_eq!(vip_ports, 2, "no second VIP port reserved: {ports:?}");
    h.delete_cluster("v1").await;
    h.wait_gone("v1", 90).await;
    let ports: Vec<Value> = h.items().await.remove("ports").unwrap_or_default();
    assert!(
        !ports.iter().any(|p| p["name"]
            .as_str()
            .is_some_and(|n| n.ends_with("-keepalived"))),
        "adopted VIP ports deleted with the cluster: {ports:?}"
    );
    net::delete(&s, net::NETWORK, &netw.id).await.unwrap();
}

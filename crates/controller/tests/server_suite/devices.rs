//! What a machine's server is made of: boot from volume with an additional Volume and a Local
//! block device, several ports (one trunked, one with allowed address pairs), a server group
//! by name, and the image from an ORC Image reference.
use crate::common::Harness;
use crate::machines::*;
use capo_api::v1alpha1::OpenStackServer;
use capo_controller::conditions;
use capo_openstack::image::{self, ImageFilter};
use capo_openstack::request::{Request, Service};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::json;

const ORC_IMAGE: &str = "apiVersion: openstack.k-orc.cloud/v1alpha1
kind: Image
metadata:
  name: node-image
spec:
  cloudCredentialsRef:
    cloudName: openstack
    secretName: cloud-config
  managementPolicy: unmanaged
  import:
    filter:
      name: ubuntu-2404-kube-v1.34
";

const RICH: &str = "flavor: m1.small
image:
  imageRef:
    name: node-image
rootVolume:
  sizeGiB: 10
additionalBlockDevices:
- name: etcd
  sizeGiB: 2
  storage:
    type: Volume
- name: scratch
  sizeGiB: 1
  storage:
    type: Local
serverGroup:
  filter:
    name: cp-anti
ports:
- description: primary
- nameSuffix: data
  trunk: true
  allowedAddressPairs:
  - ipAddress: 10.7.0.250
";

/// Give the ORC Image its ID and say it is available, as ORC would once it imported the Glance
/// image.
async fn publish_orc_image(h: &Harness, id: &str) {
    let gvk = GroupVersionKind::gvk("openstack.k-orc.cloud", "v1alpha1", "Image");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "images");
    let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(h.client.clone(), &h.ns, &ar);
    api.patch_status(
        "node-image",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"id": id, "conditions": [
            {"type": "Available", "status": "True", "reason": "Success", "message": "OpenStack resource is available",
             "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1},
            {"type": "Progressing", "status": "False", "reason": "Success", "message": "OpenStack resource is up to date",
             "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}]}})),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volumes_ports_trunk_server_group_and_orc_image() {
    let (h, _c) = ready_cluster("dev", CLUSTER_FIP).await;
    let s = session(&h).await;
    let req = Request::post(
        Service::Compute,
        "os-server-groups",
        "server_group_create",
        json!({"server_group": {"name": "cp-anti", "policies": ["anti-affinity"]}}),
    );
    let group: serde_json::Value = s.fetch(&req, "server_group").await.unwrap();
    let filter = ImageFilter {
        name: Some("ubuntu-2404-kube-v1.34".into()),
        ..Default::default()
    };
    let image_id = image::list_images(&s, &filter).await.unwrap()[0].id.clone();
    h.apply(ORC_IMAGE).await;
    create_machine(&h, "c1", "m-rich", true, RICH).await;
    // No ID on the ORC Image yet: the server waits and says why; its machine, as upstream's,
    // writes no status before Ready.
    let waiting = |o: &OpenStackServer| {
        let st = o.status.clone().unwrap_or_default();
        conditions::get(&st.conditions, "InstanceReady")
            .map(|c| c.message.clone())
            .is_some_and(|msg| msg.contains("ORC Image node-image"))
    };
    crate::common::poll(
        30,
        || async {
            let o = servers(&h).get_opt("m-rich").await.expect("get");
            o.filter(|o| waiting(o)).map(|_| ())
        },
        || async { "timed out waiting for the server to wait for the ORC image".to_owned() },
    )
    .await;
    let machine = machines(&h).get("m-rich").await.expect("get");
    assert!(
        machine.status.is_none_or(|st| st.conditions.is_empty()),
        "a machine whose server waits writes no status"
    );
    assert!(sim_items(&h, "servers").is_empty() && sim_items(&h, "volumes").is_empty());
    publish_orc_image(&h, &image_id).await;
    let m = wait_machine_ready(&h, "m-rich").await;
    let st = m.status.unwrap();
    let resolved = st.resolved.unwrap();
    assert_eq!(resolved.image_id.as_deref(), Some(image_id.as_str()));
    assert_eq!(resolved.server_group_id.as_deref(), group["id"].as_str());
    assert_eq!(st.resources.unwrap().ports.len(), 2);

    let server = sim_items(&h, "servers").pop().unwrap();
    assert_eq!(server["server_groups"], json!([group["id"]]), "{server:#}");
    assert_eq!(
        server["_volumes"].as_array().map(Vec::len),
        Some(2),
        "{server:#}"
    );
    assert_eq!(server["_user_data"], true, "bootstrap data was passed");
    assert_eq!(server["image"], "", "booted from the root volume");
    let vols = sim_items(&h, "volumes");
    let mut names: Vec<&str> = vols.iter().map(|v| v["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["m-rich-etcd", "m-rich-root"]);
    for v in &vols {
        assert_eq!(v["status"], "in-use", "{v}");
        assert_eq!(
            v["metadata"]["capo-server-uid"].as_str().map(str::len),
            Some(36)
        );
    }
    let root = vols.iter().find(|v| v["name"] == "m-rich-root").unwrap();
    assert_eq!(root["size"], 10);
    assert_eq!(root["bootable"], "true", "{root}");
    let ports = sim_items(&h, "ports");
    let data = ports.iter().find(|p| p["name"] == "m-rich-data").unwrap();
    assert_eq!(data["allowed_address_pairs"][0]["ip_address"], "10.7.0.250");
    assert!(ports.iter().any(|p| p["name"] == "m-rich-0"));
    let trunks = sim_items(&h, "trunks");
    assert_eq!(trunks.len(), 1);
    assert_eq!(trunks[0]["port_id"], data["id"]);
    assert_eq!(trunks[0]["name"], "m-rich-data");

    delete_machine(&h, "m-rich").await;
    wait_machine_gone(&h, "m-rich", 60).await;
    for col in ["servers", "volumes", "trunks"] {
        assert!(
            sim_items(&h, col).is_empty(),
            "{col} left: {:?}",
            sim_items(&h, col)
        );
    }
    assert!(
        !sim_items(&h, "ports")
            .iter()
            .any(|p| p["name"].as_str().unwrap().starts_with("m-rich"))
    );
}

/// A machine-level trunk and security groups: a port without its own settings inherits the
/// trunk and gets the role's managed group plus the machine's groups; a port with its own
/// groups and `trunk: false` gets its groups plus the machine's, and no trunk.
const INHERITED: &str = "flavor: m1.small
image:
  filter:
    name: ubuntu-2404-kube-v1.34
trunk: true
securityGroups:
- filter:
    name: default
ports:
- {}
- nameSuffix: own
  trunk: false
  securityGroups:
  - filter:
      name: extra
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ports_inherit_the_machines_trunk_and_security_groups() {
    use capo_openstack::network::{self as net, SecurityGroup};
    let (h, _c) = ready_cluster("inh", CLUSTER_FIP).await;
    let s = session(&h).await;
    let extra: SecurityGroup = net::create(
        &s,
        net::SECURITY_GROUP,
        &json!({"name": "extra", "description": "a user's group"}),
    )
    .await
    .unwrap();
    let groups = sim_items(&h, "security_groups");
    let default = groups.iter().find(|g| g["name"] == "default").unwrap();
    let default = default["id"].as_str().unwrap().to_owned();
    let cluster = h.clusters().get("c1").await.unwrap();
    let worker = cluster.status.unwrap().worker_security_group.unwrap().id;
    create_machine(&h, "c1", "m-inh", false, INHERITED).await;
    wait_machine_ready(&h, "m-inh").await;

    let ports = sim_items(&h, "ports");
    let by_name = |name: &str| ports.iter().find(|p| p["name"] == name).unwrap().clone();
    let groups_of = |p: &serde_json::Value| {
        let mut g: Vec<String> = p["security_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap().to_owned())
            .collect();
        g.sort();
        g
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let first = by_name("m-inh-0");
    let own = by_name("m-inh-own");
    assert_eq!(groups_of(&first), sorted(vec![worker, default.clone()]));
    assert_eq!(groups_of(&own), sorted(vec![extra.id, default]));
    let trunks = sim_items(&h, "trunks");
    assert_eq!(trunks.len(), 1, "{trunks:?}");
    assert_eq!(trunks[0]["port_id"], first["id"]);
    assert_eq!(trunks[0]["name"], "m-inh-0");

    delete_machine(&h, "m-inh").await;
    wait_machine_gone(&h, "m-inh", 60).await;
    assert!(sim_items(&h, "trunks").is_empty());
}

/// An OpenStackServer port that names no network goes on the network of its fixed IPs'
/// subnets: the first subnet that identifies one (by ID, or by a filter matching one subnet),
/// the others then looked up on that network, as upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_without_a_network_takes_the_network_of_its_subnet() {
    use capo_openstack::network::{self as net, Network, Subnet};
    let (h, _c) = ready_cluster("subnet-net", CLUSTER_FIP).await;
    let s = session(&h).await;
    let side: Network = net::create(&s, net::NETWORK, &json!({"name": "side-net"}))
        .await
        .unwrap();
    let mut subnets = Vec::new();
    for (name, cidr) in [("side-a", "10.60.0.0/24"), ("side-b", "10.61.0.0/24")] {
        let body = json!({"name": name, "network_id": side.id, "cidr": cidr, "ip_version": 4});
        let sn: Subnet = net::create(&s, net::SUBNET, &body).await.unwrap();
        subnets.push(sn);
    }
    // Another network with a subnet also named side-b: that filter alone tells no network.
    let decoy: Network = net::create(&s, net::NETWORK, &json!({"name": "decoy"}))
        .await
        .unwrap();
    let body =
        json!({"name": "side-b", "network_id": decoy.id, "cidr": "10.62.0.0/24", "ip_version": 4});
    let _: Subnet = net::create(&s, net::SUBNET, &body).await.unwrap();
    h.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: OpenStackServer
metadata:
  name: by-subnet
  labels:
    cluster.x-k8s.io/cluster-name: c1
spec:
  flavor: m1.small
  image:
    filter:
      name: ubuntu-2404-kube-v1.34
  identityRef:
    name: cloud-config
    cloudName: openstack
  sshKeyName: ''
  ports:
  - fixedIPs:
    - subnet:
        filter:
          name: side-b
    - subnet:
        filter:
          name: side-a
  - fixedIPs:
    - subnet:
        id: {a}
",
        a = subnets[0].id
    ))
    .await;
    let oss = crate::common::poll(
        60,
        || async {
            let o = servers(&h).get("by-subnet").await.expect("get");
            o.status.as_ref().is_some_and(|s| s.ready).then_some(o)
        },
        || async { "timed out waiting for the server to be ready".to_owned() },
    )
    .await;
    let resolved = oss.status.unwrap().resolved.unwrap();
    for p in &resolved.ports {
        assert_eq!(p.spec.network_id, side.id);
    }
    let ids = |i: usize| -> Vec<Option<String>> {
        resolved.ports[i]
            .spec
            .fixed_ips
            .iter()
            .map(|f| f.subnet.clone())
            .collect()
    };
    assert_eq!(
        ids(0),
        vec![Some(subnets[1].id.clone()), Some(subnets[0].id.clone())]
    );
    assert_eq!(ids(1), vec![Some(subnets[0].id.clone())]);
    let p = port(&h, "by-subnet-0").await;
    assert_eq!(p["network_id"], side.id.as_str());
    servers(&h)
        .delete("by-subnet", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    crate::common::poll(
        60,
        || async {
            let o = servers(&h).get_opt("by-subnet").await.expect("get");
            o.is_none().then_some(())
        },
        || async { "timed out waiting for the server to go".to_owned() },
    )
    .await;
}

use super::*;
use serde_json::json;

fn cluster(value: serde_json::Value) -> OpenStackCluster {
    serde_json::from_value(value).unwrap()
}

fn machine(value: serde_json::Value) -> OpenStackMachine {
    serde_json::from_value(value).unwrap()
}

fn cluster_json() -> serde_json::Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "OpenStackCluster",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {
            "identityRef": {"name": "cloud", "cloudName": "openstack"},
            "managedSecurityGroups": {},
            "extensions": {
                "networking": {"kubeNetworkPlugin": "flannel"},
                "networkInterfaces": {"flannel": "eth1"},
                "loadBalancers": {"controlPlane": {"mode": "Keepalived"}, "ingress": {"mode": "Octavia"}},
                "platform": {"ntp": {"server": "ntp.example"}},
                "ssh": {"user": "cloud-user"}
            }
        },
        "status": {
            "ready": true,
            "bastion": {"floatingIP": "203.0.113.5", "ip": "10.6.0.3"},
            "extensions": {
                "networking": {"cilium": {"projectID": "p1", "defaultSubnetID": "s1",
                    "securityGroupIDs": ["sg-1", "sg-2"], "webhookEnable": false}},
                "loadBalancers": {"controlPlane": {"vip": "10.6.0.5"}, "ingress": {"vip": "10.6.0.6"}},
                "openStack": {"mgmt": "cloud.example", "keystone": "k.example", "nova": "n.example",
                    "neutron": "q.example", "cinder": "c.example", "project": "demo",
                    "projectDomain": "Default", "region": "RegionOne"},
                "platform": {"ntp": {"server": "10.6.0.2"}, "management": {"vip": "203.0.113.5"}}
            }
        }
    })
}

fn machine_json(name: &str, control_plane: bool) -> serde_json::Value {
    let labels = if control_plane {
        json!({"cluster.x-k8s.io/cluster-name": "demo", "cluster.x-k8s.io/control-plane": ""})
    } else {
        json!({"cluster.x-k8s.io/cluster-name": "demo"})
    };
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "OpenStackMachine",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"flavor": "m1", "image": {"id": "img"}, "extensions": {"networkInterfaces": {"keepalived": "ens3"}}},
        "status": {
            "addresses": [
                {"type": "Hostname", "address": name},
                {"type": "InternalIP", "address": "10.6.0.10"},
                {"type": "ExternalIP", "address": "198.51.100.7"},
                {"type": "InternalIP", "address": "192.168.0.10"}
            ],
            "extensions": {"nodeResources": {"reserved": {"kubeCpuReserved": "100m"}}}
        }
    })
}

#[test]
fn every_value_comes_from_the_documented_path() {
    let machines = [machine(machine_json("demo-cp-0", true))];
    let facts = ClusterFacts::from_api(&cluster(cluster_json()), &machines);
    assert_eq!(facts.kube_network_plugin.as_deref(), Some("flannel"));
    assert_eq!(facts.flannel_interface.as_deref(), Some("eth1"));
    assert_eq!(facts.cilium_project_id.as_deref(), Some("p1"));
    assert_eq!(facts.cilium_default_subnet_id.as_deref(), Some("s1"));
    assert_eq!(
        facts.cilium_security_group_ids,
        Some(vec!["sg-1".into(), "sg-2".into()])
    );
    assert_eq!(facts.vpc_cni_webhook_enable, Some(false));
    assert_eq!(facts.control_plane_vip.as_deref(), Some("10.6.0.5"));
    assert!(facts.ingress_requested);
    assert_eq!(facts.ingress_vip.as_deref(), Some("10.6.0.6"));
    assert_eq!(facts.openstack.mgmt.as_deref(), Some("cloud.example"));
    assert_eq!(facts.openstack.hosts.keystone.as_deref(), Some("k.example"));
    assert_eq!(facts.openstack.hosts.cinder.as_deref(), Some("c.example"));
    assert_eq!(facts.openstack.region.as_deref(), Some("RegionOne"));
    assert_eq!(facts.ntp_server.as_deref(), Some("10.6.0.2"), "status wins");
    assert_eq!(facts.management_vip.as_deref(), Some("203.0.113.5"));
    assert_eq!(facts.ssh_user, "cloud-user");
    assert_eq!(
        facts.bastion,
        Some(BastionFacts {
            address: "203.0.113.5".into(),
            user: "cloud-user".into()
        })
    );
    let host = &facts.hosts[0];
    assert_eq!(host.name, "demo-cp-0");
    assert_eq!(host.role, Role::ControlPlane);
    assert_eq!(host.private_ip.as_deref(), Some("10.6.0.10"));
    assert_eq!(host.public_ip.as_deref(), Some("198.51.100.7"));
    assert_eq!(host.keepalived_interface.as_deref(), Some("ens3"));
    let reserved = host.reserved.clone().unwrap_or_default();
    assert_eq!(reserved.kube_cpu_reserved.as_deref(), Some("100m"));
    assert!(crate::unresolved(&facts).is_empty());
}

#[test]
fn rule_derived_values_fill_in_before_the_status_does() {
    let mut value = cluster_json();
    value["status"]["extensions"] = json!({});
    let facts = ClusterFacts::from_api(&cluster(value.clone()), &[]);
    assert_eq!(facts.ntp_server.as_deref(), Some("ntp.example"), "override");
    assert_eq!(facts.management_vip.as_deref(), Some("203.0.113.5"));
    assert_eq!(facts.vpc_cni_webhook_enable, Some(false), "flannel");
    assert_eq!(facts.cilium_security_group_ids, None, "managed, pending");

    value["spec"]["extensions"]["platform"] = json!({});
    value["status"]["bastion"] = json!({"ip": "10.6.0.3"});
    let facts = ClusterFacts::from_api(&cluster(value), &[]);
    assert_eq!(facts.ntp_server.as_deref(), Some("10.6.0.3"), "fixed IP");
    assert_eq!(facts.management_vip.as_deref(), Some("10.6.0.3"));
}

#[test]
fn an_upstream_cluster_gives_defaults() {
    let facts = ClusterFacts::from_api(
        &cluster(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackCluster",
            "metadata": {"name": "plain"},
            "spec": {"identityRef": {"name": "cloud", "cloudName": "openstack"}}
        })),
        &[machine(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackMachine",
            "metadata": {"name": "plain-md-0"},
            "spec": {"flavor": "m1", "image": {"id": "img"}}
        }))],
    );
    assert_eq!(facts.ssh_user, DEFAULT_SSH_USER);
    assert_eq!(facts.bastion, None);
    assert_eq!(
        facts.cilium_security_group_ids,
        Some(Vec::new()),
        "none managed"
    );
    assert_eq!(facts.vpc_cni_webhook_enable, Some(false));
    assert!(!facts.ingress_requested);
    assert_eq!(facts.hosts[0].role, Role::Worker);
    assert_eq!(facts.hosts[0].private_ip, None);
}

#[test]
fn webhook_follows_cilium_unless_overridden() {
    let mut ext: OpenStackClusterExtensions =
        serde_json::from_value(json!({"networking": {"kubeNetworkPlugin": "cilium"}})).unwrap();
    assert!(webhook_enable(&ext));
    ext.cilium = Some(capo_api::extensions::CiliumOptions {
        webhook_enable: Some(false),
    });
    assert!(!webhook_enable(&ext));
    assert!(!webhook_enable(&OpenStackClusterExtensions::default()));
}

use super::*;
use crate::test_fixtures::{full, host};
use yaml_serde::Value;

fn parsed(facts: &ClusterFacts) -> Value {
    yaml_serde::from_str(&render_inventory(facts).unwrap()).unwrap()
}

fn members(inv: &Value, group: &str) -> Vec<String> {
    let children = &inv["all"]["children"];
    let group = match group {
        GROUP_KUBE_CONTROL_PLANE | GROUP_KUBE_NODE => {
            &children[GROUP_K8S_CLUSTER]["children"][group]
        }
        _ => &children[group],
    };
    group["hosts"]
        .as_mapping()
        .map(|m| {
            m.keys()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn hosts_land_in_kubespray_groups() {
    let inv = parsed(&full());
    let cps = ["demo-cp-0", "demo-cp-1", "demo-cp-2"];
    assert_eq!(members(&inv, GROUP_KUBE_CONTROL_PLANE), cps);
    assert_eq!(members(&inv, GROUP_ETCD), cps);
    assert_eq!(members(&inv, GROUP_KUBE_NODE), ["demo-md-0", "demo-md-1"]);
    assert_eq!(members(&inv, GROUP_BASTION), [BASTION_HOST]);
    let children: Vec<&str> = inv["all"]["children"][GROUP_K8S_CLUSTER]["children"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(children, [GROUP_KUBE_CONTROL_PLANE, GROUP_KUBE_NODE]);
}

#[test]
fn host_variables_through_the_bastion() {
    let inv = parsed(&full());
    let cp0 = &inv["all"]["hosts"]["demo-cp-0"];
    assert_eq!(cp0["ansible_host"].as_str(), Some("10.6.0.10"));
    assert_eq!(cp0["ansible_user"].as_str(), Some("ubuntu"));
    assert_eq!(cp0["ip"].as_str(), Some("10.6.0.10"));
    assert_eq!(cp0["access_ip"].as_str(), Some("10.6.0.10"));
    assert_eq!(cp0["etcd_member_name"].as_str(), Some("demo-cp-0"));
    assert_eq!(cp0["keepalived_interface"].as_str(), Some("ens3"));
    let args = cp0["ansible_ssh_common_args"].as_str().unwrap();
    assert!(
        args.starts_with("-o ProxyCommand=\"ssh -o StrictHostKeyChecking=no"),
        "{args}"
    );
    assert!(
        args.contains(" -W %h:%p -p 22 ubuntu@203.0.113.5"),
        "{args}"
    );

    let md0 = &inv["all"]["hosts"]["demo-md-0"];
    assert!(md0.get("etcd_member_name").is_none());
    assert!(md0.get("keepalived_interface").is_none());
    assert_eq!(md0["ansible_ssh_common_args"].as_str(), Some(args));

    let bastion = &inv["all"]["hosts"][BASTION_HOST];
    assert_eq!(bastion["ansible_host"].as_str(), Some("203.0.113.5"));
    assert_eq!(bastion["ansible_user"].as_str(), Some("ubuntu"));
    assert!(bastion.get("ansible_ssh_common_args").is_none());
    assert!(bastion.get("ip").is_none());
}

#[test]
fn without_bastion_the_floating_ip_is_used() {
    let mut facts = full();
    facts.bastion = None;
    facts.hosts[0].public_ip = Some("198.51.100.7".into());
    let name = facts.hosts[0].name.clone();
    let inv = parsed(&facts);
    let h = &inv["all"]["hosts"][name.as_str()];
    assert_eq!(h["ansible_host"].as_str(), Some("198.51.100.7"));
    assert_eq!(h["ip"].as_str(), Some("10.6.0.21"));
    assert!(h.get("ansible_ssh_common_args").is_none());
    assert!(inv["all"]["children"].get(GROUP_BASTION).is_none());
    assert!(inv["all"]["hosts"].get(BASTION_HOST).is_none());
}

#[test]
fn byte_identical_whatever_the_input_order() {
    let a = full();
    let mut b = full();
    b.hosts.reverse();
    let first = render_inventory(&a).unwrap();
    assert_eq!(first, render_inventory(&a).unwrap());
    assert_eq!(first, render_inventory(&b).unwrap());
}

#[test]
fn hosts_without_an_address_are_left_out_and_reported() {
    let mut facts = full();
    facts.hosts.push(HostFacts {
        private_ip: None,
        ..host("demo-cp-3", Role::ControlPlane, "")
    });
    let inv = parsed(&facts);
    assert!(inv["all"]["hosts"].get("demo-cp-3").is_none());
    assert_eq!(members(&inv, GROUP_ETCD).len(), 3);
    let warnings = inventory_warnings(&facts);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("demo-cp-3"));
}

#[test]
fn even_etcd_is_reported_not_refused() {
    let mut facts = full();
    facts.hosts.retain(|h| h.name != "demo-cp-2");
    assert_eq!(members(&parsed(&facts), GROUP_ETCD).len(), 2);
    let warnings = inventory_warnings(&facts);
    assert!(warnings[0].contains("odd"), "{warnings:?}");
    assert!(inventory_warnings(&full()).is_empty());
    facts.hosts.retain(|h| h.role == Role::Worker);
    assert!(inventory_warnings(&facts)[0].contains("empty"));
    assert!(members(&parsed(&facts), GROUP_ETCD).is_empty());
}

#[test]
fn odd_names_are_quoted_keys() {
    let mut facts = full();
    for (i, name) in ["yes", "1.5", "null", "a: b", "- x"].iter().enumerate() {
        facts
            .hosts
            .push(host(name, Role::Worker, &format!("10.6.1.{i}")));
    }
    let inv = parsed(&facts);
    let nodes = members(&inv, GROUP_KUBE_NODE);
    for name in ["yes", "1.5", "null", "a: b", "- x"] {
        assert!(nodes.iter().any(|n| n == name), "{name} in {nodes:?}");
        assert!(inv["all"]["hosts"].get(name).is_some(), "{name}");
    }
}

#[test]
fn duplicate_and_reserved_names_are_errors() {
    let mut facts = full();
    facts
        .hosts
        .push(host("demo-md-0", Role::Worker, "10.6.0.99"));
    assert!(matches!(
        render_inventory(&facts),
        Err(Error::DuplicateHost(n)) if n == "demo-md-0"
    ));
    let mut facts = full();
    facts
        .hosts
        .push(host(BASTION_HOST, Role::Worker, "10.6.0.99"));
    assert!(matches!(
        render_inventory(&facts),
        Err(Error::ReservedHostName(_))
    ));
    facts.bastion = None;
    assert!(render_inventory(&facts).is_ok());
}

#[test]
fn golden_layout() {
    let mut facts = full();
    facts
        .hosts
        .retain(|h| h.name == "demo-cp-0" || h.name == "demo-md-0");
    let proxy = "-o ProxyCommand=\"ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -W %h:%p -p 22 ubuntu@203.0.113.5{% if ansible_ssh_private_key_file is defined %} -i {{ ansible_ssh_private_key_file }}{% endif %}\"";
    let expected = format!(
        "\
all:
  hosts:
    bastion:
      ansible_host: 203.0.113.5
      ansible_user: ubuntu
    demo-cp-0:
      ansible_host: 10.6.0.10
      ansible_user: ubuntu
      ip: 10.6.0.10
      access_ip: 10.6.0.10
      etcd_member_name: demo-cp-0
      keepalived_interface: ens3
      ansible_ssh_common_args: {proxy}
    demo-md-0:
      ansible_host: 10.6.0.20
      ansible_user: ubuntu
      ip: 10.6.0.20
      access_ip: 10.6.0.20
      ansible_ssh_common_args: {proxy}
  children:
    k8s_cluster:
      children:
        kube_control_plane:
          hosts:
            demo-cp-0: null
        kube_node:
          hosts:
            demo-md-0: null
    etcd:
      hosts:
        demo-cp-0: null
    bastion:
      hosts:
        bastion: null
"
    );
    assert_eq!(render_inventory(&facts).unwrap(), expected);
}

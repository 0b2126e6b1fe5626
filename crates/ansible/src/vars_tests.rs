use super::*;
use crate::test_fixtures::{full, host};
use crate::{BastionFacts, Role};
use yaml_serde::Value;

fn parsed(facts: &ClusterFacts) -> yaml_serde::Mapping {
    let text = render_vars(facts).unwrap();
    match yaml_serde::from_str(&text).unwrap() {
        Value::Mapping(m) => m,
        other => panic!("vars.yaml is not a mapping: {other:?}"),
    }
}

fn get<'a>(vars: &'a yaml_serde::Mapping, key: &str) -> &'a Value {
    vars.get(key).unwrap_or_else(|| panic!("{key} missing"))
}

#[test]
fn every_seed_variable_is_rendered_in_seed_order() {
    let vars = parsed(&full());
    let keys: Vec<&str> = vars.keys().filter_map(Value::as_str).collect();
    let mut expected: Vec<&str> = CLUSTER_VARIABLES.to_vec();
    expected.push("node_resources");
    assert_eq!(keys, expected);
}

#[test]
fn each_variable_has_its_source_value() {
    let vars = parsed(&full());
    let s = |k: &str| get(&vars, k).as_str().unwrap_or_default().to_owned();
    assert_eq!(s("kube_network_plugin"), "cilium");
    assert_eq!(s("cilium_openstack_project_id"), "7a1c2b3d4e5f");
    assert_eq!(s("cilium_openstack_default_subnet_id"), "subnet-1");
    assert_eq!(get(&vars, "vpc_cni_webhook_enable"), &Value::Bool(true));
    assert_eq!(s("master_virtual_vip"), "10.6.0.5");
    assert_eq!(s("ingress_virtual_vip"), "10.6.0.6");
    assert_eq!(s("harbor_addr"), "10.6.0.6");
    assert_eq!(s("cloud_master_vip"), "cloud.example.com");
    assert_eq!(s("openstack_auth_domain"), "keystone.example.com");
    assert_eq!(s("openstack_cinder_domain"), "cinder.example.com");
    assert_eq!(s("openstack_nova_domain"), "nova.example.com");
    assert_eq!(s("openstack_neutron_domain"), "neutron.example.com");
    assert_eq!(s("openstack_project_name"), "demo-project");
    assert_eq!(s("openstack_project_domain_name"), "Default");
    assert_eq!(s("openstack_region_name"), "RegionOne");
    assert_eq!(s("ntp_server"), "10.6.0.2");
    assert_eq!(s("vip_mgmt"), "203.0.113.5");
    assert_eq!(s("flannel_interface"), "eth1");
}

#[test]
fn security_groups_keep_status_order_each_once() {
    let vars = parsed(&full());
    let ids: Vec<&str> = get(&vars, "cilium_openstack_security_group_ids")
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        ids,
        ["sg-b", "sg-a"],
        "the first stays first: consumers keep only it"
    );

    let mut facts = full();
    facts.cilium_security_group_ids = Some(Vec::new());
    let vars = parsed(&facts);
    assert_eq!(
        get(&vars, "cilium_openstack_security_group_ids"),
        &Value::Sequence(Vec::new()),
        "known-empty renders as []"
    );
}

#[test]
fn node_resources_use_kubespray_names_keyed_by_machine() {
    let vars = parsed(&full());
    let nodes = get(&vars, "node_resources").as_mapping().unwrap();
    let names: Vec<&str> = nodes.keys().filter_map(Value::as_str).collect();
    assert_eq!(
        names,
        [
            "demo-cp-0",
            "demo-cp-1",
            "demo-cp-2",
            "demo-md-0",
            "demo-md-1"
        ]
    );
    let cp0 = nodes.get("demo-cp-0").unwrap().as_mapping().unwrap();
    let keys: Vec<&str> = cp0.keys().filter_map(Value::as_str).collect();
    assert_eq!(keys, RESERVATION_VARIABLES);
    let v = |k: &str| cp0.get(k).and_then(Value::as_str).unwrap_or_default();
    assert_eq!(v("kube_cpu_reserved"), "250m", "the override wins");
    assert_eq!(v("kube_memory_reserved"), "1024Mi");
    assert_eq!(v("kube_ephemeral_storage_reserved"), "500Mi");
    assert_eq!(v("system_cpu_reserved"), "200m");
    assert_eq!(v("system_memory_reserved"), "204Mi");
    assert_eq!(v("system_ephemeral_storage_reserved"), "500Mi");
}

#[test]
fn rendering_is_byte_identical_whatever_the_input_order() {
    let a = full();
    let mut b = full();
    b.hosts.reverse();
    b.cilium_security_group_ids = Some(vec!["sg-b".into(), "sg-a".into()]);
    let first = render_vars(&a).unwrap();
    assert_eq!(first, render_vars(&a).unwrap());
    assert_eq!(first, render_vars(&b).unwrap());
}

#[test]
fn unknown_values_are_omitted_not_null() {
    let text = render_vars(&ClusterFacts::new()).unwrap();
    assert_eq!(text, "{}\n");
    let mut facts = ClusterFacts::new();
    facts.hosts.push(HostFacts {
        reserved: Some(ReservedResources::default()),
        ..host("w", Role::Worker, "10.0.0.1")
    });
    assert!(!render_vars(&facts).unwrap().contains("node_resources"));
}

#[test]
fn ingress_is_only_rendered_when_requested() {
    let mut facts = full();
    facts.ingress_requested = false;
    let vars = parsed(&facts);
    assert!(!vars.contains_key("ingress_virtual_vip"));
    assert!(!vars.contains_key("harbor_addr"));
}

#[test]
fn strings_that_yaml_would_retype_stay_strings() {
    let mut facts = ClusterFacts::new();
    facts.openstack.project = Some("true".into());
    facts.openstack.region = Some("1.10".into());
    facts.openstack.project_domain = Some("null".into());
    let vars = parsed(&facts);
    assert_eq!(get(&vars, "openstack_project_name").as_str(), Some("true"));
    assert_eq!(get(&vars, "openstack_region_name").as_str(), Some("1.10"));
    assert_eq!(
        get(&vars, "openstack_project_domain_name").as_str(),
        Some("null")
    );
}

#[test]
fn nothing_unresolved_when_everything_is_known() {
    assert_eq!(unresolved(&full()), Vec::<(String, String)>::new());
}

#[test]
fn unresolved_lists_provider_values_with_reasons() {
    let mut facts = ClusterFacts::new();
    facts.hosts.push(HostFacts {
        reserved: None,
        ..host("demo-md-0", Role::Worker, "10.0.0.1")
    });
    let names: Vec<String> = unresolved(&facts).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "cilium_openstack_project_id",
            "cilium_openstack_default_subnet_id",
            "cilium_openstack_security_group_ids",
            "vpc_cni_webhook_enable",
            "master_virtual_vip",
            "cloud_master_vip",
            "openstack_auth_domain",
            "openstack_cinder_domain",
            "openstack_nova_domain",
            "openstack_neutron_domain",
            "openstack_project_name",
            "openstack_project_domain_name",
            "openstack_region_name",
            "ntp_server",
            "vip_mgmt",
            "node_resources.demo-md-0",
        ]
    );
    for (name, reason) in unresolved(&facts) {
        assert!(!reason.is_empty(), "{name}");
    }
}

#[test]
fn user_choices_are_never_unresolved() {
    let mut facts = full();
    facts.kube_network_plugin = None;
    facts.flannel_interface = None;
    for h in &mut facts.hosts {
        h.keepalived_interface = None;
    }
    assert!(unresolved(&facts).is_empty());
}

#[test]
fn ingress_is_unresolved_only_when_requested() {
    let mut facts = full();
    facts.ingress_vip = None;
    let names: Vec<String> = unresolved(&facts).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["ingress_virtual_vip", "harbor_addr"]);
    facts.ingress_requested = false;
    assert!(unresolved(&facts).is_empty());
}

#[test]
fn reasons_explain_a_missing_bastion() {
    let mut facts = full();
    facts.ntp_server = None;
    facts.management_vip = None;
    facts.bastion = None;
    let reasons = unresolved(&facts);
    assert_eq!(reasons.len(), 2);
    assert!(reasons.iter().all(|(_, r)| r.contains("bastion")));
    facts.bastion = Some(BastionFacts {
        address: "203.0.113.5".into(),
        user: "ubuntu".into(),
    });
    assert!(
        unresolved(&facts)
            .iter()
            .all(|(_, r)| r.contains("not derived"))
    );
}

#[test]
fn golden_layout() {
    let mut facts = full();
    facts.hosts.truncate(1);
    let expected = "\
kube_network_plugin: cilium
cilium_openstack_project_id: 7a1c2b3d4e5f
cilium_openstack_default_subnet_id: subnet-1
cilium_openstack_security_group_ids:
- sg-b
- sg-a
vpc_cni_webhook_enable: true
master_virtual_vip: 10.6.0.5
ingress_virtual_vip: 10.6.0.6
harbor_addr: 10.6.0.6
cloud_master_vip: cloud.example.com
openstack_auth_domain: keystone.example.com
openstack_cinder_domain: cinder.example.com
openstack_nova_domain: nova.example.com
openstack_neutron_domain: neutron.example.com
openstack_project_name: demo-project
openstack_project_domain_name: Default
openstack_region_name: RegionOne
ntp_server: 10.6.0.2
vip_mgmt: 203.0.113.5
flannel_interface: eth1
node_resources:
  demo-md-1:
    kube_cpu_reserved: 100m
    kube_memory_reserved: 1843Mi
    kube_ephemeral_storage_reserved: 500Mi
    system_cpu_reserved: 400m
    system_memory_reserved: 409Mi
    system_ephemeral_storage_reserved: 500Mi
";
    assert_eq!(render_vars(&facts).unwrap(), expected);
}

/// Every expected variable is either rendered or reported, never both, never neither.
#[test]
fn rendered_and_unresolved_partition_the_expected_variables() {
    let user_choices = ["kube_network_plugin", "flannel_interface"];
    let mut half = full();
    half.cilium_project_id = None;
    half.cilium_security_group_ids = None;
    half.ingress_vip = None;
    half.openstack.hosts.nova = None;
    half.openstack.region = None;
    half.ntp_server = None;
    let mut empty = ClusterFacts::new();
    empty.ingress_requested = true;
    for facts in [full(), half, empty] {
        let vars = parsed(&facts);
        let missing: Vec<String> = unresolved(&facts).into_iter().map(|(n, _)| n).collect();
        for name in CLUSTER_VARIABLES
            .iter()
            .filter(|n| !user_choices.contains(n))
        {
            let rendered = vars.contains_key(*name);
            let reported = missing.iter().any(|m| m == name);
            assert!(
                rendered != reported,
                "{name}: rendered {rendered}, reported {reported}"
            );
        }
    }
}

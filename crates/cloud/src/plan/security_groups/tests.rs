use super::*;
use capo_api::v1beta1::{APIServerLoadBalancer, Bastion, ManagedSecurityGroups};

fn ids(bastion: bool) -> GroupIds {
    GroupIds {
        control_plane: "cp".into(),
        worker: "wk".into(),
        bastion: bastion.then(|| "ba".into()),
    }
}

fn spec() -> OpenStackClusterSpec {
    OpenStackClusterSpec {
        managed_security_groups: Some(ManagedSecurityGroups::default()),
        ..Default::default()
    }
}

fn has(
    rules: &[DesiredRule],
    proto: Option<&str>,
    ports: (u16, u16),
    group: Option<&str>,
    prefix: Option<&str>,
) -> bool {
    let key = RuleKey::new(
        "ingress",
        "IPv4",
        proto,
        (Some(ports.0), Some(ports.1)),
        group,
        prefix,
    );
    rules.iter().any(|r| r.key == key)
}

#[test]
fn default_layout_matches_upstream() {
    let g = desired_rules(&spec(), &ids(false), Some("10.6.0.0/24")).unwrap();
    // CP: 2 egress + API + etcd + 2 kubelet.
    assert_eq!(g.control_plane.len(), 6);
    assert!(has(&g.control_plane, Some("tcp"), (6443, 6443), None, None));
    assert!(has(
        &g.control_plane,
        Some("tcp"),
        (2379, 2380),
        Some("cp"),
        None
    ));
    assert!(has(
        &g.control_plane,
        Some("tcp"),
        (10250, 10250),
        Some("cp"),
        None
    ));
    assert!(has(
        &g.control_plane,
        Some("tcp"),
        (10250, 10250),
        Some("wk"),
        None
    ));
    // Worker: 2 egress + 6 NodePort + 2 kubelet.
    assert_eq!(g.worker.len(), 10);
    for proto in ["tcp", "udp"] {
        assert!(has(
            &g.worker,
            Some(proto),
            (30000, 32767),
            Some("wk"),
            None
        ));
        assert!(has(
            &g.worker,
            Some(proto),
            (30000, 32767),
            Some("cp"),
            None
        ));
        assert!(has(
            &g.worker,
            Some(proto),
            (30000, 32767),
            None,
            Some("10.6.0.0/24")
        ));
    }
    assert!(g.bastion.is_none());
    let egress = RuleKey::new("egress", "IPv6", None, (None, None), None, None);
    assert!(g.worker.iter().any(|r| r.key == egress));
}

#[test]
fn api_rule_follows_api_server_port_and_lb_ports() {
    let mut s = spec();
    s.api_server_port = Some(8443);
    s.api_server_load_balancer = Some(APIServerLoadBalancer {
        enabled: true,
        additional_ports: vec![9345, 80],
        ..Default::default()
    });
    let g = desired_rules(&s, &ids(false), None).unwrap();
    assert!(has(&g.control_plane, Some("tcp"), (8443, 8443), None, None));
    assert!(!has(
        &g.control_plane,
        Some("tcp"),
        (6443, 6443),
        None,
        None
    ));
    // One rule per additional port.
    assert!(has(&g.control_plane, Some("tcp"), (9345, 9345), None, None));
    assert!(has(&g.control_plane, Some("tcp"), (80, 80), None, None));
    assert_eq!(g.control_plane.len(), 2 + 1 + 2 + 3);
    // Without an IPv4 subnet CIDR the CIDR NodePort rules are omitted.
    assert_eq!(g.worker.len(), 8);
}

#[test]
fn allow_all_and_bastion() {
    let mut s = spec();
    s.managed_security_groups = Some(ManagedSecurityGroups {
        allow_all_in_cluster_traffic: true,
        ..Default::default()
    });
    s.bastion = Some(Bastion::default());
    let g = desired_rules(&s, &ids(true), None).unwrap();
    let any = |group: &str| RuleKey::new("ingress", "IPv4", None, (None, None), Some(group), None);
    assert!(g.control_plane.iter().any(|r| r.key == any("cp")));
    assert!(g.control_plane.iter().any(|r| r.key == any("wk")));
    assert!(g.worker.iter().any(|r| r.key == any("cp")));
    assert!(!has(
        &g.control_plane,
        Some("tcp"),
        (2379, 2380),
        Some("cp"),
        None
    ));
    assert!(has(
        &g.control_plane,
        Some("tcp"),
        (22, 22),
        Some("ba"),
        None
    ));
    assert!(has(&g.worker, Some("tcp"), (22, 22), Some("ba"), None));
    let b = g.bastion.unwrap();
    assert_eq!(b.len(), 3);
    assert!(has(&b, Some("tcp"), (22, 22), None, None));
    assert_eq!(desired_groups(&s, "ns", "c").len(), 3);
    s.bastion = Some(Bastion {
        enabled: Some(false),
        ..Default::default()
    });
    assert_eq!(desired_groups(&s, "ns", "c").len(), 2);
}

#[test]
fn user_rules_expand_remote_managed_groups() {
    let mut s = spec();
    let rule = SecurityGroupRuleSpec {
        description: None,
        direction: RuleDirection::Ingress,
        ether_type: None,
        name: "bgp".into(),
        port_range_max: Some(179),
        port_range_min: Some(179),
        protocol: Some("tcp".into()),
        remote_group_id: None,
        remote_ip_prefix: None,
        remote_managed_groups: vec![
            ManagedSecurityGroupName::Controlplane,
            ManagedSecurityGroupName::Worker,
        ],
    };
    s.managed_security_groups = Some(ManagedSecurityGroups {
        all_nodes_security_group_rules: vec![rule.clone()],
        ..Default::default()
    });
    let g = desired_rules(&s, &ids(false), None).unwrap();
    for rules in [&g.control_plane, &g.worker] {
        assert!(has(rules, Some("tcp"), (179, 179), Some("cp"), None));
        assert!(has(rules, Some("tcp"), (179, 179), Some("wk"), None));
    }
    // The bastion group cannot be referenced while the bastion is disabled.
    let mut bad = rule.clone();
    bad.remote_managed_groups = vec![ManagedSecurityGroupName::Bastion];
    s.managed_security_groups = Some(ManagedSecurityGroups {
        worker_nodes_security_group_rules: vec![bad],
        ..Default::default()
    });
    assert!(matches!(
        desired_rules(&s, &ids(false), None),
        Err(Error::InvalidSpec(_))
    ));
    // Remote fields are mutually exclusive.
    let mut both = rule;
    both.remote_ip_prefix = Some("10.0.0.0/8".into());
    s.managed_security_groups = Some(ManagedSecurityGroups {
        control_plane_nodes_security_group_rules: vec![both],
        ..Default::default()
    });
    assert!(desired_rules(&s, &ids(false), None).is_err());
}

fn tcp_rule(name: &str, port: i32) -> SecurityGroupRuleSpec {
    SecurityGroupRuleSpec {
        description: None,
        direction: RuleDirection::Ingress,
        ether_type: None,
        name: name.into(),
        port_range_max: Some(port),
        port_range_min: Some(port),
        protocol: Some("tcp".into()),
        remote_group_id: None,
        remote_ip_prefix: None,
        remote_managed_groups: vec![],
    }
}

#[test]
fn rule_lists_land_on_their_groups_in_upstreams_numbers() {
    use ManagedSecurityGroupName::{Bastion as B, Controlplane as Cp, Worker as Wk};
    // No subnet CIDR known: 6 control-plane and 8 worker rules, 14 as upstream counts them.
    let plain = desired_rules(&spec(), &ids(false), None).unwrap();
    assert_eq!(plain.control_plane.len() + plain.worker.len(), 14);

    // All nodes: SSH from both groups (2 rules on each group); control plane: 9000 from
    // itself; workers: NodePorts from anywhere (0.0.0.0/0 is "any address").
    let mut s = spec();
    let mut ssh = tcp_rule("ssh", 22);
    ssh.remote_managed_groups = vec![Cp, Wk];
    let mut cp_only = tcp_rule("cp", 9000);
    cp_only.remote_managed_groups = vec![Cp];
    let mut node_ports = tcp_rule("np", 30000);
    node_ports.port_range_max = Some(32767);
    node_ports.remote_ip_prefix = Some("0.0.0.0/0".into());
    s.managed_security_groups = Some(ManagedSecurityGroups {
        all_nodes_security_group_rules: vec![ssh],
        control_plane_nodes_security_group_rules: vec![cp_only],
        worker_nodes_security_group_rules: vec![node_ports],
        ..Default::default()
    });
    let g = desired_rules(&s, &ids(false), None).unwrap();
    assert_eq!(g.control_plane.len() + g.worker.len(), 20);
    for rules in [&g.control_plane, &g.worker] {
        assert!(has(rules, Some("tcp"), (22, 22), Some("cp"), None));
        assert!(has(rules, Some("tcp"), (22, 22), Some("wk"), None));
    }
    assert!(has(
        &g.control_plane,
        Some("tcp"),
        (9000, 9000),
        Some("cp"),
        None
    ));
    assert!(!has(&g.worker, Some("tcp"), (9000, 9000), Some("cp"), None));
    assert!(has(&g.worker, Some("tcp"), (30000, 32767), None, None));

    // A rule without any remote: from anywhere; one naming a prefix: from that prefix.
    let mut prefixed = tcp_rule("p", 8080);
    prefixed.remote_ip_prefix = Some("10.0.0.0/8".into());
    s.managed_security_groups = Some(ManagedSecurityGroups {
        worker_nodes_security_group_rules: vec![tcp_rule("any", 22), prefixed],
        ..Default::default()
    });
    let g = desired_rules(&s, &ids(false), None).unwrap();
    assert!(has(&g.worker, Some("tcp"), (22, 22), None, None));
    assert!(has(
        &g.worker,
        Some("tcp"),
        (8080, 8080),
        None,
        Some("10.0.0.0/8")
    ));

    // With the bastion enabled, a rule may name all three groups: one rule per group.
    let mut all = tcp_rule("all", 9100);
    all.remote_managed_groups = vec![Cp, Wk, B];
    s.bastion = Some(Bastion::default());
    s.managed_security_groups = Some(ManagedSecurityGroups {
        worker_nodes_security_group_rules: vec![all],
        ..Default::default()
    });
    let g = desired_rules(&s, &ids(true), None).unwrap();
    for group in ["cp", "wk", "ba"] {
        assert!(has(&g.worker, Some("tcp"), (9100, 9100), Some(group), None));
    }
}

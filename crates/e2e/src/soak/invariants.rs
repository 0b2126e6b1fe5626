//! What one cluster's project on capo-sim must hold once a step has settled, given the
//! cluster's objects: one network, subnet, router, API load balancer (with its floating IP,
//! listener, pool and health monitor) and the two managed security groups; one server per
//! OpenStackMachine, named after it, with one port; one pool member per control-plane machine. Anything more is a leak (nothing describes it) or a duplicate (two resources for one
//! object); anything less means the step has not settled yet.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Collections whose items are not per-cluster resources of their own (the scenario's key
/// pair, the rules inside security groups) or are checked item by item below.
const SKIPPED: [&str; 5] = [
    "keypairs",
    "security_group_rules",
    "servers",
    "ports",
    "members",
];

/// How many of each collection a settled cluster of the default template holds (default
/// security group excluded); collections not named hold none.
const EXPECTED: [(&str, usize); 9] = [
    ("networks", 1),
    ("subnets", 1),
    ("routers", 1),
    ("security_groups", 2),
    ("loadbalancers", 1),
    ("listeners", 1),
    ("pools", 1),
    ("healthmonitors", 1),
    ("floatingips", 1),
];

/// Ports that belong to no server, by owner: the router's interface on the cluster subnet and
/// the load balancer's VIP port.
const OWNED_PORTS: [(&str, usize); 2] = [("network:router_interface", 1), ("Octavia", 1)];

/// Part of every control-plane machine's name (`<cluster>-control-plane-<suffix>`, the
/// template's KubeadmControlPlane).
const CONTROL_PLANE: &str = "-control-plane-";

/// What a check found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Findings {
    /// Resources no object describes.
    pub leaks: Vec<String>,
    /// Two or more resources for one object.
    pub duplicates: Vec<String>,
    /// Resources the objects describe that do not exist (yet).
    pub missing: Vec<String>,
}

impl Findings {
    /// True when the cloud holds exactly what the objects describe.
    pub fn exact(&self) -> bool {
        self.leaks.is_empty() && self.duplicates.is_empty() && self.missing.is_empty()
    }
}

fn name(item: &Value) -> &str {
    item["name"].as_str().unwrap_or_default()
}

fn id(item: &Value) -> &str {
    item["id"].as_str().unwrap_or_default()
}

/// Checks a project's `resources` (by collection, the project's default security group already
/// left out) against the names of the cluster's OpenStackMachines.
pub fn check(resources: &BTreeMap<String, Vec<Value>>, machines: &BTreeSet<String>) -> Findings {
    let mut f = Findings::default();
    let empty = Vec::new();
    let servers = resources.get("servers").unwrap_or(&empty);
    let ports = resources.get("ports").unwrap_or(&empty);

    let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in servers {
        by_name.entry(name(s)).or_default().push(id(s));
    }
    for (server, ids) in &by_name {
        if !machines.contains(*server) {
            f.leaks.push(format!(
                "server {server} ({}) of no OpenStackMachine",
                ids.join(", ")
            ));
        } else if ids.len() > 1 {
            f.duplicates.push(format!(
                "{} servers named {server}: {}",
                ids.len(),
                ids.join(", ")
            ));
        }
    }
    for m in machines {
        if !by_name.contains_key(m.as_str()) {
            f.missing.push(format!("server {m}"));
        }
    }

    let server_ids: BTreeSet<&str> = servers.iter().map(id).collect();
    let mut ports_of: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut port_names: BTreeMap<&str, usize> = BTreeMap::new();
    let mut owned: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for p in ports {
        let owner = p["device_owner"].as_str().unwrap_or_default();
        let device = p["device_id"].as_str().unwrap_or_default();
        let label = format!("port {} ({})", name(p), id(p));
        if owner.starts_with("compute:") || server_ids.contains(device) {
            if server_ids.contains(device) {
                ports_of.entry(device).or_default().push(label);
            } else {
                f.leaks.push(format!("{label} of deleted server {device}"));
            }
        } else if owner.is_empty() && device.is_empty() {
            // capo creates a machine's port before its server: a detached port is one whose
            // server was never created or is gone.
            f.leaks.push(format!("{label} attached to nothing"));
        } else {
            owned.entry(owner).or_default().push(label);
        }
        if !name(p).is_empty() {
            *port_names.entry(name(p)).or_default() += 1;
        }
    }
    for (server, list) in &ports_of {
        if list.len() > 1 {
            f.duplicates.push(format!(
                "server {server} has {} ports: {}",
                list.len(),
                list.join(", ")
            ));
        }
    }
    for (owner, want) in OWNED_PORTS {
        let list = owned.get(owner).map_or(&[][..], Vec::as_slice);
        if list.len() > want {
            f.leaks.push(format!(
                "{} {owner} ports where {want} expected: {}",
                list.len(),
                list.join(", ")
            ));
        } else if list.len() < want {
            f.missing
                .push(format!("{owner} ports: {} of {want}", list.len()));
        }
    }
    for (port, n) in port_names {
        if n > 1 {
            f.duplicates.push(format!("{n} ports named {port}"));
        }
    }

    // capo names a member `<pool>-<machine>`.
    let mut members_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for member in resources.get("members").unwrap_or(&empty) {
        let n = name(member);
        match machines.iter().find(|m| n.ends_with(&format!("-{m}"))) {
            Some(m) => members_of.entry(m.as_str()).or_default().push(id(member)),
            None => f
                .leaks
                .push(format!("pool member {n} ({}) of no machine", id(member))),
        }
    }
    for m in machines.iter().filter(|m| m.contains(CONTROL_PLANE)) {
        match members_of.get(m.as_str()).map_or(0, Vec::len) {
            0 => f.missing.push(format!("pool member for {m}")),
            1 => {}
            n => f.duplicates.push(format!(
                "{n} pool members for {m}: {}",
                members_of[m.as_str()].join(", ")
            )),
        }
    }
    for (m, ids) in &members_of {
        if !m.contains(CONTROL_PLANE) {
            f.leaks
                .push(format!("pool member for worker {m}: {}", ids.join(", ")));
        }
    }

    let expected: BTreeMap<&str, usize> = EXPECTED.into_iter().collect();
    for (collection, items) in resources {
        if SKIPPED.contains(&collection.as_str()) {
            continue;
        }
        let mut names: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for item in items {
            names.entry(name(item)).or_default().push(id(item));
        }
        let mut duplicated = false;
        for (n, ids) in &names {
            if !n.is_empty() && ids.len() > 1 {
                duplicated = true;
                f.duplicates.push(format!(
                    "{} {collection} named {n}: {}",
                    ids.len(),
                    ids.join(", ")
                ));
            }
        }
        let want = expected.get(collection.as_str()).copied().unwrap_or(0);
        if items.len() > want && !duplicated {
            let all: Vec<String> = items
                .iter()
                .map(|i| format!("{} ({})", name(i), id(i)))
                .collect();
            f.leaks.push(format!(
                "{} {collection} where {want} expected: {}",
                items.len(),
                all.join(", ")
            ));
        } else if items.len() < want {
            f.missing
                .push(format!("{collection}: {} of {want}", items.len()));
        }
    }
    for (collection, want) in EXPECTED {
        if !resources.contains_key(collection) {
            f.missing.push(format!("{collection}: 0 of {want}"));
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settled(servers: Vec<Value>, ports: Vec<Value>) -> BTreeMap<String, Vec<Value>> {
        let mut r: BTreeMap<String, Vec<Value>> = EXPECTED
            .iter()
            .map(|(c, n)| {
                let items = (0..*n)
                    .map(|i| json!({"id": format!("{c}-{i}"), "name": format!("{c}-{i}")}))
                    .collect();
                (c.to_string(), items)
            })
            .collect();
        let mut ports = ports;
        for (owner, _) in OWNED_PORTS {
            ports.push(json!({"id": owner, "name": "", "device_id": "x", "device_owner": owner}));
        }
        r.insert("servers".into(), servers);
        r.insert("ports".into(), ports);
        r
    }

    fn machines(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn server(id: &str, name: &str) -> Value {
        json!({"id": id, "name": name})
    }

    fn port(id: &str, name: &str, device: &str) -> Value {
        let owner = if device.is_empty() {
            ""
        } else {
            "compute:nova"
        };
        json!({"id": id, "name": name, "device_id": device, "device_owner": owner})
    }

    #[test]
    fn exact_state_passes() {
        let r = settled(
            vec![server("s1", "m1"), server("s2", "m2")],
            vec![port("p1", "m1-0", "s1"), port("p2", "m2-0", "s2")],
        );
        assert_eq!(check(&r, &machines(&["m1", "m2"])), Findings::default());
    }

    #[test]
    fn a_second_server_for_one_machine_is_a_duplicate() {
        let r = settled(
            vec![server("s1", "m1"), server("s2", "m1")],
            vec![port("p1", "m1-0", "s1")],
        );
        let f = check(&r, &machines(&["m1"]));
        assert_eq!(f.duplicates, vec!["2 servers named m1: s1, s2".to_owned()]);
        assert!(f.leaks.is_empty());
    }

    #[test]
    fn a_server_of_a_deleted_machine_and_a_detached_port_are_leaks() {
        let r = settled(
            vec![server("s1", "m1"), server("s9", "gone")],
            vec![port("p1", "m1-0", "s1"), port("p9", "gone-0", "")],
        );
        let f = check(&r, &machines(&["m1"]));
        assert_eq!(f.leaks.len(), 2, "{f:?}");
        assert!(f.duplicates.is_empty());
    }

    #[test]
    fn an_extra_network_is_a_leak_and_a_same_named_one_a_duplicate() {
        let mut r = settled(vec![], vec![]);
        r.entry("networks".into())
            .or_default()
            .push(json!({"id": "n2", "name": "other"}));
        r.entry("routers".into())
            .or_default()
            .push(json!({"id": "r2", "name": "routers-0"}));
        let f = check(&r, &machines(&[]));
        assert_eq!(f.leaks.len(), 1, "{f:?}");
        assert_eq!(f.duplicates.len(), 1, "{f:?}");
    }

    #[test]
    fn one_pool_member_per_control_plane_machine() {
        let cp = "c-control-plane-x";
        let mut r = settled(vec![server("s1", cp)], vec![port("p1", "p", "s1")]);
        let member = |id: &str, m: &str| json!({"id": id, "name": format!("pool-{m}")});
        r.insert("members".into(), vec![member("a", cp)]);
        assert!(check(&r, &machines(&[cp])).exact());
        r.insert("members".into(), vec![member("a", cp), member("b", "gone")]);
        assert_eq!(check(&r, &machines(&[cp])).leaks.len(), 1);
        r.insert("members".into(), vec![]);
        assert!(!check(&r, &machines(&[cp])).exact());
    }

    #[test]
    fn a_second_vip_port_is_a_leak() {
        let mut r = settled(vec![], vec![]);
        r.entry("ports".into())
            .or_default()
            .push(json!({"id": "v2", "name": "", "device_id": "lb-2", "device_owner": "Octavia"}));
        assert_eq!(check(&r, &machines(&[])).leaks.len(), 1);
    }

    #[test]
    fn a_machine_without_its_server_is_not_settled() {
        let r = settled(vec![], vec![]);
        let f = check(&r, &machines(&["m1"]));
        assert_eq!(f.missing, vec!["server m1".to_owned()]);
        assert!(!f.exact());
    }
}

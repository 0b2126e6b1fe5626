//! Progress lines: facts read from the objects' status (Cluster API's replicas, phases and node
//! names; capo's resource IDs, addresses, conditions), each printed once when it appears or
//! changes, and once more when its object is gone.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Instant;

use serde_json::Value;

/// Prints `[  12.3s] text` lines on stdout; remembers facts to print only changes, and the
/// objects seen to print their disappearance.
#[derive(Debug)]
pub struct Printer {
    start: Instant,
    facts: BTreeMap<String, String>,
    seen: BTreeMap<String, BTreeSet<String>>,
}

impl Printer {
    /// A printer whose clock starts now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            facts: BTreeMap::new(),
            seen: BTreeMap::new(),
        }
    }

    /// Print one line (a closed stdout is ignored: the demo goes on and tears down).
    pub fn line(&self, text: impl AsRef<str>) {
        let secs = self.start.elapsed().as_secs_f64();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "[{secs:7.1}s] {}", text.as_ref());
        let _ = out.flush();
    }

    /// Print text as is (summaries, the inventory).
    pub fn raw(&self, text: impl AsRef<str>) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", text.as_ref());
        let _ = out.flush();
    }

    /// Print each fact whose text is new or changed.
    pub fn facts(&mut self, facts: Vec<(String, String)>) {
        for (key, text) in facts {
            if self.facts.get(&key) != Some(&text) {
                self.line(&text);
                self.facts.insert(key, text);
            }
        }
    }

    /// The objects of `kind` listed just now: prints `<kind> <name>: deleted` for each one seen
    /// before and missing now, and forgets its facts (a new object of the same name starts
    /// afresh).
    pub fn present(&mut self, kind: &str, names: BTreeSet<String>) {
        let before = self.seen.insert(kind.to_owned(), names.clone());
        for gone in before.unwrap_or_default().difference(&names) {
            let prefix = format!("{kind} {gone}/");
            self.facts.retain(|k, _| !k.starts_with(&prefix));
            self.line(format!("{kind} {gone}: deleted"));
        }
    }
}

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Condition lines: `<kind> <name>: <Type>=<Status> (<reason>)`, one fact per condition type
/// (only the types in `only`, when given).
fn conditions(prefix: &str, obj: &Value, only: Option<&[&str]>) -> Vec<(String, String)> {
    let list = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter()
        .filter_map(|c| {
            let ty = s(c, &["type"])?;
            if only.is_some_and(|o| !o.contains(&ty)) {
                return None;
            }
            let status = s(c, &["status"]).unwrap_or("Unknown");
            let text = match (status, s(c, &["reason"])) {
                ("True", _) | (_, None) => format!("{prefix}: {ty}={status}"),
                (_, Some(reason)) => format!("{prefix}: {ty}={status} ({reason})"),
            };
            Some((format!("{prefix}/cond/{ty}"), text))
        })
        .collect()
}

/// Facts of an OpenStackCluster: network, subnet, router, security groups, load balancer,
/// endpoint, failure domains, BA/ACP extension status, conditions (readiness among them).
pub fn cluster_facts(osc: &Value) -> Vec<(String, String)> {
    let name = s(osc, &["metadata", "name"]).unwrap_or("?");
    let p = format!("OpenStackCluster {name}");
    let st = &osc["status"];
    let mut out = Vec::new();
    let mut fact = |key: &str, text: Option<String>| {
        if let Some(text) = text {
            out.push((format!("{p}/{key}"), format!("{p}: {text}")));
        }
    };
    fact(
        "network",
        s(st, &["network", "id"]).map(|id| {
            let n = s(st, &["network", "name"]).unwrap_or("");
            format!("network {n} ({})", short(id))
        }),
    );
    fact(
        "subnet",
        st["network"]["subnets"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|sn| s(sn, &["cidr"]))
            .map(|c| format!("subnet {c}")),
    );
    fact(
        "router",
        s(st, &["router", "id"]).map(|id| {
            let ips = st["router"]["ips"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            format!("router {} (external IP {ips})", short(id))
        }),
    );
    fact("sgs", security_groups(st));
    fact("lb", load_balancer(st));
    fact(
        "endpoint",
        s(osc, &["spec", "controlPlaneEndpoint", "host"]).map(|h| {
            let port = osc["spec"]["controlPlaneEndpoint"]["port"]
                .as_i64()
                .unwrap_or(6443);
            format!("control-plane endpoint https://{h}:{port}")
        }),
    );
    fact("fd", failure_domains(st));
    fact("ext", extension_status(st));
    out.extend(conditions(&p, osc, None));
    out
}

fn security_groups(st: &Value) -> Option<String> {
    let names: Vec<&str> = [
        "controlPlaneSecurityGroup",
        "workerSecurityGroup",
        "bastionSecurityGroup",
    ]
    .iter()
    .filter_map(|k| s(st, &[k, "name"]))
    .collect();
    (!names.is_empty()).then(|| format!("security groups {}", names.join(", ")))
}

fn load_balancer(st: &Value) -> Option<String> {
    let lb = &st["apiServerLoadBalancer"];
    let id = s(lb, &["id"])?;
    let vip = s(lb, &["internalIP"]).unwrap_or("-");
    let fip = s(lb, &["ip"]).unwrap_or("-");
    Some(format!(
        "API load balancer {} ({}), VIP {vip}, floating IP {fip}",
        s(lb, &["name"]).unwrap_or(""),
        short(id)
    ))
}

fn failure_domains(st: &Value) -> Option<String> {
    let fd = st["failureDomains"].as_object()?;
    (!fd.is_empty()).then(|| {
        format!(
            "failure domains {}",
            fd.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    })
}

/// The BA/ACP variables the provider published in `status.extensions`, as `name=value`.
fn extension_status(st: &Value) -> Option<String> {
    let ext = &st["extensions"];
    let pairs = [
        (
            "master_virtual_vip",
            s(ext, &["loadBalancers", "controlPlane", "vip"]),
        ),
        ("cloud_master_vip", s(ext, &["openStack", "mgmt"])),
        ("openstack_project_name", s(ext, &["openStack", "project"])),
        (
            "cilium_openstack_default_subnet_id",
            s(ext, &["networking", "cilium", "defaultSubnetID"]).map(short),
        ),
        ("ntp_server", s(ext, &["platform", "ntp", "server"])),
    ];
    let set: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
        .collect();
    (!set.is_empty()).then(|| format!("extension status {}", set.join(" ")))
}

/// Facts of one OpenStackMachine: server state, addresses, conditions (readiness among them; the
/// providerID is printed with its Machine).
pub fn machine_facts(osm: &Value) -> Vec<(String, String)> {
    let name = s(osm, &["metadata", "name"]).unwrap_or("?");
    let p = format!("OpenStackMachine {name}");
    let st = &osm["status"];
    let mut out = Vec::new();
    if let Some(state) = s(st, &["instanceState"]) {
        out.push((format!("{p}/state"), format!("{p}: server {state}")));
    }
    let addrs = ip_addresses(osm);
    if !addrs.is_empty() {
        out.push((
            format!("{p}/addr"),
            format!("{p}: addresses {}", addrs.join(", ")),
        ));
    }
    out.extend(conditions(&p, osm, None));
    out
}

/// The machine's IP addresses (`status.addresses` without the DNS names).
pub fn ip_addresses(osm: &Value) -> Vec<&str> {
    osm["status"]["addresses"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|x| matches!(s(x, &["type"]), Some("InternalIP" | "ExternalIP")))
                .filter_map(|x| s(x, &["address"]))
                .collect()
        })
        .unwrap_or_default()
}

/// The Cluster conditions worth a line each: how Cluster API sees the cluster come up.
const CLUSTER_CONDITIONS: [&str; 5] = [
    "InfrastructureReady",
    "ControlPlaneInitialized",
    "ControlPlaneAvailable",
    "WorkersAvailable",
    "Available",
];

/// Facts of a Cluster API Cluster: its phase and its main conditions.
pub fn capi_cluster_facts(cluster: &Value) -> Vec<(String, String)> {
    let name = s(cluster, &["metadata", "name"]).unwrap_or("?");
    let p = format!("Cluster {name}");
    let mut out = Vec::new();
    if let Some(phase) = s(cluster, &["status", "phase"]) {
        out.push((format!("{p}/phase"), format!("{p}: phase {phase}")));
    }
    out.extend(conditions(&p, cluster, Some(&CLUSTER_CONDITIONS)));
    out
}

/// `<ready>/<desired> replicas ready (<n> exist, <u> up to date, <a> available)`, from the
/// v1beta2 status of a KubeadmControlPlane or MachineDeployment.
fn replicas(obj: &Value) -> Option<String> {
    let st = &obj["status"];
    let n = st["replicas"].as_i64()?;
    let want = obj["spec"]["replicas"].as_i64().unwrap_or(n);
    let count = |k: &str| st[k].as_i64().unwrap_or(0);
    Some(format!(
        "{}/{want} replicas ready ({n} exist, {} up to date, {} available)",
        count("readyReplicas"),
        count("upToDateReplicas"),
        count("availableReplicas"),
    ))
}

/// Facts of a KubeadmControlPlane: replicas and whether the control plane is initialized.
pub fn kcp_facts(kcp: &Value) -> Vec<(String, String)> {
    let name = s(kcp, &["metadata", "name"]).unwrap_or("?");
    let p = format!("KubeadmControlPlane {name}");
    let mut out = Vec::new();
    if let Some(r) = replicas(kcp) {
        out.push((format!("{p}/replicas"), format!("{p}: {r}")));
    }
    if kcp["status"]["initialization"]["controlPlaneInitialized"].as_bool() == Some(true) {
        out.push((
            format!("{p}/initialized"),
            format!("{p}: control plane initialized"),
        ));
    }
    out
}

/// Facts of a MachineDeployment: replicas and phase.
pub fn machine_deployment_facts(md: &Value) -> Vec<(String, String)> {
    let name = s(md, &["metadata", "name"]).unwrap_or("?");
    let p = format!("MachineDeployment {name}");
    let mut out = Vec::new();
    if let Some(r) = replicas(md) {
        out.push((format!("{p}/replicas"), format!("{p}: {r}")));
    }
    if let Some(phase) = s(md, &["status", "phase"]) {
        out.push((format!("{p}/phase"), format!("{p}: phase {phase}")));
    }
    out
}

/// Whether a Machine belongs to the control plane (Cluster API's label).
pub fn is_control_plane(machine: &Value) -> bool {
    machine["metadata"]["labels"]
        .get("cluster.x-k8s.io/control-plane")
        .is_some()
}

/// Facts of a Cluster API Machine: its phase with its node, and its providerID.
pub fn capi_machine_facts(machine: &Value) -> Vec<(String, String)> {
    let name = s(machine, &["metadata", "name"]).unwrap_or("?");
    let p = format!("Machine {name}");
    let role = if is_control_plane(machine) {
        "control plane"
    } else {
        "worker"
    };
    let mut out = Vec::new();
    if let Some(phase) = s(machine, &["status", "phase"]) {
        let node = s(machine, &["status", "nodeRef", "name"])
            .map(|n| format!(", node {n}"))
            .unwrap_or_default();
        out.push((format!("{p}/phase"), format!("{p} ({role}): {phase}{node}")));
    }
    if let Some(pid) = s(machine, &["spec", "providerID"]) {
        out.push((format!("{p}/pid"), format!("{p}: providerID {pid}")));
    }
    out
}

/// The reasons an object is not Ready yet (False/Unknown conditions), for timeout messages.
pub fn pending_reasons(obj: &Value) -> String {
    let list = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let waiting: Vec<String> = list
        .iter()
        .filter(|c| s(c, &["status"]) != Some("True"))
        .map(|c| {
            format!(
                "{}={} {}: {}",
                s(c, &["type"]).unwrap_or("?"),
                s(c, &["status"]).unwrap_or("?"),
                s(c, &["reason"]).unwrap_or(""),
                s(c, &["message"]).unwrap_or("")
            )
        })
        .collect();
    if list.is_empty() {
        "no conditions reported yet".to_owned()
    } else if waiting.is_empty() {
        "every condition True".to_owned()
    } else {
        waiting.join("; ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cluster_facts_follow_the_status() {
        let osc = serde_json::json!({
            "metadata": {"name": "demo"},
            "spec": {"controlPlaneEndpoint": {"host": "172.24.4.10", "port": 6443}},
            "status": {
                "ready": true,
                "network": {"id": "0123456789", "name": "net", "subnets": [{"cidr": "10.6.0.0/24"}]},
                "router": {"id": "abcdefabcdef", "ips": ["172.24.4.2"]},
                "controlPlaneSecurityGroup": {"name": "cp"},
                "workerSecurityGroup": {"name": "w"},
                "apiServerLoadBalancer": {"id": "lb123456789", "name": "lb", "internalIP": "10.6.0.5", "ip": "172.24.4.10"},
                "conditions": [{"type": "Ready", "status": "True"},
                               {"type": "APIEndpointReady", "status": "False", "reason": "LoadBalancerPending"}],
            }
        });
        let texts: Vec<String> = cluster_facts(&osc).into_iter().map(|(_, t)| t).collect();
        let all = texts.join("\n");
        for want in [
            "network net (01234567)",
            "subnet 10.6.0.0/24",
            "router abcdefab (external IP 172.24.4.2)",
            "security groups cp, w",
            "VIP 10.6.0.5, floating IP 172.24.4.10",
            "endpoint https://172.24.4.10:6443",
            "OpenStackCluster demo: Ready=True",
            "APIEndpointReady=False (LoadBalancerPending)",
        ] {
            assert!(all.contains(want), "{want} not in\n{all}");
        }
        assert!(pending_reasons(&osc).contains("LoadBalancerPending"));
    }

    #[test]
    fn printer_prints_changes_only() {
        let mut p = Printer::new();
        p.facts(vec![("a".into(), "one".into())]);
        p.facts(vec![("a".into(), "one".into())]);
        assert_eq!(p.facts.len(), 1);
        p.facts(vec![("a".into(), "two".into())]);
        assert_eq!(p.facts.get("a").map(String::as_str), Some("two"));
    }

    #[test]
    fn machine_facts_follow_the_status() {
        let osm = serde_json::json!({
            "metadata": {"name": "m0"},
            "spec": {"providerID": "openstack:///abc"},
            "status": {"ready": true, "instanceState": "ACTIVE",
                       "addresses": [{"type": "InternalIP", "address": "10.6.0.7"},
                                     {"type": "InternalDNS", "address": "m0"}]}
        });
        let all: Vec<String> = machine_facts(&osm).into_iter().map(|(_, t)| t).collect();
        assert!(
            all.contains(&"OpenStackMachine m0: server ACTIVE".to_owned()),
            "{all:?}"
        );
        assert!(all.contains(&"OpenStackMachine m0: addresses 10.6.0.7".to_owned()));
    }

    #[test]
    fn cluster_api_facts_follow_the_status() {
        let kcp = serde_json::json!({
            "metadata": {"name": "demo-control-plane"},
            "spec": {"replicas": 3},
            "status": {"replicas": 2, "readyReplicas": 1, "upToDateReplicas": 2,
                       "availableReplicas": 1,
                       "initialization": {"controlPlaneInitialized": true}}
        });
        let all: Vec<String> = kcp_facts(&kcp).into_iter().map(|(_, t)| t).collect();
        assert_eq!(
            all,
            [
                "KubeadmControlPlane demo-control-plane: 1/3 replicas ready (2 exist, 2 up to date, 1 available)",
                "KubeadmControlPlane demo-control-plane: control plane initialized",
            ]
        );
        let m = serde_json::json!({
            "metadata": {"name": "demo-control-plane-x", "labels": {"cluster.x-k8s.io/control-plane": ""}},
            "spec": {"providerID": "openstack:///abc"},
            "status": {"phase": "Running", "nodeRef": {"name": "demo-control-plane-x"}}
        });
        let all: Vec<String> = capi_machine_facts(&m).into_iter().map(|(_, t)| t).collect();
        assert_eq!(
            all,
            [
                "Machine demo-control-plane-x (control plane): Running, node demo-control-plane-x",
                "Machine demo-control-plane-x: providerID openstack:///abc",
            ]
        );
        let c = serde_json::json!({
            "metadata": {"name": "demo"},
            "status": {"phase": "Provisioned", "conditions": [
                {"type": "Available", "status": "False", "reason": "NotAvailable"},
                {"type": "ScalingUp", "status": "True"}]}
        });
        let all: Vec<String> = capi_cluster_facts(&c).into_iter().map(|(_, t)| t).collect();
        assert_eq!(
            all,
            [
                "Cluster demo: phase Provisioned",
                "Cluster demo: Available=False (NotAvailable)",
            ]
        );
    }

    #[test]
    fn printer_reports_deleted_objects_once() {
        let mut p = Printer::new();
        p.facts(vec![(
            "Machine a/phase".into(),
            "Machine a: Running".into(),
        )]);
        p.present("Machine", ["a".to_owned()].into());
        p.present("Machine", BTreeSet::new());
        assert!(p.facts.is_empty());
        p.present("Machine", BTreeSet::new());
        assert_eq!(p.seen.get("Machine").map(BTreeSet::len), Some(0));
    }
}

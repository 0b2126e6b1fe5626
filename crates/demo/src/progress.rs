//! Progress lines: facts read from the objects' status (resource IDs, addresses, conditions),
//! each printed once when it appears or changes.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use serde_json::Value;

/// Prints `[  12.3s] text` lines on stdout; remembers facts to print only changes.
#[derive(Debug)]
pub struct Printer {
    start: Instant,
    facts: BTreeMap<String, String>,
}

impl Printer {
    /// A printer whose clock starts now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            facts: BTreeMap::new(),
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

/// Condition lines: `<kind> <name>: <Type>=<Status> (<reason>)`, one fact per condition type.
fn conditions(prefix: &str, obj: &Value) -> Vec<(String, String)> {
    let list = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter()
        .filter_map(|c| {
            let ty = s(c, &["type"])?;
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
/// endpoint, failure domains, BA/ACP extension status, conditions, readiness.
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
    fact(
        "ready",
        st["ready"]
            .as_bool()
            .filter(|r| *r)
            .map(|_| "Ready".to_owned()),
    );
    out.extend(conditions(&p, osc));
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

/// Facts of one OpenStackMachine: server state, addresses, providerID, conditions, readiness.
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
    if st["ready"].as_bool() == Some(true) {
        let pid = s(osm, &["spec", "providerID"]).unwrap_or("-");
        out.push((format!("{p}/ready"), format!("{p}: Ready ({pid})")));
    }
    out.extend(conditions(&p, osm));
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

/// Whether `obj.status.ready` is true.
pub fn is_ready(obj: &Value) -> bool {
    obj["status"]["ready"].as_bool() == Some(true)
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
    if waiting.is_empty() {
        "no conditions reported yet".to_owned()
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
            "OpenStackCluster demo: Ready",
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
        assert!(all.contains(&"OpenStackMachine m0: Ready (openstack:///abc)".to_owned()));
    }
}

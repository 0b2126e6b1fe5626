//! How Nova renders a server: addresses from Neutron ports, security groups, attached volumes,
//! embedded flavor and microversion-dependent fields.

use serde_json::{Value, json};

use crate::compute::{flavors, links};
use crate::microversion::Mv;
use crate::world::World;

/// Nova `addresses` of a server from its ports (and their floating IPs).
pub fn addresses(w: &World, server: &str) -> Value {
    let mut out = serde_json::Map::new();
    for (_, p) in w.iter("ports").filter(|(_, p)| {
        p.body["device_id"] == json!(server)
            && p.body["device_owner"]
                .as_str()
                .is_some_and(|o| o.starts_with("compute:"))
    }) {
        let net = w.network_name(p.body["network_id"].as_str().unwrap_or(""));
        let mac = p.body["mac_address"].clone();
        let entry = out.entry(net).or_insert(json!([]));
        for f in p.body["fixed_ips"].as_array().into_iter().flatten() {
            let ip = f["ip_address"].as_str().unwrap_or("");
            let v = if ip.contains(':') { 6 } else { 4 };
            if let Some(a) = entry.as_array_mut() {
                a.push(json!({"version": v, "addr": ip, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": mac}));
                let fips = w.iter("floatingips").filter(|(_, x)| {
                    x.body["port_id"] == p.body["id"] && x.body["fixed_ip_address"] == json!(ip)
                });
                for (_, fip) in fips {
                    a.push(json!({"version": 4, "addr": fip.body["floating_ip_address"], "OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": mac}));
                }
            }
        }
    }
    Value::Object(out)
}

/// Security group names of a server's ports.
pub fn security_groups(w: &World, server: &str) -> Value {
    let mut names: Vec<String> = Vec::new();
    for (_, p) in w
        .iter("ports")
        .filter(|(_, p)| p.body["device_id"] == json!(server))
    {
        for sg in p.body["security_groups"].as_array().into_iter().flatten() {
            let name = w
                .get("security_groups", sg.as_str().unwrap_or(""))
                .and_then(|s| s.body["name"].as_str())
                .unwrap_or("")
                .to_string();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    Value::Array(names.into_iter().map(|n| json!({"name": n})).collect())
}

/// Fields introduced by microversions, removed below them.
const FIELDS_BY_VERSION: &[(&str, u32)] = &[
    ("locked", 9),
    ("description", 19),
    ("tags", 26),
    ("trusted_image_certificates", 63),
    ("server_groups", 71),
    ("locked_reason", 73),
    ("pinned_availability_zone", 96),
    ("hostname", 90),
];

/// A server as Nova returns it at a microversion.
pub fn render(w: &World, base: &str, b: &Value, mv: Mv) -> Value {
    let mut s = b.clone();
    let id = b["id"].as_str().unwrap_or("").to_string();
    s["links"] = links(base, "servers", &id);
    s["addresses"] = addresses(w, &id);
    s["security_groups"] = security_groups(w, &id);
    s["flavor"] = flavors::server_flavor(base, &b["_flavor"], mv);
    let vols: Vec<Value> = w
        .iter("volumes")
        .filter(|(_, v)| {
            v.body["attachments"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a["server_id"] == json!(id))
        })
        .map(|(_, v)| {
            let mut a = json!({"id": v.body["id"]});
            if mv.at_least(2, 3) {
                a["delete_on_termination"] = json!(
                    b["_delete_on_termination"]
                        .as_array()
                        .is_some_and(|d| d.contains(&v.body["id"]))
                );
            }
            a
        })
        .collect();
    s["os-extended-volumes:volumes_attached"] = Value::Array(vols);
    if let Some(o) = s.as_object_mut() {
        o.retain(|k, _| !k.starts_with('_'));
        for (k, minor) in FIELDS_BY_VERSION {
            if !mv.at_least(2, *minor) {
                o.remove(*k);
            }
        }
        if o.get("status") != Some(&json!("ERROR")) {
            o.remove("fault");
        }
    }
    s
}

/// Nova's `_get_fault` (api/openstack/compute/views/servers.py): a fault's `details` (the
/// traceback) are shown to admins, or when the fault code is not 500.
pub fn hide_fault_details(s: &mut Value, admin: bool) {
    if !admin
        && s["fault"]["code"] == json!(500)
        && let Some(f) = s["fault"].as_object_mut()
    {
        f.remove("details");
    }
}

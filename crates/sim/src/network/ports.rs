//! Neutron ports: MAC and fixed IP allocation, security groups, allowed address pairs, binding,
//! device ownership as Nova, routers and Octavia set it.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, Query, ok};
use crate::network::handlers::{delete_route, put_route, resource_routes};
use crate::network::ipam::{self, is_slaac, parse_ip};
use crate::network::{
    SVC, apply_update, check_quota, created, find, find_owned, list_with, lock, network_id,
    new_body, not_found, req_member,
};
use crate::world::World;

const COL: &str = "ports";

fn defaults(mac: &str) -> Value {
    json!({
        "name": "", "network_id": null, "admin_state_up": true, "mac_address": mac, "status": "DOWN",
        "device_id": "", "device_owner": "", "fixed_ips": null, "allowed_address_pairs": [], "extra_dhcp_opts": [],
        "security_groups": null, "port_security_enabled": null, "binding:vnic_type": "normal", "binding:host_id": "",
        "binding:profile": {}, "binding:vif_type": "unbound", "binding:vif_details": {}, "description": "",
        "dns_name": "", "dns_assignment": [], "dns_domain": "", "qos_policy_id": null, "qos_network_policy_id": null,
        "propagate_uplink_status": false, "ip_allocation": "immediate", "tags": [], "trusted": null,
    })
}

fn random_mac() -> String {
    let b: [u8; 3] = rand::random();
    format!("fa:16:3e:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2])
}

fn subnets_of(w: &World, net: &str) -> Vec<Value> {
    w.iter("subnets")
        .filter(|(_, s)| s.body["network_id"] == json!(net))
        .map(|(_, s)| s.body.clone())
        .collect()
}

/// Allocate the requested fixed IPs, or Neutron's defaults (one IPv4 subnet, one stateful IPv6
/// subnet, every SLAAC subnet). On failure, everything allocated so far is released.
fn allocate_ips(w: &mut World, net: &str, req: &Value, mac: &str) -> ApiResult<Vec<Value>> {
    let subnets = subnets_of(w, net);
    let mut wanted: Vec<(Value, Option<String>)> = Vec::new();
    match req.as_array() {
        Some(list) => {
            for f in list {
                let ip = f["ip_address"].as_str().map(str::to_string);
                let subnet = match f["subnet_id"].as_str() {
                    Some(sid) => subnets.iter().find(|s| s["id"] == json!(sid)).cloned().ok_or_else(|| {
                        ApiError::bad_request(SVC, format!("Invalid input for operation: Failed to create port on network {net}, because fixed_ips included invalid subnet {sid}.")).kind("InvalidInput")
                    })?,
                    None => {
                        let (v6, v) = ip.as_deref().and_then(parse_ip).ok_or_else(|| ApiError::bad_request(SVC, "Invalid input for fixed_ips").kind("InvalidInput"))?;
                        subnets
                            .iter()
                            .find(|s| s["cidr"].as_str().and_then(|c| ipam::Cidr::parse(c, false)).is_some_and(|c| c.contains(v6, v)))
                            .cloned()
                            .ok_or_else(|| ApiError::bad_request(SVC, format!("IP address {} is not a valid IP for the specified subnet.", ip.as_deref().unwrap_or(""))).kind("InvalidIpForSubnet"))?
                    }
                };
                wanted.push((subnet, ip));
            }
        }
        None => {
            let v4 = subnets.iter().find(|s| s["ip_version"] == json!(4));
            let v6 = subnets
                .iter()
                .find(|s| s["ip_version"] == json!(6) && !is_slaac(s));
            wanted.extend(v4.into_iter().chain(v6).map(|s| (s.clone(), None)));
            wanted.extend(
                subnets
                    .iter()
                    .filter(|s| s["ip_version"] == json!(6) && is_slaac(s))
                    .map(|s| (s.clone(), None)),
            );
        }
    }
    let mut out = Vec::new();
    for (s, ip) in wanted {
        match ipam::allocate(w, &s, ip.as_deref(), mac) {
            Ok(addr) => out.push(json!({"subnet_id": s["id"], "ip_address": addr})),
            Err(e) => {
                release_ips(w, &out);
                return Err(e);
            }
        }
    }
    Ok(out)
}

fn release_ips(w: &mut World, ips: &[Value]) {
    for f in ips {
        ipam::release(
            w,
            f["subnet_id"].as_str().unwrap_or(""),
            f["ip_address"].as_str().unwrap_or(""),
        );
    }
}

fn dns_assignment(ips: &[Value]) -> Value {
    let list: Vec<Value> = ips
        .iter()
        .map(|f| {
            let ip = f["ip_address"].as_str().unwrap_or("");
            let host = format!("host-{}", ip.replace(['.', ':'], "-"));
            json!({"hostname": host, "ip_address": ip, "fqdn": format!("{host}.openstacklocal.")})
        })
        .collect();
    Value::Array(list)
}

fn check_security_groups(w: &World, ctx: &Ctx, sgs: &Value) -> ApiResult<()> {
    for sg in sgs.as_array().into_iter().flatten() {
        let id = sg.as_str().unwrap_or("");
        find(w, ctx, "security_groups", id)?;
    }
    Ok(())
}

fn fill_pairs(pairs: &Value, mac: &str) -> Value {
    let list: Vec<Value> = pairs
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| json!({"ip_address": p["ip_address"], "mac_address": p.get("mac_address").cloned().unwrap_or(json!(mac))}))
        .collect();
    Value::Array(list)
}

/// Derived status: bound or owned ports are ACTIVE.
pub fn refresh_status(body: &mut Value) {
    let owned = body["device_id"].as_str().is_some_and(|d| !d.is_empty())
        && body["device_owner"].as_str().is_some_and(|d| !d.is_empty());
    body["status"] = json!(if owned { "ACTIVE" } else { "DOWN" });
    let bound = body["binding:host_id"]
        .as_str()
        .is_some_and(|h| !h.is_empty());
    body["binding:vif_type"] = json!(if bound { "ovs" } else { "unbound" });
}

/// Create a port (API, Nova, routers, Octavia, floating IPs).
pub fn create_port(w: &mut World, ctx: &Ctx, req: Value) -> ApiResult<Value> {
    let mac = req["mac_address"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(random_mac);
    if w.seed.without_neutron_tags && req.get("tags").is_some() {
        return Err(
            ApiError::bad_request(SVC, "Unrecognized attribute(s) 'tags'").kind("HTTPBadRequest"),
        );
    }
    let (project, mut body) = new_body(ctx, &req, defaults(&mac))?;
    check_tags(&body["tags"])?;
    body["tags"] = json!([]);
    let net_id = network_id(&body)?;
    let net = find(w, ctx, "networks", &net_id)?.body.clone();
    if !ctx.owns(net["project_id"].as_str().unwrap_or("")) && net["shared"] != json!(true) {
        return Err(not_found("networks", &net_id));
    }
    check_quota(w, &project, COL, "port")?;
    if body["port_security_enabled"].is_null() {
        body["port_security_enabled"] = net["port_security_enabled"].clone();
    }
    let secure = body["port_security_enabled"] == json!(true);
    if body["security_groups"].is_null() {
        let default = w.default_sg.get(&project).cloned();
        body["security_groups"] = json!(if secure {
            default.into_iter().collect::<Vec<_>>()
        } else {
            vec![]
        });
    } else {
        check_security_groups(w, ctx, &body["security_groups"])?;
        if !secure
            && body["security_groups"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        {
            return Err(ApiError::bad_request(SVC, "Port security must be enabled in order to have allowed address pairs or security groups on a port.").kind("PortSecurityAndIPRequiredForSecurityGroups"));
        }
    }
    body["allowed_address_pairs"] = fill_pairs(&body["allowed_address_pairs"], &mac);
    trusted_into_profile(&mut body);
    let ips = allocate_ips(w, &net_id, &req["fixed_ips"], &mac)?;
    body["dns_assignment"] = dns_assignment(&ips);
    body["fixed_ips"] = Value::Array(ips);
    refresh_status(&mut body);
    let id = body["id"].as_str().unwrap_or_default().to_string();
    w.insert(COL, &id, &project, body.clone());
    Ok(body)
}

/// `port-trusted-vif`: a port's `trusted` attribute, when set, is also its
/// `binding:profile.trusted` (what Nova reads), as Neutron's `port_trusted` driver writes it.
fn trusted_into_profile(body: &mut Value) {
    let trusted = body["trusted"].clone();
    if trusted.is_null() {
        return;
    }
    if !body["binding:profile"].is_object() {
        body["binding:profile"] = json!({});
    }
    body["binding:profile"]["trusted"] = trusted;
}

/// Remove a port: release its addresses and disassociate floating IPs (no ownership checks).
pub fn remove_port(w: &mut World, id: &str) {
    if let Some(rec) = w.remove(COL, id) {
        let ips: Vec<Value> =
            serde_json::from_value(rec.body["fixed_ips"].clone()).unwrap_or_default();
        release_ips(w, &ips);
        crate::network::floatingips::port_gone(w, id);
    }
}

/// Ports accept `tags` in a POST (neutron-lib's tagging map is `allow_post: True` for ports,
/// validated as `type:list_of_unique_strings`), but without the ML2 extension driver
/// `tag_ports_during_bulk_creation` (off by default, as in devstack and kolla) Neutron drops them:
/// 201 with `"tags": []`. The sim is that default and does not list the extension.
fn check_tags(tags: &Value) -> ApiResult<()> {
    if tags.is_null() {
        return Ok(());
    }
    crate::network::tags::validate_tags(tags)
        .map(drop)
        .map_err(|reason| {
            ApiError::bad_request(SVC, format!("Invalid input for tags. Reason: {reason}."))
                .kind("HTTPBadRequest")
        })
}

/// One port (`{"port": {...}}`) or Neutron's bulk form (`{"ports": [...]}`, all or nothing).
async fn create(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let whole = crate::http::body(SVC, &b)?;
    if let Some(items) = whole.get(COL).and_then(Value::as_array) {
        let mut w = lock(&st, &ctx);
        let mut out: Vec<Value> = Vec::new();
        for req in items {
            let port = match req {
                Value::Object(_) => create_port(&mut w, &ctx, req.clone()),
                _ => Err(ApiError::bad_request(
                    SVC,
                    "Unable to find 'port' in request body",
                )),
            };
            match port {
                Ok(p) => out.push(p),
                Err(e) => {
                    for p in &out {
                        remove_port(&mut w, p["id"].as_str().unwrap_or(""));
                    }
                    return Err(e);
                }
            }
        }
        return Ok(crate::http::reply(StatusCode::CREATED, json!({ COL: out })));
    }
    let req = req_member(COL, &b)?;
    let mut w = lock(&st, &ctx);
    created(COL, create_port(&mut w, &ctx, req)?)
}

const UPDATABLE: &[&str] = &[
    "name",
    "description",
    "admin_state_up",
    "device_id",
    "device_owner",
    "allowed_address_pairs",
    "security_groups",
    "port_security_enabled",
    "binding:host_id",
    "binding:profile",
    "binding:vnic_type",
    "extra_dhcp_opts",
    "dns_name",
    "dns_domain",
    "qos_policy_id",
    "propagate_uplink_status",
    "fixed_ips",
    "mac_address",
    "trusted",
];

/// Update a port (API and Nova's attach/detach).
pub fn update_port(w: &mut World, ctx: &Ctx, id: &str, mut req: Value) -> ApiResult<Value> {
    let old = find_owned(w, ctx, COL, id)?.body.clone();
    if let Some(sgs) = req.get("security_groups") {
        check_security_groups(w, ctx, sgs)?;
    }
    let secure = req
        .get("port_security_enabled")
        .unwrap_or(&old["port_security_enabled"])
        == &json!(true);
    let sgs = req
        .get("security_groups")
        .unwrap_or(&old["security_groups"]);
    if !secure && sgs.as_array().is_some_and(|a| !a.is_empty()) {
        return Err(ApiError::conflict(
            SVC,
            "PortSecurityPortHasSecurityGroup",
            "Port has security group associated. Cannot disable port security or ip address until security group is removed",
        ));
    }
    let mac = old["mac_address"].as_str().unwrap_or("").to_string();
    if let Some(pairs) = req.get("allowed_address_pairs") {
        req["allowed_address_pairs"] = fill_pairs(pairs, &mac);
    }
    if let Some(fixed) = req.get("fixed_ips").cloned() {
        let old_ips: Vec<Value> =
            serde_json::from_value(old["fixed_ips"].clone()).unwrap_or_default();
        release_ips(w, &old_ips);
        let net = old["network_id"].as_str().unwrap_or("").to_string();
        let kept: Vec<Value> = fixed
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                if f.get("ip_address").is_none() && f.get("subnet_id").is_some() {
                    json!({"subnet_id": f["subnet_id"]})
                } else {
                    f.clone()
                }
            })
            .collect();
        let ips = match allocate_ips(w, &net, &Value::Array(kept), &mac) {
            Ok(ips) => ips,
            Err(e) => {
                // Restore the previous allocation; it was free a moment ago.
                for f in &old_ips {
                    let s = w
                        .get("subnets", f["subnet_id"].as_str().unwrap_or(""))
                        .map(|s| s.body.clone());
                    if let Some(s) = s {
                        let _ = ipam::allocate(w, &s, f["ip_address"].as_str(), &mac);
                    }
                }
                return Err(e);
            }
        };
        req["fixed_ips"] = Value::Array(ips);
    }
    let rec = find_owned(w, ctx, COL, id)?;
    apply_update(&mut rec.body, &req, UPDATABLE)?;
    trusted_into_profile(&mut rec.body);
    let ips: Vec<Value> = serde_json::from_value(rec.body["fixed_ips"].clone()).unwrap_or_default();
    rec.body["dns_assignment"] = dns_assignment(&ips);
    refresh_status(&mut rec.body);
    Ok(rec.body.clone())
}

fn delete(w: &mut World, ctx: &Ctx, id: &str) -> ApiResult<()> {
    let body = find_owned(w, ctx, COL, id)?.body.clone();
    let owner = body["device_owner"].as_str().unwrap_or("");
    if owner == "network:router_interface"
        || owner == "network:router_gateway"
        || owner == "network:floatingip"
    {
        return Err(ApiError::conflict(
            SVC,
            "ServicePortInUse",
            format!(
                "Port {id} cannot be deleted directly via the port API: has device owner {owner}."
            ),
        ));
    }
    // Neutron's default policy (2026.2 measured): a project member deletes no port bound to a server
    // (only admins, and Nova with a service token, may); it may clear device_id/device_owner.
    if owner.starts_with("compute:") && !ctx.admin {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "PolicyNotAuthorized",
            "rule:delete_port is disallowed by policy",
        ));
    }
    if let Some(t) = body["trunk_details"]["trunk_id"].as_str() {
        return Err(ApiError::conflict(
            SVC,
            "PortInUse",
            format!("Port {id} is currently a parent port for trunk {t}."),
        ));
    }
    remove_port(w, id);
    Ok(())
}

/// `fixed_ips=ip_address=X` / `fixed_ips=subnet_id=Y` filters.
fn fixed_ips_filter(q: &Query, body: &Value) -> bool {
    q.all("fixed_ips").iter().all(|f| {
        let (k, v) = f.split_once('=').unwrap_or(("ip_address", f));
        body["fixed_ips"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|ip| {
                if k == "ip_address_substr" {
                    ip["ip_address"].as_str().is_some_and(|a| a.contains(v))
                } else {
                    ip[k].as_str() == Some(v)
                }
            })
    })
}

/// Routes.
pub fn routes() -> Router<AppState> {
    resource_routes(
        COL,
        get(
            |State(st): State<AppState>, ctx: Ctx, q: Query| async move {
                if let Some(f) = q.all("fixed_ips").into_iter().find(|f| !f.contains('=')) {
                    return Err(ApiError::bad_request(
                        SVC,
                        format!(
                            "Invalid input for operation: '{f}' is not of the form <key>=[value]."
                        ),
                    )
                    .kind("InvalidInput"));
                }
                let qq = q.clone();
                list_with(&st, &ctx, &q, COL, &["fixed_ips"], &move |b| {
                    fixed_ips_filter(&qq, b)
                })
            },
        )
        .post(create),
        put_route(Some(COL), |w, ctx, id, req| {
            ok(json!({"port": update_port(w, ctx, id, req)?}))
        })
        .merge(delete_route(delete)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_ip_filters() {
        let b = json!({"fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.5"}]});
        assert!(fixed_ips_filter(
            &Query::parse(Some("fixed_ips=ip_address%3D10.0.0.5")),
            &b
        ));
        assert!(fixed_ips_filter(
            &Query::parse(Some("fixed_ips=subnet_id%3Ds1")),
            &b
        ));
        assert!(!fixed_ips_filter(
            &Query::parse(Some("fixed_ips=subnet_id%3Ds2")),
            &b
        ));
    }

    #[test]
    fn status_follows_device() {
        let mut b =
            json!({"device_id": "x", "device_owner": "compute:nova", "binding:host_id": ""});
        refresh_status(&mut b);
        assert_eq!(b["status"], "ACTIVE");
    }
}

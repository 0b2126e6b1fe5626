//! Neutron floating IPs: allocation on an external network, association with a port through a
//! router that connects the port's subnet to that network, status and port details.

use axum::Router;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, ok};
use crate::network::handlers::{
    create_route, delete_route, list_route, put_route, resource_routes,
};
use crate::network::ports::{create_port, remove_port};
use crate::network::{SVC, check_quota, find, find_owned, new_body, not_found, touch};
use crate::world::World;

const COL: &str = "floatingips";

fn defaults() -> Value {
    json!({
        "floating_network_id": null, "floating_ip_address": null, "fixed_ip_address": null, "port_id": null, "router_id": null,
        "status": "DOWN", "description": "", "dns_domain": "", "dns_name": "", "port_details": null, "qos_policy_id": null,
        "subnet_id": null, "port_forwardings": [],
    })
}

/// Find the router joining `port`'s subnet to the external network.
fn router_for(w: &World, ext_net: &str, port: &Value, fixed_ip: &str) -> Option<String> {
    let subnet = port["fixed_ips"]
        .as_array()?
        .iter()
        .find(|f| f["ip_address"] == json!(fixed_ip))?["subnet_id"]
        .clone();
    let iface_routers: Vec<String> = w
        .iter("ports")
        .filter(|(_, p)| p.body["device_owner"] == json!("network:router_interface"))
        .filter(|(_, p)| {
            p.body["fixed_ips"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|f| f["subnet_id"] == subnet)
        })
        .filter_map(|(_, p)| p.body["device_id"].as_str().map(str::to_string))
        .collect();
    iface_routers.into_iter().find(|r| {
        w.get("routers", r)
            .is_some_and(|r| r.body["external_gateway_info"]["network_id"] == json!(ext_net))
    })
}

fn port_details(port: &Value) -> Value {
    json!({"name": port["name"], "network_id": port["network_id"], "mac_address": port["mac_address"],
           "admin_state_up": port["admin_state_up"], "status": port["status"], "device_id": port["device_id"],
           "device_owner": port["device_owner"]})
}

/// Associate (or with `None`, disassociate) a floating IP body.
fn associate(
    w: &World,
    ctx: &Ctx,
    fip: &mut Value,
    port_id: Option<&str>,
    fixed: Option<&str>,
) -> ApiResult<()> {
    let Some(pid) = port_id else {
        for k in ["port_id", "fixed_ip_address", "router_id", "port_details"] {
            fip[k] = Value::Null;
        }
        fip["status"] = json!("DOWN");
        return Ok(());
    };
    let port = find(w, ctx, "ports", pid)?.body.clone();
    let fixed = match fixed {
        Some(f) => f.to_string(),
        None => port["fixed_ips"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["ip_address"].as_str())
            .find(|ip| !ip.contains(':'))
            .map(str::to_string)
            .ok_or_else(|| {
                ApiError::bad_request(
                    SVC,
                    format!("Bad floatingip request: Port {pid} does not have any IPv4 address."),
                )
            })?,
    };
    let ext = fip["floating_network_id"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let taken = w.iter(COL).any(|(_, f)| {
        f.body["port_id"] == json!(pid)
            && f.body["fixed_ip_address"] == json!(fixed)
            && f.body["id"] != fip["id"]
    });
    if taken {
        return Err(ApiError::conflict(
            SVC,
            "FloatingIPPortAlreadyAssociated",
            format!(
                "Cannot associate floating IP with port {pid} using fixed IP {fixed}, as that fixed IP already has a floating IP on external network {ext}."
            ),
        ));
    }
    let router = router_for(w, &ext, &port, &fixed).ok_or_else(|| {
        let subnet = port["fixed_ips"][0]["subnet_id"].as_str().unwrap_or("").to_string();
        ApiError::not_found(SVC, "ExternalGatewayForFloatingIPNotFound", format!("External network {ext} is not reachable from subnet {subnet}.  Therefore, cannot associate Port {pid} with a Floating IP."))
    })?;
    fip["port_id"] = json!(pid);
    fip["fixed_ip_address"] = json!(fixed);
    fip["router_id"] = json!(router);
    fip["status"] = json!("ACTIVE");
    fip["port_details"] = port_details(&port);
    Ok(())
}

fn create(w: &mut World, ctx: &Ctx, req: Value) -> ApiResult<Value> {
    let (project, mut body) = new_body(ctx, &req, defaults())?;
    check_quota(w, &project, COL, "floatingip")?;
    let net = body["floating_network_id"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let ext = w
        .get("networks", &net)
        .filter(|n| n.body["router:external"] == json!(true))
        .map(|n| n.body.clone());
    if ext.is_none() {
        return Err(not_found("networks", &net).kind("ExternalNetworkNotFound"));
    }
    let mut ip = json!({});
    if let Some(a) = body["floating_ip_address"].as_str() {
        ip["ip_address"] = json!(a);
    }
    if let Some(s) = body["subnet_id"].as_str() {
        ip["subnet_id"] = json!(s);
    }
    let id = body["id"].as_str().unwrap_or_default().to_string();
    let fixed_ips = if ip.as_object().is_some_and(|o| o.is_empty()) {
        Value::Null
    } else {
        json!([ip])
    };
    let mut preq = json!({"network_id": net, "device_id": id, "device_owner": "network:floatingip", "security_groups": [], "port_security_enabled": false});
    if !fixed_ips.is_null() {
        preq["fixed_ips"] = fixed_ips;
    }
    let port = create_port(w, &Ctx::system(""), preq)?;
    body["floating_ip_address"] = port["fixed_ips"][0]["ip_address"].clone();
    body["subnet_id"] = port["fixed_ips"][0]["subnet_id"].clone();
    let pid = body["port_id"].as_str().map(str::to_string);
    let fixed = body["fixed_ip_address"].as_str().map(str::to_string);
    if let Err(e) = associate(w, ctx, &mut body, pid.as_deref(), fixed.as_deref()) {
        remove_port(w, port["id"].as_str().unwrap_or(""));
        return Err(e);
    }
    w.insert(COL, &id, &project, body.clone());
    Ok(body)
}

fn update(w: &mut World, ctx: &Ctx, id: &str, req: Value) -> ApiResult {
    let mut body = find_owned(w, ctx, COL, id)?.body.clone();
    if req["fixed_ip_address"].is_string() && !req["port_id"].is_string() {
        return Err(ApiError::bad_request(
            SVC,
            "Bad floatingip request: fixed_ip_address cannot be specified without a port_id.",
        ));
    }
    // Neutron's `_check_and_get_fip_assoc` (l3_db.py): `port_id: null` disassociates, and so does
    // an empty update body (`{"floatingip": {}}`); a non-empty body without `port_id` keeps the
    // association (bug #1610045).
    let empty = req.as_object().is_some_and(|o| o.is_empty());
    match req.get("port_id") {
        Some(p) => associate(
            w,
            ctx,
            &mut body,
            p.as_str(),
            req["fixed_ip_address"].as_str(),
        )?,
        None if empty => associate(w, ctx, &mut body, None, None)?,
        None => {}
    }
    for k in ["description", "qos_policy_id"] {
        if let Some(v) = req.get(k) {
            body[k] = v.clone();
        }
    }
    touch(&mut body);
    find_owned(w, ctx, COL, id)?.body = body.clone();
    ok(json!({"floatingip": body}))
}

fn delete(w: &mut World, ctx: &Ctx, id: &str) -> ApiResult<()> {
    find_owned(w, ctx, COL, id)?;
    w.remove(COL, id);
    let port = w
        .iter("ports")
        .find(|(_, p)| {
            p.body["device_id"] == json!(id)
                && p.body["device_owner"] == json!("network:floatingip")
        })
        .map(|(k, _)| k.clone());
    if let Some(p) = port {
        remove_port(w, &p);
    }
    Ok(())
}

/// A port disappeared: disassociate its floating IPs.
pub fn port_gone(w: &mut World, port: &str) {
    let ids: Vec<String> = w
        .iter(COL)
        .filter(|(_, f)| f.body["port_id"] == json!(port))
        .map(|(k, _)| k.clone())
        .collect();
    for id in ids {
        if let Some(f) = w.get_mut(COL, &id) {
            for k in ["port_id", "fixed_ip_address", "router_id", "port_details"] {
                f.body[k] = Value::Null;
            }
            f.body["status"] = json!("DOWN");
        }
    }
}

/// Routes.
pub fn routes() -> Router<AppState> {
    resource_routes(
        COL,
        list_route(COL).merge(create_route(COL, create)),
        put_route(Some(COL), update).merge(delete_route(delete)),
    )
}

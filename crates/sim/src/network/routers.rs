//! Neutron routers: external gateway (with external_fixed_ips), interfaces, in-use checks.

use axum::Router;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, ok};
use crate::network::handlers::{
    create_route, delete_route, list_route, put_route, resource_routes, update_owned,
};
use crate::network::ports::{create_port, remove_port, update_port};
use crate::network::{P, SVC, check_quota, find, find_owned, new_body};
use crate::world::World;

const COL: &str = "routers";

fn defaults(w: &World) -> Value {
    json!({
        "name": "", "admin_state_up": true, "status": "ACTIVE", "external_gateway_info": null, "description": "",
        "routes": [], "availability_zone_hints": [], "availability_zones": w.seed.availability_zones.first().map(|z| vec![z.clone()]).unwrap_or_default(),
        "distributed": false, "ha": false, "flavor_id": null,
    })
}

/// Create the gateway port for `info` and return the completed `external_gateway_info`.
fn set_gateway(w: &mut World, ctx: &Ctx, router: &str, info: &Value) -> ApiResult<Value> {
    let net = info["network_id"].as_str().unwrap_or("").to_string();
    let ext = w
        .get("networks", &net)
        .filter(|n| n.body["router:external"] == json!(true));
    if ext.is_none() {
        return Err(ApiError::bad_request(
            SVC,
            format!("Bad router request: Network {net} is not a valid external network."),
        )
        .kind("BadRequest"));
    }
    let sys = Ctx::system("");
    let mut preq = json!({"network_id": net, "device_id": router, "device_owner": "network:router_gateway", "security_groups": [], "port_security_enabled": false});
    if let Some(fips) = info.get("external_fixed_ips").filter(|v| v.is_array()) {
        preq["fixed_ips"] = fips.clone();
    }
    let _ = ctx;
    let port = create_port(w, &sys, preq)?;
    Ok(
        json!({"network_id": net, "enable_snat": info.get("enable_snat").cloned().unwrap_or(json!(true)),
              "external_fixed_ips": port["fixed_ips"]}),
    )
}

fn gateway_port(w: &World, router: &str) -> Option<String> {
    w.iter("ports")
        .find(|(_, p)| {
            p.body["device_id"] == json!(router)
                && p.body["device_owner"] == json!("network:router_gateway")
        })
        .map(|(k, _)| k.clone())
}

fn fips_on(w: &World, router: &str) -> bool {
    w.iter("floatingips")
        .any(|(_, f)| f.body["router_id"] == json!(router))
}

fn create(w: &mut World, ctx: &Ctx, req: Value) -> ApiResult<Value> {
    let (project, mut body) = new_body(ctx, &req, defaults(w))?;
    check_quota(w, &project, COL, "router")?;
    let id = body["id"].as_str().unwrap_or_default().to_string();
    if let Some(info) = req.get("external_gateway_info").filter(|v| v.is_object()) {
        body["external_gateway_info"] = set_gateway(w, ctx, &id, info)?;
    }
    w.insert(COL, &id, &project, body.clone());
    Ok(body)
}

fn update(w: &mut World, ctx: &Ctx, id: &str, mut req: Value) -> ApiResult {
    find_owned(w, ctx, COL, id)?;
    if let Some(info) = req.get("external_gateway_info").cloned() {
        if let Some(old) = gateway_port(w, id) {
            if fips_on(w, id) {
                return Err(ApiError::conflict(
                    SVC,
                    "RouterExternalGatewayInUseByFloatingIp",
                    format!(
                        "Gateway cannot be updated for router {id}, since a gateway to external network is required by one or more floating IPs."
                    ),
                ));
            }
            remove_port(w, &old);
        }
        req["external_gateway_info"] = if info.is_object() && !info["network_id"].is_null() {
            set_gateway(w, ctx, id, &info)?
        } else {
            Value::Null
        };
    }
    update_owned(
        w,
        ctx,
        COL,
        id,
        &req,
        &[
            "name",
            "description",
            "admin_state_up",
            "external_gateway_info",
            "routes",
            "distributed",
            "ha",
        ],
    )
}

fn delete(w: &mut World, ctx: &Ctx, id: &str) -> ApiResult<()> {
    find_owned(w, ctx, COL, id)?;
    let has_if = w.iter("ports").any(|(_, p)| {
        p.body["device_id"] == json!(id)
            && p.body["device_owner"] == json!("network:router_interface")
    });
    if has_if || fips_on(w, id) {
        return Err(ApiError::conflict(
            SVC,
            "RouterInUse",
            format!("Router {id} still has ports"),
        ));
    }
    if let Some(gw) = gateway_port(w, id) {
        remove_port(w, &gw);
    }
    w.remove(COL, id);
    Ok(())
}

fn interface_reply(router: &str, project: &str, port: &Value) -> Value {
    let subnets: Vec<Value> = port["fixed_ips"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["subnet_id"].clone())
        .collect();
    json!({"id": router, "tenant_id": project, "project_id": project, "port_id": port["id"], "network_id": port["network_id"],
           "subnet_id": subnets.first().cloned().unwrap_or(Value::Null), "subnet_ids": subnets})
}

fn add_interface(w: &mut World, ctx: &Ctx, id: &str, req: Value) -> ApiResult {
    let project = find_owned(w, ctx, COL, id)?.project.clone();
    let port = if let Some(pid) = req["port_id"].as_str() {
        let p = find(w, ctx, "ports", pid)?;
        if p.body["device_id"].as_str().is_some_and(|d| !d.is_empty()) {
            return Err(ApiError::conflict(
                SVC,
                "PortInUse",
                format!(
                    "Unable to complete operation on port {pid} for network {}. Port already has an attached device {}.",
                    p.body["network_id"].as_str().unwrap_or(""),
                    p.body["device_id"].as_str().unwrap_or("")
                ),
            ));
        }
        update_port(
            w,
            ctx,
            pid,
            json!({"device_id": id, "device_owner": "network:router_interface"}),
        )?
    } else if let Some(sid) = req["subnet_id"].as_str() {
        let s = find(w, ctx, "subnets", sid)?.body.clone();
        let gw = s["gateway_ip"].as_str().ok_or_else(|| {
            ApiError::bad_request(
                SVC,
                format!("Bad router request: Subnet {sid} does not have a gateway IP."),
            )
        })?;
        let attached = w.iter("ports").any(|(_, p)| {
            p.body["device_id"] == json!(id)
                && p.body["fixed_ips"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|f| f["subnet_id"] == json!(sid))
        });
        if attached {
            return Err(ApiError::bad_request(
                SVC,
                format!("Bad router request: Router already has a port on subnet {sid}."),
            ));
        }
        let owner_ctx = Ctx {
            project: project.clone(),
            ..ctx.clone()
        };
        let preq = json!({"network_id": s["network_id"], "fixed_ips": [{"subnet_id": sid, "ip_address": gw}], "device_id": id,
                          "device_owner": "network:router_interface", "security_groups": [], "port_security_enabled": false});
        create_port(
            w,
            &Ctx {
                admin: true,
                ..owner_ctx
            },
            preq,
        )?
    } else {
        return Err(ApiError::bad_request(
            SVC,
            "Bad router request: Either subnet_id or port_id must be specified.",
        ));
    };
    ok(interface_reply(id, &project, &port))
}

fn remove_interface(w: &mut World, ctx: &Ctx, id: &str, req: Value) -> ApiResult {
    let project = find_owned(w, ctx, COL, id)?.project.clone();
    let on_router = |p: &Value| {
        p["device_id"] == json!(id) && p["device_owner"] == json!("network:router_interface")
    };
    let found = if let Some(pid) = req["port_id"].as_str() {
        w.get("ports", pid)
            .filter(|p| on_router(&p.body))
            .map(|p| p.body.clone())
            .ok_or_else(|| {
                ApiError::not_found(
                    SVC,
                    "RouterInterfaceNotFound",
                    format!("Router {id} does not have an interface with id {pid}"),
                )
            })?
    } else {
        let sid = req["subnet_id"].as_str().unwrap_or("");
        w.iter("ports")
            .find(|(_, p)| {
                on_router(&p.body)
                    && p.body["fixed_ips"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|f| f["subnet_id"] == json!(sid))
            })
            .map(|(_, p)| p.body.clone())
            .ok_or_else(|| {
                ApiError::not_found(
                    SVC,
                    "RouterInterfaceNotFoundForSubnet",
                    format!("Router {id} has no interface on subnet {sid}"),
                )
            })?
    };
    remove_port(w, found["id"].as_str().unwrap_or(""));
    ok(interface_reply(id, &project, &found))
}

/// Routes.
pub fn routes() -> Router<AppState> {
    resource_routes(
        COL,
        list_route(COL).merge(create_route(COL, create)),
        put_route(Some(COL), update).merge(delete_route(delete)),
    )
    .route(
        &format!("{P}/routers/{{id}}/add_router_interface"),
        put_route(None, add_interface),
    )
    .route(
        &format!("{P}/routers/{{id}}/remove_router_interface"),
        put_route(None, remove_interface),
    )
}

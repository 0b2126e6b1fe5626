//! Neutron networks.

use axum::Router;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx};
use crate::network::handlers::{
    create_route, delete_route, list_route, resource_routes, update_route,
};
use crate::network::{SVC, check_quota, find_owned, new_body};
use crate::world::World;

const COL: &str = "networks";

fn defaults(w: &World) -> Value {
    json!({
        "name": "", "admin_state_up": true, "mtu": 1442, "status": "ACTIVE", "subnets": [], "shared": false,
        "availability_zone_hints": [], "availability_zones": w.seed.availability_zones.first().map(|z| vec![z.clone()]).unwrap_or_default(),
        "ipv4_address_scope": null, "ipv6_address_scope": null, "router:external": false, "description": "",
        "port_security_enabled": true, "qos_policy_id": null, "dns_domain": "", "l2_adjacency": true, "is_default": false,
        "provider:network_type": "geneve", "provider:physical_network": null, "provider:segmentation_id": null,
    })
}

/// Create a network (shared by the API and the seed).
pub fn create_network(w: &mut World, ctx: &Ctx, req: Value) -> ApiResult<Value> {
    let (project, mut body) = new_body(ctx, &req, defaults(w))?;
    check_quota(w, &project, COL, "network")?;
    if body["router:external"] == json!(true) && !ctx.admin {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "PolicyNotAuthorized",
            "(rule:create_network and rule:create_network:router:external) is disallowed by policy",
        ));
    }
    let seg = w.cols.get(COL).map_or(0, |c| c.len()) as i64 + 100;
    body["provider:segmentation_id"] = json!(seg);
    let id = body["id"].as_str().unwrap_or_default().to_string();
    w.insert(COL, &id, &project, body.clone());
    Ok(body)
}

/// Attributes a network update may change.
const UPDATABLE: &[&str] = &[
    "name",
    "description",
    "admin_state_up",
    "mtu",
    "shared",
    "port_security_enabled",
    "qos_policy_id",
    "dns_domain",
    "router:external",
    "is_default",
];

/// Device owners whose ports do not keep a network in use (Neutron removes them itself).
fn is_service_port(owner: &str) -> bool {
    owner == "network:dhcp"
}

fn delete(w: &mut World, ctx: &Ctx, id: &str) -> ApiResult<()> {
    find_owned(w, ctx, COL, id)?;
    let mut in_use: Vec<String> = w
        .iter("ports")
        .filter(|(_, p)| {
            p.body["network_id"] == json!(id)
                && !is_service_port(p.body["device_owner"].as_str().unwrap_or(""))
        })
        .map(|(k, _)| k.clone())
        .collect();
    if !in_use.is_empty() {
        // ML2 names the ports (in id order on Neutron 29).
        in_use.sort();
        return Err(ApiError::conflict(
            SVC,
            "NetworkInUse",
            format!(
                "Unable to complete operation on network {id}. There are one or more ports still in use on the network, id for these ports is: {}.",
                in_use.join(",")
            ),
        ));
    }
    let subnets: Vec<String> = w
        .iter("subnets")
        .filter(|(_, s)| s.body["network_id"] == json!(id))
        .map(|(k, _)| k.clone())
        .collect();
    for s in subnets {
        w.remove("subnets", &s);
        w.ipam.remove(&s);
    }
    w.remove(COL, id);
    Ok(())
}

/// Routes.
pub fn routes() -> Router<AppState> {
    resource_routes(
        COL,
        list_route(COL).merge(create_route(COL, create_network)),
        update_route(COL, UPDATABLE).merge(delete_route(delete)),
    )
}

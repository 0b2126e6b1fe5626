//! Neutron subnets: CIDR validation, default gateway and pools, IPv6 modes, in-use checks.

use axum::Router;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx};
use crate::network::handlers::{
    create_route, delete_route, list_route, resource_routes, update_route,
};
use crate::network::ipam::{Cidr, default_pools, fmt_ip, parse_ip};
use crate::network::{SVC, check_quota, find, find_owned, network_id, new_body, not_found};
use crate::world::World;

const COL: &str = "subnets";
const V6_MODES: &[&str] = &["slaac", "dhcpv6-stateful", "dhcpv6-stateless"];

fn defaults() -> Value {
    json!({
        "name": "", "network_id": null, "ip_version": 4, "cidr": null, "gateway_ip": null, "allocation_pools": [],
        "dns_nameservers": [], "host_routes": [], "enable_dhcp": true, "ipv6_ra_mode": null, "ipv6_address_mode": null,
        "subnetpool_id": null, "description": "", "service_types": [], "segment_id": null, "dns_publish_fixed_ip": false,
    })
}

fn invalid(msg: String) -> ApiError {
    ApiError::bad_request(SVC, format!("Invalid input for operation: {msg}")).kind("InvalidInput")
}

fn check_v6_modes(body: &Value, v6: bool) -> ApiResult<()> {
    for key in ["ipv6_ra_mode", "ipv6_address_mode"] {
        match body[key].as_str() {
            None => {}
            Some(_) if !v6 => {
                return Err(invalid(format!("{key} is not valid when ip_version is 4.")));
            }
            Some(m) if !V6_MODES.contains(&m) => {
                return Err(invalid(format!("'{m}' is not in {V6_MODES:?}")));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Create a subnet (shared by the API and the seed).
pub fn create_subnet(w: &mut World, ctx: &Ctx, req: Value) -> ApiResult<Value> {
    let gateway_given = req.get("gateway_ip").is_some();
    let pools_given = req.get("allocation_pools").is_some();
    let (project, mut body) = new_body(ctx, &req, defaults())?;
    let net_id = network_id(&body)?;
    let net = w
        .get("networks", &net_id)
        .filter(|n| ctx.owns(&n.project))
        .ok_or_else(|| not_found("networks", &net_id))?;
    let net_subnets: Vec<String> =
        serde_json::from_value(net.body["subnets"].clone()).unwrap_or_default();
    check_quota(w, &project, COL, "subnet")?;
    let cidr_text = body["cidr"]
        .as_str()
        .ok_or_else(|| {
            ApiError::bad_request(
                SVC,
                "Bad subnets request: a subnetpool must be specified in the absence of a cidr.",
            )
        })?
        .to_string();
    let c = Cidr::parse(&cidr_text, false)
        .ok_or_else(|| invalid(format!("'{cidr_text}' is not a valid IP subnet.")))?;
    if Cidr::parse(&cidr_text, true).is_none() {
        return Err(invalid(format!(
            "'{cidr_text}' isn't a recognized IP subnet cidr, '{}' is recommended",
            c.to_text()
        )));
    }
    let version = body["ip_version"].as_i64().unwrap_or(4);
    if (version == 6) != c.v6 {
        return Err(invalid(format!(
            "Cidr {cidr_text} does not match ip_version {version}"
        )));
    }
    check_v6_modes(&body, c.v6)?;
    for s in net_subnets.iter().filter_map(|s| w.get(COL, s)) {
        if s.body["cidr"]
            .as_str()
            .and_then(|t| Cidr::parse(t, false))
            .is_some_and(|o| o.overlaps(&c))
        {
            return Err(invalid(format!(
                "Requested subnet with cidr: {cidr_text} for network: {net_id} overlaps with another subnet"
            )));
        }
    }
    let gateway = if gateway_given {
        body["gateway_ip"]
            .as_str()
            .map(|g| {
                parse_ip(g)
                    .filter(|(v6, v)| c.contains(*v6, *v))
                    .map(|(_, v)| v)
                    .ok_or_else(|| invalid(format!("Gateway IP {g} conflicts with the subnet.")))
            })
            .transpose()?
    } else {
        Some(c.first_host())
    };
    body["gateway_ip"] = gateway.map_or(Value::Null, |g| json!(fmt_ip(c.v6, g)));
    if !pools_given {
        body["allocation_pools"] = default_pools(&c, gateway);
    }
    body["cidr"] = json!(c.to_text());
    let id = body["id"].as_str().unwrap_or_default().to_string();
    w.insert(COL, &id, &project, body.clone());
    w.ipam.entry(id.clone()).or_default();
    if let Some(n) = w.get_mut("networks", &net_id)
        && let Some(list) = n.body["subnets"].as_array_mut()
    {
        list.push(json!(id));
    }
    Ok(body)
}

/// Attributes a subnet update may change.
const UPDATABLE: &[&str] = &[
    "name",
    "description",
    "gateway_ip",
    "allocation_pools",
    "dns_nameservers",
    "host_routes",
    "enable_dhcp",
    "service_types",
    "dns_publish_fixed_ip",
];

fn delete(w: &mut World, ctx: &Ctx, id: &str) -> ApiResult<()> {
    let net_id = find(w, ctx, COL, id)?.body["network_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    find_owned(w, ctx, COL, id)?;
    let in_use = w.iter("ports").any(|(_, p)| {
        p.body["device_owner"] != json!("network:dhcp")
            && p.body["fixed_ips"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|f| f["subnet_id"] == json!(id))
    });
    if in_use {
        return Err(ApiError::conflict(
            SVC,
            "SubnetInUse",
            format!(
                "Unable to complete operation on subnet {id}: One or more ports have an IP allocation from this subnet."
            ),
        ));
    }
    w.remove(COL, id);
    w.ipam.remove(id);
    if let Some(n) = w.get_mut("networks", &net_id)
        && let Some(list) = n.body["subnets"].as_array_mut()
    {
        list.retain(|s| s != &json!(id));
    }
    Ok(())
}

/// Routes.
pub fn routes() -> Router<AppState> {
    resource_routes(
        COL,
        list_route(COL).merge(create_route(COL, create_subnet)),
        update_route(COL, UPDATABLE).merge(delete_route(delete)),
    )
}

//! Neutron: networks, subnets, routers (interfaces, gateway), ports, security groups and rules,
//! floating IPs, trunks, tags, extensions.
//!
//! All Neutron resources follow one pattern (`POST /{collection}` with `{singular: {...}}`,
//! `GET/PUT/DELETE /{collection}/{id}`, list with filters), captured by [`Resource`]; typed
//! wrappers below give each resource its model.

mod models;

use serde_json::json;

pub use models::*;

use crate::error::{Error, Result};
use crate::request::{Request, Service};
use crate::session::Session;

const S: Service = Service::Network;

use crate::resource::resource;
pub use crate::resource::{
    ListFilter, Resource, create, create_bulk, create_bulk_request, create_request, delete,
    delete_request, get, get_request, list, list_request, update, update_request,
};

resource!(NETWORK, S, "networks", "network", "networks", "network");
resource!(SUBNET, S, "subnets", "subnet", "subnets", "subnet");
resource!(ROUTER, S, "routers", "router", "routers", "router");
resource!(PORT, S, "ports", "port", "ports", "port");
resource!(
    SECURITY_GROUP,
    S,
    "security-groups",
    "security_group",
    "security_groups",
    "security_group"
);
resource!(
    SECURITY_GROUP_RULE,
    S,
    "security-group-rules",
    "security_group_rule",
    "security_group_rules",
    "security_group_rule"
);
resource!(
    FLOATING_IP,
    S,
    "floatingips",
    "floatingip",
    "floatingips",
    "floating_ip"
);
resource!(TRUNK, S, "trunks", "trunk", "trunks", "trunk");

/// PUT /routers/{id}/add_router_interface (subnet).
pub fn add_router_interface_request(router_id: &str, subnet_id: &str) -> Request {
    Request::put(
        S,
        format!("routers/{router_id}/add_router_interface"),
        "router_interface_add",
        json!({"subnet_id": subnet_id}),
    )
}
/// PUT /routers/{id}/remove_router_interface (subnet).
pub fn remove_router_interface_request(router_id: &str, subnet_id: &str) -> Request {
    Request::put(
        S,
        format!("routers/{router_id}/remove_router_interface"),
        "router_interface_remove",
        json!({"subnet_id": subnet_id}),
    )
}
/// Attach a subnet to a router. PUT, so a lost reply is retried; a repeat answers 400 "already
/// has a port on subnet", which callers treat as done.
pub async fn add_router_interface(
    s: &Session,
    router_id: &str,
    subnet_id: &str,
) -> Result<RouterInterface> {
    s.send_json(&add_router_interface_request(router_id, subnet_id))
        .await
}
/// Detach a subnet from a router.
pub async fn remove_router_interface(s: &Session, router_id: &str, subnet_id: &str) -> Result<()> {
    s.send(&remove_router_interface_request(router_id, subnet_id))
        .await
        .map(drop)
}
/// Set (Some) or clear (None) a router's external gateway.
pub fn set_router_gateway_request(router_id: &str, gateway: Option<&ExternalGateway>) -> Request {
    update_request(
        ROUTER,
        router_id,
        json!({"external_gateway_info": gateway.map_or(json!({}), |g| json!(g))}),
    )
}

/// Associate (Some port) or disassociate (None) a floating IP.
pub fn set_floating_ip_port_request(
    fip_id: &str,
    port_id: Option<&str>,
    fixed_ip: Option<&str>,
) -> Request {
    let mut body = json!({"port_id": port_id});
    if let Some(ip) = fixed_ip {
        body["fixed_ip_address"] = json!(ip);
    }
    update_request(FLOATING_IP, fip_id, body)
}

/// PUT /{collection}/{id}/tags replacing all tags.
pub fn replace_tags_request(r: Resource, id: &str, tags: &[String]) -> Request {
    Request::put(
        S,
        format!("{}/{id}/tags", r.collection),
        "tags_replace",
        json!({"tags": tags}),
    )
}
/// PUT /{collection}/{id}/tags/{tag} adding one tag.
pub fn add_tag_request(r: Resource, id: &str, tag: &str) -> Request {
    Request::new(
        S,
        http::Method::PUT,
        format!("{}/{id}/tags/{tag}", r.collection),
        "tag_add",
    )
}
/// Neutron's extension that gives resources their `tags`.
pub const TAG_EXTENSION: &str = "standard-attr-tag";

/// Replace a resource's tags. A 404 from a Neutron without [`TAG_EXTENSION`] (it has no tags
/// route) is [`Error::ExtensionMissing`] ([`tag_error`]).
pub async fn replace_tags(s: &Session, r: Resource, id: &str, tags: &[String]) -> Result<()> {
    match s.send(&replace_tags_request(r, id, tags)).await {
        Ok(_) => Ok(()),
        Err(e) => Err(tag_error(s, e).await),
    }
}
/// Add one tag (an error read as in [`replace_tags`]).
pub async fn add_tag(s: &Session, r: Resource, id: &str, tag: &str) -> Result<()> {
    match s.send(&add_tag_request(r, id, tag)).await {
        Ok(_) => Ok(()),
        Err(e) => Err(tag_error(s, e).await),
    }
}

/// `e` from a tags write, or [`Error::ExtensionMissing`] when it is a 404 (Neutron without
/// tags has no such route) and Neutron lists no [`TAG_EXTENSION`]: one extension list, read
/// once per session, tells it apart from a resource gone. A failed list leaves `e`.
async fn tag_error(s: &Session, e: Error) -> Error {
    if !e.is_not_found() {
        return e;
    }
    match s.network_extensions().await {
        Ok(aliases) if !aliases.contains(TAG_EXTENSION) => Error::ExtensionMissing {
            service: "network".into(),
            extension: TAG_EXTENSION.into(),
        },
        _ => e,
    }
}

/// GET /extensions.
pub fn list_extensions_request() -> Request {
    Request::get(S, "extensions", "extension_list")
}
/// List Neutron extensions (aliases such as `trunk`, `standard-attr-tag`).
pub async fn list_extensions(s: &Session) -> Result<Vec<Extension>> {
    s.fetch(&list_extensions_request(), "extensions").await
}

/// PUT /trunks/{id}/add_subports.
pub fn add_subports_request(trunk_id: &str, subports: &[SubPort]) -> Request {
    Request::put(
        S,
        format!("trunks/{trunk_id}/add_subports"),
        "trunk_subports_add",
        json!({"sub_ports": subports}),
    )
}

#[cfg(test)]
mod tests;

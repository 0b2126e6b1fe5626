//! Neutron v2.0: shared helpers (creation defaults, visibility, listing, quotas, tags) and routes.

pub mod floatingips;
pub mod handlers;
pub mod ipam;
pub mod networks;
pub mod ports;
pub mod routers;
pub mod secgroups;
pub mod subnets;
pub mod tags;
pub mod trunks;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{MethodFilter, get, on};
use parking_lot::MutexGuard;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult, Svc};
use crate::filter;
use crate::http::{AppState, Ctx, Query, Shared, body, ok, reply};
use crate::world::{Rec, World, new_id, now_str};

/// Service tag for Neutron errors.
pub const SVC: Svc = Svc::Network;
/// Path prefix of the v2.0 API.
pub const P: &str = "/network/v2.0";

/// One Neutron resource type: collection name, URL segment, JSON keys and not-found wording.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// World collection and plural JSON key.
    pub col: &'static str,
    /// URL segment.
    pub url: &'static str,
    /// Singular JSON key.
    pub one: &'static str,
    /// Neutron error type for 404.
    pub nf: &'static str,
    /// Label in the 404 message.
    pub label: &'static str,
}

/// Every Neutron resource type served.
pub const KINDS: &[Kind] = &[
    Kind {
        col: "networks",
        url: "networks",
        one: "network",
        nf: "NetworkNotFound",
        label: "Network",
    },
    Kind {
        col: "subnets",
        url: "subnets",
        one: "subnet",
        nf: "SubnetNotFound",
        label: "Subnet",
    },
    Kind {
        col: "ports",
        url: "ports",
        one: "port",
        nf: "PortNotFound",
        label: "Port",
    },
    Kind {
        col: "routers",
        url: "routers",
        one: "router",
        nf: "RouterNotFound",
        label: "Router",
    },
    Kind {
        col: "floatingips",
        url: "floatingips",
        one: "floatingip",
        nf: "FloatingIPNotFound",
        label: "Floating IP",
    },
    Kind {
        col: "security_groups",
        url: "security-groups",
        one: "security_group",
        nf: "SecurityGroupNotFound",
        label: "Security group",
    },
    Kind {
        col: "security_group_rules",
        url: "security-group-rules",
        one: "security_group_rule",
        nf: "SecurityGroupRuleNotFound",
        label: "Security group rule",
    },
    Kind {
        col: "trunks",
        url: "trunks",
        one: "trunk",
        nf: "TrunkNotFound",
        label: "Trunk",
    },
];

/// The kind for a collection name.
pub fn kind(col: &str) -> Kind {
    KINDS
        .iter()
        .copied()
        .find(|k| k.col == col)
        .unwrap_or(KINDS[0])
}

/// Neutron's 404 for a resource.
pub fn not_found(col: &str, id: &str) -> ApiError {
    let k = kind(col);
    let msg = if col.starts_with("security_group") {
        format!("{} {id} does not exist", k.label)
    } else {
        format!("{} {id} could not be found.", k.label)
    };
    ApiError::not_found(SVC, k.nf, msg)
}

/// Lock the world for a Neutron request, creating the project's default security group on first use
/// as Neutron does.
pub fn lock<'a>(st: &'a Shared, ctx: &Ctx) -> MutexGuard<'a, World> {
    let mut w = st.world();
    secgroups::ensure_default(&mut w, &ctx.project);
    w
}

/// Build a new resource body: defaults overlaid with the request, plus the standard attributes.
/// Unknown attributes are rejected like Neutron does; `tags` is accepted only when `defaults` has
/// it (ports), else it is Neutron's 400 "Attribute 'tags' not allowed in POST".
pub fn new_body(ctx: &Ctx, req: &Value, defaults: Value) -> ApiResult<(String, Value)> {
    let Value::Object(mut body) = defaults else {
        return Err(ApiError::bad_request(SVC, "bad defaults"));
    };
    let project = match (req["project_id"].as_str(), req["tenant_id"].as_str()) {
        (Some(p), _) | (None, Some(p)) if ctx.admin => p.to_string(),
        _ => ctx.project.clone(),
    };
    let id = req["id"]
        .as_str()
        .filter(|_| ctx.admin)
        .map(str::to_string)
        .unwrap_or_else(new_id);
    for (k, v) in req.as_object().into_iter().flatten() {
        if matches!(k.as_str(), "id" | "project_id" | "tenant_id") {
            continue;
        }
        if k == "tags" && !body.contains_key(k) {
            // Neutron's tag attribute is `allow_post: False` on every resource but ports
            // (accepted there and dropped, see `ports::check_tags`); `tag-creation` only adds
            // `POST .../tags`.
            return Err(
                ApiError::bad_request(SVC, "Attribute 'tags' not allowed in POST")
                    .kind("HTTPBadRequest"),
            );
        }
        if !body.contains_key(k) {
            return Err(
                ApiError::bad_request(SVC, format!("Unrecognized attribute(s) '{k}'"))
                    .kind("HTTPBadRequest"),
            );
        }
        body.insert(k.clone(), v.clone());
    }
    let now = now_str();
    let std: [(&str, Value); 7] = [
        ("id", json!(id)),
        ("tenant_id", json!(project)),
        ("project_id", json!(project)),
        ("created_at", json!(now)),
        ("updated_at", json!(now)),
        ("revision_number", json!(0)),
        ("tags", body.get("tags").cloned().unwrap_or(json!([]))),
    ];
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    for (k, v) in body {
        out.insert(k, v);
    }
    for (k, v) in std {
        out.insert(k.to_string(), v);
    }
    out.entry("description").or_insert(json!(""));
    Ok((project, Value::Object(out)))
}

/// The `network_id` a new subnet or port names, or Neutron's 400.
pub fn network_id(body: &Value) -> ApiResult<String> {
    body["network_id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| {
            ApiError::bad_request(
                SVC,
                "Failed to parse request. Required attribute 'network_id' not specified",
            )
        })
}

/// Apply an update: only `allowed` keys may change; bumps revision and updated_at.
pub fn apply_update(body: &mut Value, req: &Value, allowed: &[&str]) -> ApiResult<()> {
    for (k, v) in req.as_object().into_iter().flatten() {
        if !allowed.contains(&k.as_str()) {
            return Err(ApiError::bad_request(
                SVC,
                format!("Cannot update read-only attribute {k}"),
            )
            .kind("HTTPBadRequest"));
        }
        body[k] = v.clone();
    }
    touch(body);
    Ok(())
}

/// Bump revision_number and updated_at.
pub fn touch(body: &mut Value) {
    let rev = body["revision_number"].as_i64().unwrap_or(0) + 1;
    body["revision_number"] = json!(rev);
    body["updated_at"] = json!(now_str());
}

/// Whether a caller can see a resource.
pub fn visible(w: &World, ctx: &Ctx, col: &str, rec: &Rec) -> bool {
    if ctx.owns(&rec.project) {
        return true;
    }
    match col {
        "networks" => {
            rec.body["shared"] == json!(true) || rec.body["router:external"] == json!(true)
        }
        // Neutron's default policy: subnets are readable by their owner or on shared networks only
        // (an external network's subnet is not listed to tenants).
        "subnets" => rec.body["network_id"]
            .as_str()
            .and_then(|n| w.get("networks", n))
            .is_some_and(|n| n.body["shared"] == json!(true)),
        "security_groups" => rec.body["shared"] == json!(true),
        _ => false,
    }
}

/// A visible resource or Neutron's 404.
pub fn find<'a>(w: &'a World, ctx: &Ctx, col: &str, id: &str) -> ApiResult<&'a Rec> {
    w.get(col, id)
        .filter(|r| visible(w, ctx, col, r))
        .ok_or_else(|| not_found(col, id))
}

/// A resource the caller owns (mutable) or Neutron's 404.
pub fn find_owned<'a>(w: &'a mut World, ctx: &Ctx, col: &str, id: &str) -> ApiResult<&'a mut Rec> {
    w.get_mut(col, id)
        .filter(|r| ctx.owns(&r.project))
        .ok_or_else(|| not_found(col, id))
}

/// The wire form of a stored resource (joins derived fields).
pub fn render(w: &World, col: &str, rec: &Rec) -> Value {
    match col {
        "security_groups" => secgroups::render(w, rec),
        _ => rec.body.clone(),
    }
}

/// 409 OverQuota when a project is at its limit for a resource.
pub fn check_quota(w: &World, project: &str, col: &str, key: &str) -> ApiResult<()> {
    let limit = w.quota(project, key);
    if limit >= 0 && w.count_owned(col, project) >= limit {
        return Err(ApiError::conflict(
            SVC,
            "OverQuota",
            format!("Quota exceeded for resources: ['{key}']."),
        ));
    }
    Ok(())
}

/// Query keys every Neutron collection accepts: the list controller's skips (`fields`, `sort_key`,
/// `sort_dir`, `limit`, `marker`, `page_reverse`), the tag filters of `standard-attr-tag` and the
/// standard attributes.
const GENERIC_FILTERS: &[&str] = &[
    "fields",
    "sort_key",
    "sort_dir",
    "limit",
    "marker",
    "page_reverse",
    "tags",
    "tags-any",
    "not-tags",
    "not-tags-any",
    "id",
    "name",
    "description",
    "tenant_id",
    "project_id",
    "revision_number",
];

/// Attributes converted with neutron-lib `convert_to_boolean` when used as filters.
const BOOL_FILTERS: &[&str] = &[
    "admin_state_up",
    "shared",
    "router:external",
    "enable_dhcp",
    "distributed",
    "ha",
    "is_default",
    "stateful",
    "propagate_uplink_status",
    "dns_publish_fixed_ip",
];

/// Attributes that are not sort keys (`is_sort_key` unset in neutron-lib: lists, dicts, the
/// standard timestamps, descriptions, bindings, ...), checked on Neutron 29.
const NOT_SORT_KEYS: &[&str] = &[
    "description",
    "revision_number",
    "created_at",
    "updated_at",
    "tags",
    "fixed_ips",
    "allowed_address_pairs",
    "security_groups",
    "extra_dhcp_opts",
    "port_security_enabled",
    "binding:host_id",
    "binding:vnic_type",
    "binding:profile",
    "binding:vif_type",
    "binding:vif_details",
    "dns_name",
    "dns_assignment",
    "shared",
    "router:external",
    "subnets",
    "availability_zones",
    "availability_zone_hints",
    "allocation_pools",
    "dns_nameservers",
    "host_routes",
    "external_gateway_info",
    "routes",
    "stateful",
    "sub_ports",
    "port_details",
    "port_forwardings",
    "trunk_details",
];

/// oslo `bool_from_string(strict=True)`.
fn neutron_bool(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "1" | "t" | "true" | "on" | "y" | "yes" | "0" | "f" | "false" | "off" | "n" | "no"
    )
}

/// Neutron's `get_sorts` and `_get_limit_param` (api/api_common.py) on a list query.
fn validate_paging(q: &Query, col: &str) -> ApiResult<()> {
    let http_bad = |m: String| ApiError::bad_request(SVC, m).kind("HTTPBadRequest");
    let limit = q.get("limit");
    if let Some(l) = limit
        && l.parse::<u64>().is_err()
    {
        return Err(ApiError::bad_request(
            SVC,
            format!("Bad limit request: Limit must be an integer 0 or greater and not '{l}'."),
        ));
    }
    let keys: Vec<&str> = q
        .all("sort_key")
        .into_iter()
        .filter(|k| !k.is_empty())
        .collect();
    let dirs: Vec<&str> = q
        .all("sort_dir")
        .into_iter()
        .filter(|d| !d.is_empty())
        .collect();
    if keys.len() != dirs.len() {
        return Err(http_bad(
            "The number of sort_keys and sort_dirs must be same".into(),
        ));
    }
    let attrs = filter_attrs(col);
    let absent: Vec<String> = keys
        .iter()
        .filter(|k| {
            NOT_SORT_KEYS.contains(k)
                || !(attrs.contains(k) || ["id", "name", "project_id", "tenant_id"].contains(k))
        })
        .map(|k| format!("'{k}'"))
        .collect();
    if !absent.is_empty() {
        return Err(http_bad(format!(
            "[{}] is invalid attribute for sort_keys",
            absent.join(", ")
        )));
    }
    let bad_dirs: Vec<String> = dirs
        .iter()
        .filter(|d| !["asc", "desc"].contains(d))
        .map(|d| format!("'{d}'"))
        .collect();
    if !bad_dirs.is_empty() {
        return Err(http_bad(format!(
            "[{}] is invalid value for sort_dirs, valid value is 'asc' and 'desc'",
            bad_dirs.join(", ")
        )));
    }
    Ok(())
}

/// Attributes of each collection that may be used as filters: the fields the simulator serializes
/// (Neutron's `is_filter` attributes; joined lists such as a group's `security_group_rules` are not
/// filters there either).
pub fn filter_attrs(col: &str) -> &'static [&'static str] {
    match col {
        "networks" => &[
            "admin_state_up",
            "mtu",
            "status",
            "subnets",
            "shared",
            "availability_zone_hints",
            "availability_zones",
            "ipv4_address_scope",
            "ipv6_address_scope",
            "router:external",
            "port_security_enabled",
            "qos_policy_id",
            "dns_domain",
            "l2_adjacency",
            "is_default",
            "provider:network_type",
            "provider:physical_network",
            "provider:segmentation_id",
        ],
        "subnets" => &[
            "network_id",
            "ip_version",
            "cidr",
            "gateway_ip",
            "allocation_pools",
            "dns_nameservers",
            "host_routes",
            "enable_dhcp",
            "ipv6_ra_mode",
            "ipv6_address_mode",
            "subnetpool_id",
            "service_types",
            "segment_id",
            "dns_publish_fixed_ip",
        ],
        "ports" => &[
            "network_id",
            "admin_state_up",
            "mac_address",
            "status",
            "device_id",
            "device_owner",
            "fixed_ips",
            "allowed_address_pairs",
            "extra_dhcp_opts",
            "security_groups",
            "port_security_enabled",
            "binding:vnic_type",
            "binding:host_id",
            "binding:profile",
            "binding:vif_type",
            "binding:vif_details",
            "dns_name",
            "dns_assignment",
            "dns_domain",
            "qos_policy_id",
            "qos_network_policy_id",
            "propagate_uplink_status",
            "ip_allocation",
            "trunk_details",
        ],
        "routers" => &[
            "admin_state_up",
            "status",
            "external_gateway_info",
            "routes",
            "availability_zone_hints",
            "availability_zones",
            "distributed",
            "ha",
            "flavor_id",
        ],
        "floatingips" => &[
            "floating_network_id",
            "floating_ip_address",
            "fixed_ip_address",
            "port_id",
            "router_id",
            "status",
            "dns_domain",
            "dns_name",
            "port_details",
            "qos_policy_id",
            "subnet_id",
            "port_forwardings",
        ],
        "security_groups" => &["stateful", "shared"],
        "security_group_rules" => &[
            "security_group_id",
            "direction",
            "ethertype",
            "protocol",
            "port_range_min",
            "port_range_max",
            "remote_ip_prefix",
            "remote_group_id",
            "remote_address_group_id",
            "normalized_cidr",
            "belongs_to_default_sg",
        ],
        "trunks" => &["port_id", "status", "admin_state_up", "sub_ports"],
        _ => &[],
    }
}

/// `filter-validation` (on by default in Neutron): a query key that is not a filter of the
/// collection is `400 HTTPBadRequest "['k'] is invalid attribute for filtering"` (neutron
/// `api_common.get_filters_from_dict`, which formats the Python list of the invalid keys).
pub fn validate_filters(q: &Query, col: &str) -> ApiResult<()> {
    let attrs = filter_attrs(col);
    let mut invalid: Vec<&str> = Vec::new();
    for (k, _) in &q.0 {
        let k = k.as_str();
        if !GENERIC_FILTERS.contains(&k) && !attrs.contains(&k) && !invalid.contains(&k) {
            invalid.push(k);
        }
    }
    if !invalid.is_empty() {
        let list: Vec<String> = invalid.iter().map(|k| format!("'{k}'")).collect();
        return Err(ApiError::bad_request(
            SVC,
            format!("[{}] is invalid attribute for filtering", list.join(", ")),
        )
        .kind("HTTPBadRequest"));
    }
    for (k, v) in &q.0 {
        if BOOL_FILTERS.contains(&k.as_str()) && attrs.contains(&k.as_str()) && !neutron_bool(v) {
            return Err(ApiError::bad_request(
                SVC,
                format!("Invalid input for operation: '{v}' cannot be converted to boolean."),
            )
            .kind("InvalidInput"));
        }
    }
    validate_paging(q, col)
}

/// List a collection with filters, sorting, pagination and field selection.
pub fn list_with(
    st: &Shared,
    ctx: &Ctx,
    q: &Query,
    col: &str,
    skip: &[&str],
    extra: &dyn Fn(&Value) -> bool,
) -> ApiResult {
    validate_filters(q, col)?;
    let w = lock(st, ctx);
    // Neutron lists every project's resources to admins.
    let all = ctx.admin;
    let f = filter::Filter::new(q, skip);
    let mut items: Vec<Value> = w
        .iter(col)
        .filter(|(_, r)| if all { true } else { visible(&w, ctx, col, r) })
        .filter(|(_, r)| f.matches(&r.body) && extra(&r.body))
        .map(|(_, r)| render(&w, col, r))
        .collect();
    drop(w);
    filter::sort(&mut items, q);
    let k = kind(col);
    let base = format!("{}{P}/{}", st.base_url, k.url);
    let (mut items, links) = page(items, q, &base);
    filter::select_fields(&mut items, q);
    let mut out = Map::new();
    out.insert(k.col.to_string(), Value::Array(items));
    if !links.is_empty() {
        out.insert(format!("{}_links", k.col), Value::Array(links));
    }
    ok(Value::Object(out))
}

/// Neutron's pagination (`api_common.PaginationEmulatedHelper` and `get_pagination_links`): with
/// `limit`, a page after `marker` (or, with `page_reverse=True`, the `limit` items before it); a
/// `next` link unless the page is short (and not reversed), a `previous` link (marker = first
/// item, `page_reverse=True`) unless the page is short and reversed. So a full last page still
/// has a `next` link, whose page is empty.
fn page(items: Vec<Value>, q: &Query, base: &str) -> (Vec<Value>, Vec<Value>) {
    let Some(limit) = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
    else {
        return (items, vec![]);
    };
    let reverse = q
        .get("page_reverse")
        .is_some_and(|r| r.eq_ignore_ascii_case("true"));
    let marker = q.get("marker").filter(|m| !m.is_empty());
    let start = match marker {
        Some(m) => items.iter().position(|i| i["id"].as_str() == Some(m)),
        None if reverse => Some(items.len()),
        None => Some(0),
    };
    let page: Vec<Value> = match start {
        None => vec![],
        Some(i) if reverse => items[i.saturating_sub(limit)..i].to_vec(),
        Some(i) => {
            let i = if marker.is_some() { i + 1 } else { i };
            items.into_iter().skip(i).take(limit).collect()
        }
    };
    let short = page.len() < limit;
    let id = |v: Option<&Value>| v.and_then(|v| v["id"].as_str()).map(str::to_string);
    let mut links = Vec::new();
    if !short || reverse {
        let add: Vec<(&str, String)> = id(page.last()).map(|m| ("marker", m)).into_iter().collect();
        let add: Vec<(&str, &str)> = add.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let href = format!("{base}?{}", q.replacing(&["marker", "page_reverse"], &add));
        links.push(json!({"rel": "next", "href": href}));
    }
    if !short || !reverse {
        let first = id(page.first());
        let mut add: Vec<(&str, &str)> = first.iter().map(|m| ("marker", m.as_str())).collect();
        add.push(("page_reverse", "True"));
        let href = format!("{base}?{}", q.replacing(&["marker", "page_reverse"], &add));
        links.push(json!({"rel": "previous", "href": href}));
    }
    (page, links)
}

/// 201 with `{one: body}`.
pub fn created(col: &str, v: Value) -> ApiResult {
    Ok(reply(StatusCode::CREATED, json!({kind(col).one: v})))
}

/// Unwrap `{one: {...}}` from a request body.
pub fn req_member(col: &str, b: &Bytes) -> ApiResult<Value> {
    crate::http::member(SVC, body(SVC, b)?, kind(col).one)
}

const EXTENSIONS: &[(&str, &str)] = &[
    ("agent", "agent"),
    ("allowed-address-pairs", "Allowed Address Pairs"),
    ("availability_zone", "Availability Zone"),
    ("binding", "Port Binding"),
    ("default-subnetpools", "Default Subnetpools"),
    ("dns-integration", "DNS Integration"),
    ("external-net", "Neutron external network"),
    (
        "ext-gw-mode",
        "Neutron L3 Configurable external gateway mode",
    ),
    ("extraroute", "Neutron Extra Route"),
    ("network-ip-availability", "Network IP Availability"),
    ("network_availability_zone", "Network Availability Zone"),
    ("net-mtu", "Network MTU"),
    ("net-mtu-writable", "Network MTU (writable)"),
    ("port-security", "Port Security"),
    ("port-trusted-vif", "Port trusted vif"),
    ("project-id", "project_id field enabled"),
    ("quotas", "Quota management support"),
    ("quota_details", "Quota details management support"),
    ("router", "Neutron L3 Router"),
    ("router_availability_zone", "Router Availability Zone"),
    ("security-group", "security-group"),
    ("standard-attr-description", "standard-attr-description"),
    ("standard-attr-revisions", "Resource revision numbers"),
    (
        "standard-attr-tag",
        "Tag support for resources with standard attribute: subnet, trunk, network_segment_range, router, network, policy, subnetpool, port, security_group, floatingip",
    ),
    ("standard-attr-timestamp", "Resource timestamps"),
    ("subnet_allocation", "Subnet Allocation"),
    ("tag-creation", "Tag support for resource creation"),
    ("trunk", "Trunk Extension"),
    ("trunk-details", "Trunk port details"),
    ("pagination", "Pagination support"),
    ("sorting", "Sorting support"),
    ("stateful-security-group", "Stateful security group"),
    ("fip-port-details", "Floating IP Port Details Extension"),
    ("filter-validation", "Filter parameters validation"),
];

fn extension_json(alias: &str, name: &str) -> Value {
    json!({"alias": alias, "name": name, "description": name, "updated": "2020-01-01T10:00:00-00:00", "links": []})
}

/// The extensions of this Neutron: [`EXTENSIONS`], less the tag ones when
/// [`crate::seed::Seed::without_neutron_tags`].
fn listed(st: &Shared) -> Vec<(&'static str, &'static str)> {
    let untagged = st.world().seed.without_neutron_tags;
    EXTENSIONS
        .iter()
        .filter(|(a, _)| !(untagged && TAG_EXTENSIONS.contains(a)))
        .copied()
        .collect()
}

/// What a Neutron without tags does not have.
const TAG_EXTENSIONS: &[&str] = &["standard-attr-tag", "tag-creation"];

/// Neutron's 404 for a path it has no route for (the tags routes without `standard-attr-tag`).
pub fn no_tags_route(w: &crate::world::World) -> ApiResult<()> {
    if w.seed.without_neutron_tags {
        return Err(ApiError::not_found(
            SVC,
            "HTTPNotFound",
            "The resource could not be found.",
        ));
    }
    Ok(())
}

async fn extensions(State(st): State<AppState>) -> ApiResult {
    ok(
        json!({"extensions": listed(&st).iter().map(|(a, n)| extension_json(a, n)).collect::<Vec<_>>()}),
    )
}

async fn extension(State(st): State<AppState>, Path(alias): Path<String>) -> ApiResult {
    listed(&st)
        .iter()
        .find(|(a, _)| *a == alias)
        .map(|(a, n)| reply(StatusCode::OK, json!({"extension": extension_json(a, n)})))
        .ok_or_else(|| {
            ApiError::not_found(
                SVC,
                "HTTPNotFound",
                format!("Extension with alias {alias} does not exist"),
            )
        })
}

/// Neutron quota keys and the collections they count.
pub const QUOTA_KEYS: &[(&str, &str)] = &[
    ("network", "networks"),
    ("subnet", "subnets"),
    ("port", "ports"),
    ("router", "routers"),
    ("floatingip", "floatingips"),
    ("security_group", "security_groups"),
    ("security_group_rule", "security_group_rules"),
    ("trunk", "trunks"),
];

fn quota_target(ctx: &Ctx, project: &str) -> ApiResult<()> {
    if ctx.owns(project) {
        Ok(())
    } else {
        Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "PolicyNotAuthorized",
            "rule:get_quota is disallowed by policy",
        ))
    }
}

async fn quota_show(State(st): State<AppState>, ctx: Ctx, Path(p): Path<String>) -> ApiResult {
    quota_target(&ctx, &p)?;
    let w = lock(&st, &ctx);
    let q: Map<String, Value> = QUOTA_KEYS
        .iter()
        .map(|(k, _)| (k.to_string(), json!(w.quota(&p, k))))
        .collect();
    ok(json!({"quota": q}))
}

async fn quota_details(State(st): State<AppState>, ctx: Ctx, Path(p): Path<String>) -> ApiResult {
    quota_target(&ctx, &p)?;
    let w = lock(&st, &ctx);
    let q: Map<String, Value> = QUOTA_KEYS
        .iter()
        .map(|(k, col)| {
            (
                k.to_string(),
                json!({"limit": w.quota(&p, k), "used": w.count_owned(col, &p), "reserved": 0}),
            )
        })
        .collect();
    ok(json!({"quota": q}))
}

async fn quota_update(
    State(st): State<AppState>,
    ctx: Ctx,
    Path(p): Path<String>,
    b: Bytes,
) -> ApiResult {
    if !ctx.admin {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "PolicyNotAuthorized",
            "rule:update_quota is disallowed by policy",
        ));
    }
    let req = body(SVC, &b)?;
    let mut w = lock(&st, &ctx);
    for (k, v) in req["quota"].as_object().into_iter().flatten() {
        if let Some(n) = v.as_i64() {
            w.quotas.entry(p.clone()).or_default().insert(k.clone(), n);
        }
    }
    let q: Map<String, Value> = QUOTA_KEYS
        .iter()
        .map(|(k, _)| (k.to_string(), json!(w.quota(&p, k))))
        .collect();
    ok(json!({"quota": q}))
}

async fn quota_list(State(st): State<AppState>, ctx: Ctx) -> ApiResult {
    let w = lock(&st, &ctx);
    let list: Vec<Value> = w
        .quotas
        .iter()
        .filter(|(p, _)| ctx.owns(p))
        .map(|(p, _)| {
            let mut q: Map<String, Value> = QUOTA_KEYS
                .iter()
                .map(|(k, _)| (k.to_string(), json!(w.quota(p, k))))
                .collect();
            q.insert("project_id".into(), json!(p));
            q.insert("tenant_id".into(), json!(p));
            Value::Object(q)
        })
        .collect();
    ok(json!({"quotas": list}))
}

async fn availability_zones(State(st): State<AppState>, _ctx: Ctx) -> ApiResult {
    let zones = st.world().seed.availability_zones.clone();
    let list: Vec<Value> = zones
        .iter()
        .flat_map(|z| {
            ["network", "router"].map(|r| json!({"name": z, "resource": r, "state": "available"}))
        })
        .collect();
    ok(json!({"availability_zones": list}))
}

async fn versions(State(st): State<AppState>) -> Response {
    reply(
        StatusCode::OK,
        json!({"versions": [{"id": "v2.0", "status": "CURRENT",
        "links": [{"href": format!("{}/network/v2.0/", st.base_url), "rel": "self"}]}]}),
    )
}

async fn v2_root(State(st): State<AppState>) -> Response {
    let res: Vec<Value> = KINDS
        .iter()
        .map(|k| json!({"name": k.one, "collection": k.url,
                        "links": [{"href": format!("{}{P}/{}", st.base_url, k.url), "rel": "self"}]}))
        .collect();
    reply(StatusCode::OK, json!({"resources": res}))
}

/// Collections that exist in Neutron but hold nothing in the simulator.
const EMPTY_COLLECTIONS: &[&str] = &[
    "subnetpools",
    "address-scopes",
    "address-groups",
    "rbac-policies",
    "segments",
    "network-segment-ranges",
    "local-ips",
];

async fn empty_list(_ctx: Ctx, Path(res): Path<String>) -> ApiResult {
    if !EMPTY_COLLECTIONS.contains(&res.as_str()) {
        return Err(ApiError::not_found(
            SVC,
            "HTTPNotFound",
            "The resource could not be found.",
        ));
    }
    ok(json!({res.replace('-', "_"): []}))
}

/// Neutron routes.
pub fn routes() -> Router<AppState> {
    let mut r = Router::new()
        .route("/network", get(versions))
        .route(P, get(v2_root))
        .route(&format!("{P}/extensions"), get(extensions))
        .route(&format!("{P}/extensions/{{alias}}"), get(extension))
        .route(&format!("{P}/quotas"), get(quota_list))
        .route(
            &format!("{P}/quotas/{{p}}"),
            get(quota_show).put(quota_update),
        )
        .route(
            &format!("{P}/quotas/{{p}}/details.json"),
            get(quota_details),
        )
        .route(&format!("{P}/availability_zones"), get(availability_zones))
        .route(&format!("{P}/{{res}}"), get(empty_list));
    for k in KINDS.iter().filter(|k| k.col != "security_group_rules") {
        let col = k.col;
        r = r
            .route(
                &format!("{P}/{}/{{id}}/tags", k.url),
                get(move |s, c, Path(id): Path<String>| {
                    tags::tags_get(s, c, Path((col.to_string(), id)))
                })
                .merge(on(
                    MethodFilter::PUT.or(MethodFilter::POST),
                    move |s, c, m, Path(id): Path<String>, b| {
                        tags::tags_set(s, c, m, Path((col.to_string(), id)), b)
                    },
                ))
                .delete(move |s, c, Path(id): Path<String>| {
                    tags::tags_clear(s, c, Path((col.to_string(), id)))
                }),
            )
            .route(
                &format!("{P}/{}/{{id}}/tags/{{tag}}", k.url),
                on(
                    MethodFilter::GET
                        .or(MethodFilter::PUT)
                        .or(MethodFilter::DELETE),
                    move |s, c, m, Path((id, t)): Path<(String, String)>| {
                        tags::tag_one(s, c, m, Path((col.to_string(), id, t)))
                    },
                ),
            );
    }
    r.merge(networks::routes())
        .merge(subnets::routes())
        .merge(ports::routes())
        .merge(routers::routes())
        .merge(floatingips::routes())
        .merge(secgroups::routes())
        .merge(trunks::routes())
}

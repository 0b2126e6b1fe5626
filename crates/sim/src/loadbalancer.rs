//! Octavia v2: load balancers with a Neutron VIP port and the PENDING_* provisioning state machine,
//! plus providers, flavors, availability zones and version documents. Children live in `children`.

pub mod children;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult, Svc};
use crate::filter;
use crate::http::{AppState, Ctx, Query, body, member, ok, reply};
use crate::world::{PendingKind, Rec, World, new_id};

/// Service tag for Octavia errors.
pub const SVC: Svc = Svc::LoadBalancer;
const LB: &str = "loadbalancers";
/// Child collections, in deletion order (deepest first).
pub const CHILD_COLS: &[&str] = &["healthmonitors", "members", "pools", "listeners"];
const PROVIDERS: &[(&str, &str)] = &[
    ("amphora", "The Octavia Amphora driver."),
    ("octavia", "Deprecated alias of the Octavia Amphora driver."),
    ("ovn", "Octavia OVN driver."),
];

/// Octavia timestamp.
pub fn ts() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S").to_string()
}

/// Octavia 404.
pub fn nf(what: &str, id: &str) -> ApiError {
    ApiError::not_found(SVC, "", format!("{what} {id} not found."))
}

/// Octavia 409 for a load balancer in a PENDING_* state.
pub fn immutable(lb: &str) -> ApiError {
    ApiError::conflict(
        SVC,
        "",
        format!("Load Balancer {lb} is immutable and cannot be updated."),
    )
}

/// Octavia 409 for PUT/DELETE of a load balancer in a PENDING_* state (Octavia 19's
/// `_test_lb_status` path for the load balancer itself; children get [`immutable`]).
pub fn invalid_state(lb: &str, status: &str) -> ApiError {
    ApiError::conflict(
        SVC,
        "",
        format!("Invalid state {status} of loadbalancer resource {lb}"),
    )
}

/// A resource the caller owns, in any Octavia collection.
pub fn find<'a>(w: &'a World, ctx: &Ctx, col: &str, what: &str, id: &str) -> ApiResult<&'a Rec> {
    w.get(col, id)
        .filter(|r| ctx.owns(&r.project) && r.body["provisioning_status"] != json!("DELETED"))
        .ok_or_else(|| nf(what, id))
}

/// Require the load balancer to be ACTIVE, then mark it PENDING_UPDATE and schedule completion.
pub fn lock_lb(w: &mut World, lb: &str) -> ApiResult<()> {
    let r = w.get_mut(LB, lb).ok_or_else(|| nf("Load Balancer", lb))?;
    if r.body["provisioning_status"] != json!("ACTIVE") {
        return Err(immutable(lb));
    }
    r.body["provisioning_status"] = json!("PENDING_UPDATE");
    r.body["updated_at"] = json!(ts());
    let delay = w.delays.lb_update_ms;
    schedule(w, delay, lb);
    Ok(())
}

fn schedule(w: &mut World, delay: u64, lb: &str) {
    if delay == 0 {
        finish_pending(w, lb);
    } else {
        w.schedule(delay, PendingKind::LbActive { lb: lb.to_string() });
    }
}

/// Complete pending work on a load balancer: it and its pending children become ACTIVE; children
/// in PENDING_DELETE disappear.
pub fn finish_pending(w: &mut World, lb: &str) {
    let now = ts();
    if let Some(r) = w.get_mut(LB, lb).filter(|r| {
        r.body["provisioning_status"]
            .as_str()
            .is_some_and(|s| s.starts_with("PENDING_") && s != "PENDING_DELETE")
    }) {
        r.body["provisioning_status"] = json!("ACTIVE");
        r.body["operating_status"] = json!("ONLINE");
        r.body["updated_at"] = json!(now);
    }
    for col in CHILD_COLS {
        let ids: Vec<(String, String)> = w
            .iter(col)
            .filter(|(_, r)| r.body["_lb"] == json!(lb))
            .map(|(k, r)| {
                (
                    k.clone(),
                    r.body["provisioning_status"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect();
        for (id, status) in ids {
            if status == "PENDING_DELETE" {
                w.remove(col, &id);
            } else if status.starts_with("PENDING_") {
                let monitored = *col == "members" && children::pool_has_monitor(w, &id);
                if let Some(r) = w.get_mut(col, &id) {
                    r.body["provisioning_status"] = json!("ACTIVE");
                    r.body["operating_status"] = json!(if *col == "members" && !monitored {
                        "NO_MONITOR"
                    } else {
                        "ONLINE"
                    });
                    r.body["updated_at"] = json!(now);
                }
            }
        }
    }
}

/// Remove a load balancer in PENDING_DELETE with its children and VIP port.
pub fn finish_delete(w: &mut World, lb: &str) {
    for col in CHILD_COLS {
        let ids: Vec<String> = w
            .iter(col)
            .filter(|(_, r)| r.body["_lb"] == json!(lb))
            .map(|(k, _)| k.clone())
            .collect();
        for id in ids {
            w.remove(col, &id);
        }
    }
    if let Some(r) = w.remove(LB, lb)
        && r.body["_own_vip_port"] == json!(true)
        && let Some(p) = r.body["vip_port_id"].as_str()
    {
        crate::network::ports::remove_port(w, p);
    }
}

/// Strip internal fields and join references.
pub fn render(w: &World, col: &str, r: &Rec) -> Value {
    let mut b = r.body.clone();
    let id = r.body["id"].clone();
    let refs = |c: &str, key: &str| -> Value {
        Value::Array(
            w.iter(c)
                .filter(|(_, x)| {
                    x.body[key] == id && x.body["provisioning_status"] != json!("DELETED")
                })
                .map(|(k, _)| json!({"id": k}))
                .collect(),
        )
    };
    match col {
        LB => {
            b["listeners"] = refs("listeners", "_lb");
            b["pools"] = refs("pools", "_lb");
        }
        _ => children::join(w, col, &mut b),
    }
    if let Some(o) = b.as_object_mut() {
        o.retain(|k, _| !k.starts_with('_'));
    }
    b
}

/// Octavia list reply with filters and pagination.
pub fn list_reply(
    st: &AppState,
    ctx: &Ctx,
    q: &Query,
    col: &str,
    key: &str,
    scope: &dyn Fn(&Value) -> bool,
) -> ApiResult {
    let w = st.world();
    let mut items: Vec<Value> = w
        .iter(col)
        .filter(|(_, r)| ctx.owns(&r.project) && scope(&r.body) && filter::matches(&r.body, q, &[]))
        .map(|(_, r)| render(&w, col, r))
        .collect();
    drop(w);
    filter::sort(&mut items, q);
    let (mut items, mut next) = filter::page(items, q, "id");
    // Octavia links a next page whenever a page is full (the following page may be empty).
    if next.is_none()
        && let Some(l) = q.get("limit").and_then(|l| l.parse::<usize>().ok())
        && l > 0
        && items.len() == l
    {
        next = items
            .last()
            .and_then(|v| v["id"].as_str())
            .map(str::to_string);
    }
    filter::select_fields(&mut items, q);
    let mut links = Vec::new();
    if let Some(m) = next {
        links.push(json!({"rel": "next", "href": format!("{}/load-balancer/v2/lbaas/{key}?{}", st.base_url, q.with_marker(&m))}));
    }
    let mut out = Map::new();
    out.insert(key.to_string(), Value::Array(items));
    out.insert(format!("{key}_links"), Value::Array(links));
    ok(Value::Object(out))
}

fn vip_port(w: &mut World, ctx: &Ctx, req: &Value, lb: &str) -> ApiResult<(Value, bool)> {
    let nerr = |e: ApiError| ApiError::new(SVC, e.status, "", e.message);
    if let Some(pid) = req["vip_port_id"].as_str() {
        let p = crate::network::find(w, ctx, "ports", pid)
            .map_err(|_| ApiError::bad_request(SVC, format!("Port {pid} not found.")))?;
        return Ok((p.body.clone(), false));
    }
    let (net, subnet) = if let Some(s) = req["vip_subnet_id"].as_str() {
        // Octavia validates the VIP subnet itself: 400, not Neutron's 404.
        let sub = crate::network::find(w, ctx, "subnets", s)
            .map_err(|_| ApiError::bad_request(SVC, format!("Subnet {s} not found.")))?;
        (
            sub.body["network_id"].as_str().unwrap_or("").to_string(),
            Some(s.to_string()),
        )
    } else if let Some(n) = req["vip_network_id"].as_str() {
        crate::network::find(w, ctx, "networks", n)
            .map_err(|_| ApiError::bad_request(SVC, format!("Network {n} not found.")))?;
        (n.to_string(), None)
    } else {
        return Err(ApiError::bad_request(
            SVC,
            "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.",
        ));
    };
    let mut preq = json!({"network_id": net, "name": format!("octavia-lb-{lb}"), "device_owner": "Octavia", "device_id": format!("lb-{lb}")});
    match (subnet, req["vip_address"].as_str()) {
        (Some(s), Some(ip)) => preq["fixed_ips"] = json!([{"subnet_id": s, "ip_address": ip}]),
        (Some(s), None) => preq["fixed_ips"] = json!([{"subnet_id": s}]),
        (None, Some(ip)) => preq["fixed_ips"] = json!([{"ip_address": ip}]),
        (None, None) => {}
    }
    let port = crate::network::ports::create_port(w, ctx, preq).map_err(nerr)?;
    Ok((port, true))
}

async fn create_lb(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "loadbalancer")?;
    let mut w = st.world();
    crate::network::secgroups::ensure_default(&mut w, &ctx.project);
    let provider = req["provider"].as_str().unwrap_or("amphora").to_string();
    if !PROVIDERS.iter().any(|(p, _)| *p == provider) {
        return Err(ApiError::bad_request(
            SVC,
            format!("Provider '{provider}' is not enabled."),
        ));
    }
    if let Some(az) = req["availability_zone"].as_str()
        && !w.seed.availability_zones.iter().any(|z| z == az)
    {
        return Err(ApiError::bad_request(
            SVC,
            format!("Validation failure: Invalid availability zone: {az}"),
        ));
    }
    // Octavia's flavor validation: unknown -> InvalidOption, disabled -> DisabledOption.
    let flavor_id = match req["flavor_id"].as_str() {
        Some(f) => match w.seed.lb_flavors.iter().find(|lf| lf.id() == f) {
            None => {
                return Err(ApiError::bad_request(
                    SVC,
                    format!("{f} is not a valid option for flavor"),
                ));
            }
            Some(lf) if !lf.enabled => {
                return Err(ApiError::bad_request(
                    SVC,
                    format!("The selected flavor is not allowed in this deployment: {f}"),
                ));
            }
            Some(_) => json!(f),
        },
        None => Value::Null,
    };
    children::check_graph(&req["listeners"])?;
    let id = new_id();
    let (port, own) = vip_port(&mut w, &ctx, &req, &id)?;
    let now = ts();
    let lb = json!({
        "id": id, "name": req.get("name").cloned().unwrap_or(json!("")), "description": req.get("description").cloned().unwrap_or(json!("")),
        "provisioning_status": "PENDING_CREATE", "operating_status": "OFFLINE", "admin_state_up": req.get("admin_state_up").cloned().unwrap_or(json!(true)),
        "project_id": ctx.project, "tenant_id": ctx.project, "created_at": now, "updated_at": null,
        "vip_address": port["fixed_ips"][0]["ip_address"], "vip_port_id": port["id"], "vip_subnet_id": port["fixed_ips"][0]["subnet_id"],
        "vip_network_id": port["network_id"], "vip_qos_policy_id": req.get("vip_qos_policy_id").cloned().unwrap_or(Value::Null),
        "provider": provider, "flavor_id": flavor_id, "availability_zone": req.get("availability_zone").cloned().unwrap_or(Value::Null),
        "tags": req.get("tags").cloned().unwrap_or(json!([])), "additional_vips": [], "vip_vnic_type": "normal", "vip_sg_ids": null,
        "_own_vip_port": own,
    });
    w.insert(LB, &id, &ctx.project, lb);
    children::create_graph(&mut w, &ctx, &id, &req["listeners"]);
    let delay = w.delays.lb_provision_ms;
    schedule(&mut w, delay, &id);
    let r = w
        .get(LB, &id)
        .cloned()
        .ok_or_else(|| nf("Load Balancer", &id))?;
    Ok(reply(
        StatusCode::CREATED,
        json!({"loadbalancer": render(&w, LB, &r)}),
    ))
}

async fn show_lb(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let w = st.world();
    let r = find(&w, &ctx, LB, "Load Balancer", &id)?;
    ok(json!({"loadbalancer": render(&w, LB, r)}))
}

async fn update_lb(
    State(st): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    b: Bytes,
) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "loadbalancer")?;
    let mut w = st.world();
    let status = find(&w, &ctx, LB, "Load Balancer", &id)?.body["provisioning_status"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if status != "ACTIVE" {
        return Err(invalid_state(&id, &status));
    }
    lock_lb(&mut w, &id)?;
    let r = w.get_mut(LB, &id).ok_or_else(|| nf("Load Balancer", &id))?;
    for k in [
        "name",
        "description",
        "admin_state_up",
        "vip_qos_policy_id",
        "tags",
    ] {
        if let Some(v) = req.get(k) {
            r.body[k] = v.clone();
        }
    }
    let r = r.clone();
    ok(json!({"loadbalancer": render(&w, LB, &r)}))
}

async fn delete_lb(
    State(st): State<AppState>,
    ctx: Ctx,
    q: Query,
    Path(id): Path<String>,
) -> ApiResult {
    let mut w = st.world();
    let status = find(&w, &ctx, LB, "Load Balancer", &id)?.body["provisioning_status"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let cascade = q
        .get("cascade")
        .is_some_and(|c| c.eq_ignore_ascii_case("true"));
    // Octavia checks for children before the state.
    let has_children = CHILD_COLS
        .iter()
        .any(|c| w.iter(c).any(|(_, r)| r.body["_lb"] == json!(id)));
    if has_children && !cascade {
        return Err(ApiError::bad_request(
            SVC,
            format!("Validation failure: Cannot delete Load Balancer {id} - it has children"),
        ));
    }
    if status.starts_with("PENDING_") {
        return Err(invalid_state(&id, &status));
    }
    for col in CHILD_COLS.iter().copied().chain([LB]) {
        let ids: Vec<String> = w
            .iter(col)
            .filter(|(k, r)| r.body["_lb"] == json!(id) || (col == LB && *k == &id))
            .map(|(k, _)| k.clone())
            .collect();
        for cid in ids {
            if let Some(r) = w.get_mut(col, &cid) {
                r.body["provisioning_status"] = json!("PENDING_DELETE");
            }
        }
    }
    let delay = w.delays.lb_delete_ms;
    if delay == 0 {
        finish_delete(&mut w, &id);
    } else {
        w.schedule(delay, PendingKind::LbDelete(id));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn status_tree(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let w = st.world();
    let lb = find(&w, &ctx, LB, "Load Balancer", &id)?;
    let brief = |b: &Value| json!({"id": b["id"], "name": b["name"], "provisioning_status": b["provisioning_status"], "operating_status": b["operating_status"]});
    let of = |col: &str, key: &str, val: &Value| -> Vec<Value> {
        w.iter(col)
            .filter(|(_, r)| &r.body[key] == val)
            .map(|(_, r)| r.body.clone())
            .collect()
    };
    let listeners: Vec<Value> = of("listeners", "_lb", &json!(id))
        .iter()
        .map(|l| {
            let mut lj = brief(l);
            let pools: Vec<Value> = of("pools", "_listener", &l["id"])
                .iter()
                .map(|p| {
                    let mut pj = brief(p);
                    pj["members"] = json!(
                        of("members", "_pool", &p["id"])
                            .iter()
                            .map(&brief)
                            .collect::<Vec<_>>()
                    );
                    if let Some(hm) = of("healthmonitors", "_pool", &p["id"]).first() {
                        pj["health_monitor"] = brief(hm);
                    }
                    pj
                })
                .collect();
            lj["pools"] = json!(pools);
            lj
        })
        .collect();
    let mut root = brief(&lb.body);
    root["listeners"] = json!(listeners);
    ok(json!({"statuses": {"loadbalancer": root}}))
}

async fn providers(_ctx: Ctx) -> ApiResult {
    ok(
        json!({"providers": PROVIDERS.iter().map(|(n, d)| json!({"name": n, "description": d})).collect::<Vec<_>>()}),
    )
}

/// Octavia flavors (any project may list them), with attribute filters (`name`, `enabled`, ...),
/// sorting and `fields`.
async fn flavors(State(st): State<AppState>, _ctx: Ctx, q: Query) -> ApiResult {
    let mut items: Vec<Value> = st
        .world()
        .seed
        .lb_flavors
        .iter()
        .map(|f| json!({"id": f.id(), "name": f.name, "description": f.description, "enabled": f.enabled, "flavor_profile_id": crate::world::stable_id("lb-flavor-profile", &f.name)}))
        .filter(|f| filter::matches(f, &q, &[]))
        .collect();
    filter::sort(&mut items, &q);
    filter::select_fields(&mut items, &q);
    ok(json!({"flavors": items, "flavors_links": []}))
}

async fn azs(State(st): State<AppState>, _ctx: Ctx) -> ApiResult {
    let zones = st.world().seed.availability_zones.clone();
    let list: Vec<Value> = zones.iter().map(|z| json!({"name": z, "description": "", "enabled": true, "availability_zone_profile_id": null})).collect();
    ok(json!({"availabilityzones": list, "availabilityzones_links": []}))
}

fn versions_doc(base: &str) -> Value {
    let mut list: Vec<Value> = (0..27)
        .map(|m| json!({"id": format!("v2.{m}"), "status": "SUPPORTED", "updated": "2016-12-11T00:00:00Z", "links": [{"href": format!("{base}/load-balancer/v2"), "rel": "self"}]}))
        .collect();
    list.push(json!({"id": "v2.27", "status": "CURRENT", "updated": "2023-05-17T00:00:00Z", "links": [{"href": format!("{base}/load-balancer/v2"), "rel": "self"}]}));
    json!({"versions": list})
}

async fn root(State(st): State<AppState>) -> Response {
    reply(StatusCode::OK, versions_doc(&st.base_url))
}

/// Octavia routes (served under both `/load-balancer/v2` and `/load-balancer/v2.0`).
pub fn routes() -> Router<AppState> {
    let mut r = Router::new().route("/load-balancer", get(root));
    for v in ["v2", "v2.0"] {
        let p = format!("/load-balancer/{v}/lbaas");
        r = r
            .route(&format!("/load-balancer/{v}"), get(root))
            .route(
                &format!("{p}/loadbalancers"),
                get(
                    |State(st): State<AppState>, ctx: Ctx, q: Query| async move {
                        list_reply(&st, &ctx, &q, LB, "loadbalancers", &|_| true)
                    },
                )
                .post(create_lb),
            )
            .route(
                &format!("{p}/loadbalancers/{{id}}"),
                get(show_lb).put(update_lb).delete(delete_lb),
            )
            .route(
                &format!("{p}/loadbalancers/{{id}}/status"),
                get(status_tree),
            )
            .route(&format!("{p}/providers"), get(providers))
            .route(&format!("{p}/flavors"), get(flavors))
            .route(&format!("{p}/availabilityzones"), get(azs))
            .merge(children::routes(&p));
    }
    r
}

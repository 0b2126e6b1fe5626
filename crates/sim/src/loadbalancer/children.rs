//! Octavia listeners, pools, members and health monitors. Every change requires the parent load
//! balancer to be ACTIVE (else 409 immutable) and puts it in PENDING_UPDATE until it completes.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, Query, body, member, ok, reply};
use crate::loadbalancer::{SVC, find, list_reply, lock_lb, render, ts};
use crate::world::{World, new_id};

const PROTOCOLS: &[&str] = &[
    "HTTP",
    "HTTPS",
    "TCP",
    "UDP",
    "TERMINATED_HTTPS",
    "SCTP",
    "PROMETHEUS",
];
const ALGORITHMS: &[&str] = &[
    "ROUND_ROBIN",
    "LEAST_CONNECTIONS",
    "SOURCE_IP",
    "SOURCE_IP_PORT",
];
const MONITOR_TYPES: &[&str] = &[
    "HTTP",
    "HTTPS",
    "PING",
    "TCP",
    "TLS-HELLO",
    "UDP-CONNECT",
    "SCTP",
];

/// The string `field` of a request when it is one of `allowed`, else Octavia's 400.
fn one_of<'a>(req: &'a Value, field: &str, allowed: &[&str]) -> ApiResult<&'a str> {
    let v = req[field].as_str().unwrap_or("");
    if allowed.contains(&v) {
        return Ok(v);
    }
    Err(invalid(format!(
        "{field}. Value: '{v}'. Value should be one of: {}",
        allowed.join(", ")
    )))
}

fn invalid(msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(
        SVC,
        format!("Invalid input for field/attribute {}", msg.into()),
    )
}

fn refs(ids: impl Iterator<Item = String>) -> Value {
    Value::Array(ids.map(|i| json!({"id": i})).collect())
}

/// Fill in derived references of a child body.
pub fn join(w: &World, col: &str, b: &mut Value) {
    let id = b["id"].clone();
    let alive = |r: &&crate::world::Rec| r.body["provisioning_status"] != json!("DELETED");
    match col {
        "listeners" => {
            b["loadbalancers"] = json!([{"id": b["_lb"]}]);
        }
        "pools" => {
            b["loadbalancers"] = json!([{"id": b["_lb"]}]);
            b["listeners"] = refs(
                w.iter("listeners")
                    .map(|(_, r)| r)
                    .filter(alive)
                    .filter(|r| r.body["default_pool_id"] == id)
                    .map(|r| r.body["id"].as_str().unwrap_or("").to_string()),
            );
            b["members"] = refs(
                w.iter("members")
                    .filter(|(_, r)| r.body["_pool"] == id)
                    .map(|(k, _)| k.clone()),
            );
            b["healthmonitor_id"] = w
                .iter("healthmonitors")
                .find(|(_, r)| r.body["_pool"] == id)
                .map_or(Value::Null, |(k, _)| json!(k));
        }
        "healthmonitors" => {
            b["pools"] = json!([{"id": b["_pool"]}]);
        }
        _ => {}
    }
}

/// Whether the member's pool has a health monitor.
pub fn pool_has_monitor(w: &World, member: &str) -> bool {
    let pool = w
        .get("members", member)
        .map(|r| r.body["_pool"].clone())
        .unwrap_or_default();
    w.iter("healthmonitors")
        .any(|(_, r)| r.body["_pool"] == pool)
}

fn base(ctx: &Ctx, lb: &str, req: &Value, defaults: Value) -> Value {
    let mut b = defaults;
    for (k, v) in req.as_object().into_iter().flatten() {
        b[k] = v.clone();
    }
    let now = ts();
    for (k, v) in [
        ("id", json!(new_id())),
        ("project_id", json!(ctx.project)),
        ("tenant_id", json!(ctx.project)),
        ("provisioning_status", json!("PENDING_CREATE")),
        ("operating_status", json!("OFFLINE")),
        ("created_at", json!(now)),
        ("updated_at", Value::Null),
        ("_lb", json!(lb)),
    ] {
        b[k] = v;
    }
    for k in ["name", "description"] {
        if b[k].is_null() {
            b[k] = json!("");
        }
    }
    if b["tags"].is_null() {
        b["tags"] = json!([]);
    }
    if b["admin_state_up"].is_null() {
        b["admin_state_up"] = json!(true);
    }
    b
}

fn store(w: &mut World, ctx: &Ctx, col: &str, one: &str, b: Value) -> ApiResult {
    let id = b["id"].as_str().unwrap_or("").to_string();
    w.insert(col, &id, &ctx.project, b);
    let r = w
        .get(col, &id)
        .cloned()
        .ok_or_else(|| crate::loadbalancer::nf(one, &id))?;
    Ok(reply(StatusCode::CREATED, json!({one: render(w, col, &r)})))
}

async fn create_listener(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "listener")?;
    let lb = req["loadbalancer_id"]
        .as_str()
        .ok_or_else(|| invalid("loadbalancer_id. Value: 'None'. Mandatory field missing."))?
        .to_string();
    one_of(&req, "protocol", PROTOCOLS)?;
    let port = req["protocol_port"]
        .as_i64()
        .filter(|p| (1..=65535).contains(p))
        .ok_or_else(|| invalid("protocol_port. Value: must be between 1 and 65535"))?;
    let mut w = st.world();
    find(&w, &ctx, "loadbalancers", "Load Balancer", &lb)?;
    let dup = w.iter("listeners").any(|(_, r)| {
        r.body["_lb"] == json!(lb)
            && r.body["protocol_port"] == json!(port)
            && r.body["provisioning_status"] != json!("PENDING_DELETE")
    });
    if dup {
        return Err(ApiError::conflict(
            SVC,
            "",
            format!("Another Listener on this Load Balancer is already using protocol_port {port}"),
        ));
    }
    if let Some(p) = req["default_pool_id"].as_str() {
        find(&w, &ctx, "pools", "Pool", p)?;
    }
    lock_lb(&mut w, &lb)?;
    let b = base(&ctx, &lb, &req, listener_defaults());
    store(&mut w, &ctx, "listeners", "listener", b)
}

fn listener_defaults() -> Value {
    json!({"default_pool_id": null, "connection_limit": -1, "allowed_cidrs": null, "default_tls_container_ref": null,
        "sni_container_refs": [], "insert_headers": {}, "l7policies": [], "timeout_client_data": 50000, "timeout_member_connect": 5000,
        "timeout_member_data": 50000, "timeout_tcp_inspect": 0, "tls_ciphers": null, "tls_versions": null, "alpn_protocols": null,
        "client_ca_tls_container_ref": null, "client_authentication": "NONE", "client_crl_container_ref": null, "hsts_max_age": null,
        "hsts_include_subdomains": false, "hsts_preload": false})
}

fn pool_defaults() -> Value {
    json!({"session_persistence": null, "tls_enabled": false, "tls_container_ref": null, "ca_tls_container_ref": null,
        "crl_container_ref": null, "tls_ciphers": null, "tls_versions": null, "alpn_protocols": null})
}

fn monitor_defaults(monitor_type: &str) -> Value {
    let http = monitor_type.starts_with("HTTP");
    json!({"max_retries_down": 3, "http_method": if http { json!("GET") } else { Value::Null },
        "url_path": if http { json!("/") } else { Value::Null }, "expected_codes": if http { json!("200") } else { Value::Null },
        "http_version": if http { json!(1.0) } else { Value::Null }, "domain_name": null})
}

/// Validate the listeners of a fully populated load balancer create (`listeners`, each with an
/// optional `default_pool`, itself with an optional `healthmonitor`), as Octavia does before
/// creating anything.
pub fn check_graph(listeners: &Value) -> ApiResult<()> {
    let Some(list) = listeners.as_array() else {
        return if listeners.is_null() {
            Ok(())
        } else {
            Err(invalid("listeners. Value: must be a list"))
        };
    };
    let mut ports = Vec::new();
    for l in list {
        one_of(l, "protocol", PROTOCOLS)?;
        let port = l["protocol_port"]
            .as_i64()
            .filter(|p| (1..=65535).contains(p))
            .ok_or_else(|| invalid("protocol_port. Value: must be between 1 and 65535"))?;
        if ports.contains(&port) {
            return Err(ApiError::conflict(
                SVC,
                "",
                format!(
                    "Another Listener on this Load Balancer is already using protocol_port {port}"
                ),
            ));
        }
        ports.push(port);
        let pool = &l["default_pool"];
        if pool.is_null() {
            continue;
        }
        one_of(pool, "lb_algorithm", ALGORITHMS)?;
        let monitor = &pool["healthmonitor"];
        if !monitor.is_null() {
            one_of(monitor, "type", MONITOR_TYPES)?;
            for k in ["delay", "timeout", "max_retries"] {
                if monitor[k].as_i64().is_none() {
                    return Err(invalid(format!(
                        "{k}. Value: 'None'. Mandatory field missing."
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Create the children of a fully populated load balancer create (checked by
/// [`check_graph`]), PENDING_CREATE with the load balancer: they go ACTIVE with it.
pub fn create_graph(w: &mut World, ctx: &Ctx, lb: &str, listeners: &Value) {
    for l in listeners.as_array().into_iter().flatten() {
        let mut lreq = l.clone();
        let pool = lreq
            .as_object_mut()
            .and_then(|o| o.remove("default_pool"))
            .unwrap_or(Value::Null);
        let mut listener = base(ctx, lb, &lreq, listener_defaults());
        let listener_id = listener["id"].clone();
        if !pool.is_null() {
            let mut preq = pool.clone();
            let monitor = preq
                .as_object_mut()
                .and_then(|o| o.remove("healthmonitor"))
                .unwrap_or(Value::Null);
            let mut p = base(ctx, lb, &preq, pool_defaults());
            p["_listener"] = listener_id.clone();
            listener["default_pool_id"] = p["id"].clone();
            if !monitor.is_null() {
                let ty = monitor["type"].as_str().unwrap_or("TCP").to_string();
                let mut m = base(ctx, lb, &monitor, monitor_defaults(&ty));
                m["_pool"] = p["id"].clone();
                let id = m["id"].as_str().unwrap_or("").to_string();
                w.insert("healthmonitors", &id, &ctx.project, m);
            }
            let id = p["id"].as_str().unwrap_or("").to_string();
            w.insert("pools", &id, &ctx.project, p);
        }
        let id = listener["id"].as_str().unwrap_or("").to_string();
        w.insert("listeners", &id, &ctx.project, listener);
    }
}

async fn create_pool(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "pool")?;
    one_of(&req, "lb_algorithm", ALGORITHMS)?;
    let proto = req["protocol"].as_str().unwrap_or("");
    if !PROTOCOLS.contains(&proto) && proto != "PROXY" && proto != "PROXYV2" {
        return Err(invalid(format!("protocol. Value: '{proto}'.")));
    }
    let mut w = st.world();
    let listener = req["listener_id"].as_str().map(str::to_string);
    let lb = match (&listener, req["loadbalancer_id"].as_str()) {
        (Some(l), _) => {
            let lr = find(&w, &ctx, "listeners", "Listener", l)?;
            if !lr.body["default_pool_id"].is_null() {
                return Err(ApiError::conflict(
                    SVC,
                    "",
                    format!("Listener {l} already has a default pool"),
                ));
            }
            lr.body["_lb"].as_str().unwrap_or("").to_string()
        }
        (None, Some(lb)) => lb.to_string(),
        (None, None) => {
            return Err(ApiError::bad_request(
                SVC,
                "Validation failure: Either a listener_id or loadbalancer_id must be specified.",
            ));
        }
    };
    find(&w, &ctx, "loadbalancers", "Load Balancer", &lb)?;
    lock_lb(&mut w, &lb)?;
    let mut b = base(&ctx, &lb, &req, pool_defaults());
    if let Some(o) = b.as_object_mut() {
        o.remove("listener_id");
        o.remove("loadbalancer_id");
    }
    b["_listener"] = json!(listener);
    if let Some(l) = &listener
        && let Some(r) = w.get_mut("listeners", l)
    {
        r.body["default_pool_id"] = b["id"].clone();
    }
    store(&mut w, &ctx, "pools", "pool", b)
}

async fn create_member(
    State(st): State<AppState>,
    ctx: Ctx,
    Path(pool): Path<String>,
    b: Bytes,
) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "member")?;
    let addr = req["address"]
        .as_str()
        .filter(|a| a.parse::<std::net::IpAddr>().is_ok())
        .ok_or_else(|| invalid("address. Value: must be a valid IP address"))?
        .to_string();
    let port = req["protocol_port"]
        .as_i64()
        .filter(|p| (1..=65535).contains(p))
        .ok_or_else(|| invalid("protocol_port. Value: must be between 1 and 65535"))?;
    let mut w = st.world();
    let lb = find(&w, &ctx, "pools", "Pool", &pool)?.body["_lb"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let dup = w.iter("members").any(|(_, r)| {
        r.body["_pool"] == json!(pool)
            && r.body["address"] == json!(addr)
            && r.body["protocol_port"] == json!(port)
    });
    if dup {
        return Err(ApiError::conflict(
            SVC,
            "",
            format!(
                "Another member on this pool is already using ip {addr} on protocol_port {port}"
            ),
        ));
    }
    if let Some(s) = req["subnet_id"].as_str() {
        crate::network::find(&w, &ctx, "subnets", s).map_err(|e| {
            ApiError::bad_request(SVC, format!("Validation failure: {}", e.message))
        })?;
    }
    lock_lb(&mut w, &lb)?;
    let defaults = json!({"subnet_id": null, "weight": 1, "backup": false, "monitor_address": null, "monitor_port": null, "vnic_type": "normal"});
    let mut b = base(&ctx, &lb, &req, defaults);
    b["_pool"] = json!(pool);
    store(&mut w, &ctx, "members", "member", b)
}

async fn create_monitor(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "healthmonitor")?;
    let ty = one_of(&req, "type", MONITOR_TYPES)?;
    for k in ["delay", "timeout", "max_retries"] {
        if req[k].as_i64().is_none() {
            return Err(invalid(format!(
                "{k}. Value: 'None'. Mandatory field missing."
            )));
        }
    }
    let pool = req["pool_id"]
        .as_str()
        .ok_or_else(|| invalid("pool_id. Value: 'None'. Mandatory field missing."))?
        .to_string();
    let mut w = st.world();
    let lb = find(&w, &ctx, "pools", "Pool", &pool)?.body["_lb"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if w.iter("healthmonitors")
        .any(|(_, r)| r.body["_pool"] == json!(pool))
    {
        return Err(ApiError::conflict(
            SVC,
            "",
            "This Pool already has a Health Monitor",
        ));
    }
    lock_lb(&mut w, &lb)?;
    let mut b = base(&ctx, &lb, &req, monitor_defaults(ty));
    if let Some(o) = b.as_object_mut() {
        o.remove("pool_id");
    }
    b["_pool"] = json!(pool);
    store(&mut w, &ctx, "healthmonitors", "healthmonitor", b)
}

const UPDATABLE: &[&str] = &[
    "name",
    "description",
    "admin_state_up",
    "tags",
    "connection_limit",
    "allowed_cidrs",
    "default_pool_id",
    "timeout_client_data",
    "timeout_member_connect",
    "timeout_member_data",
    "timeout_tcp_inspect",
    "insert_headers",
    "lb_algorithm",
    "session_persistence",
    "weight",
    "backup",
    "monitor_address",
    "monitor_port",
    "delay",
    "timeout",
    "max_retries",
    "max_retries_down",
    "http_method",
    "url_path",
    "expected_codes",
];

fn update(
    st: &AppState,
    ctx: &Ctx,
    col: &str,
    one: &str,
    what: &str,
    id: &str,
    b: &Bytes,
) -> ApiResult {
    let req = member(SVC, body(SVC, b)?, one)?;
    let mut w = st.world();
    lock_parent(&mut w, ctx, col, what, id)?;
    let r = w
        .get_mut(col, id)
        .ok_or_else(|| crate::loadbalancer::nf(what, id))?;
    for (k, v) in req.as_object().into_iter().flatten() {
        if UPDATABLE.contains(&k.as_str()) {
            r.body[k] = v.clone();
        }
    }
    r.body["provisioning_status"] = json!("PENDING_UPDATE");
    r.body["updated_at"] = json!(ts());
    let r = r.clone();
    ok(json!({one: render(&w, col, &r)}))
}

/// Mark the load balancer of a child PENDING_UPDATE (Octavia's 409 unless it is ACTIVE).
fn lock_parent(w: &mut World, ctx: &Ctx, col: &str, what: &str, id: &str) -> ApiResult<()> {
    let lb = find(w, ctx, col, what, id)?.body["_lb"]
        .as_str()
        .unwrap_or("")
        .to_string();
    lock_lb(w, &lb)
}

fn delete(st: &AppState, ctx: &Ctx, col: &str, what: &str, id: &str) -> ApiResult {
    let mut w = st.world();
    lock_parent(&mut w, ctx, col, what, id)?;
    let mut doomed = vec![(col.to_string(), id.to_string())];
    if col == "pools" {
        for c in ["members", "healthmonitors"] {
            doomed.extend(
                w.iter(c)
                    .filter(|(_, r)| r.body["_pool"] == json!(id))
                    .map(|(k, _)| (c.to_string(), k.clone())),
            );
        }
        let listeners: Vec<String> = w
            .iter("listeners")
            .filter(|(_, r)| r.body["default_pool_id"] == json!(id))
            .map(|(k, _)| k.clone())
            .collect();
        for l in listeners {
            if let Some(r) = w.get_mut("listeners", &l) {
                r.body["default_pool_id"] = Value::Null;
            }
        }
    }
    for (c, i) in doomed {
        if let Some(r) = w.get_mut(&c, &i) {
            r.body["provisioning_status"] = json!("PENDING_DELETE");
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn show(st: &AppState, ctx: &Ctx, col: &str, one: &str, what: &str, id: &str) -> ApiResult {
    let w = st.world();
    let r = find(&w, ctx, col, what, id)?;
    ok(json!({one: render(&w, col, r)}))
}

/// Routes under an lbaas prefix.
pub fn routes(p: &str) -> Router<AppState> {
    let simple = [
        ("listeners", "listener", "Listener"),
        ("pools", "pool", "Pool"),
        ("healthmonitors", "healthmonitor", "Health Monitor"),
    ];
    let mut r = Router::new()
        .route(&format!("{p}/listeners"), get(|State(st): State<AppState>, ctx: Ctx, q: Query| async move { list_reply(&st, &ctx, &q, "listeners", "listeners", &|_| true) }).post(create_listener))
        .route(&format!("{p}/pools"), get(|State(st): State<AppState>, ctx: Ctx, q: Query| async move { list_reply(&st, &ctx, &q, "pools", "pools", &|_| true) }).post(create_pool))
        .route(&format!("{p}/healthmonitors"), get(|State(st): State<AppState>, ctx: Ctx, q: Query| async move { list_reply(&st, &ctx, &q, "healthmonitors", "healthmonitors", &|_| true) }).post(create_monitor))
        .route(
            &format!("{p}/pools/{{pool}}/members"),
            get(|State(st): State<AppState>, ctx: Ctx, q: Query, Path(pool): Path<String>| async move {
                find(&st.world(), &ctx, "pools", "Pool", &pool)?;
                list_reply(&st, &ctx, &q, "members", "members", &move |b| b["_pool"] == json!(pool))
            })
            .post(create_member),
        )
        .route(
            &format!("{p}/pools/{{pool}}/members/{{id}}"),
            get(|State(st): State<AppState>, ctx: Ctx, Path((_p, id)): Path<(String, String)>| async move { show(&st, &ctx, "members", "member", "Member", &id) })
                .put(|State(st): State<AppState>, ctx: Ctx, Path((_p, id)): Path<(String, String)>, b: Bytes| async move { update(&st, &ctx, "members", "member", "Member", &id, &b) })
                .delete(|State(st): State<AppState>, ctx: Ctx, Path((_p, id)): Path<(String, String)>| async move { delete(&st, &ctx, "members", "Member", &id) }),
        );
    for (col, one, what) in simple {
        r =
            r.route(
                &format!("{p}/{col}/{{id}}"),
                get(
                    move |State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>| async move {
                        show(&st, &ctx, col, one, what, &id)
                    },
                )
                .put(
                    move |State(st): State<AppState>,
                          ctx: Ctx,
                          Path(id): Path<String>,
                          b: Bytes| async move {
                        update(&st, &ctx, col, one, what, &id, &b)
                    },
                )
                .delete(
                    move |State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>| async move {
                        delete(&st, &ctx, col, what, &id)
                    },
                ),
            );
    }
    r
}

//! Nova flavors (list, show, and the admin's create and delete), availability zones, limits
//! and quota sets.

use axum::Extension;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::{Value, json};

use crate::compute::{P, SVC, bad, conflict, links, nf};
use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, Query, body, ok};
use crate::microversion::Mv;
use crate::seed::SeedFlavor;

/// Stored body of a seeded flavor (rendered per microversion by [`render`]).
pub fn flavor_body(f: &SeedFlavor) -> Value {
    json!({"id": f.id, "name": f.name, "ram": f.ram, "disk": f.disk, "vcpus": f.vcpus,
           "OS-FLV-EXT-DATA:ephemeral": f.ephemeral, "OS-FLV-DISABLED:disabled": false, "swap": 0,
           "rxtx_factor": 1.0, "os-flavor-access:is_public": true, "description": null, "extra_specs": f.extra_specs})
}

/// A flavor as Nova returns it at a microversion.
pub fn render(base: &str, body: &Value, mv: Mv) -> Value {
    let mut b = body.clone();
    let id = b["id"].as_str().unwrap_or("").to_string();
    b["links"] = links(base, "flavors", &id);
    if let Some(o) = b.as_object_mut() {
        if !mv.at_least(2, 75) {
            o.insert("swap".into(), json!(""));
        }
        if !mv.at_least(2, 55) {
            o.remove("description");
        }
        if !mv.at_least(2, 61) {
            o.remove("extra_specs");
        }
    }
    b
}

/// Embedded flavor of a server (2.47+) or a reference.
pub fn server_flavor(base: &str, body: &Value, mv: Mv) -> Value {
    if mv.at_least(2, 47) {
        json!({"vcpus": body["vcpus"], "ram": body["ram"], "disk": body["disk"], "ephemeral": body["OS-FLV-EXT-DATA:ephemeral"],
               "swap": body["swap"], "original_name": body["name"], "extra_specs": body["extra_specs"]})
    } else {
        let id = body["id"].as_str().unwrap_or("");
        json!({"id": id, "links": [{"rel": "bookmark", "href": format!("{base}/compute/flavors/{id}")}]})
    }
}

fn matches(b: &Value, q: &Query) -> bool {
    let min = |k: &str| q.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    b["disk"].as_i64().unwrap_or(0) >= min("minDisk")
        && b["ram"].as_i64().unwrap_or(0) >= min("minRam")
}

fn list(st: &AppState, q: &Query, mv: Mv, detail: bool) -> ApiResult {
    let w = st.world();
    let items: Vec<Value> = w
        .iter("flavors")
        .map(|(_, r)| r.body.clone())
        .filter(|b| matches(b, q))
        .collect();
    drop(w);
    let (items, next) = crate::filter::page(items, q, "id");
    let items: Vec<Value> = items
        .iter()
        .map(|b| {
            let full = render(&st.base_url, b, mv);
            if detail {
                full
            } else {
                json!({"id": full["id"], "name": full["name"], "links": full["links"]})
            }
        })
        .collect();
    let mut out = json!({"flavors": items});
    if let Some(m) = next {
        out["flavors_links"] = json!([{"rel": "next", "href": format!("{}{P}/flavors{}?{}", st.base_url, if detail { "/detail" } else { "" }, q.with_marker(&m))}]);
    }
    ok(out)
}

async fn show(
    State(st): State<AppState>,
    _ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(id): Path<String>,
) -> ApiResult {
    let w = st.world();
    let b = w
        .get("flavors", &id)
        .map(|r| r.body.clone())
        .ok_or_else(|| nf(format!("Flavor {id} could not be found.")))?;
    ok(json!({"flavor": render(&st.base_url, &b, mv)}))
}

/// Nova's answer to a member calling an admin-only flavor API.
fn forbidden(action: &str) -> ApiError {
    ApiError::new(
        SVC,
        StatusCode::FORBIDDEN,
        "",
        format!("Policy doesn't allow os_compute_api:os-flavor-manage:{action} to be performed."),
    )
}

/// A non-negative integer field of a flavor create (`min` and up), or its default.
fn size(f: &Value, key: &str, min: i64, default: Option<i64>) -> ApiResult<i64> {
    match (&f[key], default) {
        (Value::Null, Some(d)) => Ok(d),
        (v, _) => v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .filter(|n| *n >= min)
            .ok_or_else(|| {
                bad(format!(
                    "Invalid input for field/attribute {key}. Value: {v}. {key} must be an integer >= {min}"
                ))
            }),
    }
}

/// POST /flavors (admin): a flavor with the given sizes; names and IDs are unique.
async fn create(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    b: Bytes,
) -> ApiResult {
    if !ctx.admin {
        return Err(forbidden("create"));
    }
    let req = body(SVC, &b)?;
    let f = &req["flavor"];
    let name = f["name"]
        .as_str()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| bad("Invalid input for field/attribute name."))?;
    let flavor = SeedFlavor {
        id: f["id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(crate::world::new_id),
        name: name.to_string(),
        vcpus: size(f, "vcpus", 1, None)?,
        ram: size(f, "ram", 1, None)?,
        disk: size(f, "disk", 0, Some(0))?,
        ephemeral: size(f, "OS-FLV-EXT-DATA:ephemeral", 0, Some(0))?,
        extra_specs: Default::default(),
    };
    let mut w = st.world();
    if w.get("flavors", &flavor.id).is_some() {
        return Err(conflict(format!(
            "Flavor with ID {} already exists.",
            flavor.id
        )));
    }
    if w.iter("flavors")
        .any(|(_, r)| r.body["name"] == json!(flavor.name))
    {
        return Err(conflict(format!(
            "Flavor with name {} already exists.",
            flavor.name
        )));
    }
    let stored = flavor_body(&flavor);
    w.insert("flavors", &flavor.id, "", stored.clone());
    ok(json!({"flavor": render(&st.base_url, &stored, mv)}))
}

/// DELETE /flavors/{id} (admin). Servers keep their embedded copy, as in Nova.
async fn delete(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    if !ctx.admin {
        return Err(forbidden("delete"));
    }
    st.world()
        .remove("flavors", &id)
        .ok_or_else(|| nf(format!("Flavor {id} could not be found.")))?;
    Ok(StatusCode::ACCEPTED.into_response())
}

async fn extra_specs(State(st): State<AppState>, _ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let w = st.world();
    let b = w
        .get("flavors", &id)
        .ok_or_else(|| nf(format!("Flavor {id} could not be found.")))?;
    ok(json!({"extra_specs": b.body["extra_specs"]}))
}

async fn azs(State(st): State<AppState>, _ctx: Ctx, uri: axum::http::Uri) -> ApiResult {
    let zones = st.world().seed.availability_zones.clone();
    let detail = uri.path().ends_with("/detail");
    let list: Vec<Value> = zones
        .iter()
        .map(|z| {
            let hosts = if detail {
                json!({format!("sim-compute-{z}"): {"nova-compute": {"available": true, "active": true, "updated_at": crate::world::now_str()}}})
            } else {
                Value::Null
            };
            json!({"zoneName": z, "zoneState": {"available": true}, "hosts": hosts})
        })
        .collect();
    ok(json!({"availabilityZoneInfo": list}))
}

/// Nova quota keys and how usage is computed.
fn usage(w: &crate::world::World, project: &str) -> Vec<(&'static str, &'static str, i64)> {
    let servers: Vec<&Value> = w
        .iter("servers")
        .filter(|(_, r)| r.project == project && crate::compute::servers::uses_quota(&r.body))
        .map(|(_, r)| &r.body)
        .collect();
    let sum = |k: &str| {
        servers
            .iter()
            .map(|s| s["_flavor"][k].as_i64().unwrap_or(0))
            .sum::<i64>()
    };
    vec![
        ("instances", "Instances", servers.len() as i64),
        ("cores", "Cores", sum("vcpus")),
        ("ram", "RAMSize", sum("ram")),
        ("key_pairs", "Keypairs", w.count_owned("keypairs", project)),
        (
            "server_groups",
            "ServerGroups",
            w.count_owned("server_groups", project),
        ),
        ("server_group_members", "ServerGroupMembers", 0),
    ]
}

async fn limits(State(st): State<AppState>, ctx: Ctx) -> ApiResult {
    let w = st.world();
    let used: std::collections::HashMap<&str, i64> = usage(&w, &ctx.project)
        .into_iter()
        .map(|(k, _, u)| (k, u))
        .collect();
    let q = |k: &str| w.quota(&ctx.project, k);
    let u = |k: &str| used.get(k).copied().unwrap_or(0);
    ok(json!({"limits": {"rate": [], "absolute": {
        "maxTotalInstances": q("instances"), "totalInstancesUsed": u("instances"),
        "maxTotalCores": q("cores"), "totalCoresUsed": u("cores"),
        "maxTotalRAMSize": q("ram"), "totalRAMUsed": u("ram"),
        "maxTotalKeypairs": q("key_pairs"), "maxServerGroups": q("server_groups"), "totalServerGroupsUsed": u("server_groups"),
        "maxServerGroupMembers": q("server_group_members"), "maxServerMeta": 128, "maxPersonality": 5, "maxPersonalitySize": 10240,
        "maxImageMeta": 128, "maxSecurityGroups": -1, "maxSecurityGroupRules": -1, "maxTotalFloatingIps": -1,
        "totalFloatingIpsUsed": 0, "totalSecurityGroupsUsed": 0,
    }}}))
}

/// The project whose quotas are shown: the one asked for by an admin, else the caller's own.
fn quota_project(ctx: &Ctx, asked: &str) -> String {
    if ctx.admin { asked } else { &ctx.project }.to_string()
}

async fn quota_set(State(st): State<AppState>, ctx: Ctx, Path(p): Path<String>) -> ApiResult {
    let w = st.world();
    let project = quota_project(&ctx, &p);
    let mut q = serde_json::Map::new();
    q.insert("id".into(), json!(p));
    for (k, _, _) in usage(&w, &project) {
        q.insert(k.into(), json!(w.quota(&project, k)));
    }
    for (k, v) in [
        ("metadata_items", 128),
        ("injected_files", 5),
        ("injected_file_content_bytes", 10240),
        ("injected_file_path_bytes", 255),
    ] {
        q.insert(k.into(), json!(v));
    }
    ok(json!({"quota_set": q}))
}

async fn quota_detail(State(st): State<AppState>, ctx: Ctx, Path(p): Path<String>) -> ApiResult {
    let w = st.world();
    let project = quota_project(&ctx, &p);
    let mut q = serde_json::Map::new();
    q.insert("id".into(), json!(p));
    for (k, _, used) in usage(&w, &project) {
        q.insert(
            k.into(),
            json!({"limit": w.quota(&project, k), "in_use": used, "reserved": 0}),
        );
    }
    ok(json!({"quota_set": q}))
}

/// Routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(&format!("{P}/flavors"), get(|State(st): State<AppState>, _c: Ctx, Extension(mv): Extension<Mv>, q: Query| async move { list(&st, &q, mv, false) }).post(create))
        .route(&format!("{P}/flavors/detail"), get(|State(st): State<AppState>, _c: Ctx, Extension(mv): Extension<Mv>, q: Query| async move { list(&st, &q, mv, true) }))
        .route(&format!("{P}/flavors/{{id}}"), get(show).delete(delete))
        .route(&format!("{P}/flavors/{{id}}/os-extra_specs"), get(extra_specs))
        .route(&format!("{P}/os-availability-zone"), get(azs))
        .route(&format!("{P}/os-availability-zone/detail"), get(azs))
        .route(&format!("{P}/limits"), get(limits))
        .route(&format!("{P}/os-quota-sets/{{p}}"), get(quota_set))
        .route(&format!("{P}/os-quota-sets/{{p}}/detail"), get(quota_detail))
}

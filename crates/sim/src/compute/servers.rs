//! Nova servers: create (ports, networks, block devices, hints), the BUILD -> ACTIVE/ERROR state
//! machine, list/detail with filters, show, delete, actions, metadata and tags.

use axum::Extension;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{MethodFilter, get, on, post};
use serde_json::{Value, json};

use crate::compute::server_view::{addresses, hide_fault_details, render, security_groups};
use crate::compute::{P, SVC, bad, conflict, links, nf, server_actions};
use crate::error::{ApiError, ApiResult};
use crate::filter;
use crate::http::{AppState, Ctx, Query, body, member, ok, reply};
use crate::microversion::Mv;
use crate::network::ports::{create_port, remove_port};
use crate::world::{PendingKind, World, new_id, now_str};

const COL: &str = "servers";

/// Nova's 404 for a server.
pub fn not_found(id: &str) -> ApiError {
    nf(format!("Instance {id} could not be found."))
}

/// A server visible to the caller.
pub fn find<'a>(w: &'a World, ctx: &Ctx, id: &str) -> ApiResult<&'a Value> {
    w.get(COL, id)
        .filter(|r| ctx.owns(&r.project))
        .map(|r| &r.body)
        .ok_or_else(|| not_found(id))
}

/// oslo.utils `is_uuid_like`: 32 hex digits, hyphens anywhere ignored.
fn uuid_like(v: &str) -> bool {
    let hex: Vec<char> = v.chars().filter(|c| *c != '-').collect();
    hex.len() == 32 && hex.iter().all(char::is_ascii_hexdigit) && v.len() <= 36
}

fn last_segment(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

/// Apply the end of a build: ACTIVE, or ERROR with NoValidHost when a build failure is armed.
pub fn finish_build(w: &mut World, id: &str) {
    let Some(name) = w
        .get(COL, id)
        .filter(|r| r.body["status"] == json!("BUILD"))
        .and_then(|r| r.body["name"].as_str().map(str::to_string))
    else {
        return;
    };
    let fail = w
        .build_failures
        .iter()
        .position(|(re, n)| *n > 0 && regex::Regex::new(re).is_ok_and(|r| r.is_match(&name)));
    if let Some(i) = fail {
        w.build_failures[i].1 -= 1;
        if w.build_failures[i].1 == 0 {
            w.build_failures.remove(i);
        }
    }
    let now = now_str();
    if let Some(r) = w.get_mut(COL, id) {
        let b = &mut r.body;
        b["updated"] = json!(now);
        b["OS-EXT-STS:task_state"] = Value::Null;
        if fail.is_some() {
            b["status"] = json!("ERROR");
            b["OS-EXT-STS:vm_state"] = json!("error");
            b["fault"] = json!({"code": 500, "created": now, "message": "No valid host was found. ",
                                "details": "Exceeded maximum number of retries. Exhausted all hosts available for retrying build failures."});
        } else {
            b["status"] = json!("ACTIVE");
            b["OS-EXT-STS:vm_state"] = json!("active");
            b["OS-EXT-STS:power_state"] = json!(1);
            b["OS-SRV-USG:launched_at"] = json!(
                chrono::Utc::now()
                    .format("%Y-%m-%dT%H:%M:%S%.6f")
                    .to_string()
            );
            b["progress"] = json!(100);
        }
    }
}

/// Whether a server counts against the project's quota: not while `SOFT_DELETED` (Nova
/// counts instances whose vm_state is not soft-delete; `restore` checks the quota again).
pub fn uses_quota(b: &Value) -> bool {
    b["status"] != json!(SOFT_DELETED)
}

/// Nova's status of a server deleted on a cloud with `reclaim_instance_interval > 0`.
pub const SOFT_DELETED: &str = "SOFT_DELETED";

pub(crate) fn check_quota(w: &World, project: &str, flavor: &Value) -> ApiResult<()> {
    let servers: Vec<&Value> = w
        .iter(COL)
        .filter(|(_, r)| r.project == project && uses_quota(&r.body))
        .map(|(_, r)| &r.body)
        .collect();
    let used = |k: &str| {
        servers
            .iter()
            .map(|s| s["_flavor"][k].as_i64().unwrap_or(0))
            .sum::<i64>()
    };
    for (key, label, have, want) in [
        ("instances", "instances", servers.len() as i64, 1),
        (
            "cores",
            "cores",
            used("vcpus"),
            flavor["vcpus"].as_i64().unwrap_or(0),
        ),
        (
            "ram",
            "ram",
            used("ram"),
            flavor["ram"].as_i64().unwrap_or(0),
        ),
    ] {
        let limit = w.quota(project, key);
        if limit >= 0 && have + want > limit {
            return Err(ApiError::new(
                SVC,
                StatusCode::FORBIDDEN,
                "",
                format!(
                    "Quota exceeded for {label}: Requested {want}, but already used {have} of {limit} {label}"
                ),
            ));
        }
    }
    Ok(())
}

/// Everything validated before anything is created.
struct Plan {
    flavor: Value,
    image: Option<String>,
    az: String,
    group: Option<String>,
}

fn validate(w: &World, ctx: &Ctx, s: &Value, hints: &Value, mv: Mv) -> ApiResult<Plan> {
    if s["name"].as_str().is_none_or(|n| n.trim().is_empty()) {
        return Err(bad(
            "Invalid input for field/attribute name. Value: None. None is not of type 'string'",
        ));
    }
    let fref = s["flavorRef"].as_str().map(last_segment).ok_or_else(|| {
        bad("Invalid input for field/attribute server. 'flavorRef' is a required property")
    })?;
    let flavor = w
        .get("flavors", fref)
        .map(|r| r.body.clone())
        .ok_or_else(|| bad(format!("Flavor {fref} could not be found.")))?;
    let bdm = s["block_device_mapping_v2"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let boot_from_volume = bdm
        .iter()
        .any(|d| d["boot_index"].as_i64() == Some(0) || d["boot_index"] == json!("0"));
    // Nova's schema: `imageRef` is a UUID (oslo `is_uuid_like`: hyphens optional) or "".
    if let Some(i) = s["imageRef"].as_str()
        && !i.is_empty()
        && !uuid_like(i)
    {
        return Err(bad(format!(
            "Invalid input for field/attribute imageRef. Value: {i}. '{i}' is not valid under any of the given schemas"
        )));
    }
    let image = match s["imageRef"].as_str().filter(|i| !i.is_empty()) {
        Some(i) => {
            let img = w
                .get("images", i)
                .filter(|r| crate::image::visible(ctx, r))
                .ok_or_else(|| bad("Can not find requested image"))?;
            let min_disk = img.body["min_disk"].as_i64().unwrap_or(0);
            if !boot_from_volume
                && flavor["disk"].as_i64().unwrap_or(0) > 0
                && flavor["disk"].as_i64().unwrap_or(0) < min_disk
            {
                return Err(bad("Flavor's disk is too small for requested image."));
            }
            Some(i.to_string())
        }
        None if boot_from_volume => None,
        None => {
            return Err(bad(
                "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device mapping combination is not valid.",
            ));
        }
    };
    if let Some(k) = s["key_name"].as_str()
        && w.get("keypairs", &format!("{}/{k}", ctx.user)).is_none()
    {
        return Err(bad("Invalid key_name provided."));
    }
    let az = match s["availability_zone"].as_str().filter(|a| !a.is_empty()) {
        Some(a) => {
            let zone = a.split(':').next().unwrap_or(a);
            if !w.seed.availability_zones.iter().any(|z| z == zone) {
                return Err(bad("The requested availability zone is not available"));
            }
            zone.to_string()
        }
        None => w
            .seed
            .availability_zones
            .first()
            .cloned()
            .unwrap_or_else(|| "nova".into()),
    };
    // Nova's MultiattachNotSupportedOldMicroversion: a multiattach volume needs 2.60.
    if !mv.at_least(2, 60)
        && bdm.iter().any(|d| {
            d["source_type"] == json!("volume")
                && d["uuid"]
                    .as_str()
                    .and_then(|v| w.get("volumes", v))
                    .is_some_and(|v| v.body["multiattach"] == json!(true))
        })
    {
        return Err(bad(
            "Multiattach volumes are only supported starting with compute API version 2.60.",
        ));
    }
    if mv.at_least(2, 37) && s.get("networks").is_none() {
        return Err(bad(
            "Invalid input for field/attribute server. Value: ... 'networks' is a required property",
        ));
    }
    let group = hints["group"].as_str().map(str::to_string);
    if let Some(g) = &group {
        w.get("server_groups", g)
            .filter(|r| ctx.owns(&r.project))
            .ok_or_else(|| {
                bad(format!(
                    "Invalid input for field/attribute group. Value: {g}."
                ))
            })?;
    }
    check_quota(w, &ctx.project, &flavor)?;
    Ok(Plan {
        flavor,
        image,
        az,
        group,
    })
}

/// Create or bind the requested ports. Returns (bound port ids, ports created by Nova).
fn attach_networks(
    w: &mut World,
    ctx: &Ctx,
    s: &Value,
    server: &str,
    az: &str,
) -> ApiResult<(Vec<String>, Vec<String>)> {
    let mut bound = Vec::new();
    let mut created = Vec::new();
    let sgs: Option<Vec<String>> = s["security_groups"].as_array().map(|list| {
        list.iter()
            .filter_map(|g| g["name"].as_str())
            .map(str::to_string)
            .collect()
    });
    let sg_ids = match &sgs {
        Some(names) => {
            let mut ids = Vec::new();
            for n in names {
                let id = w
                    .iter("security_groups")
                    .find(|(_, g)| {
                        ctx.owns(&g.project)
                            && (g.body["name"] == json!(n) || g.body["id"] == json!(n))
                    })
                    .map(|(k, _)| k.clone());
                ids.push(id.ok_or_else(|| {
                    bad(format!(
                        "Unable to find security_group with name or id '{n}'"
                    ))
                })?);
            }
            Some(ids)
        }
        None => None,
    };
    let host = host_of(w, server);
    let owner = format!("compute:{az}");
    for n in s["networks"].as_array().into_iter().flatten() {
        let result = if let Some(pid) = n["port"].as_str() {
            let p = w
                .get("ports", pid)
                .filter(|p| ctx.owns(&p.project))
                .ok_or_else(|| bad(format!("Port id {pid} could not be found.")))?;
            if p.body["device_id"].as_str().is_some_and(|d| !d.is_empty()) {
                return Err(conflict(format!("Port {pid} is still in use.")));
            }
            if let Some(p) = w.get_mut("ports", pid) {
                p.body["device_id"] = json!(server);
                p.body["device_owner"] = json!(owner);
                p.body["binding:host_id"] = json!(host);
                crate::network::ports::refresh_status(&mut p.body);
            }
            Ok(pid.to_string())
        } else if let Some(net) = n["uuid"].as_str() {
            let mut req = json!({"network_id": net, "device_id": server, "device_owner": owner, "binding:host_id": host});
            if let Some(ip) = n["fixed_ip"].as_str() {
                req["fixed_ips"] = json!([{"ip_address": ip}]);
            }
            if let Some(ids) = &sg_ids {
                req["security_groups"] = json!(ids);
            }
            create_port(w, ctx, req)
                .map(|p| {
                    let id = p["id"].as_str().unwrap_or("").to_string();
                    created.push(id.clone());
                    id
                })
                // Nova answers Neutron's NetworkNotFound (and other refusals) with 400.
                .map_err(|e| {
                    let status = if e.status == StatusCode::NOT_FOUND {
                        StatusCode::BAD_REQUEST
                    } else {
                        e.status
                    };
                    ApiError::new(SVC, status, "", e.message)
                })
        } else {
            Err(bad("Bad networks format"))
        };
        match result {
            Ok(id) => bound.push(id),
            Err(e) => {
                release_ports(w, &bound, &created);
                return Err(e);
            }
        }
    }
    Ok((bound, created))
}

fn release_ports(w: &mut World, bound: &[String], created: &[String]) {
    for id in bound {
        if created.contains(id) {
            remove_port(w, id);
        } else if let Some(p) = w.get_mut("ports", id) {
            for k in ["device_id", "device_owner", "binding:host_id"] {
                p.body[k] = json!("");
            }
            crate::network::ports::refresh_status(&mut p.body);
        }
    }
}

async fn create(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    b: Bytes,
) -> ApiResult {
    let req = body(SVC, &b)?;
    // Nova accepts the hints under either name, beside the "server" object.
    let hints = [
        &req["os:scheduler_hints"],
        &req["OS-SCH-HNT:scheduler_hints"],
        &req["server"]["os:scheduler_hints"],
    ]
    .into_iter()
    .find(|h| h.is_object())
    .cloned()
    .unwrap_or(Value::Null);
    let s = member(SVC, req, "server")?;
    let mut w = st.world();
    crate::network::secgroups::ensure_default(&mut w, &ctx.project);
    let plan = validate(&w, &ctx, &s, &hints, mv)?;
    let id = new_id();
    let (bound, created) = attach_networks(&mut w, &ctx, &s, &id, &plan.az)?;
    let (volumes, delete_on_term) = match crate::volume::boot_volumes(&mut w, &ctx, &s, &id) {
        Ok(v) => v,
        Err(e) => {
            release_ports(&mut w, &bound, &created);
            return Err(e);
        }
    };
    let now = now_str();
    let admin_pass = new_id().replace('-', "")[..12].to_string();
    let tags = s.get("tags").cloned().unwrap_or(json!([]));
    let body = json!({
        "id": id, "name": s["name"], "status": "BUILD", "tenant_id": ctx.project, "user_id": ctx.user,
        "metadata": s.get("metadata").cloned().unwrap_or(json!({})), "hostId": format!("{:x}", sha2_short(&format!("{}{}", ctx.project, plan.az))),
        "image": plan.image.as_ref().map_or(json!(""), |i| json!({"id": i, "links": [{"rel": "bookmark", "href": format!("{}/compute/images/{i}", st.base_url)}]})),
        "created": now, "updated": now, "accessIPv4": "", "accessIPv6": "", "OS-DCF:diskConfig": "MANUAL", "progress": 0,
        "OS-EXT-AZ:availability_zone": plan.az, "config_drive": if s["config_drive"] == json!(true) { "True" } else { "" },
        "key_name": s["key_name"], "OS-SRV-USG:launched_at": null, "OS-SRV-USG:terminated_at": null,
        "OS-EXT-STS:task_state": "spawning", "OS-EXT-STS:vm_state": "building", "OS-EXT-STS:power_state": 0,
        "locked": false, "locked_reason": null, "description": s.get("description").cloned().unwrap_or(Value::Null), "tags": tags,
        "trusted_image_certificates": null, "server_groups": plan.group.iter().collect::<Vec<_>>(), "pinned_availability_zone": s["availability_zone"],
        "hostname": s["name"],
        "_flavor": plan.flavor, "_created_ports": created, "_volumes": volumes, "_delete_on_termination": delete_on_term,
        "_group": plan.group, "_user_data": s.get("user_data").is_some(),
    });
    w.insert(COL, &id, &ctx.project, body);
    let host = host_of(&w, &id);
    for p in &bound {
        if let Some(port) = w.get_mut("ports", p) {
            port.body["binding:host_id"] = json!(host);
        }
    }
    if let Some(r) = w.get_mut(COL, &id) {
        r.body["hostId"] = json!(format!(
            "{:x}",
            sha2_short(&format!("{}{host}", ctx.project))
        ));
    }
    if let Some(g) = &plan.group
        && let Some(r) = w.get_mut("server_groups", g)
        && let Some(m) = r.body["members"].as_array_mut()
    {
        m.push(json!(id));
    }
    let delay = w.delays.server_build_ms;
    if delay == 0 {
        finish_build(&mut w, &id);
    } else {
        w.schedule(delay, PendingKind::ServerBuild(id.clone()));
    }
    let mut resp = reply(
        StatusCode::ACCEPTED,
        json!({"server": {"id": id, "links": links(&st.base_url, "servers", &id), "OS-DCF:diskConfig": "MANUAL",
        "security_groups": security_groups(&w, &id), "adminPass": admin_pass}}),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("{}{P}/servers/{id}", st.base_url)) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

/// The simulated compute host of a server: shared by members of an affinity group, else one host
/// per server (so anti-affinity always holds).
fn host_of(w: &World, server: &str) -> String {
    let group = w
        .get(COL, server)
        .and_then(|r| r.body["_group"].as_str().map(str::to_string));
    let affinity = group
        .as_deref()
        .and_then(|g| w.get("server_groups", g))
        .is_some_and(|g| {
            g.body["policy"]
                .as_str()
                .is_some_and(|p| p.ends_with("affinity") && !p.contains("anti"))
        });
    match group {
        Some(g) if affinity => format!("sim-compute-{}", &g[..8.min(g.len())]),
        _ => format!("sim-compute-{}", &server[..8.min(server.len())]),
    }
}

/// Bind or create ports for `spec["networks"]` on an existing server (os-interface).
pub fn attach_networks_pub(
    w: &mut World,
    ctx: &Ctx,
    spec: &Value,
    server: &str,
    az: &str,
) -> ApiResult<(Vec<String>, Vec<String>)> {
    attach_networks(w, ctx, spec, server, az)
}

/// Unbind ports, deleting those Nova created (os-interface detach).
pub fn release_ports_pub(w: &mut World, bound: &[String], created: &[String]) {
    release_ports(w, bound, created);
}

fn sha2_short(s: &str) -> u128 {
    use sha2::Digest;
    let d = sha2::Sha256::digest(s.as_bytes());
    d[..16].iter().fold(0u128, |a, b| (a << 8) | *b as u128)
}

fn list_matches(w: &World, b: &Value, q: &Query) -> bool {
    let name_ok = q.get("name").is_none_or(|re| {
        regex::Regex::new(re)
            .map(|r| r.is_match(b["name"].as_str().unwrap_or("")))
            .unwrap_or(false)
    });
    let status_ok = q.get("status").is_none_or(|s| {
        b["status"]
            .as_str()
            .is_some_and(|x| x.eq_ignore_ascii_case(s))
    });
    let image_ok = q
        .get("image")
        .is_none_or(|i| b["image"]["id"] == json!(last_segment(i)));
    let flavor_ok = q
        .get("flavor")
        .is_none_or(|f| b["_flavor"]["id"] == json!(last_segment(f)));
    let az_ok = q
        .get("availability_zone")
        .is_none_or(|a| b["OS-EXT-AZ:availability_zone"] == json!(a));
    let key_ok = q.get("key_name").is_none_or(|k| b["key_name"] == json!(k));
    let ip_ok = q.get("ip").is_none_or(|re| {
        let id = b["id"].as_str().unwrap_or("");
        regex::Regex::new(re).is_ok_and(|r| {
            addresses(w, id)
                .as_object()
                .into_iter()
                .flatten()
                .flat_map(|(_, a)| a.as_array().cloned().unwrap_or_default())
                .any(|a| r.is_match(a["addr"].as_str().unwrap_or("")))
        })
    });
    let since_ok = q
        .get("changes-since")
        .is_none_or(|t| b["updated"].as_str().is_some_and(|u| u >= t));
    since_ok
        && name_ok
        && status_ok
        && image_ok
        && flavor_ok
        && az_ok
        && key_ok
        && ip_ok
        && filter::tags_match(b, q)
}

/// Nova's default `[api] max_limit`.
const MAX_LIMIT: usize = 1000;

/// Nova lists a soft-deleted server only to an admin asking for `status=SOFT_DELETED` (the
/// database query leaves soft-deleted instances out unless asked); GET by ID shows it.
fn listed(ctx: &Ctx, b: &Value, q: &Query) -> bool {
    b["status"] != json!(SOFT_DELETED)
        || (ctx.admin
            && q.get("status")
                .is_some_and(|s| s.eq_ignore_ascii_case(SOFT_DELETED)))
}

fn list(st: &AppState, ctx: &Ctx, q: &Query, mv: Mv, detail: bool) -> ApiResult {
    let w = st.world();
    let mut items: Vec<Value> = w
        .iter(COL)
        .filter(|(_, r)| {
            ctx.owns(&r.project) && listed(ctx, &r.body, q) && list_matches(&w, &r.body, q)
        })
        .map(|(_, r)| r.body.clone())
        .collect();
    items.reverse();
    // Nova caps a page at `[api] max_limit` (1000) and adds a `next` link whenever the page is
    // full (`_get_collection_links`: `max_items == len(items)`), even when nothing follows.
    let max = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        .map_or(MAX_LIMIT, |l| l.min(MAX_LIMIT));
    let (mut items, _) = filter::page(items, q, "id");
    items.truncate(max);
    let next = items
        .last()
        .filter(|_| max > 0 && items.len() == max)
        .and_then(|b| b["id"].as_str())
        .map(str::to_string);
    let items: Vec<Value> = items
        .iter()
        .map(|b| {
            if detail {
                let mut s = render(&w, &st.base_url, b, mv);
                hide_fault_details(&mut s, ctx.admin);
                s
            } else {
                let id = b["id"].as_str().unwrap_or("");
                json!({"id": id, "name": b["name"], "links": links(&st.base_url, "servers", id)})
            }
        })
        .collect();
    let mut out = json!({"servers": items});
    if let Some(m) = next {
        let path = if detail { "servers/detail" } else { "servers" };
        out["servers_links"] = json!([{"rel": "next", "href": format!("{}{P}/{path}?{}", st.base_url, q.with_marker(&m))}]);
    }
    ok(out)
}

async fn show(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(id): Path<String>,
) -> ApiResult {
    let w = st.world();
    let b = find(&w, &ctx, &id)?;
    let mut s = render(&w, &st.base_url, b, mv);
    hide_fault_details(&mut s, ctx.admin);
    ok(json!({"server": s}))
}

/// Remove a server: delete the ports Nova created, unbind the others, detach volumes (deleting
/// those marked `delete_on_termination`).
pub(crate) fn remove_server(w: &mut World, id: &str) {
    let Some(rec) = w.remove(COL, id) else { return };
    let created: Vec<String> =
        serde_json::from_value(rec.body["_created_ports"].clone()).unwrap_or_default();
    let bound: Vec<String> = w
        .iter("ports")
        .filter(|(_, p)| p.body["device_id"] == json!(id))
        .map(|(k, _)| k.clone())
        .collect();
    release_ports(w, &bound, &created);
    let delete_vols: Vec<String> =
        serde_json::from_value(rec.body["_delete_on_termination"].clone()).unwrap_or_default();
    crate::volume::server_gone(w, id, &delete_vols);
    if let Some(g) = rec.body["_group"].as_str()
        && let Some(r) = w.get_mut("server_groups", g)
        && let Some(m) = r.body["members"].as_array_mut()
    {
        m.retain(|x| x != &json!(id));
    }
}

/// DELETE: at once, or with `server_reclaim_ms > 0` in the seed (Nova's
/// `reclaim_instance_interval`) a soft delete of a server that ran (Nova deletes one that never
/// launched at once). A soft-deleted server deleted again is soft-deleted again: Nova resets its
/// `deleted_at`, so the reclaim starts over.
async fn delete(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let mut w = st.world();
    let launched = !find(&w, &ctx, &id)?["OS-SRV-USG:launched_at"].is_null();
    let reclaim_ms = w.seed.server_reclaim_ms;
    if reclaim_ms > 0 && launched {
        soft_delete(&mut w, &id, reclaim_ms);
    } else {
        remove_server(&mut w, &id);
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Soft-delete: `SOFT_DELETED`, powered off, still listed with its ports bound and volumes
/// attached; reclaimed `reclaim_ms` from now ([`reclaim_due`]).
fn soft_delete(w: &mut World, id: &str, reclaim_ms: u64) {
    let at = chrono::Utc::now() + chrono::Duration::milliseconds(reclaim_ms as i64);
    if let Some(r) = w.get_mut(COL, id) {
        let b = &mut r.body;
        b["status"] = json!(SOFT_DELETED);
        b["OS-EXT-STS:vm_state"] = json!("soft-delete");
        b["OS-EXT-STS:task_state"] = Value::Null;
        b["OS-EXT-STS:power_state"] = json!(4);
        b["updated"] = json!(now_str());
        b["_reclaim_at"] = json!(at.timestamp_millis());
    }
    w.schedule(reclaim_ms, PendingKind::ServerReclaim(id.to_string()));
}

/// A scheduled reclaim: removes the server if it is still soft-deleted and its (possibly reset)
/// reclaim time has come.
pub fn reclaim_due(w: &mut World, id: &str) {
    let due = w.get(COL, id).is_some_and(|r| {
        r.body["status"] == json!(SOFT_DELETED)
            && r.body["_reclaim_at"]
                .as_i64()
                .is_some_and(|t| t <= chrono::Utc::now().timestamp_millis())
    });
    if due {
        remove_server(w, id);
    }
}

/// Reclaim every soft-deleted server now (Nova's periodic task with the interval passed);
/// returns how many.
pub fn reclaim_all(w: &mut World) -> usize {
    let ids: Vec<String> = w
        .iter(COL)
        .filter(|(_, r)| r.body["status"] == json!(SOFT_DELETED))
        .map(|(k, _)| k.clone())
        .collect();
    for id in &ids {
        remove_server(w, id);
    }
    ids.len()
}

/// Nova's `restore` action: a soft-deleted server is ACTIVE again (quota checked again).
pub(crate) fn restore(w: &mut World, id: &str) -> ApiResult<()> {
    let (project, flavor) = match w.get(COL, id) {
        Some(r) => (r.project.clone(), r.body["_flavor"].clone()),
        None => return Err(not_found(id)),
    };
    check_quota(w, &project, &flavor)?;
    if let Some(r) = w.get_mut(COL, id) {
        let b = &mut r.body;
        b["status"] = json!("ACTIVE");
        b["OS-EXT-STS:vm_state"] = json!("active");
        b["OS-EXT-STS:power_state"] = json!(1);
        b["updated"] = json!(now_str());
        if let Some(o) = b.as_object_mut() {
            o.remove("_reclaim_at");
        }
    }
    Ok(())
}

/// Routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{P}/servers"),
            get(|State(st): State<AppState>, ctx: Ctx, Extension(mv): Extension<Mv>, q: Query| async move { list(&st, &ctx, &q, mv, false) }).post(create),
        )
        .route(&format!("{P}/servers/detail"), get(|State(st): State<AppState>, ctx: Ctx, Extension(mv): Extension<Mv>, q: Query| async move { list(&st, &ctx, &q, mv, true) }))
        .route(&format!("{P}/servers/{{id}}"), get(show).delete(delete))
        .route(&format!("{P}/servers/{{id}}/action"), post(server_actions::action))
        .route(&format!("{P}/servers/{{id}}/metadata"), on(MethodFilter::GET.or(MethodFilter::PUT).or(MethodFilter::POST), |s, c, m, p, b| server_actions::attribute("metadata", s, c, m, p, b)))
        .route(&format!("{P}/servers/{{id}}/tags"), on(MethodFilter::GET.or(MethodFilter::PUT).or(MethodFilter::DELETE), |s, c, m, p, b| server_actions::attribute("tags", s, c, m, p, b)))
        .route(&format!("{P}/servers/{{id}}/tags/{{tag}}"), get(server_actions::tag).put(server_actions::tag).delete(server_actions::tag))
        .route(&format!("{P}/servers/{{id}}/os-volume_attachments"), get(crate::compute::attach::list_volumes).post(crate::compute::attach::attach_volume))
        .route(&format!("{P}/servers/{{id}}/os-interface"), get(crate::compute::attach::list_interfaces).post(crate::compute::attach::attach_interface))
        .route(&format!("{P}/servers/{{id}}/os-volume_attachments/{{vid}}"), get(crate::compute::attach::show_volume).put(crate::compute::attach::update_volume).delete(crate::compute::attach::detach_volume))
        .route(&format!("{P}/servers/{{id}}/os-interface/{{pid}}"), get(crate::compute::attach::show_interface).delete(crate::compute::attach::detach_interface))
}

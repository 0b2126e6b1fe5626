//! Cinder v3: volumes (creating -> available -> in-use, multiattach, from image), snapshots
//! ([`snapshots`]), types, availability zones, limits, quotas, and the attach/detach helpers
//! Nova uses.

mod snapshots;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, Svc};
use crate::filter;
use crate::http::{AppState, Ctx, Query, body, member, ok, reply};
use crate::microversion::{CINDER, negotiate};
use crate::world::{PendingKind, World, new_id, stable_id};

const SVC: Svc = Svc::Volume;
const COL: &str = "volumes";
const P: &str = "/volume/v3/{project}";

fn ts() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6f")
        .to_string()
}

fn nf(id: &str) -> ApiError {
    ApiError::not_found(SVC, "", format!("Volume {id} could not be found."))
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(SVC, msg)
}

fn find<'a>(w: &'a World, ctx: &Ctx, id: &str) -> ApiResult<&'a Value> {
    w.get(COL, id)
        .filter(|r| ctx.owns(&r.project))
        .map(|r| &r.body)
        .ok_or_else(|| nf(id))
}

fn type_json(name: &str, multiattach: bool) -> Value {
    let specs = if multiattach {
        json!({"multiattach": "<is> True"})
    } else {
        json!({})
    };
    json!({"id": stable_id("volume-type", name), "name": name, "description": null, "is_public": true, "extra_specs": specs,
           "os-volume-type-access:is_public": true, "qos_specs_id": null})
}

fn find_type(w: &World, name_or_id: Option<&str>) -> ApiResult<Value> {
    let types: Vec<Value> = w
        .seed
        .volume_types
        .iter()
        .map(|t| type_json(&t.name, t.multiattach))
        .collect();
    match name_or_id {
        None => types
            .first()
            .cloned()
            .ok_or_else(|| bad("No default volume type")),
        Some(n) => types
            .into_iter()
            .find(|t| t["name"] == json!(n) || t["id"] == json!(n))
            .ok_or_else(|| {
                ApiError::not_found(
                    SVC,
                    "",
                    format!("Volume type with name {n} could not be found."),
                )
            }),
    }
}

fn over_limit(msg: String) -> ApiError {
    ApiError::new(SVC, StatusCode::PAYLOAD_TOO_LARGE, "", msg)
}

/// Build and store a new volume (API and boot-from-volume). Status `creating` unless `attach_to` is set.
fn new_volume(w: &mut World, ctx: &Ctx, v: &Value) -> ApiResult<Value> {
    let size = v["size"]
        .as_i64()
        .or_else(|| v["size"].as_str().and_then(|s| s.parse().ok()))
        .filter(|s| *s > 0);
    let size =
        size.ok_or_else(|| bad("Invalid input received: 'size' must be a positive integer"))?;
    let vtype = find_type(w, v["volume_type"].as_str())?;
    let az = v["availability_zone"]
        .as_str()
        .map(str::to_string)
        .or_else(|| w.seed.volume_availability_zones.first().cloned())
        .unwrap_or_else(|| "nova".into());
    if !w.seed.volume_availability_zones.contains(&az) {
        return Err(bad(format!(
            "Invalid input received: Availability zone '{az}' is invalid."
        )));
    }
    let limit = w.quota(&ctx.project, "volumes");
    let count = w.count_owned(COL, &ctx.project);
    if limit >= 0 && count >= limit {
        return Err(over_limit(format!(
            "VolumeLimitExceeded: Maximum number of volumes allowed ({limit}) exceeded for quota 'volumes'."
        )));
    }
    let gb_limit = w.quota(&ctx.project, "gigabytes");
    let used: i64 = w
        .iter(COL)
        .filter(|(_, r)| r.project == ctx.project)
        .map(|(_, r)| r.body["size"].as_i64().unwrap_or(0))
        .sum();
    if gb_limit >= 0 && used + size > gb_limit {
        return Err(over_limit(format!(
            "VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed gigabytes quota. Requested {size}G, quota is {gb_limit}G and {used}G has been consumed."
        )));
    }
    let mut image_meta = Value::Null;
    if let Some(img) = v["imageRef"].as_str() {
        let i = w
            .get("images", img)
            .filter(|r| crate::image::visible(ctx, r))
            .ok_or_else(|| bad("Invalid image identifier or unable to access requested image."))?;
        image_meta = json!({"image_id": img, "image_name": i.body["name"], "container_format": i.body["container_format"], "disk_format": i.body["disk_format"],
                            "min_disk": i.body["min_disk"].to_string(), "min_ram": i.body["min_ram"].to_string(), "size": i.body["size"].to_string()});
        for (k, val) in i.body.as_object().into_iter().flatten() {
            if crate::image::is_extra_property(k) {
                image_meta[k] = val.clone();
            }
        }
    }
    let multiattach = v["multiattach"] == json!(true)
        || vtype["extra_specs"]["multiattach"] == json!("<is> True");
    let id = new_id();
    let now = ts();
    let mut body = json!({
        "id": id, "name": v["name"], "status": "creating", "size": size, "availability_zone": az, "created_at": now, "updated_at": now,
        "attachments": [], "description": v["description"], "volume_type": vtype["name"], "volume_type_id": vtype["id"], "snapshot_id": v["snapshot_id"],
        "source_volid": v["source_volid"], "metadata": v.get("metadata").cloned().unwrap_or(json!({})), "user_id": ctx.user,
        "bootable": if image_meta.is_null() { "false" } else { "true" }, "encrypted": false, "replication_status": null,
        "consistencygroup_id": null, "multiattach": multiattach, "os-vol-tenant-attr:tenant_id": ctx.project, "group_id": null,
        "provider_id": null, "shared_targets": true, "service_uuid": null, "cluster_name": null, "migration_status": null, "consumes_quota": true,
    });
    if !image_meta.is_null() {
        body["volume_image_metadata"] = image_meta;
    }
    w.insert(COL, &id, &ctx.project, body.clone());
    Ok(body)
}

/// Leave `creating`.
pub fn finish_create(w: &mut World, id: &str) {
    if let Some(r) = w
        .get_mut(COL, id)
        .filter(|r| r.body["status"] == json!("creating"))
    {
        r.body["status"] = json!("available");
        r.body["updated_at"] = json!(ts());
    }
}

fn next_device(w: &World, server: &str) -> String {
    let used: Vec<String> = w
        .iter(COL)
        .flat_map(|(_, v)| {
            v.body["attachments"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|a| a["server_id"] == json!(server))
        .filter_map(|a| a["device"].as_str().map(str::to_string))
        .collect();
    let image_boot = w
        .get("servers", server)
        .is_none_or(|s| s.body["image"] != json!(""));
    let start = if image_boot { b'b' } else { b'a' };
    (start..=b'z')
        .map(|c| format!("/dev/vd{}", c as char))
        .find(|d| !used.contains(d))
        .unwrap_or_else(|| "/dev/vdz".into())
}

/// Attach a volume to a server (Nova's os-volume_attachments and boot volumes).
pub fn attach(
    w: &mut World,
    ctx: &Ctx,
    vid: &str,
    server: &str,
    device: Option<&str>,
) -> ApiResult<()> {
    let v = find(w, ctx, vid)?.clone();
    let status = v["status"].as_str().unwrap_or("");
    let multi = v["multiattach"] == json!(true);
    if v["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|a| a["server_id"] == json!(server))
    {
        return Err(bad(format!(
            "Invalid volume: volume {vid} already attached to server {server}"
        )));
    }
    if !(status == "available" || (status == "in-use" && multi)) {
        return Err(bad(format!(
            "Invalid volume: Volume {vid} status must be available or in-use with multiattach, but current status is: {status}"
        )));
    }
    let device = device
        .map(str::to_string)
        .unwrap_or_else(|| next_device(w, server));
    let att = json!({"server_id": server, "attachment_id": new_id(), "attached_at": ts(), "host_name": null, "volume_id": vid, "device": device, "id": vid});
    if let Some(r) = w.get_mut(COL, vid) {
        if let Some(list) = r.body["attachments"].as_array_mut() {
            list.push(att);
        }
        r.body["status"] = json!("in-use");
        r.body["updated_at"] = json!(ts());
    }
    Ok(())
}

/// Detach a volume from a server.
pub fn detach(w: &mut World, vid: &str, server: &str) {
    if let Some(r) = w.get_mut(COL, vid) {
        if let Some(list) = r.body["attachments"].as_array_mut() {
            list.retain(|a| a["server_id"] != json!(server));
        }
        let empty = r.body["attachments"]
            .as_array()
            .is_none_or(|a| a.is_empty());
        if empty {
            r.body["status"] = json!("available");
        }
        r.body["updated_at"] = json!(ts());
    }
}

/// Create/attach the volumes of a server's `block_device_mapping_v2`. Returns (volume ids,
/// ids to delete on termination); on failure, volumes created here are removed again.
pub fn boot_volumes(
    w: &mut World,
    ctx: &Ctx,
    s: &Value,
    server: &str,
) -> ApiResult<(Vec<String>, Vec<String>)> {
    let (mut ids, mut dot, mut made) = (Vec::new(), Vec::new(), Vec::new());
    let cerr = |e: ApiError| ApiError::new(Svc::Compute, e.status, "", e.message);
    for (i, d) in s["block_device_mapping_v2"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if d["destination_type"] != json!("volume") {
            continue;
        }
        let boot = d["boot_index"].as_i64() == Some(0) || d["boot_index"] == json!("0");
        let device = if boot {
            Some("/dev/vda".to_string())
        } else {
            d["device_name"].as_str().map(str::to_string)
        };
        let res = match d["source_type"].as_str() {
            Some("image") | Some("blank") => {
                let mut spec = json!({"size": d["volume_size"], "name": "", "volume_type": d["volume_type"], "availability_zone": s["availability_zone"]});
                if d["source_type"] == json!("image") {
                    spec["imageRef"] = d["uuid"].clone();
                }
                if spec["availability_zone"]
                    .as_str()
                    .is_none_or(|a| !w.seed.volume_availability_zones.iter().any(|z| z == a))
                {
                    spec["availability_zone"] = Value::Null;
                }
                new_volume(w, ctx, &spec).map(|v| {
                    let id = v["id"].as_str().unwrap_or("").to_string();
                    finish_create(w, &id);
                    made.push(id.clone());
                    id
                })
            }
            Some("volume") => Ok(d["uuid"].as_str().unwrap_or("").to_string()),
            other => Err(ApiError::bad_request(
                SVC,
                format!(
                    "Block Device Mapping {i} is Invalid: source_type {other:?} is not supported."
                ),
            )),
        };
        let step = res.and_then(|id| attach(w, ctx, &id, server, device.as_deref()).map(|_| id));
        match step {
            Ok(id) => {
                if boot && let Some(r) = w.get_mut(COL, &id) {
                    r.body["_boot"] = json!(server);
                }
                if d["delete_on_termination"] == json!(true) {
                    dot.push(id.clone());
                }
                ids.push(id);
            }
            Err(e) => {
                for id in &ids {
                    detach(w, id, server);
                }
                for id in &made {
                    w.remove(COL, id);
                }
                return Err(cerr(e));
            }
        }
    }
    Ok((ids, dot))
}

/// A server was deleted: detach its volumes and delete those marked delete_on_termination.
pub fn server_gone(w: &mut World, server: &str, delete: &[String]) {
    let ids: Vec<String> = w
        .iter(COL)
        .filter(|(_, v)| {
            v.body["attachments"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a["server_id"] == json!(server))
        })
        .map(|(k, _)| k.clone())
        .collect();
    for id in ids {
        detach(w, &id, server);
        if delete.contains(&id) {
            w.remove(COL, &id);
        }
    }
}

fn render(base: &str, b: &Value) -> Value {
    let mut v = b.clone();
    let id = b["id"].as_str().unwrap_or("");
    let project = b["os-vol-tenant-attr:tenant_id"].as_str().unwrap_or("");
    v["links"] = json!([{"rel": "self", "href": format!("{base}/volume/v3/{project}/volumes/{id}")},
                        {"rel": "bookmark", "href": format!("{base}/volume/{project}/volumes/{id}")}]);
    if let Some(o) = v.as_object_mut() {
        o.retain(|k, _| !k.starts_with('_'));
    }
    v
}

async fn create(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let v = member(SVC, body(SVC, &b)?, "volume")?;
    let mut w = st.world();
    let vol = new_volume(&mut w, &ctx, &v)?;
    let id = vol["id"].as_str().unwrap_or("").to_string();
    let delay = w.delays.volume_create_ms;
    if delay == 0 {
        finish_create(&mut w, &id);
    } else {
        w.schedule(delay, PendingKind::VolumeCreate(id));
    }
    Ok(reply(
        StatusCode::ACCEPTED,
        json!({"volume": render(&st.base_url, &vol)}),
    ))
}

fn list(st: &AppState, ctx: &Ctx, q: &Query, detail: bool) -> ApiResult {
    let w = st.world();
    let items: Vec<Value> = w
        .iter(COL)
        .filter(|(_, r)| ctx.owns(&r.project) && filter::matches(&r.body, q, &["metadata"]))
        .map(|(_, r)| render(&st.base_url, &r.body))
        .collect();
    drop(w);
    let (items, next) = filter::page(items, q, "id");
    let items: Vec<Value> = items
        .into_iter()
        .map(|v| {
            if detail {
                v
            } else {
                json!({"id": v["id"], "name": v["name"], "links": v["links"]})
            }
        })
        .collect();
    let mut out = json!({"volumes": items});
    if let Some(m) = next {
        out["volumes_links"] = json!([{"rel": "next", "href": format!("{}/volume/v3/{}/volumes{}?{}", st.base_url, ctx.project, if detail { "/detail" } else { "" }, q.with_marker(&m))}]);
    }
    ok(out)
}

async fn show(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((_p, id)): Path<(String, String)>,
) -> ApiResult {
    let w = st.world();
    ok(json!({"volume": render(&st.base_url, find(&w, &ctx, &id)?)}))
}

async fn update(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((_p, id)): Path<(String, String)>,
    b: Bytes,
) -> ApiResult {
    let v = member(SVC, body(SVC, &b)?, "volume")?;
    let mut w = st.world();
    find(&w, &ctx, &id)?;
    let r = w.get_mut(COL, &id).ok_or_else(|| nf(&id))?;
    for k in ["name", "description", "metadata"] {
        if let Some(x) = v.get(k) {
            r.body[k] = x.clone();
        }
    }
    r.body["updated_at"] = json!(ts());
    ok(json!({"volume": render(&st.base_url, &r.body)}))
}

async fn delete(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((_p, id)): Path<(String, String)>,
) -> ApiResult {
    let mut w = st.world();
    let status = find(&w, &ctx, &id)?["status"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if !matches!(
        status.as_str(),
        "available" | "error" | "error_restoring" | "error_extending" | "error_managing"
    ) || snapshots::has_snapshots(&w, &id)
    {
        return Err(bad(
            "Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer.",
        ));
    }
    w.remove(COL, &id);
    Ok(StatusCode::ACCEPTED.into_response())
}

async fn action(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((_p, id)): Path<(String, String)>,
    b: Bytes,
) -> ApiResult {
    let req = body(SVC, &b)?;
    let mut w = st.world();
    find(&w, &ctx, &id)?;
    let r = w.get_mut(COL, &id).ok_or_else(|| nf(&id))?;
    if let Some(e) = req.get("os-extend") {
        let new = e["new_size"].as_i64().unwrap_or(0);
        if new <= r.body["size"].as_i64().unwrap_or(0) {
            return Err(bad(
                "Invalid input received: New size for extend must be greater than current size.",
            ));
        }
        r.body["size"] = json!(new);
    } else if let Some(s) = req.get("os-set_bootable") {
        r.body["bootable"] = json!(if s["bootable"] == json!(true) {
            "true"
        } else {
            "false"
        });
    } else if let Some(s) = req.get("os-reset_status").filter(|_| ctx.admin) {
        r.body["status"] = s["status"].clone();
    } else {
        return Err(bad("Invalid request body: no supported action"));
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

async fn types(State(st): State<AppState>, _ctx: Ctx) -> ApiResult {
    let w = st.world();
    let list: Vec<Value> = w
        .seed
        .volume_types
        .iter()
        .map(|t| type_json(&t.name, t.multiattach))
        .collect();
    ok(json!({"volume_types": list}))
}

async fn type_show(
    State(st): State<AppState>,
    _ctx: Ctx,
    Path((_p, id)): Path<(String, String)>,
) -> ApiResult {
    let w = st.world();
    let t = if id == "default" {
        find_type(&w, None)?
    } else {
        find_type(&w, Some(&id))?
    };
    ok(json!({"volume_type": t}))
}

async fn azs(State(st): State<AppState>, _ctx: Ctx) -> ApiResult {
    let zones = st.world().seed.volume_availability_zones.clone();
    let list: Vec<Value> = zones
        .iter()
        .map(|z| json!({"zoneName": z, "zoneState": {"available": true}}))
        .collect();
    ok(json!({"availabilityZoneInfo": list}))
}

fn usage(w: &World, project: &str) -> (i64, i64) {
    let vols: Vec<i64> = w
        .iter(COL)
        .filter(|(_, r)| r.project == project)
        .map(|(_, r)| r.body["size"].as_i64().unwrap_or(0))
        .collect();
    (vols.len() as i64, vols.iter().sum())
}

async fn limits(State(st): State<AppState>, ctx: Ctx) -> ApiResult {
    let w = st.world();
    let (n, gb) = usage(&w, &ctx.project);
    ok(json!({"limits": {"rate": [], "absolute": {
        "maxTotalVolumes": w.quota(&ctx.project, "volumes"), "totalVolumesUsed": n,
        "maxTotalVolumeGigabytes": w.quota(&ctx.project, "gigabytes"), "totalGigabytesUsed": gb,
        "maxTotalSnapshots": w.quota(&ctx.project, "snapshots"), "totalSnapshotsUsed": 0,
        "maxTotalBackups": 10, "totalBackupsUsed": 0, "maxTotalBackupGigabytes": 1000, "totalBackupGigabytesUsed": 0}}}))
}

async fn quota(
    State(st): State<AppState>,
    ctx: Ctx,
    q: Query,
    Path((_p, target)): Path<(String, String)>,
) -> ApiResult {
    let w = st.world();
    let project = if ctx.admin {
        target.clone()
    } else {
        ctx.project.clone()
    };
    let (n, gb) = usage(&w, &project);
    let usage_wanted = q
        .get("usage")
        .is_some_and(|u| u.eq_ignore_ascii_case("true"));
    let item = |k: &str, used: i64| {
        if usage_wanted {
            json!({"limit": w.quota(&project, k), "in_use": used, "reserved": 0, "allocated": 0})
        } else {
            json!(w.quota(&project, k))
        }
    };
    ok(
        json!({"quota_set": {"id": target, "volumes": item("volumes", n), "gigabytes": item("gigabytes", gb), "snapshots": item("snapshots", 0),
                            "backups": item("backups", 0), "backup_gigabytes": item("backup_gigabytes", 0), "per_volume_gigabytes": item("per_volume_gigabytes", 0),
                            "groups": item("groups", 0)}}),
    )
}

fn versions_doc(base: &str) -> Value {
    json!({"versions": [{"id": "v3.0", "status": "CURRENT", "version": "3.71", "min_version": "3.0", "updated": "2023-08-31T00:00:00Z",
        "links": [{"href": "https://docs.openstack.org/", "type": "text/html", "rel": "describedby"}, {"href": format!("{base}/volume/v3/"), "rel": "self"}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.volume+json;version=3"}]}]})
}

async fn root(State(st): State<AppState>) -> Response {
    reply(StatusCode::MULTIPLE_CHOICES, versions_doc(&st.base_url))
}

async fn v3(State(st): State<AppState>) -> Response {
    reply(StatusCode::OK, versions_doc(&st.base_url))
}

/// Cinder routes.
pub fn routes() -> Router<AppState> {
    let api = Router::new()
        .route(
            &format!("{P}/volumes"),
            get(
                |State(st): State<AppState>, ctx: Ctx, q: Query| async move {
                    list(&st, &ctx, &q, false)
                },
            )
            .post(create),
        )
        .route(
            &format!("{P}/volumes/detail"),
            get(
                |State(st): State<AppState>, ctx: Ctx, q: Query| async move {
                    list(&st, &ctx, &q, true)
                },
            ),
        )
        .route(
            &format!("{P}/volumes/{{id}}"),
            get(show).put(update).delete(delete),
        )
        .route(&format!("{P}/volumes/{{id}}/action"), post(action))
        .route(
            &format!("{P}/snapshots"),
            get(
                |State(st): State<AppState>, ctx: Ctx, q: Query| async move {
                    snapshots::list(&st, &ctx, &q, false)
                },
            )
            .post(snapshots::create),
        )
        .route(
            &format!("{P}/snapshots/detail"),
            get(
                |State(st): State<AppState>, ctx: Ctx, q: Query| async move {
                    snapshots::list(&st, &ctx, &q, true)
                },
            ),
        )
        .route(
            &format!("{P}/snapshots/{{id}}"),
            get(snapshots::show).delete(snapshots::delete),
        )
        .route(&format!("{P}/types"), get(types))
        .route(&format!("{P}/types/{{id}}"), get(type_show))
        .route(&format!("{P}/os-availability-zone"), get(azs))
        .route(&format!("{P}/limits"), get(limits))
        .route(&format!("{P}/os-quota-sets/{{target}}"), get(quota))
        .layer(axum::middleware::from_fn(|req, next| {
            negotiate(CINDER, req, next)
        }));
    Router::new()
        .route("/volume", get(root))
        .route("/volume/v3", get(v3))
        .merge(api)
}

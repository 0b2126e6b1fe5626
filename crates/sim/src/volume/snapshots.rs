//! Cinder v3 snapshots: create (from an `available` volume, or an `in-use` one with `force`),
//! list (`/snapshots`, `/snapshots/detail`, filtered by name, status, volume ID and metadata),
//! show, delete. A snapshot is `available` at once; a volume with snapshots cannot be deleted
//! (the check lives with the volume delete).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::{Value, json};

use super::{SVC, bad, find as find_volume, ts};
use crate::error::{ApiError, ApiResult};
use crate::filter;
use crate::http::{AppState, Ctx, Query, body, member, ok, reply};
use crate::world::{World, new_id};

/// Collection name in the world.
pub(super) const COL: &str = "snapshots";

fn nf(id: &str) -> ApiError {
    ApiError::not_found(SVC, "", format!("Snapshot {id} could not be found."))
}

fn find<'a>(w: &'a World, ctx: &Ctx, id: &str) -> ApiResult<&'a Value> {
    w.get(COL, id)
        .filter(|r| ctx.owns(&r.project))
        .map(|r| &r.body)
        .ok_or_else(|| nf(id))
}

/// True when `volume` has a snapshot.
pub(super) fn has_snapshots(w: &World, volume: &str) -> bool {
    w.iter(COL)
        .any(|(_, r)| r.body["volume_id"].as_str() == Some(volume))
}

pub(super) async fn create(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let v = member(SVC, body(SVC, &b)?, "snapshot")?;
    let volume_id = v["volume_id"]
        .as_str()
        .ok_or_else(|| bad("Invalid input received: 'volume_id' is a required property"))?
        .to_string();
    let force = v["force"].as_bool().unwrap_or(false)
        || v["force"]
            .as_str()
            .is_some_and(|f| f.eq_ignore_ascii_case("true"));
    let mut w = st.world();
    let vol = find_volume(&w, &ctx, &volume_id)?;
    let status = vol["status"].as_str().unwrap_or("");
    if !(status == "available" || (force && status == "in-use")) {
        return Err(bad(format!(
            "Invalid volume: Volume {volume_id} status must be available, but current status is: {status}."
        )));
    }
    let size = vol["size"].clone();
    let id = new_id();
    let snap = json!({
        "id": id, "name": v.get("name").cloned().unwrap_or(Value::Null),
        "description": v.get("description").cloned().unwrap_or(Value::Null),
        "volume_id": volume_id, "status": "available", "size": size,
        "metadata": v.get("metadata").cloned().unwrap_or(json!({})),
        "created_at": ts(), "updated_at": null, "progress": "100%",
        "os-extended-snapshot-attributes:project_id": ctx.project,
    });
    w.insert(COL, &id, &ctx.project, snap.clone());
    Ok(reply(StatusCode::ACCEPTED, json!({"snapshot": snap})))
}

pub(super) fn list(st: &AppState, ctx: &Ctx, q: &Query, detail: bool) -> ApiResult {
    let w = st.world();
    let items: Vec<Value> = w
        .iter(COL)
        .filter(|(_, r)| ctx.owns(&r.project) && filter::matches(&r.body, q, &["metadata"]))
        .map(|(_, r)| r.body.clone())
        .collect();
    drop(w);
    let (items, next) = filter::page(items, q, "id");
    let items: Vec<Value> = items
        .into_iter()
        .map(|v| {
            if detail {
                v
            } else {
                json!({"id": v["id"], "name": v["name"], "volume_id": v["volume_id"], "status": v["status"], "size": v["size"]})
            }
        })
        .collect();
    let mut out = json!({"snapshots": items});
    if let Some(m) = next {
        let path = if detail {
            "snapshots/detail"
        } else {
            "snapshots"
        };
        out["snapshots_links"] = json!([{"rel": "next", "href": format!("{}/volume/v3/{}/{path}?{}", st.base_url, ctx.project, q.with_marker(&m))}]);
    }
    ok(out)
}

pub(super) async fn show(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((_p, id)): Path<(String, String)>,
) -> ApiResult {
    let w = st.world();
    ok(json!({"snapshot": find(&w, &ctx, &id)?}))
}

pub(super) async fn delete(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((_p, id)): Path<(String, String)>,
) -> ApiResult {
    let mut w = st.world();
    let status = find(&w, &ctx, &id)?["status"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if !matches!(status.as_str(), "available" | "error" | "error_deleting") {
        return Err(bad(
            "Invalid snapshot: Snapshot status must be available or error and must not be part of a group.",
        ));
    }
    w.remove(COL, &id);
    Ok(StatusCode::ACCEPTED.into_response())
}

//! Neutron standard-attribute tags: `PUT/GET/DELETE /{resource}/{id}/tags[/{tag}]` and
//! `POST /{resource}/{id}/tags` (`tag-creation`). Status codes follow the `action_status` map of
//! Neutron's `Tagging` extension: index 200, show 204, update (one tag) 201, update_all 200,
//! create 200, delete/delete_all 204.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::json;

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, body, ok};
use crate::network::{SVC, find, find_owned, lock, touch};
use crate::world::World;

fn tags_of(w: &World, ctx: &Ctx, col: &str, id: &str) -> ApiResult<Vec<String>> {
    let r = find(w, ctx, col, id)?;
    Ok(serde_json::from_value(r.body["tags"].clone()).unwrap_or_default())
}

fn set_tags(w: &mut World, ctx: &Ctx, col: &str, id: &str, tags: Vec<String>) -> ApiResult<()> {
    let r = find_owned(w, ctx, col, id)?;
    r.body["tags"] = json!(tags);
    touch(&mut r.body);
    Ok(())
}

/// Handler.
pub async fn tags_get(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((col, id)): Path<(String, String)>,
) -> ApiResult {
    let w = lock(&st, &ctx);
    ok(json!({"tags": tags_of(&w, &ctx, &col, &id)?}))
}

/// Handler.
pub async fn tags_put(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((col, id)): Path<(String, String)>,
    b: Bytes,
) -> ApiResult {
    let req = body(SVC, &b)?;
    let tags: Vec<String> = serde_json::from_value(req["tags"].clone()).map_err(|_| {
        ApiError::bad_request(SVC, "Invalid input for operation: Invalid tags body.")
            .kind("InvalidInput")
    })?;
    let mut w = lock(&st, &ctx);
    set_tags(&mut w, &ctx, &col, &id, tags.clone())?;
    ok(json!({"tags": tags}))
}

/// `POST /{resource}/{id}/tags` (`tag-creation`): adds the tags that are missing, keeps the others;
/// 200 with the request body, as Neutron's `create_tags`.
pub async fn tags_post(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((col, id)): Path<(String, String)>,
    b: Bytes,
) -> ApiResult {
    let req = body(SVC, &b)?;
    let new: Vec<String> = serde_json::from_value(req["tags"].clone()).map_err(|_| {
        ApiError::bad_request(SVC, "Invalid input for operation: Invalid tags body.")
            .kind("InvalidInput")
    })?;
    let mut w = lock(&st, &ctx);
    let mut tags = tags_of(&w, &ctx, &col, &id)?;
    for t in &new {
        if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    set_tags(&mut w, &ctx, &col, &id, tags)?;
    ok(json!({"tags": new}))
}

/// Handler.
pub async fn tags_clear(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((col, id)): Path<(String, String)>,
) -> ApiResult {
    let mut w = lock(&st, &ctx);
    set_tags(&mut w, &ctx, &col, &id, vec![])?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Handler.
pub async fn tag_one(
    State(st): State<AppState>,
    ctx: Ctx,
    method: axum::http::Method,
    Path((col, id, tag)): Path<(String, String, String)>,
) -> ApiResult {
    let mut w = lock(&st, &ctx);
    let mut tags = tags_of(&w, &ctx, &col, &id)?;
    let present = tags.contains(&tag);
    let missing =
        || ApiError::not_found(SVC, "TagNotFound", format!("Tag {tag} could not be found."));
    match method.as_str() {
        "GET" if present => Ok(StatusCode::NO_CONTENT.into_response()),
        "GET" => Err(missing()),
        "PUT" => {
            if !present {
                tags.push(tag.clone());
                set_tags(&mut w, &ctx, &col, &id, tags)?;
            }
            Ok(StatusCode::CREATED.into_response())
        }
        _ if present => {
            tags.retain(|t| t != &tag);
            set_tags(&mut w, &ctx, &col, &id, tags)?;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        _ => Err(missing()),
    }
}

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
use crate::network::{SVC, find, find_owned, lock, no_tags_route, touch};
use crate::world::World;

/// A scalar as Python's `'%s'` shows it in neutron-lib's validator messages.
fn py_str(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Bool(true) => "True".into(),
        serde_json::Value::Bool(false) => "False".into(),
        serde_json::Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// neutron-lib `validate_list_of_unique_strings` (max length 255): the tags, or the reason
/// they are refused.
pub fn validate_tags(v: &serde_json::Value) -> Result<Vec<String>, String> {
    let Some(list) = v.as_array() else {
        return Err(format!("'{}' is not a list", py_str(v)));
    };
    let mut out: Vec<String> = Vec::new();
    for t in list {
        let Some(s) = t.as_str() else {
            return Err(format!("'{}' is not a valid string", py_str(t)));
        };
        if s.len() > 255 {
            return Err(format!("'{s}' exceeds maximum length of 255"));
        }
        out.push(s.to_string());
    }
    let mut seen = std::collections::BTreeSet::new();
    let dups: Vec<&String> = out.iter().filter(|t| !seen.insert(*t)).collect();
    if let Some(d) = dups.first() {
        return Err(format!("Duplicate items in the list: '{d}'"));
    }
    Ok(out)
}

/// The `tags` of a `PUT`/`POST .../tags` body: Neutron's `InvalidInput` when missing or invalid.
fn body_tags(req: &serde_json::Value) -> ApiResult<Vec<String>> {
    let invalid = |reason: String| {
        ApiError::bad_request(SVC, format!("Invalid input for operation: {reason}."))
            .kind("InvalidInput")
    };
    match req.get("tags") {
        None => Err(invalid("Invalid tags body".into())),
        Some(v) => validate_tags(v).map_err(invalid),
    }
}

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
    no_tags_route(&w)?;
    ok(json!({"tags": tags_of(&w, &ctx, &col, &id)?}))
}

/// `PUT /{resource}/{id}/tags` replaces the tags (200 with them, Neutron's `update_all`);
/// `POST` (`tag-creation`) adds the missing ones and keeps the others (200 with the request's
/// tags, Neutron's `create_tags`).
pub async fn tags_set(
    State(st): State<AppState>,
    ctx: Ctx,
    method: axum::http::Method,
    Path((col, id)): Path<(String, String)>,
    b: Bytes,
) -> ApiResult {
    no_tags_route(&lock(&st, &ctx))?;
    let req = body(SVC, &b)?;
    let new = body_tags(&req)?;
    let mut w = lock(&st, &ctx);
    let mut tags = if method == axum::http::Method::POST {
        tags_of(&w, &ctx, &col, &id)?
    } else {
        vec![]
    };
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
    no_tags_route(&w)?;
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
    no_tags_route(&w)?;
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
            // Neutron 29 serializes the handler's `None`: 201, `application/json`, `null`.
            Ok(crate::http::reply(
                StatusCode::CREATED,
                serde_json::Value::Null,
            ))
        }
        _ if present => {
            tags.retain(|t| t != &tag);
            set_tags(&mut w, &ctx, &col, &id, tags)?;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        _ => Err(missing()),
    }
}

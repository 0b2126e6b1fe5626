//! Nova server sub-resources: actions (start/stop/reboot/console output, restore/forceDelete of
//! a soft-deleted server), metadata and tags.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::response::IntoResponse;
use serde_json::json;

use crate::compute::servers::{self, SOFT_DELETED, find, not_found};
use crate::compute::{SVC, bad, conflict, nf};
use crate::error::ApiResult;
use crate::http::{AppState, Ctx, body, ok};
use crate::world::now_str;

const COL: &str = "servers";

/// Handler.
pub async fn action(
    State(st): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    b: Bytes,
) -> ApiResult {
    let req = body(SVC, &b)?;
    let mut w = st.world();
    let status = find(&w, &ctx, &id)?["status"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let name = req
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_default();
    let (from, to, power) = match name.as_str() {
        "os-getConsoleOutput" => {
            return ok(json!({"output": format!("capo-sim console of {id}\n")}));
        }
        // Nova's deferred delete (a cloud with reclaim_instance_interval > 0).
        "restore" if status == SOFT_DELETED => {
            servers::restore(&mut w, &id)?;
            return Ok(StatusCode::ACCEPTED.into_response());
        }
        "restore" => ("SOFT_DELETED", "ACTIVE", 1),
        "forceDelete" => {
            servers::remove_server(&mut w, &id);
            return Ok(StatusCode::ACCEPTED.into_response());
        }
        "os-stop" => ("ACTIVE", "SHUTOFF", 4),
        "os-start" => ("SHUTOFF", "ACTIVE", 1),
        "reboot" => ("ACTIVE", "ACTIVE", 1),
        _ => return Err(bad(format!("There is no such action: {name}"))),
    };
    if status != from {
        return Err(conflict(format!(
            "Cannot '{name}' instance {id} while it is in vm_state {}",
            status.to_lowercase()
        )));
    }
    if let Some(r) = w.get_mut(COL, &id) {
        r.body["status"] = json!(to);
        r.body["OS-EXT-STS:vm_state"] = json!(if to == "SHUTOFF" { "stopped" } else { "active" });
        r.body["OS-EXT-STS:power_state"] = json!(power);
        r.body["updated"] = json!(now_str());
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

/// A server's `metadata` (`PUT` replaces, `POST` merges) or `tags` (`PUT` replaces, `DELETE`
/// clears, 204); `GET` shows them. Nova's 404 comes before a malformed body's 400.
pub async fn attribute(
    key: &'static str,
    State(st): State<AppState>,
    ctx: Ctx,
    method: Method,
    Path(id): Path<String>,
    b: Bytes,
) -> ApiResult {
    let mut w = st.world();
    find(&w, &ctx, &id)?;
    let req = body(SVC, &b)?;
    let r = w.get_mut(COL, &id).ok_or_else(|| not_found(&id))?;
    match method.as_str() {
        "PUT" => r.body[key] = req[key].clone(),
        "POST" => {
            for (k, v) in req[key].as_object().into_iter().flatten() {
                r.body[key][k] = v.clone();
            }
        }
        "DELETE" => {
            r.body[key] = json!([]);
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        _ => {}
    }
    ok(json!({key: r.body[key]}))
}

/// Handler.
pub async fn tag(
    State(st): State<AppState>,
    ctx: Ctx,
    method: Method,
    Path((id, tag)): Path<(String, String)>,
) -> ApiResult {
    let mut w = st.world();
    find(&w, &ctx, &id)?;
    let r = w.get_mut(COL, &id).ok_or_else(|| not_found(&id))?;
    let mut tags: Vec<String> = serde_json::from_value(r.body["tags"].clone()).unwrap_or_default();
    let present = tags.contains(&tag);
    let status = match method.as_str() {
        "GET" if present => StatusCode::NO_CONTENT,
        "PUT" if present => StatusCode::NO_CONTENT,
        "PUT" => {
            tags.push(tag.clone());
            StatusCode::CREATED
        }
        "DELETE" if present => {
            tags.retain(|t| t != &tag);
            StatusCode::NO_CONTENT
        }
        _ => return Err(nf(format!("Tag '{tag}' could not be found."))),
    };
    r.body["tags"] = json!(tags);
    Ok(status.into_response())
}

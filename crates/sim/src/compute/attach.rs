//! Nova os-volume_attachments and os-interface.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::{Value, json};

use crate::compute::servers::find;
use crate::compute::{SVC, bad, conflict, nf};
use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, body, member, ok};
use crate::microversion::Mv;
use crate::world::World;

fn attachment(server: &Value, vol: &Value, mv: Mv) -> Option<Value> {
    let sid = server["id"].clone();
    let a = vol["attachments"]
        .as_array()?
        .iter()
        .find(|a| a["server_id"] == sid)?;
    let mut out = json!({"serverId": sid, "volumeId": vol["id"], "device": a["device"]});
    if !mv.at_least(2, 89) {
        out["id"] = vol["id"].clone();
    } else {
        out["attachment_id"] = a["attachment_id"].clone();
        out["bdm_uuid"] = a["attachment_id"].clone();
    }
    if mv.at_least(2, 70) {
        out["tag"] = Value::Null;
    }
    if mv.at_least(2, 79) {
        out["delete_on_termination"] = json!(
            server["_delete_on_termination"]
                .as_array()
                .is_some_and(|d| d.contains(&vol["id"]))
        );
    }
    Some(out)
}

fn attached(w: &World, server: &Value, mv: Mv) -> Vec<Value> {
    w.iter("volumes")
        .filter_map(|(_, v)| attachment(server, &v.body, mv))
        .collect()
}

/// GET os-volume_attachments.
pub async fn list_volumes(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(id): Path<String>,
) -> ApiResult {
    let w = st.world();
    let s = find(&w, &ctx, &id)?;
    ok(json!({"volumeAttachments": attached(&w, s, mv)}))
}

/// GET one attachment.
pub async fn show_volume(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path((id, vid)): Path<(String, String)>,
) -> ApiResult {
    let w = st.world();
    let s = find(&w, &ctx, &id)?;
    let v = w
        .get("volumes", &vid)
        .and_then(|v| attachment(s, &v.body, mv));
    let v = v.ok_or_else(|| {
        nf(format!(
            "Volume {vid} is not attached to the instance {id}."
        ))
    })?;
    ok(json!({"volumeAttachment": v}))
}

fn require_running(s: &Value, action: &str) -> ApiResult<()> {
    let status = s["status"].as_str().unwrap_or("");
    if status == "ACTIVE" || status == "SHUTOFF" {
        return Ok(());
    }
    let vm_state = s["OS-EXT-STS:vm_state"].as_str().unwrap_or("");
    Err(conflict(format!(
        "Cannot '{action}' instance {} while it is in vm_state {vm_state}",
        s["id"].as_str().unwrap_or("")
    )))
}

/// POST os-volume_attachments.
pub async fn attach_volume(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(id): Path<String>,
    b: Bytes,
) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "volumeAttachment")?;
    let vid = req["volumeId"]
        .as_str()
        .ok_or_else(|| bad("'volumeId' is a required property"))?
        .to_string();
    let mut w = st.world();
    let s = find(&w, &ctx, &id)?.clone();
    require_running(&s, "attach_volume")?;
    crate::volume::attach(&mut w, &ctx, &vid, &id, req["device"].as_str())
        .map_err(|e| ApiError::new(SVC, e.status, "", e.message))?;
    if req["delete_on_termination"] == json!(true)
        && let Some(r) = w.get_mut("servers", &id)
        && let Some(list) = r.body["_delete_on_termination"].as_array_mut()
    {
        list.push(json!(vid));
    }
    let s = find(&w, &ctx, &id)?.clone();
    let v = w
        .get("volumes", &vid)
        .and_then(|v| attachment(&s, &v.body, mv))
        .unwrap_or_default();
    ok(json!({"volumeAttachment": v}))
}

/// PUT one attachment: from 2.85 (with `volumeId` the volume of the path) it updates the
/// attachment's `delete_on_termination`, in any server state (Nova checks none: the way to have
/// Nova delete a volume with a soft-deleted server). Anything else is a volume swap, which
/// Nova's default policy allows only to admins; capo-sim does not model it.
pub async fn update_volume(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path((id, vid)): Path<(String, String)>,
    b: Bytes,
) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "volumeAttachment")?;
    let mut w = st.world();
    let s = find(&w, &ctx, &id)?.clone();
    if !mv.at_least(2, 85) || req["volumeId"] != json!(vid) {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "",
            "Policy doesn't allow os_compute_api:os-volumes-attachments:swap to be performed.",
        ));
    }
    if w.get("volumes", &vid)
        .and_then(|v| attachment(&s, &v.body, mv))
        .is_none()
    {
        return Err(nf(format!(
            "Volume {vid} is not attached to the instance {id}."
        )));
    }
    let dot = &req["delete_on_termination"];
    if !(dot.is_null() || dot.is_boolean()) {
        return Err(bad(format!(
            "Invalid input for field/attribute delete_on_termination. Value: {dot}. {dot} is not of type 'boolean'"
        )));
    }
    if let Some(on) = dot.as_bool()
        && let Some(r) = w.get_mut("servers", &id)
    {
        let list = r.body["_delete_on_termination"]
            .as_array_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut list: Vec<Value> = list.into_iter().filter(|x| x != &json!(vid)).collect();
        if on {
            list.push(json!(vid));
        }
        r.body["_delete_on_termination"] = Value::Array(list);
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

/// DELETE one attachment.
pub async fn detach_volume(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((id, vid)): Path<(String, String)>,
) -> ApiResult {
    let mut w = st.world();
    let s = find(&w, &ctx, &id)?.clone();
    let is_attached = w.get("volumes", &vid).is_some_and(|v| {
        v.body["attachments"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|a| a["server_id"] == json!(id))
    });
    if !is_attached {
        return Err(nf(format!(
            "Volume {vid} is not attached to the instance {id}."
        )));
    }
    if s["image"] == json!("")
        && w.get("volumes", &vid)
            .is_some_and(|v| v.body["_boot"] == json!(id))
    {
        return Err(bad("Can't detach root device volume"));
    }
    crate::volume::detach(&mut w, &vid, &id);
    Ok(StatusCode::ACCEPTED.into_response())
}

fn interface(p: &Value, mv: Mv) -> Value {
    let ips: Vec<Value> = p["fixed_ips"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| json!({"subnet_id": f["subnet_id"], "ip_address": f["ip_address"]}))
        .collect();
    let mut out = json!({"port_state": p["status"], "fixed_ips": ips, "port_id": p["id"], "net_id": p["network_id"], "mac_addr": p["mac_address"]});
    if mv.at_least(2, 70) {
        out["tag"] = Value::Null;
    }
    out
}

/// GET os-interface.
pub async fn list_interfaces(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(id): Path<String>,
) -> ApiResult {
    let w = st.world();
    find(&w, &ctx, &id)?;
    let list: Vec<Value> = w
        .iter("ports")
        .filter(|(_, p)| p.body["device_id"] == json!(id))
        .map(|(_, p)| interface(&p.body, mv))
        .collect();
    ok(json!({"interfaceAttachments": list}))
}

/// GET one interface.
pub async fn show_interface(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path((id, pid)): Path<(String, String)>,
) -> ApiResult {
    let w = st.world();
    find(&w, &ctx, &id)?;
    let p = w
        .get("ports", &pid)
        .filter(|p| p.body["device_id"] == json!(id))
        .ok_or_else(|| nf(format!("Port {pid} is not attached")))?;
    ok(json!({"interfaceAttachment": interface(&p.body, mv)}))
}

/// POST os-interface.
pub async fn attach_interface(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(id): Path<String>,
    b: Bytes,
) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "interfaceAttachment")?;
    let mut w = st.world();
    let s = find(&w, &ctx, &id)?.clone();
    require_running(&s, "attach_interface")?;
    let az = s["OS-EXT-AZ:availability_zone"]
        .as_str()
        .unwrap_or("nova")
        .to_string();
    let mut net = json!({});
    if let Some(p) = req["port_id"].as_str() {
        net["port"] = json!(p);
    } else if let Some(n) = req["net_id"].as_str() {
        net["uuid"] = json!(n);
        if let Some(ip) = req["fixed_ips"][0]["ip_address"].as_str() {
            net["fixed_ip"] = json!(ip);
        }
    } else {
        return Err(bad("Must input network_id or port_id"));
    }
    let spec = json!({"networks": [net]});
    let (bound, created) =
        crate::compute::servers::attach_networks_pub(&mut w, &ctx, &spec, &id, &az)?;
    if let Some(r) = w.get_mut("servers", &id)
        && let Some(list) = r.body["_created_ports"].as_array_mut()
    {
        list.extend(created.iter().map(|c| json!(c)));
    }
    let p = bound
        .first()
        .and_then(|p| w.get("ports", p))
        .map(|p| interface(&p.body, mv))
        .unwrap_or_default();
    ok(json!({"interfaceAttachment": p}))
}

/// DELETE one interface.
pub async fn detach_interface(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((id, pid)): Path<(String, String)>,
) -> ApiResult {
    let mut w = st.world();
    let s = find(&w, &ctx, &id)?.clone();
    w.get("ports", &pid)
        .filter(|p| p.body["device_id"] == json!(id))
        .ok_or_else(|| nf(format!("Port {pid} is not attached")))?;
    let created: Vec<String> =
        serde_json::from_value(s["_created_ports"].clone()).unwrap_or_default();
    crate::compute::servers::release_ports_pub(&mut w, &[pid], &created);
    Ok(StatusCode::ACCEPTED.into_response())
}

//! Neutron trunks with VLAN subports; the parent port carries `trunk_details`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::{get, put};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, body, ok};
use crate::network::handlers::{
    create_route, delete_route, list_route, resource_routes, update_route,
};
use crate::network::{P, SVC, check_quota, find, find_owned, lock, new_body, touch};
use crate::world::World;

const COL: &str = "trunks";

fn defaults() -> Value {
    json!({"name": "", "port_id": null, "status": "DOWN", "admin_state_up": true, "sub_ports": [], "description": ""})
}

/// Refresh the parent port's `trunk_details` and the trunk status from the parent's binding.
fn sync(w: &mut World, trunk: &str) {
    let Some(t) = w.get(COL, trunk).map(|r| r.body.clone()) else {
        return;
    };
    let parent = t["port_id"].as_str().unwrap_or("").to_string();
    let subs: Vec<Value> = t["sub_ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let mac = w.get("ports", s["port_id"].as_str().unwrap_or("")).map(|p| p.body["mac_address"].clone()).unwrap_or(Value::Null);
            json!({"segmentation_id": s["segmentation_id"], "segmentation_type": s["segmentation_type"], "port_id": s["port_id"], "mac_address": mac})
        })
        .collect();
    let bound = w
        .get("ports", &parent)
        .is_some_and(|p| p.body["device_id"].as_str().is_some_and(|d| !d.is_empty()));
    if let Some(p) = w.get_mut("ports", &parent) {
        p.body["trunk_details"] = json!({"trunk_id": trunk, "sub_ports": subs});
    }
    if let Some(t) = w.get_mut(COL, trunk) {
        t.body["status"] = json!(if bound { "ACTIVE" } else { "DOWN" });
    }
}

fn check_subports(w: &World, ctx: &Ctx, subs: &Value, trunk: &str) -> ApiResult<Vec<Value>> {
    let mut out = Vec::new();
    for s in subs.as_array().into_iter().flatten() {
        let pid = s["port_id"].as_str().unwrap_or("");
        find(w, ctx, "ports", pid)?;
        let used = w.iter(COL).any(|(_, t)| {
            t.body["id"] != json!(trunk)
                && (t.body["port_id"] == json!(pid)
                    || t.body["sub_ports"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|x| x["port_id"] == json!(pid)))
        });
        if used {
            return Err(ApiError::conflict(
                SVC,
                "PortInUseAsSubPort",
                format!("Port {pid} is currently a subport for trunk {trunk}."),
            ));
        }
        out.push(json!({"port_id": pid, "segmentation_type": s.get("segmentation_type").cloned().unwrap_or(json!("vlan")),
                        "segmentation_id": s["segmentation_id"]}));
    }
    Ok(out)
}

fn create(w: &mut World, ctx: &Ctx, req: Value) -> ApiResult<Value> {
    let (project, mut body) = new_body(ctx, &req, defaults())?;
    check_quota(w, &project, COL, "trunk")?;
    let parent = body["port_id"].as_str().unwrap_or("").to_string();
    find(w, ctx, "ports", &parent)?;
    if w.iter(COL).any(|(_, t)| t.body["port_id"] == json!(parent)) {
        return Err(ApiError::conflict(
            SVC,
            "TrunkPortInUse",
            format!("Port {parent} is in use by another trunk."),
        ));
    }
    let id = body["id"].as_str().unwrap_or_default().to_string();
    body["sub_ports"] = json!(check_subports(w, ctx, &body["sub_ports"], &id)?);
    w.insert(COL, &id, &project, body);
    sync(w, &id);
    Ok(w.get(COL, &id).map(|r| r.body.clone()).unwrap_or_default())
}

fn delete(w: &mut World, ctx: &Ctx, id: &str) -> ApiResult<()> {
    let t = find_owned(w, ctx, COL, id)?.body.clone();
    let parent = t["port_id"].as_str().unwrap_or("").to_string();
    if w.get("ports", &parent)
        .is_some_and(|p| p.body["device_id"].as_str().is_some_and(|d| !d.is_empty()))
    {
        return Err(ApiError::conflict(
            SVC,
            "TrunkInUse",
            format!("Trunk {id} is currently in use."),
        ));
    }
    w.remove(COL, id);
    if let Some(p) = w
        .get_mut("ports", &parent)
        .and_then(|p| p.body.as_object_mut())
    {
        p.remove("trunk_details");
    }
    Ok(())
}

async fn subports(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((id, action)): Path<(String, String)>,
    b: Bytes,
) -> ApiResult {
    let req = body(SVC, &b)?;
    let mut w = lock(&st, &ctx);
    let mut t = find_owned(&mut w, &ctx, COL, &id)?.body.clone();
    let mut subs: Vec<Value> = serde_json::from_value(t["sub_ports"].clone()).unwrap_or_default();
    match action.as_str() {
        "add_subports" => subs.extend(check_subports(&w, &ctx, &req["sub_ports"], &id)?),
        "remove_subports" => {
            let gone: Vec<&Value> = req["sub_ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| &s["port_id"])
                .collect();
            subs.retain(|s| !gone.contains(&&s["port_id"]));
        }
        _ => {
            return Err(ApiError::not_found(
                SVC,
                "HTTPNotFound",
                "The resource could not be found.",
            ));
        }
    }
    t["sub_ports"] = json!(subs);
    touch(&mut t);
    find_owned(&mut w, &ctx, COL, &id)?.body = t;
    sync(&mut w, &id);
    ok(w.get(COL, &id).map(|r| r.body.clone()).unwrap_or_default())
}

async fn get_subports(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let w = lock(&st, &ctx);
    let t = find(&w, &ctx, COL, &id)?;
    ok(json!({"sub_ports": t.body["sub_ports"]}))
}

/// Routes.
pub fn routes() -> Router<AppState> {
    resource_routes(
        COL,
        list_route(COL).merge(create_route(COL, create)),
        update_route(COL, &["name", "description", "admin_state_up"]).merge(delete_route(delete)),
    )
    .route(
        &format!("{P}/trunks/{{id}}/get_subports"),
        get(get_subports),
    )
    .route(&format!("{P}/trunks/{{id}}/{{action}}"), put(subports))
}

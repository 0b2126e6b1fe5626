//! The HTTP shapes every Neutron resource shares (list, show, create, update, delete), so a
//! resource file holds only its own rules as plain functions on the world.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{MethodRouter, delete, get, post, put};
use serde_json::{Value, json};

use crate::error::ApiResult;
use crate::filter;
use crate::http::{AppState, Ctx, Query, body, empty, ok};
use crate::network::{
    P, SVC, apply_update, created, find, find_owned, kind, list_with, lock, render, req_member,
};
use crate::world::World;

/// A resource's creation: validates the unwrapped request and stores it, returning the wire body.
pub type CreateFn = fn(&mut World, &Ctx, Value) -> ApiResult<Value>;
/// A resource's deletion: checks it may go and removes it (and what depends on it).
pub type DeleteFn = fn(&mut World, &Ctx, &str) -> ApiResult<()>;

/// `GET /{resource}`: the plain list.
pub fn list_route(col: &'static str) -> MethodRouter<AppState> {
    get(
        move |State(st): State<AppState>, ctx: Ctx, q: Query| async move {
            list_with(&st, &ctx, &q, col, &[], &|_| true)
        },
    )
}

/// `POST /{resource}`: unwrap the member, lock, create, 201.
pub fn create_route(col: &'static str, create: CreateFn) -> MethodRouter<AppState> {
    post(
        move |State(st): State<AppState>, ctx: Ctx, b: Bytes| async move {
            let req = req_member(col, &b)?;
            let mut w = lock(&st, &ctx);
            created(col, create(&mut w, &ctx, req)?)
        },
    )
}

/// `PUT /{resource}/{id}` for resources whose update only changes `fields`.
pub fn update_route(col: &'static str, fields: &'static [&'static str]) -> MethodRouter<AppState> {
    put_route(Some(col), move |w, ctx, id, req| {
        update_owned(w, ctx, col, id, &req, fields)
    })
}

/// `PUT /{resource}/{id}[/{action}]`: the body (unwrapped from `{member: ...}` when given, as
/// updates have it; whole for router actions), lock, `f`.
pub fn put_route<F>(member: Option<&'static str>, f: F) -> MethodRouter<AppState>
where
    F: Fn(&mut World, &Ctx, &str, Value) -> ApiResult + Clone + Send + Sync + 'static,
{
    put(
        move |State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>, b: Bytes| {
            let f = f.clone();
            async move {
                let req = match member {
                    Some(col) => req_member(col, &b)?,
                    None => body(SVC, &b)?,
                };
                let mut w = lock(&st, &ctx);
                f(&mut w, &ctx, &id, req)
            }
        },
    )
}

/// Apply `req` to a resource the caller owns (only `fields` may change); 200 with its wire form.
pub fn update_owned(
    w: &mut World,
    ctx: &Ctx,
    col: &str,
    id: &str,
    req: &Value,
    fields: &[&str],
) -> ApiResult {
    let rec = find_owned(w, ctx, col, id)?;
    apply_update(&mut rec.body, req, fields)?;
    let rec = rec.clone();
    ok(json!({kind(col).one: render(w, col, &rec)}))
}

/// `DELETE /{resource}/{id}`: lock, delete, 204.
pub fn delete_route(delete_fn: DeleteFn) -> MethodRouter<AppState> {
    delete(
        move |State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>| async move {
            let mut w = lock(&st, &ctx);
            delete_fn(&mut w, &ctx, &id)?;
            empty(StatusCode::NO_CONTENT)
        },
    )
}

/// A resource's two routes: `collection` on `/{resource}`, `member` plus show on
/// `/{resource}/{id}`.
pub fn resource_routes(
    col: &'static str,
    collection: MethodRouter<AppState>,
    member: MethodRouter<AppState>,
) -> Router<AppState> {
    let url = kind(col).url;
    let show_route = get(
        move |State(st): State<AppState>, ctx: Ctx, q: Query, Path(id): Path<String>| async move {
            let w = lock(&st, &ctx);
            let mut items = [render(&w, col, find(&w, &ctx, col, &id)?)];
            filter::select_fields(&mut items, &q);
            let [item] = items;
            ok(json!({kind(col).one: item}))
        },
    );
    Router::new()
        .route(&format!("{P}/{url}"), collection)
        .route(&format!("{P}/{url}/{{id}}"), show_route.merge(member))
}

//! Keystone v3: token issue (password, application credential, token), validation, revocation,
//! catalog, projects, users and application credentials.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, Svc};
use crate::http::{AppState, Ctx, body, header_str, ok, reply};
use crate::world::{AppCred, Token, World, new_id, stable_id};

const SVC: Svc = Svc::Identity;

fn unauthorized() -> ApiError {
    ApiError::unauthorized(SVC)
}

/// Where the public endpoints of [`Seed::internal_only_region`] point: a loopback port nothing
/// listens on, so a client that uses them fails at once (connection refused).
pub const CLOSED_ENDPOINT: &str = "http://127.0.0.1:1";

/// The service catalog for a project: every service has a public and an internal endpoint at
/// `base` in `region`, and, when `internal_only` names a region, an internal endpoint at `base`
/// and a public one at [`CLOSED_ENDPOINT`] in that region.
pub fn catalog(base: &str, project: &str, region: &str, internal_only: Option<&str>) -> Value {
    let services: [(&str, &str, String); 7] = [
        ("identity", "keystone", format!("{base}/identity")),
        ("compute", "nova", format!("{base}/compute/v2.1")),
        ("network", "neutron", format!("{base}/network")),
        ("load-balancer", "octavia", format!("{base}/load-balancer")),
        ("image", "glance", format!("{base}/image")),
        (
            "volumev3",
            "cinderv3",
            format!("{base}/volume/v3/{project}"),
        ),
        (
            "block-storage",
            "cinder",
            format!("{base}/volume/v3/{project}"),
        ),
    ];
    let entries: Vec<Value> = services
        .iter()
        .map(|(ty, name, url)| {
            let closed = url.replacen(base, CLOSED_ENDPOINT, 1);
            let mut endpoints: Vec<(&str, &str, &str)> =
                vec![("public", region, url), ("internal", region, url)];
            if let Some(r) = internal_only {
                endpoints.extend([("public", r, closed.as_str()), ("internal", r, url)]);
            }
            let endpoints: Vec<Value> = endpoints
                .into_iter()
                .map(|(iface, r, url)| {
                    let id = if r == region {
                        stable_id("endpoint", &format!("{ty}-{iface}"))
                    } else {
                        stable_id("endpoint", &format!("{ty}-{iface}-{r}"))
                    };
                    json!({"id": id, "interface": iface, "region": r, "region_id": r, "url": url})
                })
                .collect();
            json!({"id": stable_id("service", ty), "type": ty, "name": name, "endpoints": endpoints})
        })
        .collect();
    Value::Array(entries)
}

fn domain_json(w: &World, id: &str) -> Value {
    let name = w
        .identity
        .domains
        .iter()
        .find(|d| d.id == id)
        .map(|d| d.name.clone())
        .unwrap_or_default();
    json!({"id": id, "name": name})
}

/// The `token` body for an issued token.
fn token_body(w: &World, base: &str, t: &Token) -> Value {
    let user = w.identity.users.iter().find(|u| u.id == t.user_id);
    let mut body = json!({
        "methods": t.methods,
        "user": {"id": t.user_id, "name": user.map(|u| u.name.clone()),
                 "domain": domain_json(w, user.map_or("default", |u| u.domain_id.as_str())), "password_expires_at": null},
        "audit_ids": [t.audit_id],
        "expires_at": t.expires_at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        "issued_at": t.issued_at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
    });
    if let Some(pid) = &t.project_id
        && let Some(p) = w.project(pid)
    {
        body["project"] =
            json!({"id": p.id, "name": p.name, "domain": domain_json(w, &p.domain_id)});
        body["is_domain"] = json!(false);
        let mut roles = vec![
            json!({"id": stable_id("role", "member"), "name": "member"}),
            json!({"id": stable_id("role", "reader"), "name": "reader"}),
        ];
        if user.is_some_and(|u| u.admin) {
            roles.push(json!({"id": stable_id("role", "admin"), "name": "admin"}));
        }
        body["roles"] = Value::Array(roles);
        body["catalog"] = catalog(
            base,
            &p.id,
            &w.seed.region,
            w.seed.internal_only_region.as_deref(),
        );
    }
    if let Some(ac) = t
        .app_cred
        .as_ref()
        .and_then(|id| w.identity.app_creds.iter().find(|a| &a.id == id))
    {
        body["application_credential"] =
            json!({"id": ac.id, "name": ac.name, "restricted": !ac.unrestricted});
    }
    json!({"token": body})
}

fn find_domain(w: &World, d: &Value) -> Option<String> {
    if let Some(id) = d["id"].as_str() {
        return w
            .identity
            .domains
            .iter()
            .find(|x| x.id == id)
            .map(|x| x.id.clone());
    }
    let name = d["name"].as_str()?;
    w.identity
        .domains
        .iter()
        .find(|x| x.name == name)
        .map(|x| x.id.clone())
}

/// Resolve a `{"id"}` or `{"name", "domain"}` user reference.
fn find_user(w: &World, u: &Value) -> Option<usize> {
    if let Some(id) = u["id"].as_str() {
        return w.identity.users.iter().position(|x| x.id == id);
    }
    let name = u["name"].as_str()?;
    let domain = find_domain(w, &u["domain"])?;
    w.identity
        .users
        .iter()
        .position(|x| x.name == name && x.domain_id == domain)
}

/// Authenticate the identity part: (user id, method-specific app cred id, implied project).
fn authenticate(w: &World, ident: &Value) -> ApiResult<(String, Option<String>, Option<String>)> {
    let methods: Vec<&str> = ident["methods"]
        .as_array()
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match methods.first().copied() {
        Some("password") => {
            let u = &ident["password"]["user"];
            let idx = find_user(w, u).ok_or_else(unauthorized)?;
            let user = &w.identity.users[idx];
            if u["password"].as_str() != Some(user.password.as_str()) {
                return Err(unauthorized());
            }
            Ok((user.id.clone(), None, None))
        }
        Some("application_credential") => {
            let a = &ident["application_credential"];
            let ac: Option<&AppCred> = if let Some(id) = a["id"].as_str() {
                w.identity.app_creds.iter().find(|x| x.id == id)
            } else {
                let uidx = find_user(w, &a["user"]).ok_or_else(unauthorized)?;
                let uid = &w.identity.users[uidx].id;
                w.identity
                    .app_creds
                    .iter()
                    .find(|x| Some(x.name.as_str()) == a["name"].as_str() && &x.user_id == uid)
            };
            let ac = ac
                .filter(|ac| a["secret"].as_str() == Some(ac.secret.as_str()))
                .ok_or_else(unauthorized)?;
            Ok((
                ac.user_id.clone(),
                Some(ac.id.clone()),
                Some(ac.project_id.clone()),
            ))
        }
        Some("token") => {
            let id = ident["token"]["id"].as_str().ok_or_else(unauthorized)?;
            let t = w
                .tokens
                .get(id)
                .filter(|t| t.expires_at > Utc::now())
                .ok_or_else(unauthorized)?;
            Ok((t.user_id.clone(), None, t.project_id.clone()))
        }
        _ => Err(ApiError::bad_request(
            SVC,
            "Expecting to find methods in identity. The server could not comply with the request since it is either malformed or otherwise incorrect.",
        )),
    }
}

fn resolve_scope(w: &World, scope: &Value, user_id: &str) -> ApiResult<Option<String>> {
    let p = &scope["project"];
    if p.is_null() {
        if scope.is_object() {
            return Err(unauthorized());
        }
        return Ok(None);
    }
    let project = if let Some(id) = p["id"].as_str() {
        w.identity.projects.iter().find(|x| x.id == id)
    } else {
        let domain = find_domain(w, &p["domain"]).ok_or_else(unauthorized)?;
        w.identity
            .projects
            .iter()
            .find(|x| Some(x.name.as_str()) == p["name"].as_str() && x.domain_id == domain)
    }
    .ok_or_else(unauthorized)?;
    let user = w
        .identity
        .users
        .iter()
        .find(|u| u.id == user_id)
        .ok_or_else(unauthorized)?;
    if !user.projects.contains(&project.id) {
        return Err(unauthorized());
    }
    Ok(Some(project.id.clone()))
}

fn with_subject(mut resp: Response, token: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(token) {
        resp.headers_mut().insert("x-subject-token", v);
    }
    resp
}

async fn issue(State(st): State<AppState>, b: Bytes) -> ApiResult {
    let req = body(SVC, &b)?;
    let auth = &req["auth"];
    let mut w = st.world();
    let (user_id, app_cred, implied) = authenticate(&w, &auth["identity"])?;
    let project = match (&app_cred, auth.get("scope")) {
        (Some(_), _) => implied,
        (None, Some(scope)) => resolve_scope(&w, scope, &user_id)?,
        (None, None) => implied,
    };
    let methods = auth["identity"]["methods"].clone();
    let now = Utc::now();
    let token = Token {
        user_id,
        project_id: project,
        methods: serde_json::from_value(methods).unwrap_or_default(),
        issued_at: now,
        expires_at: now + chrono::Duration::seconds(w.token_ttl_s),
        app_cred,
        audit_id: new_id().replace('-', "")[..22].to_string(),
    };
    let id = format!("gAAAAA{}", new_id().replace('-', ""));
    let resp = reply(StatusCode::CREATED, token_body(&w, &st.base_url, &token));
    w.tokens.insert(id.clone(), token);
    Ok(with_subject(resp, &id))
}

fn subject<'a>(w: &'a World, h: &HeaderMap) -> ApiResult<(&'a str, &'a Token)> {
    let caller = header_str(h, "x-auth-token").ok_or_else(unauthorized)?;
    w.tokens
        .get(caller)
        .filter(|t| t.expires_at > Utc::now())
        .ok_or_else(unauthorized)?;
    let sub = header_str(h, "x-subject-token").unwrap_or(caller);
    w.tokens
        .get_key_value(sub)
        .filter(|(_, t)| t.expires_at > Utc::now())
        .map(|(k, t)| (k.as_str(), t))
        .ok_or_else(|| {
            ApiError::not_found(
                SVC,
                "TokenNotFound",
                format!("Could not find token: {sub}."),
            )
        })
}

async fn validate(State(st): State<AppState>, h: HeaderMap) -> ApiResult {
    let w = st.world();
    let (id, t) = subject(&w, &h)?;
    Ok(with_subject(
        reply(StatusCode::OK, token_body(&w, &st.base_url, t)),
        id,
    ))
}

async fn check(State(st): State<AppState>, h: HeaderMap) -> ApiResult {
    let w = st.world();
    let (id, _) = subject(&w, &h)?;
    Ok(with_subject(StatusCode::OK.into_response(), id))
}

async fn revoke(State(st): State<AppState>, h: HeaderMap) -> ApiResult {
    let mut w = st.world();
    let (id, _) = subject(&w, &h)?;
    let id = id.to_string();
    w.tokens.remove(&id);
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn project_json(base: &str, p: &crate::world::Project) -> Value {
    json!({"id": p.id, "name": p.name, "domain_id": p.domain_id, "enabled": true, "description": "",
           "parent_id": p.domain_id, "is_domain": false, "tags": [], "options": {},
           "links": {"self": format!("{base}/identity/v3/projects/{}", p.id)}})
}

async fn my_projects(State(st): State<AppState>, ctx: Ctx) -> ApiResult {
    let w = st.world();
    let user = w.identity.users.iter().find(|u| u.id == ctx.user);
    let list: Vec<Value> = w
        .identity
        .projects
        .iter()
        .filter(|p| ctx.admin || user.is_some_and(|u| u.projects.contains(&p.id)))
        .map(|p| project_json(&st.base_url, p))
        .collect();
    ok(
        json!({"projects": list, "links": {"self": format!("{}/identity/v3/projects", st.base_url), "next": null, "previous": null}}),
    )
}

async fn get_project(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let w = st.world();
    let user = w.identity.users.iter().find(|u| u.id == ctx.user);
    w.identity
        .projects
        .iter()
        .find(|p| p.id == id && (ctx.admin || user.is_some_and(|u| u.projects.contains(&p.id))))
        .map(|p| {
            reply(
                StatusCode::OK,
                json!({"project": project_json(&st.base_url, p)}),
            )
        })
        .ok_or_else(|| ApiError::not_found(SVC, "", format!("Could not find project: {id}.")))
}

async fn auth_catalog(State(st): State<AppState>, ctx: Ctx) -> ApiResult {
    let (region, internal_only) = {
        let w = st.world();
        (w.seed.region.clone(), w.seed.internal_only_region.clone())
    };
    let catalog = catalog(
        &st.base_url,
        &ctx.project,
        &region,
        internal_only.as_deref(),
    );
    ok(
        json!({"catalog": catalog, "links": {"self": format!("{}/identity/v3/auth/catalog", st.base_url)}}),
    )
}

async fn get_user(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let w = st.world();
    let u = w
        .identity
        .users
        .iter()
        .find(|u| u.id == id && (ctx.admin || u.id == ctx.user))
        .ok_or_else(|| ApiError::not_found(SVC, "", format!("Could not find user: {id}.")))?;
    ok(
        json!({"user": {"id": u.id, "name": u.name, "domain_id": u.domain_id, "enabled": true,
                       "password_expires_at": null, "options": {}, "default_project_id": u.projects.first(),
                       "links": {"self": format!("{}/identity/v3/users/{}", st.base_url, u.id)}}}),
    )
}

fn appcred_json(base: &str, a: &AppCred) -> Value {
    json!({"id": a.id, "name": a.name, "description": a.description, "expires_at": null, "project_id": a.project_id,
           "roles": [{"id": stable_id("role", "member"), "name": "member", "domain_id": null}],
           "unrestricted": a.unrestricted, "access_rules": [], "user_id": a.user_id,
           "links": {"self": format!("{base}/identity/v3/users/{}/application_credentials/{}", a.user_id, a.id)}})
}

/// Keystone refuses a token from a restricted application credential for creating or deleting
/// application credentials (`_check_unrestricted_application_credential`).
fn unrestricted(ctx: &Ctx) -> ApiResult<()> {
    if ctx.restricted_app_cred {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "",
            "You are not authorized to perform the requested action: Using method 'application_credential' is not allowed for managing additional application credentials..",
        ));
    }
    Ok(())
}

fn own_user(ctx: &Ctx, user: &str) -> ApiResult<()> {
    if ctx.admin || ctx.user == user {
        Ok(())
    } else {
        Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "",
            "You are not authorized to perform the requested action.",
        ))
    }
}

async fn list_appcreds(
    State(st): State<AppState>,
    ctx: Ctx,
    Path(user): Path<String>,
) -> ApiResult {
    own_user(&ctx, &user)?;
    let w = st.world();
    let list: Vec<Value> = w
        .identity
        .app_creds
        .iter()
        .filter(|a| a.user_id == user)
        .map(|a| appcred_json(&st.base_url, a))
        .collect();
    ok(
        json!({"application_credentials": list, "links": {"self": null, "next": null, "previous": null}}),
    )
}

async fn create_appcred(
    State(st): State<AppState>,
    ctx: Ctx,
    Path(user): Path<String>,
    b: Bytes,
) -> ApiResult {
    own_user(&ctx, &user)?;
    unrestricted(&ctx)?;
    let req = body(SVC, &b)?;
    let a = &req["application_credential"];
    let name = a["name"]
        .as_str()
        .ok_or_else(|| ApiError::bad_request(SVC, "'name' is a required property"))?;
    let mut w = st.world();
    if w.identity
        .app_creds
        .iter()
        .any(|x| x.user_id == user && x.name == name)
    {
        return Err(ApiError::conflict(
            SVC,
            "",
            format!(
                "Conflict occurred attempting to store application_credential - Duplicate entry found with name {name}."
            ),
        ));
    }
    let secret = a["secret"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| new_id().replace('-', ""));
    let ac = AppCred {
        id: new_id().replace('-', ""),
        name: name.to_string(),
        secret: secret.clone(),
        user_id: user,
        project_id: ctx.project.clone(),
        description: a["description"].as_str().unwrap_or_default().to_string(),
        unrestricted: a["unrestricted"].as_bool().unwrap_or(false),
    };
    let mut out = appcred_json(&st.base_url, &ac);
    out["secret"] = json!(secret);
    w.identity.app_creds.push(ac);
    Ok(reply(
        StatusCode::CREATED,
        json!({"application_credential": out}),
    ))
}

async fn get_appcred(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((user, id)): Path<(String, String)>,
) -> ApiResult {
    own_user(&ctx, &user)?;
    let w = st.world();
    w.identity
        .app_creds
        .iter()
        .find(|a| a.user_id == user && a.id == id)
        .map(|a| {
            reply(
                StatusCode::OK,
                json!({"application_credential": appcred_json(&st.base_url, a)}),
            )
        })
        .ok_or_else(|| {
            ApiError::not_found(
                SVC,
                "",
                format!("Could not find application credential: {id}."),
            )
        })
}

async fn delete_appcred(
    State(st): State<AppState>,
    ctx: Ctx,
    Path((user, id)): Path<(String, String)>,
) -> ApiResult {
    own_user(&ctx, &user)?;
    unrestricted(&ctx)?;
    let mut w = st.world();
    let before = w.identity.app_creds.len();
    w.identity
        .app_creds
        .retain(|a| !(a.user_id == user && a.id == id));
    if w.identity.app_creds.len() == before {
        return Err(ApiError::not_found(
            SVC,
            "",
            format!("Could not find application credential: {id}."),
        ));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn version(base: &str) -> Value {
    json!({"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
           "links": [{"rel": "self", "href": format!("{base}/identity/v3/")}],
           "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}]})
}

async fn versions(State(st): State<AppState>) -> Response {
    reply(
        StatusCode::MULTIPLE_CHOICES,
        json!({"versions": {"values": [version(&st.base_url)]}}),
    )
}

async fn v3(State(st): State<AppState>) -> Response {
    reply(StatusCode::OK, json!({"version": version(&st.base_url)}))
}

/// Keystone routes.
pub fn routes() -> Router<AppState> {
    let p = "/identity/v3";
    Router::new()
        .route("/identity", get(versions))
        .route(p, get(v3))
        .route(
            &format!("{p}/auth/tokens"),
            get(validate).post(issue).head(check).delete(revoke),
        )
        .route(&format!("{p}/auth/projects"), get(my_projects))
        .route(&format!("{p}/auth/catalog"), get(auth_catalog))
        .route(&format!("{p}/projects"), get(my_projects))
        .route(&format!("{p}/projects/{{id}}"), get(get_project))
        .route(&format!("{p}/users/{{id}}"), get(get_user))
        .route(
            &format!("{p}/users/{{id}}/application_credentials"),
            get(list_appcreds).post(create_appcred),
        )
        .route(
            &format!("{p}/users/{{id}}/application_credentials/{{cid}}"),
            get(get_appcred).delete(delete_appcred),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_has_every_service_twice() {
        let c = catalog("http://h", "p1", "RegionOne", None);
        let types: Vec<&str> = c
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["type"].as_str())
            .collect();
        for t in [
            "identity",
            "compute",
            "network",
            "load-balancer",
            "image",
            "volumev3",
            "block-storage",
        ] {
            assert!(types.contains(&t), "{t}");
        }
        assert_eq!(c[0]["endpoints"].as_array().map(Vec::len), Some(2));
        assert_eq!(c[5]["endpoints"][0]["url"], "http://h/volume/v3/p1");
    }
}

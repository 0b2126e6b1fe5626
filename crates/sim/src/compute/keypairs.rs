//! Nova keypairs (import, or generation before 2.92) and server groups.

use axum::Extension;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

use crate::compute::{P, SVC, bad, conflict, nf};
use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx, Query, body, member, ok, reply};
use crate::microversion::Mv;
use crate::world::{new_id, now_str};

fn key_id(user: &str, name: &str) -> String {
    format!("{user}/{name}")
}

/// Colon separated fingerprint of an OpenSSH public key blob.
fn fingerprint(public_key: &str) -> Option<String> {
    let blob = public_key.split_whitespace().nth(1)?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .ok()?;
    let digest = sha2::Sha256::digest(&raw);
    Some(
        digest[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
    )
}

/// A new ed25519 key pair: (OpenSSH public key, PKCS#8 PEM private key).
fn generate() -> Option<(String, String)> {
    use ring::signature::KeyPair;
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).ok()?;
    let kp = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).ok()?;
    let mut blob = Vec::new();
    for part in [b"ssh-ed25519".as_slice(), kp.public_key().as_ref()] {
        blob.extend_from_slice(&(part.len() as u32).to_be_bytes());
        blob.extend_from_slice(part);
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let public = format!("ssh-ed25519 {} Generated-by-Nova", b64.encode(&blob));
    let body = b64.encode(pkcs8.as_ref());
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .filter_map(|c| std::str::from_utf8(c).ok())
        .collect();
    Some((
        public,
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        ),
    ))
}

fn render(b: &Value, mv: Mv, full: bool) -> Value {
    let mut k =
        json!({"name": b["name"], "public_key": b["public_key"], "fingerprint": b["fingerprint"]});
    if mv.at_least(2, 2) {
        k["type"] = b["type"].clone();
    }
    if mv.at_least(2, 10) {
        k["user_id"] = b["user_id"].clone();
    }
    if full {
        for f in [
            "user_id",
            "created_at",
            "id",
            "deleted",
            "deleted_at",
            "updated_at",
        ] {
            k[f] = b[f].clone();
        }
    }
    k
}

async fn create(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    b: Bytes,
) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "keypair")?;
    let name = req["name"].as_str().filter(|n| !n.trim().is_empty()).ok_or_else(|| bad("Keypair data is invalid: Keypair name must be string and between 1 and 255 characters long"))?.to_string();
    let (public, private) = match req["public_key"].as_str() {
        Some(pk) => (pk.to_string(), None),
        None if mv.at_least(2, 92) => {
            return Err(bad(
                "Invalid input for field/attribute keypair. Value: {'name': '...'}. 'public_key' is a required property",
            ));
        }
        None => {
            let (p, k) = generate().ok_or_else(|| {
                ApiError::new(
                    SVC,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "",
                    "key generation failed",
                )
            })?;
            (p, Some(k))
        }
    };
    let fp = fingerprint(&public)
        .ok_or_else(|| bad("Keypair data is invalid: failed to generate fingerprint"))?;
    let mut w = st.world();
    let id = key_id(&ctx.user, &name);
    if w.get("keypairs", &id).is_some() {
        return Err(conflict(format!("Key pair '{name}' already exists.")));
    }
    let limit = w.quota(&ctx.project, "key_pairs");
    if limit >= 0 && w.count_owned("keypairs", &ctx.project) >= limit {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "",
            "Quota exceeded, too many key pairs.",
        ));
    }
    let stored = json!({"name": name, "public_key": public, "fingerprint": fp, "type": req.get("type").cloned().unwrap_or(json!("ssh")),
                        "user_id": ctx.user, "created_at": now_str(), "id": w.iter("keypairs").count() + 1, "deleted": false,
                        "deleted_at": null, "updated_at": null});
    w.insert("keypairs", &id, &ctx.project, stored.clone());
    let mut out = render(&stored, mv, false);
    out["user_id"] = json!(ctx.user);
    if let Some(k) = private {
        out["private_key"] = json!(k);
    }
    let status = if mv.at_least(2, 2) {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(reply(status, json!({"keypair": out})))
}

async fn list(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    q: Query,
) -> ApiResult {
    let w = st.world();
    let user = q
        .get("user_id")
        .filter(|_| ctx.admin)
        .unwrap_or(&ctx.user)
        .to_string();
    let items: Vec<Value> = w
        .iter("keypairs")
        .filter(|(_, r)| r.body["user_id"] == json!(user))
        .map(|(_, r)| r.body.clone())
        .collect();
    drop(w);
    let (items, _) = crate::filter::page(items, &q, "name");
    let list: Vec<Value> = items
        .iter()
        .map(|b| json!({"keypair": render(b, mv, false)}))
        .collect();
    ok(json!({"keypairs": list}))
}

async fn show(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(name): Path<String>,
) -> ApiResult {
    let w = st.world();
    let b = w
        .get("keypairs", &key_id(&ctx.user, &name))
        .ok_or_else(|| nf(format!("Keypair {name} not found for user {}", ctx.user)))?;
    ok(json!({"keypair": render(&b.body, mv, true)}))
}

async fn delete(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(name): Path<String>,
) -> ApiResult {
    let mut w = st.world();
    w.remove("keypairs", &key_id(&ctx.user, &name))
        .ok_or_else(|| nf(format!("Keypair {name} not found for user {}", ctx.user)))?;
    Ok(if mv.at_least(2, 2) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::ACCEPTED
    }
    .into_response())
}

const POLICIES: &[&str] = &[
    "affinity",
    "anti-affinity",
    "soft-affinity",
    "soft-anti-affinity",
];

fn render_group(b: &Value, mv: Mv) -> Value {
    let mut g = json!({"id": b["id"], "name": b["name"], "members": b["members"]});
    if mv.at_least(2, 64) {
        g["policy"] = b["policy"].clone();
        g["rules"] = b["rules"].clone();
    } else {
        g["policies"] = json!([b["policy"]]);
        g["metadata"] = json!({});
    }
    if mv.at_least(2, 13) {
        g["project_id"] = b["project_id"].clone();
        g["user_id"] = b["user_id"].clone();
    }
    g
}

async fn create_group(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    b: Bytes,
) -> ApiResult {
    let req = member(SVC, body(SVC, &b)?, "server_group")?;
    let name = req["name"]
        .as_str()
        .ok_or_else(|| bad("'name' is a required property"))?;
    let policy = if mv.at_least(2, 64) {
        req["policy"].as_str()
    } else {
        req["policies"][0].as_str()
    }
    .unwrap_or("");
    if !POLICIES.contains(&policy) {
        return Err(bad(format!(
            "Invalid input for field/attribute policy. Value: {policy}."
        )));
    }
    let mut w = st.world();
    let limit = w.quota(&ctx.project, "server_groups");
    if limit >= 0 && w.count_owned("server_groups", &ctx.project) >= limit {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "",
            "Quota exceeded, too many server groups.",
        ));
    }
    let id = new_id();
    let stored = json!({"id": id, "name": name, "policy": policy, "rules": req.get("rules").cloned().unwrap_or(json!({})),
                        "members": [], "project_id": ctx.project, "user_id": ctx.user});
    w.insert("server_groups", &id, &ctx.project, stored.clone());
    ok(json!({"server_group": render_group(&stored, mv)}))
}

async fn list_groups(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
) -> ApiResult {
    let w = st.world();
    let list: Vec<Value> = w
        .iter("server_groups")
        .filter(|(_, r)| ctx.owns(&r.project))
        .map(|(_, r)| render_group(&r.body, mv))
        .collect();
    ok(json!({"server_groups": list}))
}

async fn show_group(
    State(st): State<AppState>,
    ctx: Ctx,
    Extension(mv): Extension<Mv>,
    Path(id): Path<String>,
) -> ApiResult {
    let w = st.world();
    let r = w
        .get("server_groups", &id)
        .filter(|r| ctx.owns(&r.project))
        .ok_or_else(|| nf(format!("Server group {id} could not be found.")))?;
    ok(json!({"server_group": render_group(&r.body, mv)}))
}

async fn delete_group(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let mut w = st.world();
    w.get("server_groups", &id)
        .filter(|r| ctx.owns(&r.project))
        .ok_or_else(|| nf(format!("Server group {id} could not be found.")))?;
    w.remove("server_groups", &id);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(&format!("{P}/os-keypairs"), get(list).post(create))
        .route(
            &format!("{P}/os-keypairs/{{name}}"),
            get(show).delete(delete),
        )
        .route(
            &format!("{P}/os-server-groups"),
            get(list_groups).post(create_group),
        )
        .route(
            &format!("{P}/os-server-groups/{{id}}"),
            get(show_group).delete(delete_group),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_fingerprints() {
        let (public, private) = generate().unwrap_or_default();
        assert!(public.starts_with("ssh-ed25519 "));
        assert!(private.contains("BEGIN PRIVATE KEY"));
        assert_eq!(fingerprint(&public).map(|f| f.len()), Some(47));
    }
}

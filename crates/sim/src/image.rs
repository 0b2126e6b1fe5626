//! Glance v2: images with name/tag/property filters, JSON-patch updates, data upload, tags and
//! visibility (public, private, shared, community).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use serde_json::{Value, json};
use sha2::Digest;

use crate::error::{ApiError, ApiResult, Svc};
use crate::filter;
use crate::http::{AppState, Ctx, Query, body, ok, reply};
use crate::seed::SeedImage;
use crate::world::{Rec, World, new_id, now_str};

const SVC: Svc = Svc::Image;
const COL: &str = "images";
const P: &str = "/image/v2";

const CORE: &[&str] = &[
    "id",
    "name",
    "status",
    "visibility",
    "protected",
    "os_hidden",
    "checksum",
    "os_hash_algo",
    "os_hash_value",
    "owner",
    "size",
    "virtual_size",
    "min_ram",
    "min_disk",
    "disk_format",
    "container_format",
    "created_at",
    "updated_at",
    "tags",
    "file",
    "self",
    "schema",
    "locations",
    "direct_url",
    "stores",
];
const READ_ONLY: &[&str] = &[
    "id",
    "status",
    "checksum",
    "os_hash_algo",
    "os_hash_value",
    "owner",
    "size",
    "virtual_size",
    "created_at",
    "updated_at",
    "file",
    "self",
    "schema",
];

/// Whether a key is an extra (user) property rather than a core attribute.
pub fn is_extra_property(k: &str) -> bool {
    !CORE.contains(&k) && !k.starts_with('_')
}

/// Whether the caller may see an image.
pub fn visible(ctx: &Ctx, r: &Rec) -> bool {
    ctx.owns(&r.project)
        || matches!(
            r.body["visibility"].as_str(),
            Some("public") | Some("community")
        )
}

fn nf(id: &str) -> ApiError {
    ApiError::not_found(SVC, "", format!("No image found with ID {id}"))
}

fn base_body(id: &str, owner: &str) -> Value {
    let now = now_str();
    json!({
        "id": id, "name": null, "status": "queued", "visibility": "shared", "protected": false, "os_hidden": false,
        "checksum": null, "os_hash_algo": null, "os_hash_value": null, "owner": owner, "size": null, "virtual_size": null,
        "min_ram": 0, "min_disk": 0, "disk_format": null, "container_format": null, "created_at": now, "updated_at": now,
        "tags": [], "file": format!("/v2/images/{id}/file"), "self": format!("/v2/images/{id}"), "schema": "/v2/schemas/image",
    })
}

fn hash_fields(b: &mut Value, data: &[u8]) {
    let digest = sha2::Sha512::digest(data);
    let hex: String = digest.iter().map(|x| format!("{x:02x}")).collect();
    b["checksum"] = json!(hex[..32].to_string());
    b["os_hash_algo"] = json!("sha512");
    b["os_hash_value"] = json!(hex);
    b["size"] = json!(data.len());
}

/// Body of a seeded public image (active).
pub fn seed_image_body(id: &str, owner: &str, i: &SeedImage) -> Value {
    let mut b = base_body(id, owner);
    b["name"] = json!(i.name);
    b["status"] = json!("active");
    b["visibility"] = json!("public");
    b["disk_format"] = json!("qcow2");
    b["container_format"] = json!("bare");
    b["min_disk"] = json!(i.min_disk);
    b["tags"] = json!(i.tags);
    hash_fields(&mut b, i.name.as_bytes());
    b["size"] = json!(i.size);
    b["virtual_size"] = json!(i.size * 4);
    for (k, v) in &i.properties {
        b[k] = json!(v);
    }
    b
}

fn list_visible(ctx: &Ctx, r: &Rec, q: &Query) -> bool {
    let vis = r.body["visibility"].as_str().unwrap_or("");
    let asked = q.get("visibility");
    let by_vis = match asked {
        Some("all") | None => {
            ctx.owns(&r.project) || vis == "public" || (asked == Some("all") && vis == "community")
        }
        Some(v) => vis == v && (ctx.owns(&r.project) || v == "public" || v == "community"),
    };
    let hidden_ok = r.body["os_hidden"] != json!(true) || q.get("os_hidden") == Some("true");
    by_vis && hidden_ok
}

fn size_ok(b: &Value, q: &Query) -> bool {
    let size = b["size"].as_i64().unwrap_or(0);
    q.get("size_min")
        .and_then(|s| s.parse::<i64>().ok())
        .is_none_or(|m| size >= m)
        && q.get("size_max")
            .and_then(|s| s.parse::<i64>().ok())
            .is_none_or(|m| size <= m)
}

async fn list(State(st): State<AppState>, ctx: Ctx, q: Query) -> ApiResult {
    let w = st.world();
    let tags = q.all("tag");
    let mut items: Vec<Value> = w
        .iter(COL)
        .filter(|(_, r)| list_visible(&ctx, r, &q))
        .filter(|(_, r)| {
            filter::matches(
                &r.body,
                &q,
                &["visibility", "size_min", "size_max", "os_hidden"],
            ) && size_ok(&r.body, &q)
        })
        .filter(|(_, r)| {
            tags.iter().all(|t| {
                r.body["tags"]
                    .as_array()
                    .is_some_and(|a| a.contains(&json!(t)))
            })
        })
        .map(|(_, r)| r.body.clone())
        .collect();
    drop(w);
    if let Some(sort) = q.get("sort") {
        // Glance's `sort=key:dir,...`: the first key decides.
        let first = sort.split(',').next().unwrap_or("");
        let (key, dir) = first.split_once(':').unwrap_or((first, "desc"));
        filter::sort(
            &mut items,
            &Query(vec![
                ("sort_key".into(), key.into()),
                ("sort_dir".into(), dir.into()),
            ]),
        );
    } else if q.get("sort_key").is_some() {
        filter::sort(&mut items, &q);
    } else {
        items.reverse();
    }
    let (items, next) = filter::page(items, &q, "id");
    let mut out = json!({"images": items, "first": "/v2/images", "schema": "/v2/schemas/images"});
    if let Some(m) = next {
        out["next"] = json!(format!("/v2/images?{}", q.with_marker(&m)));
    }
    ok(out)
}

fn find<'a>(w: &'a World, ctx: &Ctx, id: &str) -> ApiResult<&'a Rec> {
    w.get(COL, id)
        .filter(|r| visible(ctx, r))
        .ok_or_else(|| nf(id))
}

fn find_owned<'a>(w: &'a mut World, ctx: &Ctx, id: &str) -> ApiResult<&'a mut Rec> {
    let visible_only = w
        .get(COL, id)
        .is_some_and(|r| visible(ctx, r) && !ctx.owns(&r.project));
    if visible_only {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "",
            "You are not permitted to modify this image.",
        ));
    }
    w.get_mut(COL, id)
        .filter(|r| ctx.owns(&r.project))
        .ok_or_else(|| nf(id))
}

async fn show(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let w = st.world();
    ok(find(&w, &ctx, &id)?.body.clone())
}

async fn create(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let req = body(SVC, &b)?;
    let id = req["id"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(new_id);
    let mut w = st.world();
    if w.get(COL, &id).is_some() {
        return Err(ApiError::conflict(
            SVC,
            "",
            format!("Image with identifier {id} already exists!"),
        ));
    }
    let mut img = base_body(&id, &ctx.project);
    for (k, v) in req.as_object().into_iter().flatten() {
        if READ_ONLY.contains(&k.as_str()) && k != "id" {
            return Err(ApiError::new(
                SVC,
                StatusCode::FORBIDDEN,
                "",
                format!("Attribute '{k}' is read-only."),
            ));
        }
        img[k] = v.clone();
    }
    if let Some(v) = img["visibility"].as_str()
        && !["public", "private", "shared", "community"].contains(&v)
    {
        return Err(ApiError::bad_request(
            SVC,
            format!("Invalid visibility value: {v}"),
        ));
    }
    w.insert(COL, &id, &ctx.project, img.clone());
    Ok(reply(StatusCode::CREATED, img))
}

fn apply_patch(img: &mut Value, ops: &Value) -> ApiResult<()> {
    for op in ops.as_array().ok_or_else(|| {
        ApiError::bad_request(
            SVC,
            "Request body must be a JSON array of operation objects.",
        )
    })? {
        let path = op["path"]
            .as_str()
            .unwrap_or("")
            .trim_start_matches('/')
            .to_string();
        if READ_ONLY.contains(&path.as_str()) {
            return Err(ApiError::new(
                SVC,
                StatusCode::FORBIDDEN,
                "",
                format!("Attribute '{path}' is read-only."),
            ));
        }
        match op["op"].as_str() {
            Some("add") | Some("replace") => img[&path] = op["value"].clone(),
            Some("remove") => {
                let removed = img.as_object_mut().and_then(|o| o.remove(&path));
                if removed.is_none() {
                    return Err(ApiError::conflict(
                        SVC,
                        "",
                        format!("Property {path} does not exist."),
                    ));
                }
            }
            other => {
                return Err(ApiError::bad_request(
                    SVC,
                    format!(
                        "Operation objects must contain exactly one member named \"add\", \"remove\", or \"replace\", got {other:?}"
                    ),
                ));
            }
        }
    }
    img["updated_at"] = json!(now_str());
    Ok(())
}

async fn patch(
    State(st): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    b: Bytes,
) -> ApiResult {
    let ops = body(SVC, &b)?;
    let mut w = st.world();
    let r = find_owned(&mut w, &ctx, &id)?;
    let mut img = r.body.clone();
    apply_patch(&mut img, &ops)?;
    r.body = img.clone();
    ok(img)
}

async fn delete(State(st): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> ApiResult {
    let mut w = st.world();
    let r = find_owned(&mut w, &ctx, &id)?;
    if r.body["protected"] == json!(true) {
        return Err(ApiError::new(
            SVC,
            StatusCode::FORBIDDEN,
            "",
            format!("Image {id} is protected and cannot be deleted."),
        ));
    }
    w.remove(COL, &id);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The format Glance's format inspector sees in the data (magic numbers only; the sim does not
/// do the inspector's safety checks). Anything else is `raw`.
fn detect_format(data: &[u8]) -> &'static str {
    let at = |off: usize, magic: &[u8]| data.get(off..off + magic.len()) == Some(magic);
    if at(0, b"QFI\xfb") && (at(4, &[0, 0, 0, 2]) || at(4, &[0, 0, 0, 3])) {
        "qcow2"
    } else if at(0, b"KDMV") {
        "vmdk"
    } else if at(0, b"vhdxfile") {
        "vhdx"
    } else if at(0, b"conectix") {
        "vhd"
    } else if at(0x40, &[0x7f, 0x10, 0xda, 0xbe]) {
        "vdi"
    } else if at(0x8001, b"CD001") || at(0x8801, b"CD001") || at(0x9001, b"CD001") {
        "iso"
    } else {
        "raw"
    }
}

/// Glance 33 (`[image_format] require_image_format_match`, on by default): data that is not in
/// the declared `disk_format` is refused with 415 and the image stays `queued`. `raw` (and the
/// formats without an inspector: ami, ari, aki, ploop) accept any data.
fn format_mismatch(disk_format: &str, data: &[u8], content_type: &str) -> Option<Response> {
    if !["qcow2", "vmdk", "vhd", "vhdx", "vdi", "iso"].contains(&disk_format) {
        return None;
    }
    let found = detect_format(data);
    if found == disk_format {
        return None;
    }
    let body = format!(
        "<html>\n <head>\n  <title>415 Unsupported Media Type</title>\n </head>\n <body>\n  <h1>415 Unsupported Media Type</h1>\n  The request media type {content_type} is not supported by this server.\n<br /><br />\nImage disk_format {disk_format} does not match stream data {found}\n </body>\n</html>"
    );
    let mut r = (StatusCode::UNSUPPORTED_MEDIA_TYPE, body).into_response();
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/html; charset=UTF-8"),
    );
    Some(r)
}

async fn upload(
    State(st): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    b: Bytes,
) -> ApiResult {
    let mut w = st.world();
    let r = find_owned(&mut w, &ctx, &id)?;
    if r.body["status"] != json!("queued") {
        return Err(ApiError::conflict(
            SVC,
            "",
            format!(
                "Image status transition from {} to saving is not allowed",
                r.body["status"].as_str().unwrap_or("")
            ),
        ));
    }
    let content_type =
        crate::http::header_str(&headers, "content-type").unwrap_or("application/octet-stream");
    if let Some(resp) = format_mismatch(
        r.body["disk_format"].as_str().unwrap_or(""),
        &b,
        content_type,
    ) {
        return Ok(resp);
    }
    hash_fields(&mut r.body, &b);
    r.body["status"] = json!("active");
    r.body["updated_at"] = json!(now_str());
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn tag(
    State(st): State<AppState>,
    ctx: Ctx,
    method: axum::http::Method,
    Path((id, tag)): Path<(String, String)>,
) -> ApiResult {
    let mut w = st.world();
    let r = find_owned(&mut w, &ctx, &id)?;
    let mut tags: Vec<String> = serde_json::from_value(r.body["tags"].clone()).unwrap_or_default();
    if method == axum::http::Method::PUT {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    } else if tags.contains(&tag) {
        tags.retain(|t| t != &tag);
    } else {
        return Err(ApiError::not_found(SVC, "", format!("Tag {tag} not found")));
    }
    r.body["tags"] = json!(tags);
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn versions_doc(base: &str) -> Value {
    let mut list = vec![
        json!({"id": "v2.16", "status": "CURRENT", "links": [{"rel": "self", "href": format!("{base}/image/v2/")}]}),
    ];
    for minor in (0..16).rev() {
        list.push(json!({"id": format!("v2.{minor}"), "status": "SUPPORTED", "links": [{"rel": "self", "href": format!("{base}/image/v2/")}]}));
    }
    json!({"versions": list})
}

async fn root(State(st): State<AppState>) -> Response {
    reply(StatusCode::MULTIPLE_CHOICES, versions_doc(&st.base_url))
}

async fn versions(State(st): State<AppState>) -> Response {
    reply(StatusCode::OK, versions_doc(&st.base_url))
}

async fn import_info() -> ApiResult {
    ok(
        json!({"import-methods": {"description": "Import methods available.", "type": "array", "value": ["glance-direct", "web-download"]}}),
    )
}

/// Glance routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/image", get(root))
        .route("/image/versions", get(versions))
        .route(&format!("{P}/images"), get(list).post(create))
        .route(
            &format!("{P}/images/{{id}}"),
            get(show).patch(patch).delete(delete),
        )
        .route(&format!("{P}/images/{{id}}/file"), put(upload))
        .route(
            &format!("{P}/images/{{id}}/tags/{{tag}}"),
            put(tag).delete(tag),
        )
        .route(&format!("{P}/info/import"), get(import_info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_ops() {
        let mut img = json!({"name": "a", "os_type": "linux"});
        let ops = json!([{"op": "replace", "path": "/name", "value": "b"}, {"op": "remove", "path": "/os_type"}, {"op": "add", "path": "/x", "value": "1"}]);
        assert!(apply_patch(&mut img, &ops).is_ok());
        assert_eq!(img["name"], "b");
        assert!(img.get("os_type").is_none());
        assert!(
            apply_patch(
                &mut img,
                &json!([{"op": "replace", "path": "/status", "value": "active"}])
            )
            .is_err()
        );
    }
}

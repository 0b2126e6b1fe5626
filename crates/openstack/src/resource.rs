//! The CRUD pattern Neutron and Octavia share: `POST /{collection}` with `{singular: {...}}`,
//! `GET/PUT/DELETE /{collection}/{id}`, `GET /{collection}?filters` answering `{plural: [...]}`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::Result;
use crate::request::{Request, Service, TagFilter};
use crate::session::Session;

/// A resource kind: service, collection path, JSON keys and metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// Service.
    pub service: Service,
    /// Collection path relative to the versioned endpoint.
    pub collection: &'static str,
    /// Key of one object in bodies (`network`).
    pub singular: &'static str,
    /// Key of the list in list replies.
    pub plural: &'static str,
    /// Labels for create, get, list, update, delete.
    pub labels: [&'static str; 5],
}

/// Declare a [`Resource`] constant with labels `<prefix>_{create,get,list,update,delete}`.
macro_rules! resource {
    ($name:ident, $svc:expr, $coll:literal, $sing:literal, $plural:literal, $p:literal) => {
        #[doc = concat!("`", $coll, "`.")]
        pub const $name: $crate::resource::Resource = $crate::resource::Resource {
            service: $svc,
            collection: $coll,
            singular: $sing,
            plural: $plural,
            labels: [
                concat!($p, "_create"),
                concat!($p, "_get"),
                concat!($p, "_list"),
                concat!($p, "_update"),
                concat!($p, "_delete"),
            ],
        };
    };
}
pub(crate) use resource;

/// Common list filters: name, description, project and tags, plus resource-specific pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Exact name.
    pub name: Option<String>,
    /// Exact description.
    pub description: Option<String>,
    /// Project ID.
    pub project_id: Option<String>,
    /// Tag filters.
    pub tags: TagFilter,
    /// Further filters, e.g. `("network_id", id)`, `("router:external", "true")`.
    pub extra: Vec<(String, String)>,
}

impl ListFilter {
    /// Filter by exact name only.
    pub fn by_name(name: &str) -> Self {
        Self {
            name: Some(name.to_owned()),
            ..Default::default()
        }
    }
    /// Add a resource-specific filter.
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.extra.push((key.to_owned(), value.into()));
        self
    }
}

/// POST /{collection} with `{singular: body}`.
pub fn create_request(r: Resource, body: &impl Serialize) -> Request {
    Request::post(
        r.service,
        r.collection,
        r.labels[0],
        json!({ r.singular: body }),
    )
}
/// POST /{collection} with Neutron's bulk form `{"<plural>": [...]}`: all or nothing.
pub fn create_bulk_request<B: Serialize>(r: Resource, bodies: &[B]) -> Request {
    Request::post(
        r.service,
        r.collection,
        r.labels[0],
        json!({ r.plural: bodies }),
    )
}
/// GET /{collection}/{id}.
pub fn get_request(r: Resource, id: &str) -> Request {
    Request::get(r.service, format!("{}/{id}", r.collection), r.labels[1])
}
/// GET /{collection}?filters.
pub fn list_request(r: Resource, f: &ListFilter) -> Request {
    let mut req = Request::get(r.service, r.collection, r.labels[2])
        .with_opt_query("name", f.name.as_deref())
        .with_opt_query("description", f.description.as_deref())
        .with_opt_query("project_id", f.project_id.as_deref())
        .with_tags(&f.tags);
    req.query.extend(f.extra.iter().cloned());
    req
}
/// PUT /{collection}/{id} with `{singular: changes}`.
pub fn update_request(r: Resource, id: &str, changes: Value) -> Request {
    Request::put(
        r.service,
        format!("{}/{id}", r.collection),
        r.labels[3],
        json!({ r.singular: changes }),
    )
}
/// DELETE /{collection}/{id}.
pub fn delete_request(r: Resource, id: &str) -> Request {
    Request::delete(r.service, format!("{}/{id}", r.collection), r.labels[4])
}

/// Create a resource.
pub async fn create<T: DeserializeOwned>(
    s: &Session,
    r: Resource,
    body: &impl Serialize,
) -> Result<T> {
    s.fetch(&create_request(r, body), r.singular).await
}
/// Create several resources in one request (Neutron bulk create).
pub async fn create_bulk<T: DeserializeOwned, B: Serialize>(
    s: &Session,
    r: Resource,
    bodies: &[B],
) -> Result<Vec<T>> {
    s.fetch(&create_bulk_request(r, bodies), r.plural).await
}
/// Get a resource.
pub async fn get<T: DeserializeOwned>(s: &Session, r: Resource, id: &str) -> Result<T> {
    s.fetch(&get_request(r, id), r.singular).await
}
/// List resources (all pages).
pub async fn list<T: DeserializeOwned>(s: &Session, r: Resource, f: &ListFilter) -> Result<Vec<T>> {
    s.list(&list_request(r, f), r.plural).await
}
/// Update a resource.
pub async fn update<T: DeserializeOwned>(
    s: &Session,
    r: Resource,
    id: &str,
    changes: Value,
) -> Result<T> {
    s.fetch(&update_request(r, id, changes), r.singular).await
}
/// Delete a resource.
pub async fn delete(s: &Session, r: Resource, id: &str) -> Result<()> {
    s.send(&delete_request(r, id)).await.map(drop)
}

//! Glance v2: images (get, list with name/tag filters). Glance filters tags with one `tag`
//! parameter per tag (all must match), unlike Neutron's comma list.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::Result;
use crate::request::{Request, Service};
use crate::session::Session;

/// An image. Custom properties (such as `os_type`) are top-level keys in Glance v2.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Image {
    /// ID.
    pub id: String,
    /// Name.
    #[serde(default)]
    pub name: Option<String>,
    /// queued, saving, active, deactivated, ...
    #[serde(default)]
    pub status: String,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Minimum disk (GiB).
    #[serde(default)]
    pub min_disk: u64,
    /// Size in bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// Every other key (custom properties).
    #[serde(flatten)]
    pub properties: BTreeMap<String, serde_json::Value>,
}

impl Image {
    /// A string property such as `os_type`.
    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties.get(key).and_then(|v| v.as_str())
    }
}

/// Image list filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageFilter {
    /// Exact name.
    pub name: Option<String>,
    /// All these tags.
    pub tags: Vec<String>,
    /// Status (e.g. `active`).
    pub status: Option<String>,
}

/// GET /images?filters.
pub fn list_images_request(f: &ImageFilter) -> Request {
    let mut r = Request::get(Service::Image, "images", "image_list")
        .with_opt_query("name", f.name.as_deref())
        .with_opt_query("status", f.status.as_deref());
    for t in &f.tags {
        r = r.with_query("tag", t.as_str());
    }
    r
}

/// GET /images/{id}.
pub fn get_image_request(id: &str) -> Request {
    Request::get(Service::Image, format!("images/{id}"), "image_get")
}

/// List images (all pages).
pub async fn list_images(s: &Session, f: &ImageFilter) -> Result<Vec<Image>> {
    s.list(&list_images_request(f), "images").await
}

/// Get an image (Glance answers the object itself, not wrapped).
pub async fn get_image(s: &Session, id: &str) -> Result<Image> {
    s.send_json(&get_image_request(id)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let r = list_images_request(&ImageFilter {
            name: Some("ubuntu".into()),
            tags: vec!["a".into(), "b".into()],
            status: None,
        });
        assert_eq!(r.path, "images");
        assert_eq!(
            r.query,
            vec![
                ("name".into(), "ubuntu".into()),
                ("tag".into(), "a".into()),
                ("tag".into(), "b".into())
            ]
        );
        assert_eq!(get_image_request("i").path, "images/i");
        let img: Image = serde_json::from_value(serde_json::json!({
            "id": "i", "name": "ubuntu", "status": "active", "os_type": "linux", "min_disk": 10
        }))
        .unwrap();
        assert_eq!(img.property("os_type"), Some("linux"));
    }
}

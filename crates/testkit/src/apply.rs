//! Server-side apply of arbitrary YAML, the way `kubectl apply --server-side` does it.

use kube::Client;
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{Scope, pinned_kind};
use serde::Deserialize;

use crate::FIELD_MANAGER;
use crate::error::{Error, Result, server_message};

/// One object the API server refused, with the server's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {name}: {message}")]
pub struct Rejected {
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The API server's message (names the offending field for schema and CEL errors).
    pub message: String,
}

/// Parses every YAML document of `yaml` into an object (empty documents are skipped).
pub fn parse_objects(yaml: &str) -> Result<Vec<DynamicObject>> {
    let mut objects = Vec::new();
    for (i, doc) in yaml_serde::Deserializer::from_str(yaml).enumerate() {
        let value = yaml_serde::Value::deserialize(doc).map_err(|source| Error::Yaml {
            context: format!("document {i}"),
            source,
        })?;
        if value.is_null() {
            continue;
        }
        let object: DynamicObject =
            yaml_serde::from_value(value).map_err(|source| Error::Yaml {
                context: format!("document {i}"),
                source,
            })?;
        objects.push(object);
    }
    Ok(objects)
}

/// Drops `key: null` entries. `kubectl create` and `clusterctl` send them, and the server
/// prunes them before validation; in an apply patch, though, null means "remove", which the
/// schema then rejects (upstream templates carry `matchLabels: null`).
fn without_nulls(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(without_nulls).collect())
        }
        other => other,
    }
}

/// Applies every object of `yaml` with server-side apply (field manager `capo-test`), namespaced
/// objects into `ns`; with `dry_run` the server validates (schema, CEL, admission) and persists
/// nothing. Stops at the first object the server refuses and returns its message.
///
/// The outer error is for problems that are not the server judging an object (bad YAML, an
/// unknown kind, a broken connection); the inner one is the server's verdict.
pub async fn apply_yaml(
    client: &Client,
    ns: &str,
    yaml: &str,
    dry_run: bool,
) -> Result<Result<Vec<DynamicObject>, Rejected>> {
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    if dry_run {
        params = params.dry_run();
    }
    let mut applied = Vec::new();
    for mut object in parse_objects(yaml)? {
        let types = object.types.clone().unwrap_or_default();
        let name = object.metadata.name.clone().unwrap_or_default();
        let gvk = GroupVersionKind::try_from(&types).map_err(|e| Error::Api {
            context: format!("object {name}"),
            message: e.to_string(),
        })?;
        let (resource, caps) = pinned_kind(client, &gvk)
            .await
            .map_err(Error::kube(format!("discovering {}", types.kind)))?;
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Namespaced => {
                object.metadata.namespace = Some(ns.to_owned());
                Api::namespaced_with(client.clone(), ns, &resource)
            }
            Scope::Cluster => Api::all_with(client.clone(), &resource),
        };
        let body = without_nulls(serde_json::to_value(&object).map_err(|e| Error::Api {
            context: format!("encoding {} {name}", types.kind),
            message: e.to_string(),
        })?);
        match api.patch(&name, &params, &Patch::Apply(&body)).await {
            Ok(done) => applied.push(done),
            Err(kube::Error::Api(status)) => {
                return Ok(Err(Rejected {
                    kind: types.kind,
                    name,
                    message: status.message,
                }));
            }
            Err(other) => {
                return Err(Error::Api {
                    context: format!("applying {} {name}", types.kind),
                    message: server_message(&other),
                });
            }
        }
    }
    Ok(Ok(applied))
}

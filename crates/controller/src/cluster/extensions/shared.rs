//! What the extension's steps share: its spec and condition, the Cluster's name, and how its
//! Secrets are labelled and written.

use std::collections::BTreeMap;

use capo_api::constants::{CLUSTER_NAME_LABEL, CLUSTERCTL_MOVE_LABEL};
use capo_api::extensions::OpenStackClusterExtensions;
use capo_api::v1beta1::OpenStackCluster;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use super::super::scope::Scope;
use crate::context::FIELD_MANAGER;
use crate::error::{Error, KubeContext, Result};

/// Condition reporting the extension's variables.
pub const EXTENSIONS_READY: &str = "ExtensionsReady";

/// The extension spec, when the cluster has one.
pub(in crate::cluster) fn spec(osc: &OpenStackCluster) -> Option<&OpenStackClusterExtensions> {
    osc.spec.extensions.as_ref()
}

/// Name of the Cluster API Cluster this OpenStackCluster belongs to, else its own name.
pub(in crate::cluster) fn cluster_name(osc: &OpenStackCluster) -> String {
    osc.cluster_name().unwrap_or_else(|| osc.name_any())
}

/// Labels of the Secrets this extension writes: the cluster's name and clusterctl move.
pub(super) fn secret_labels(osc: &OpenStackCluster) -> BTreeMap<String, String> {
    [
        (CLUSTER_NAME_LABEL.to_owned(), cluster_name(osc)),
        (CLUSTERCTL_MOVE_LABEL.to_owned(), String::new()),
    ]
    .into_iter()
    .collect()
}

/// Server-side apply of the Opaque Secret `name` holding `data`, owned by the
/// OpenStackCluster and labelled like every Secret of the extension. Serialization errors
/// name the type only, never a value.
pub(super) async fn apply_owned_secret(
    scope: &Scope<'_>,
    api: &Api<Secret>,
    name: &str,
    data: BTreeMap<String, ByteString>,
) -> Result<()> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(scope.owner.namespace.clone()),
            labels: Some(secret_labels(scope.obj)),
            owner_references: scope.obj.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(data),
        ..Default::default()
    };
    let mut body = serde_json::to_value(&secret).map_err(|source| Error::Serialize {
        what: "Secret",
        source,
    })?;
    body["apiVersion"] = "v1".into();
    body["kind"] = "Secret".into();
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await
    .kctx(|| format!("apply Secret {name}"))?;
    Ok(())
}

//! identityRef → Secret (directly, or through an OpenStackClusterIdentity whose
//! namespaceSelector is checked on every call) → OpenStack session from the shared cache.
//!
//! Secrets are read by name only (no list/watch of Secrets), so the manager needs no
//! cluster-wide Secret read beyond `get`. Those reads, and those of the identity and the
//! namespace, are shared for a few seconds by the reconciles that need them
//! ([`crate::recent_reads::IdentityReads`]).

use std::collections::BTreeMap;

use capo_api::v1alpha1::OpenStackClusterIdentity;
use capo_api::v1beta1::{IdentityRefType, OpenStackIdentityReference};
use capo_openstack::Session;
use capo_openstack::credentials::{
    self, ClusterIdentitySpec, Credentials, IdentityKind, IdentityRef, LabelSelector,
    LabelSelectorRequirement,
};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;

use crate::context::Context;
use crate::error::{Error, Result};

/// The session for `identity_ref`, requested by the object `object` (e.g.
/// `OpenStackCluster ns/name`, for messages) in `namespace`.
pub async fn session_for(
    ctx: &Context,
    object: &str,
    namespace: &str,
    identity_ref: &OpenStackIdentityReference,
) -> Result<Session> {
    let creds = credentials_for(ctx, object, namespace, identity_ref).await?;
    ctx.shared
        .sessions
        .session(&creds)
        .map_err(|e| Error::Credentials(format!("{object}: {e}")))
}

/// The credentials for `identity_ref` (no session).
pub async fn credentials_for(
    ctx: &Context,
    object: &str,
    namespace: &str,
    identity_ref: &OpenStackIdentityReference,
) -> Result<Credentials> {
    let r = IdentityRef {
        kind: match identity_ref.r#type {
            IdentityRefType::Secret => IdentityKind::Secret,
            IdentityRefType::ClusterIdentity => IdentityKind::ClusterIdentity,
        },
        name: identity_ref.name.clone(),
        cloud_name: identity_ref.cloud_name.clone(),
        region: identity_ref.region.clone(),
    };
    let (secret_ns, secret_name) = match r.kind {
        IdentityKind::Secret => (namespace.to_owned(), r.name.clone()),
        IdentityKind::ClusterIdentity => {
            let identity = get_cluster_identity(ctx, &r.name).await?;
            let labels = namespace_labels(ctx, namespace).await?;
            credentials::secret_location(
                namespace,
                &r,
                identity.as_ref(),
                &labels,
                ctx.shared.options.nil_selector_policy,
            )
            .map_err(|e| Error::Credentials(format!("{object}: {e}")))?
        }
    };
    let data = ctx
        .shared
        .identity_reads
        .secrets
        .get(&format!("{secret_ns}/{secret_name}"), || {
            read_secret(ctx, &secret_ns, &secret_name)
        })
        .await?
        .ok_or_else(|| {
            Error::Credentials(format!(
                "{object}: identityRef Secret {secret_ns}/{secret_name} not found"
            ))
        })?;
    Credentials::from_secret(
        object,
        &secret_ns,
        &secret_name,
        &data,
        &r.cloud_name,
        r.region.as_deref(),
    )
    .map_err(|e| Error::Credentials(e.to_string()))
}

/// The Secret (namespace, name) that `identity_ref`, on an object in `namespace`, names:
/// in `namespace` for a Secret, else the one the OpenStackClusterIdentity names (`None` when
/// that identity does not exist). The identity's namespaceSelector is not applied: an object
/// refused by it still names the Secret (and needs it once the selector admits it).
pub async fn secret_named_by(
    ctx: &Context,
    namespace: &str,
    identity_ref: &OpenStackIdentityReference,
) -> Result<Option<(String, String)>> {
    match identity_ref.r#type {
        IdentityRefType::Secret => Ok(Some((namespace.to_owned(), identity_ref.name.clone()))),
        IdentityRefType::ClusterIdentity => Ok(get_cluster_identity(ctx, &identity_ref.name)
            .await?
            .map(|i| (i.secret_namespace, i.secret_name))),
    }
}

/// The Secret's data (None: not found); never logged.
async fn read_secret(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<BTreeMap<String, Vec<u8>>>> {
    let secret = Api::<Secret>::namespaced(ctx.shared.client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(format!("get Secret {namespace}/{name}"), e))?;
    Ok(secret.map(|s| {
        s.data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect()
    }))
}

async fn get_cluster_identity(ctx: &Context, name: &str) -> Result<Option<ClusterIdentitySpec>> {
    ctx.shared
        .identity_reads
        .identities
        .get(name, || read_cluster_identity(ctx, name))
        .await
}

async fn read_cluster_identity(ctx: &Context, name: &str) -> Result<Option<ClusterIdentitySpec>> {
    let found = Api::<OpenStackClusterIdentity>::all(ctx.shared.client.clone())
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(format!("get OpenStackClusterIdentity {name}"), e))?;
    Ok(found.map(|i| ClusterIdentitySpec {
        secret_namespace: i.spec.secret_ref.namespace,
        secret_name: i.spec.secret_ref.name,
        namespace_selector: i.spec.namespace_selector.map(|s| LabelSelector {
            match_labels: s.match_labels,
            match_expressions: s
                .match_expressions
                .into_iter()
                .map(|e| LabelSelectorRequirement {
                    key: e.key,
                    operator: e.operator,
                    values: e.values,
                })
                .collect(),
        }),
    }))
}

async fn namespace_labels(ctx: &Context, namespace: &str) -> Result<BTreeMap<String, String>> {
    let labels = ctx
        .shared
        .identity_reads
        .namespaces
        .get(namespace, || async {
            let ns = Api::<Namespace>::all(ctx.shared.client.clone())
                .get(namespace)
                .await
                .map_err(|e| Error::kube(format!("get Namespace {namespace}"), e))?;
            Ok(Some(ns.metadata.labels.unwrap_or_default()))
        })
        .await?;
    Ok(labels.unwrap_or_default())
}

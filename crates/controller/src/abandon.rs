//! Abandoning an object whose credentials can no longer work (upstream issues 906, 2336).
//!
//! A Keystone user, project or domain removed, or the identity Secret (or its clouds.yaml
//! cloud) force-deleted, before a cluster is deleted leaves finalizers that no cleanup can
//! satisfy: every cloud call of the delete path fails. The operator's way out is the
//! [`ABANDON_ANNOTATION`] (`infrastructure.cluster.x-k8s.io/capo-abandon: "true"`):
//!
//! - While deleting an OpenStackCluster, OpenStackMachine, OpenStackServer or
//!   OpenStackFloatingIPPool, a cleanup that fails with a credentials problem (the one
//!   classification, [`Error::is_credentials_problem`]: identityRef Secret or its cloud
//!   missing or unusable, or the cloud answering 401 — which is how Keystone answers a scoped
//!   authentication for a deleted user, project or domain) is reported on Ready (reason
//!   `InvalidCredentials`) with the cause and the annotation that lets capo go
//!   ([`blocked`]).
//! - With the annotation on the object itself, or on the OpenStackCluster of the cluster it
//!   belongs to ([`Request`]; so one annotation lets a cluster's machines, servers and bastion
//!   go), and only while the cause persists (the cleanup is tried first on every reconcile),
//!   the finalizer is removed without deleting anything, and a Warning event `Abandoned` lists
//!   every cloud resource ID the status records ([`crate::lifecycle::Reconciled::recorded`]).
//!   The OpenStackServers it owns are annotated too ([`pass_on`]): garbage collection deletes
//!   them after it, when the OpenStackCluster whose annotation they would follow may be gone.
//! - The annotation is never acted on otherwise: on an object that is not being deleted, or
//!   whose deletion completes because the credentials work, it is ignored with a Warning event
//!   `AbandonIgnored`. Admission does not refuse it, because admission cannot know whether the
//!   credentials work; the decision is taken by the controller, at the moment it is needed.

use capo_api::constants::CLUSTER_NAME_LABEL;
use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::{IdentityRefType, OpenStackCluster, OpenStackIdentityReference};
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use crate::capi::CAPI_GROUP;
use crate::context::Context;
use crate::error::{Error, KubeContext, Result};
use crate::stored::Stored;

/// The annotation (value `"true"`) that lets capo remove its finalizer from an object whose
/// deletion fails because its credentials can no longer work, leaving its cloud resources
/// behind. On an OpenStackCluster it covers every object of the cluster.
pub const ABANDON_ANNOTATION: &str = "infrastructure.cluster.x-k8s.io/capo-abandon";

/// Event reason of an object whose finalizer was removed without deleting.
pub const ABANDONED: &str = "Abandoned";

/// Event reason of an abandon annotation that was not acted on.
pub const ABANDON_IGNORED: &str = "AbandonIgnored";

/// Whether `obj` carries the annotation set to `"true"`.
pub fn annotated<K: Resource>(obj: &K) -> bool {
    obj.annotations()
        .get(ABANDON_ANNOTATION)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Where the abandon annotation of an object is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `Kind ns/name` of the object to annotate: the OpenStackCluster of the cluster the object
    /// belongs to, else the object itself.
    pub annotate: String,
    /// The annotation is set (on the object itself or on that OpenStackCluster).
    pub requested: bool,
}

impl Request {
    /// The annotation of `obj` (`Kind ns/name` in `object`), or of the OpenStackCluster of its
    /// cluster: the object's owner reference to an OpenStackCluster (a bastion), else the
    /// Cluster of its `cluster.x-k8s.io/cluster-name` label (its infrastructureRef, or the
    /// OpenStackCluster owned by that Cluster once the Cluster is gone). An OpenStackCluster is
    /// its own cluster.
    pub async fn of<K: Resource<DynamicType = ()>>(
        ctx: &Context,
        obj: &K,
        object: &str,
    ) -> Result<Self> {
        let own = annotated(obj);
        let cluster = if K::kind(&()) == "OpenStackCluster" {
            None
        } else {
            cluster_of(ctx, obj).await?
        };
        Ok(match cluster {
            Some(osc) => Request {
                annotate: format!(
                    "OpenStackCluster {}/{}",
                    osc.namespace().unwrap_or_default(),
                    osc.name_any()
                ),
                requested: own || annotated(&osc),
            },
            None => Request {
                annotate: object.to_owned(),
                requested: own,
            },
        })
    }
}

/// The OpenStackCluster of the cluster `obj` belongs to, if it still exists.
async fn cluster_of<K: Resource<DynamicType = ()>>(
    ctx: &Context,
    obj: &K,
) -> Result<Option<Stored<OpenStackCluster>>> {
    let ns = obj.namespace().unwrap_or_default();
    let clusters = &ctx.shared.informers.openstack_clusters;
    if let Some(r) = obj
        .owner_references()
        .iter()
        .find(|r| r.kind == "OpenStackCluster")
    {
        return clusters.get(&ns, &r.name).await;
    }
    let Some(cluster) = obj.labels().get(CLUSTER_NAME_LABEL) else {
        return Ok(None);
    };
    let infra = ctx
        .shared
        .informers
        .clusters
        .get(&ns, cluster)
        .await?
        .and_then(|c| c.spec.infrastructure_ref)
        .filter(|r| r.kind == "OpenStackCluster");
    if let Some(r) = infra {
        return clusters.get(&ns, &r.name).await;
    }
    // The Cluster is gone (or names no OpenStackCluster): the OpenStackCluster it owned.
    let owned_by = |o: &OpenStackCluster| {
        o.owner_references().iter().any(|r| {
            r.kind == "Cluster"
                && r.api_version.starts_with(&format!("{CAPI_GROUP}/"))
                && &r.name == cluster
        })
    };
    Ok(clusters
        .ready_state()
        .await?
        .into_iter()
        .find(|o| o.namespace().as_deref() == Some(ns.as_str()) && owned_by(o))
        .map(|o| (*o).clone()))
}

/// Annotate the OpenStackServers `obj` owns (a cluster's bastion, a machine's server) for
/// abandon, so that they follow it once garbage collection deletes them: by then the
/// OpenStackCluster whose annotation they would read may be gone. Returns their names.
pub async fn pass_on<K: Resource<DynamicType = ()>>(ctx: &Context, obj: &K) -> Result<Vec<String>> {
    let Some(uid) = obj.uid() else {
        return Ok(Vec::new());
    };
    let ns = obj.namespace().unwrap_or_default();
    let owned: Vec<String> = ctx
        .shared
        .informers
        .openstack_servers
        .ready_state()
        .await?
        .into_iter()
        .filter(|s| s.namespace().as_deref() == Some(ns.as_str()) && !annotated(&**s))
        .filter(|s| s.owner_references().iter().any(|r| r.uid == uid))
        .map(|s| s.name_any())
        .collect();
    let api: Api<OpenStackServer> = Api::namespaced(ctx.shared.client.clone(), &ns);
    let patch = serde_json::json!({"metadata": {"annotations": {ABANDON_ANNOTATION: "true"}}});
    for name in &owned {
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Err(kube::Error::Api(ae)) if ae.code == 404 => {}
            other => {
                other.kctx(|| format!("annotate OpenStackServer {ns}/{name} for abandon"))?;
            }
        }
    }
    Ok(owned)
}

/// The condition message of a deletion that `err` (a credentials problem) blocks: the cause
/// and the annotation that lets capo go. `identity` names the identityRef, where the object
/// names one. Only the error's own text is used, which never carries a secret.
pub fn blocked(err: &Error, identity: Option<&str>, request: &Request) -> String {
    let cause = if matches!(err, Error::Cloud(_)) {
        let of = identity.map(|i| format!(" of {i}")).unwrap_or_default();
        format!(
            "the cloud rejects the credentials{of} (user, project or domain gone, or password or application credential revoked?): {}",
            cause(err)
        )
    } else {
        cause(err)
    };
    format!(
        "cannot delete: {cause}; to remove capo's finalizers and leave the cloud resources behind, annotate {} with {ABANDON_ANNOTATION}=true",
        request.annotate
    )
}

/// The note of the `Abandoned` event: every recorded cloud resource first (count first, so a
/// note cut at the event's length limit still says how many), then why.
pub fn abandoned_note(err: &Error, recorded: &[String], passed_on: &[String]) -> String {
    let left = if recorded.is_empty() {
        "no cloud resource recorded in status".to_owned()
    } else {
        format!(
            "{} cloud resources left behind: {}",
            recorded.len(),
            recorded.join(", ")
        )
    };
    let servers = if passed_on.is_empty() {
        String::new()
    } else {
        format!(
            "; annotated for abandon too: OpenStackServer {}",
            passed_on.join(", ")
        )
    };
    format!(
        "{left}; finalizer removed without deleting ({ABANDON_ANNOTATION}=true, credentials unusable: {}){servers}",
        cause(err)
    )
}

/// The credentials problem in short: the cloud's answer without the operation that met it (a
/// 401 is about the credentials, whatever the call), else the error's text.
fn cause(err: &Error) -> String {
    match err {
        Error::Cloud(capo_cloud::Error::OpenStack { source, .. }) => source.to_string(),
        _ => err.to_string(),
    }
}

/// How `identity` is named in messages (`identityRef Secret ns/name`).
pub fn describe_identity(namespace: &str, identity: &OpenStackIdentityReference) -> String {
    match identity.r#type {
        IdentityRefType::Secret => format!("identityRef Secret {namespace}/{}", identity.name),
        IdentityRefType::ClusterIdentity => {
            format!("identityRef OpenStackClusterIdentity {}", identity.name)
        }
    }
}

/// `kind id` for each non-empty ID.
pub fn ids<'a>(kind: &str, ids: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    ids.into_iter()
        .filter(|i| !i.is_empty())
        .map(|i| format!("{kind} {i}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_true_requests() {
        let mut osc = OpenStackCluster::new("c", Default::default());
        assert!(!annotated(&osc));
        osc.annotations_mut()
            .insert(ABANDON_ANNOTATION.into(), "false".into());
        assert!(!annotated(&osc));
        osc.annotations_mut()
            .insert(ABANDON_ANNOTATION.into(), "true".into());
        assert!(annotated(&osc));
    }

    #[test]
    fn the_message_names_the_annotation_and_the_object() {
        let err =
            Error::Credentials("OpenStackCluster ns/c: identityRef Secret ns/s not found".into());
        let req = Request {
            annotate: "OpenStackCluster ns/c".into(),
            requested: false,
        };
        let m = blocked(&err, None, &req);
        assert!(m.contains("identityRef Secret ns/s not found"), "{m}");
        assert!(
            m.ends_with("annotate OpenStackCluster ns/c with infrastructure.cluster.x-k8s.io/capo-abandon=true"),
            "{m}"
        );
        let note = abandoned_note(&err, &ids("network", ["n1", ""]), &[]);
        assert!(
            note.starts_with("1 cloud resources left behind: network n1;"),
            "{note}"
        );
    }
}

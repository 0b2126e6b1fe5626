//! The delete step for what the workload cluster's cloud-provider-openstack left in the
//! project ([`capo_cloud::cloud_provider`]): its load balancers, their floating IPs and security
//! groups always; the Cinder CSI plugin's volumes and snapshots when the OpenStackCluster says
//! so ([`VOLUMES_ANNOTATION`]).
//!
//! It runs once the cluster's machines are gone (a CCM still running would make new ones) and
//! before capo deletes the network. The condition [`CLOUD_PROVIDER_RESOURCES_DELETED`] says what
//! is being waited for, with the cloud's reason; each pass that deletes something emits a
//! `CloudProviderResourcesDeleted` event naming it, and the kept volumes and snapshots are named
//! once, in a `CloudProviderVolumesKept` event, when the step ends. Once the condition is True
//! the step is not run again.

use capo_api::names::cloud_provider_cluster_name;
use capo_api::v1beta1::OpenStackCluster;
use capo_cloud::Progress;
use capo_cloud::cloud_provider::{Sweep, VolumePolicy, sweep as sweep_project};
use capo_openstack::Session;
use kube::ResourceExt;
use kube::runtime::events::EventType;

use super::scope::Scope;
use crate::conditions::{self, State};
use crate::error::{Error, Result};

pub use capo_api::constants::CLOUD_PROVIDER_VOLUMES_ANNOTATION as VOLUMES_ANNOTATION;

/// Condition on the OpenStackCluster while it is deleted: True once nothing cloud-provider-openstack
/// made for the cluster is left (but the volumes the policy keeps).
pub const CLOUD_PROVIDER_RESOURCES_DELETED: &str = "CloudProviderResourcesDeleted";

/// Longest list of names an event carries (the rest is counted).
const EVENT_ITEMS: usize = 20;

/// The volume policy of `osc`, or an error naming the annotation and what it accepts (the
/// webhook refuses such a value at admission; this covers objects admitted without it).
pub fn volume_policy(osc: &OpenStackCluster) -> Result<VolumePolicy> {
    match osc
        .annotations()
        .get(VOLUMES_ANNOTATION)
        .map(String::as_str)
    {
        None | Some("keep") => Ok(VolumePolicy::Keep),
        Some("delete") => Ok(VolumePolicy::Delete),
        Some(other) => Err(Error::InvalidSpec(format!(
            "annotation {VOLUMES_ANNOTATION}: {other:?} is neither \"keep\" nor \"delete\""
        ))),
    }
}

/// Sweep once; Done when nothing is left to delete or wait for.
pub(super) async fn sweep(scope: &mut Scope<'_>, s: &Session, cluster: &str) -> Result<Progress> {
    if conditions::is_true(&scope.status.conditions, CLOUD_PROVIDER_RESOURCES_DELETED) {
        return Ok(Progress::Done(()));
    }
    let osc: &OpenStackCluster = scope.obj;
    let volumes = volume_policy(osc)?;
    let cluster = if cluster.is_empty() {
        osc.name_any()
    } else {
        cluster.to_owned()
    };
    let name = cloud_provider_cluster_name(&scope.owner.namespace, &cluster);
    let networks = managed_networks(osc, &scope.status);
    let swept = sweep_project(
        s,
        &Sweep {
            cluster_name: &name,
            networks: &networks,
            volumes,
        },
    )
    .await?;
    if !swept.deleted.is_empty() {
        scope
            .event(
                EventType::Normal,
                "CloudProviderResourcesDeleted",
                "Delete",
                Some(format!(
                    "deleted what cloud-provider-openstack left for cluster {name}: {}",
                    bounded(&swept.deleted)
                )),
            )
            .await;
    }
    let progress = swept.progress();
    match &progress {
        Progress::Done(()) => {
            if !swept.kept.is_empty() {
                scope
                    .event(
                        EventType::Normal,
                        "CloudProviderVolumesKept",
                        "Delete",
                        Some(format!(
                            "kept the Cinder CSI volumes and snapshots of cluster {name} \
                             (annotation {VOLUMES_ANNOTATION} is not \"delete\"): {}",
                            bounded(&swept.kept)
                        )),
                    )
                    .await;
            }
            scope.set(CLOUD_PROVIDER_RESOURCES_DELETED, State::True);
        }
        not_yet @ (Progress::Waiting(_) | Progress::Stuck(_)) => {
            let why = not_yet.why().unwrap_or_default().to_owned();
            scope.set(
                CLOUD_PROVIDER_RESOURCES_DELETED,
                State::info("Deleting", why),
            );
        }
    }
    Ok(progress)
}

/// The networks capo made for the cluster: the cluster network unless the spec names one, and
/// the BA/ACP pod network.
fn managed_networks(
    osc: &OpenStackCluster,
    status: &capo_api::v1beta1::OpenStackClusterStatus,
) -> Vec<String> {
    let mut out = Vec::new();
    if osc.spec.network.is_none()
        && let Some(n) = status.network.as_ref().filter(|n| !n.id.is_empty())
    {
        out.push(n.id.clone());
    }
    if let Some(p) = status
        .extensions
        .as_ref()
        .and_then(|e| e.networking.as_ref())
        .and_then(|n| n.pod_network.as_ref())
        .filter(|p| !p.network_id.is_empty())
    {
        out.push(p.network_id.clone());
    }
    out
}

/// `items` joined, at most [`EVENT_ITEMS`] of them, the rest counted.
fn bounded(items: &[String]) -> String {
    let mut text = items
        .iter()
        .take(EVENT_ITEMS)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > EVENT_ITEMS {
        text.push_str(&format!(" and {} more", items.len() - EVENT_ITEMS));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn osc(annotation: Option<&str>) -> OpenStackCluster {
        let mut o: OpenStackCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackCluster",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"identityRef": {"name": "s", "cloudName": "openstack"}}
        }))
        .expect("osc");
        if let Some(a) = annotation {
            o.annotations_mut()
                .insert(VOLUMES_ANNOTATION.into(), a.into());
        }
        o
    }

    #[test]
    fn volume_policy_defaults_to_keep_and_names_a_bad_value() {
        assert_eq!(volume_policy(&osc(None)).ok(), Some(VolumePolicy::Keep));
        assert_eq!(
            volume_policy(&osc(Some("keep"))).ok(),
            Some(VolumePolicy::Keep)
        );
        assert_eq!(
            volume_policy(&osc(Some("delete"))).ok(),
            Some(VolumePolicy::Delete)
        );
        let err = volume_policy(&osc(Some("yes"))).expect_err("refused");
        assert!(err.to_string().contains(VOLUMES_ANNOTATION), "{err}");
    }

    #[test]
    fn events_name_at_most_twenty() {
        let items: Vec<String> = (0..25).map(|i| format!("volume {i}")).collect();
        let text = bounded(&items);
        assert!(text.ends_with("and 5 more"), "{text}");
    }
}

//! Claims and addresses of a paused Cluster are left alone, as the Cluster API IPAM contract
//! asks: `clusterctl move` recreates claims and their IPAddresses in the target while the
//! Cluster is paused, and a claim answered there before its IPAddress arrives would get a
//! second address (upstream issue 3029).

use std::collections::BTreeSet;

use capo_api::constants::CLUSTER_NAME_LABEL;
use kube::ResourceExt;
use kube::api::DynamicObject;

use super::scope::Scope;
use crate::error::Result;
use crate::runtime::has_paused_annotation;

/// The paused Clusters among those the pool's claims and addresses belong to.
#[derive(Debug, Default)]
pub(super) struct Paused {
    clusters: BTreeSet<String>,
}

/// The Cluster an IPAM object belongs to: `spec.clusterName`, else the cluster-name label.
fn cluster_of(obj: &DynamicObject) -> Option<&str> {
    obj.data["spec"]["clusterName"]
        .as_str()
        .or_else(|| obj.labels().get(CLUSTER_NAME_LABEL).map(String::as_str))
        .filter(|c| !c.is_empty())
}

impl Paused {
    /// Read the Clusters `objects` belong to (from the manager's store of Clusters).
    pub async fn read<'a>(
        scope: &Scope<'_>,
        objects: impl Iterator<Item = &'a DynamicObject>,
    ) -> Result<Self> {
        let names: BTreeSet<&str> = objects.filter_map(cluster_of).collect();
        let mut clusters = BTreeSet::new();
        for name in names {
            let cluster = scope
                .ctx
                .shared
                .informers
                .clusters
                .get(&scope.namespace, name)
                .await?;
            if cluster.is_some_and(|c| c.is_paused()) {
                clusters.insert(name.to_owned());
            }
        }
        Ok(Paused { clusters })
    }

    /// Whether `obj` is paused (its Cluster, or its own annotation).
    pub fn holds(&self, obj: &DynamicObject) -> bool {
        has_paused_annotation(obj) || cluster_of(obj).is_some_and(|c| self.clusters.contains(c))
    }
}

//! OpenStackCluster between v1beta1 and v1beta2.

use crate::conversion::engine::{self, Direction, Pair};
use crate::conversion::error::ConversionError;
use crate::conversion::{cluster_spec, cluster_status};
use crate::{v1beta1, v1beta2};

/// The two versions of OpenStackCluster.
pub(crate) struct Cluster;

impl Pair for Cluster {
    const KIND: &'static str = "OpenStackCluster";
    type Old = v1beta1::OpenStackCluster;
    type New = v1beta2::OpenStackCluster;

    fn up(old: &Self::Old) -> Result<Self::New, ConversionError> {
        Ok(v1beta2::OpenStackCluster {
            metadata: old.metadata.clone(),
            spec: cluster_spec::to_v1beta2(&old.spec, "spec")?,
            status: old
                .status
                .as_ref()
                .map(|s| cluster_status::to_v1beta2(s, old.metadata.generation))
                .transpose()?,
        })
    }

    fn down(new: &Self::New) -> Result<Self::Old, ConversionError> {
        Ok(v1beta1::OpenStackCluster {
            metadata: new.metadata.clone(),
            spec: cluster_spec::to_v1beta1(&new.spec, "spec")?,
            status: new
                .status
                .as_ref()
                .map(cluster_status::to_v1beta1)
                .transpose()?,
        })
    }
}

/// Converts a v1beta1 OpenStackCluster to v1beta2, carrying what v1beta2 cannot hold in the
/// conversion-data annotation (and restoring what an earlier conversion from v1beta2 carried).
pub fn cluster_to_v1beta2(
    cluster: &v1beta1::OpenStackCluster,
) -> Result<v1beta2::OpenStackCluster, ConversionError> {
    engine::typed::<Cluster, _, _>(Direction::Up, cluster)
}

/// Converts a v1beta2 OpenStackCluster to v1beta1, carrying what v1beta1 cannot hold in the
/// conversion-data annotation (and restoring what an earlier conversion from v1beta1 carried).
pub fn cluster_to_v1beta1(
    cluster: &v1beta2::OpenStackCluster,
) -> Result<v1beta1::OpenStackCluster, ConversionError> {
    engine::typed::<Cluster, _, _>(Direction::Down, cluster)
}

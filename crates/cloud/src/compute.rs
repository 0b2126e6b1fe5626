//! Nova: failure domains from the cloud's availability zones.

use std::collections::BTreeMap;

use capo_api::v1beta1::{FailureDomainSpec, OpenStackClusterSpec};
use capo_openstack::Session;
use capo_openstack::compute::list_availability_zones;

use crate::error::{Context, Result};
use crate::plan::failure_domains::{Zone, failure_domains};

/// `status.failureDomains` from Nova's availability zones (one request).
pub async fn ensure_failure_domains(
    s: &Session,
    spec: &OpenStackClusterSpec,
) -> Result<BTreeMap<String, FailureDomainSpec>> {
    let zones: Vec<Zone> = list_availability_zones(s)
        .await
        .ctx(|| "list availability zones".to_owned())?
        .into_iter()
        .map(|z| Zone {
            name: z.name,
            available: z.state.available,
        })
        .collect();
    Ok(failure_domains(spec, &zones))
}

//! Cheap drift probes for converged clusters: instead of re-reading every resource on each
//! steady reconcile (upstream spends 16 requests), the controller checks the resources whose
//! loss breaks the cluster — the network and the API load balancer — and does a full
//! reconcile only when one is gone or unhealthy (or when its verification period elapsed).

use capo_openstack::Session;
use capo_openstack::loadbalancer::{self as lbaas, LOAD_BALANCER, LoadBalancer};
use capo_openstack::network::{NETWORK, Network};

use crate::error::{Error, Result};
use crate::networking::lookup::get_opt;

/// What a probe looks at (IDs recorded in status).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeTargets<'a> {
    /// `status.network.id`.
    pub network_id: Option<&'a str>,
    /// `status.apiServerLoadBalancer.id`.
    pub load_balancer_id: Option<&'a str>,
}

/// `Ok(None)` when everything probed is present and healthy, else what drifted. At most one
/// request per target.
pub async fn cluster_drift(s: &Session, t: ProbeTargets<'_>) -> Result<Option<String>> {
    if let Some(id) = t.network_id.filter(|i| !i.is_empty())
        && get_opt::<Network>(s, NETWORK, id).await?.is_none()
    {
        return Ok(Some(format!("network {id} is gone")));
    }
    if let Some(id) = t.load_balancer_id.filter(|i| !i.is_empty()) {
        match lbaas::get::<LoadBalancer>(s, LOAD_BALANCER, id).await {
            Ok(lb) if lb.provisioning_status == "ACTIVE" => {}
            Ok(lb) => {
                return Ok(Some(format!(
                    "load balancer {id} is {}",
                    lb.provisioning_status
                )));
            }
            Err(e) if e.is_not_found() => return Ok(Some(format!("load balancer {id} is gone"))),
            Err(e) => return Err(Error::api(format!("get loadbalancer {id}"), e)),
        }
    }
    Ok(None)
}

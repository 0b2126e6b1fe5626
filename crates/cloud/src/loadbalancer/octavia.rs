//! What Octavia answers about the API load balancer, read the same way by the load balancer
//! itself ([`super::balancer`]), its children ([`super::children`]) and the pool members
//! ([`super::members`]).

use capo_openstack::loadbalancer::LoadBalancer;
use serde::Deserialize;

use crate::Progress;
use crate::networking::lookup::Tagged;

/// A child reference (`{"id": ...}`) in a load balancer body.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct IdRef {
    pub id: String,
}

/// A load balancer with the references to its listeners (Octavia includes them in every GET).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct LbWithRefs {
    #[serde(flatten)]
    pub lb: LoadBalancer,
    #[serde(default)]
    pub listeners: Vec<IdRef>,
}

impl Tagged for LbWithRefs {
    fn id(&self) -> &str {
        &self.lb.id
    }
    fn name(&self) -> &str {
        &self.lb.name
    }
    fn tags(&self) -> &[String] {
        &self.lb.tags
    }
}

/// Octavia provisioning status of `on` `id` → progress (`ACTIVE` is ready).
pub(crate) fn progress_of(on: &'static str, id: &str, status: &str) -> Progress {
    match status {
        "ACTIVE" => Progress::Done(()),
        "ERROR" => Progress::Stuck(format!("{on} {id} is in provisioning status ERROR")),
        other => Progress::waiting(on, id, format!("{on} {id} is {other}")),
    }
}

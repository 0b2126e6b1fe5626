//! Floating IPs of an OpenStackFloatingIPPool (a Cluster API IPAM provider).
//!
//! A pool hands out its pre-allocated addresses and floating IPs it allocated itself. The
//! floating IPs it allocated are recognised by their description, which names the pool and
//! its ownership ID and is set in the create request itself: an allocation whose reply was
//! lost, or after which the controller died before tagging it, is found again by the next
//! [`inventory`] and handed out like any other unclaimed address, never allocated twice
//! and never leaked. They also carry upstream's tag `cluster-api-provider-openstack-fip-pool-
//! <pool>`; floating IPs allocated by upstream CAPO (upstream's description plus that tag) are
//! adopted. Which addresses are claimed is the caller's business (its IPAddresses).

use capo_api::names::floating_ip_pool_tag;
use capo_openstack::Session;
use capo_openstack::network::{self as net, FLOATING_IP, FloatingIp, FloatingIpCreate, ListFilter};

use crate::error::{Context, Result};
use crate::networking::lookup::delete_opt;

/// The pool that owns floating IPs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOwner {
    /// Ownership ID of the pool (its first Kubernetes UID).
    pub uid: String,
    /// Namespace of the pool.
    pub namespace: String,
    /// Name of the pool.
    pub name: String,
}

impl PoolOwner {
    /// Description of the floating IPs this pool allocates.
    pub fn description(&self) -> String {
        format!(
            "capo floating IP of OpenStackFloatingIPPool {}/{} ({})",
            self.namespace, self.name, self.uid
        )
    }

    /// Description upstream CAPO gives the floating IPs a pool of this name allocates.
    fn upstream_description(&self) -> String {
        format!(
            "Created by cluster-api-provider-openstack OpenStackFloatingIPPool {}",
            self.name
        )
    }

    /// Upstream's tag of the pool's floating IPs.
    pub fn tag(&self) -> String {
        floating_ip_pool_tag(&self.name)
    }

    /// Whether the pool allocated `fip` (capo's description, or upstream's with its tag; a
    /// pool of the same name in another namespace or management cluster has another
    /// description).
    pub fn allocated(&self, fip: &FloatingIp) -> bool {
        fip.description == self.description()
            || (fip.description == self.upstream_description() && fip.tags.contains(&self.tag()))
    }
}

/// Every floating IP of the session's project, as listed once per reconcile.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    fips: Vec<FloatingIp>,
}

impl From<Vec<FloatingIp>> for Inventory {
    fn from(fips: Vec<FloatingIp>) -> Self {
        Inventory { fips }
    }
}

impl Inventory {
    /// The floating IP with `address`, if the project has it.
    pub fn by_address(&self, address: &str) -> Option<&FloatingIp> {
        self.fips.iter().find(|f| f.floating_ip_address == address)
    }

    /// Drop floating IP `id` (released since the listing).
    pub fn forget(&mut self, id: &str) {
        self.fips.retain(|f| f.id != id);
    }

    /// The floating IPs `pool` allocated, in listing order.
    pub fn allocated_by<'a>(&'a self, pool: &'a PoolOwner) -> impl Iterator<Item = &'a FloatingIp> {
        self.fips.iter().filter(|f| pool.allocated(f))
    }
}

/// List the floating IPs of the session's project (one request; scoped to the project so
/// that admin credentials do not see the whole cloud).
pub async fn inventory(s: &Session) -> Result<Inventory> {
    let project = s
        .project_id()
        .await
        .ctx(|| "read the token's project".to_owned())?;
    let filter = ListFilter {
        project_id: Some(project),
        ..Default::default()
    };
    let fips = net::list(s, FLOATING_IP, &filter)
        .await
        .ctx(|| "list floating IPs".to_owned())?;
    Ok(Inventory { fips })
}

/// Allocate a floating IP for `pool` on `network_id`, described as the pool's in the create
/// request and tagged afterwards.
pub async fn allocate(s: &Session, pool: &PoolOwner, network_id: &str) -> Result<FloatingIp> {
    let body = FloatingIpCreate {
        floating_network_id: network_id.to_owned(),
        description: Some(pool.description()),
        ..Default::default()
    };
    let mut fip: FloatingIp = net::create(s, FLOATING_IP, &body)
        .await
        .ctx(|| format!("allocate a floating IP for pool {}", pool.name))?;
    ensure_tagged(s, pool, &mut fip).await?;
    Ok(fip)
}

/// Add the pool's tag to `fip` when it lacks it (a crash between allocation and tagging).
/// Other tags are kept.
pub async fn ensure_tagged(s: &Session, pool: &PoolOwner, fip: &mut FloatingIp) -> Result<()> {
    let tag = pool.tag();
    if fip.tags.contains(&tag) {
        return Ok(());
    }
    let mut tags = fip.tags.clone();
    tags.push(tag);
    net::replace_tags(s, FLOATING_IP, &fip.id, &tags)
        .await
        .ctx(|| format!("tag floating IP {}", fip.floating_ip_address))?;
    fip.tags = tags;
    Ok(())
}

/// Release (delete) floating IP `id`; absent is success.
pub async fn release(s: &Session, id: &str) -> Result<()> {
    delete_opt(s, FLOATING_IP, id).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> PoolOwner {
        PoolOwner {
            uid: "u1".into(),
            namespace: "ns".into(),
            name: "p".into(),
        }
    }

    fn fip(description: &str, tags: &[&str]) -> FloatingIp {
        FloatingIp {
            id: "f".into(),
            floating_ip_address: "203.0.113.5".into(),
            floating_network_id: "ext".into(),
            port_id: None,
            fixed_ip_address: None,
            status: "DOWN".into(),
            description: description.into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    #[test]
    fn recognises_its_own_and_upstream_allocations_only() {
        let p = pool();
        assert!(p.allocated(&fip(&p.description(), &[])));
        let upstream = "Created by cluster-api-provider-openstack OpenStackFloatingIPPool p";
        assert!(p.allocated(&fip(
            upstream,
            &["cluster-api-provider-openstack-fip-pool-p"]
        )));
        assert!(!p.allocated(&fip(upstream, &[])));
        let other_ns = PoolOwner {
            namespace: "other".into(),
            ..pool()
        };
        assert!(!p.allocated(&fip(
            &other_ns.description(),
            &["cluster-api-provider-openstack-fip-pool-p"]
        )));
    }
}

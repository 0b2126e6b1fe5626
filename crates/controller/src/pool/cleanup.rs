//! Deleting a pool: wait until no IPAddress of it remains (the addresses being deleted are
//! let go first), then release the floating IPs it allocated.

use capo_cloud::Progress;
use capo_cloud::networking::floating_ip_pool as fips;

use super::claims::{delete_orphans, pool_addresses, pool_claims, release_deleted};
use super::paused::Paused;
use super::scope::Scope;
use crate::error::Result;

pub(super) async fn cleanup(scope: &mut Scope<'_>) -> Result<Progress> {
    let s = scope.session().await?;
    let mut inventory = fips::inventory(&s).await?;
    let (addresses, _) = pool_addresses(scope).await?;
    let claims = pool_claims(scope).await?;
    let objects = claims.iter().chain(addresses.iter().map(|a| &a.obj));
    let paused = Paused::read(scope, objects).await?;
    let mut standing = release_deleted(scope, &s, &mut inventory, addresses, &paused).await?;
    delete_orphans(scope, &mut standing, &claims, &paused).await?;
    if !standing.is_empty() {
        let names: Vec<&str> = standing.iter().map(|a| a.name.as_str()).collect();
        return Ok(Progress::waiting(
            "IPAddresses",
            "",
            format!(
                "{} IPAddresses still use the pool: {}",
                names.len(),
                names.join(", ")
            ),
        ));
    }
    let spec = &scope.obj.spec;
    let ours: Vec<String> = inventory
        .allocated_by(&scope.owner)
        .filter(|f| {
            !spec
                .pre_allocated_floating_ips
                .contains(&f.floating_ip_address)
        })
        .map(|f| f.id.clone())
        .collect();
    for id in ours {
        fips::release(&s, &id).await?;
    }
    Ok(Progress::Done(()))
}

//! What a pool's claims and addresses are, read live from the API server, and the releases
//! of addresses whose claims or servers are gone.

use capo_api::constants::DELETE_FLOATING_IP_FINALIZER;
use kube::api::{DeleteParams, DynamicObject, ListParams};
use kube::{Api, ResourceExt};

use super::ledger::Address;
use super::paused::Paused;
use super::scope::Scope;
use crate::context::Context;
use crate::error::{KubeContext, Result};
use crate::ipam;

/// IPAM objects of the watched namespace (or all). `--watch-filter` selects pools, not the
/// claims made on them.
pub(super) fn ipam_api(ctx: &Context, ar: &kube::api::ApiResource) -> Api<DynamicObject> {
    match &ctx.shared.options.namespace {
        Some(ns) => Api::namespaced_with(ctx.shared.client.clone(), ns, ar),
        None => Api::all_with(ctx.shared.client.clone(), ar),
    }
}

/// The live IPAddresses of the pool, and the addresses other pools' IPAddresses of the
/// namespace hold (a pre-allocated address listed in two pools is handed out once). Read from
/// the API server, not a cache: what is claimed must be exact.
pub(super) async fn pool_addresses(scope: &Scope<'_>) -> Result<(Vec<Address>, Vec<String>)> {
    let api = ipam::addresses(&scope.ctx.shared.client, &scope.namespace);
    let list = api
        .list(&ListParams::default())
        .await
        .kctx(|| format!("list IPAddresses of {}", scope.object()))?;
    let (ours, others): (Vec<DynamicObject>, Vec<DynamicObject>) = list
        .items
        .into_iter()
        .partition(|a| ipam::floating_ip_pool_of(a) == Some(scope.name.as_str()));
    let elsewhere = others
        .into_iter()
        .map(Address::from)
        .map(|a| a.address)
        .collect();
    Ok((ours.into_iter().map(Address::from).collect(), elsewhere))
}

/// The IPAddressClaims naming this pool (live, like the addresses).
pub(super) async fn pool_claims(scope: &Scope<'_>) -> Result<Vec<DynamicObject>> {
    let api = ipam::claims(&scope.ctx.shared.client, &scope.namespace);
    let list = api
        .list(&ListParams::default())
        .await
        .kctx(|| format!("list IPAddressClaims of {}", scope.object()))?;
    Ok(list
        .items
        .into_iter()
        .filter(|c| ipam::floating_ip_pool_of(c) == Some(scope.name.as_str()))
        .collect())
}

/// Delete the addresses whose claim is gone (what Kubernetes' garbage collector does through
/// the owner reference, done here too so that a released claim frees its address without
/// waiting for it); their release follows on the deletion event. They are marked as going
/// away (their addresses stay claimed until they are gone).
pub(super) async fn delete_orphans(
    scope: &Scope<'_>,
    addresses: &mut [Address],
    claims: &[DynamicObject],
    paused: &Paused,
) -> Result<()> {
    let api = ipam::addresses(&scope.ctx.shared.client, &scope.namespace);
    for a in addresses
        .iter_mut()
        .filter(|a| !a.deleting && !paused.holds(&a.obj))
    {
        let claim = a.obj.data["spec"]["claimRef"]["name"]
            .as_str()
            .unwrap_or(&a.name);
        let owner = a
            .obj
            .owner_references()
            .iter()
            .find(|o| o.kind == ipam::CLAIM_KIND);
        let alive = claims.iter().any(|c| {
            c.name_any() == claim
                && owner.is_none_or(|o| c.uid().as_deref() == Some(o.uid.as_str()))
        });
        if alive {
            continue;
        }
        tracing::info!(pool = %scope.name, address = %a.name, "deleting the IPAddress of a deleted claim");
        match api.delete(&a.name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(ae)) if ae.code == 404 => {}
            Err(e) => {
                return Err(crate::Error::kube(
                    format!("delete IPAddress {}", a.name),
                    e,
                ));
            }
        }
        a.deleting = true;
    }
    Ok(())
}

/// Let go of the addresses being deleted: with `reclaimPolicy: Delete` the floating IP the
/// pool allocated is released first (so a crash never forgets it), then the finalizer goes.
/// Returns the addresses still standing (those of a paused Cluster wait).
pub(super) async fn release_deleted(
    scope: &Scope<'_>,
    s: &capo_openstack::Session,
    inventory: &mut capo_cloud::networking::floating_ip_pool::Inventory,
    addresses: Vec<Address>,
    paused: &Paused,
) -> Result<Vec<Address>> {
    use capo_api::v1alpha1::ReclaimPolicy;
    use capo_cloud::networking::floating_ip_pool as fips;
    let api = ipam::addresses(&scope.ctx.shared.client, &scope.namespace);
    let spec = &scope.obj.spec;
    let mut standing = Vec::with_capacity(addresses.len());
    for a in addresses {
        let ours = a
            .obj
            .finalizers()
            .iter()
            .any(|f| f == DELETE_FLOATING_IP_FINALIZER);
        if !a.deleting || !ours || paused.holds(&a.obj) {
            standing.push(a);
            continue;
        }
        let pre_allocated = spec.pre_allocated_floating_ips.contains(&a.address);
        if spec.reclaim_policy == ReclaimPolicy::Delete && !pre_allocated {
            let fip = inventory
                .by_address(&a.address)
                .filter(|f| scope.owner.allocated(f))
                .map(|f| f.id.clone());
            if let Some(id) = fip {
                fips::release(s, &id).await?;
                inventory.forget(&id);
                let note = format!("released floating IP {} of IPAddress {}", a.address, a.name);
                scope
                    .event(
                        kube::runtime::events::EventType::Normal,
                        "SuccessfulDeleteFloatingIP",
                        "Release",
                        Some(note),
                    )
                    .await;
            }
        }
        ipam::remove_finalizer(&api, &a.obj, DELETE_FLOATING_IP_FINALIZER).await?;
    }
    Ok(standing)
}

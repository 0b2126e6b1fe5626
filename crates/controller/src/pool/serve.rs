//! Answering the claims on a pool: one IPAddress per claim, then the claim's addressRef.

use std::collections::BTreeMap;

use capo_api::constants::condition_reasons::MAX_IPS_REACHED;
use capo_api::constants::condition_types::{FLOATING_IP_POOL_READY, READY};
use capo_api::constants::{CLUSTER_NAME_LABEL, DELETE_FLOATING_IP_FINALIZER};
use capo_api::v1beta2::NetworkStatus;
use capo_cloud::networking::external::find_external_network;
use capo_cloud::networking::floating_ip_pool as fips;
use capo_openstack::Session;
use capo_openstack::network::FloatingIp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::claims::{delete_orphans, pool_addresses, pool_claims, release_deleted};
use super::ledger::{Address, Ledger};
use super::paused::Paused;
use super::scope::Scope;
use crate::conditions::State;
use crate::error::{Error, KubeContext, Result};
use crate::ipam;

/// Release what is going away, resolve the network, answer the pending claims and write
/// status.
pub(super) async fn serve(scope: &mut Scope<'_>) -> Result<Action> {
    let s = scope.session().await?;
    let mut inventory = fips::inventory(&s).await?;
    let (addresses, elsewhere) = pool_addresses(scope).await?;
    let claims = pool_claims(scope).await?;
    let objects = claims.iter().chain(addresses.iter().map(|a| &a.obj));
    let paused = Paused::read(scope, objects).await?;
    let mut addresses = release_deleted(scope, &s, &mut inventory, addresses, &paused).await?;
    delete_orphans(scope, &mut addresses, &claims, &paused).await?;
    let network = network(scope, &s).await?;
    let mut ledger = Ledger::new(&scope.obj.spec, &scope.owner, &inventory, &addresses);
    ledger.exclude(&elsewhere);
    let mut max_reached = false;
    let (waiting, pending): (Vec<_>, Vec<_>) = pending(&claims, &addresses)
        .into_iter()
        .partition(|c| paused.holds(c));
    for claim in pending {
        let name = claim.name_any();
        if let Some(a) = addresses.iter().find(|a| a.name == name) {
            // Created before a crash that skipped the claim's status, or going away (wait).
            if !a.deleting {
                set_address_ref(scope, &name).await?;
            }
            continue;
        }
        let Some(fip) = next_floating_ip(scope, &s, &mut ledger, &network.id).await? else {
            max_reached = true;
            break;
        };
        let Some(address) = create_address(scope, &claim, &fip.floating_ip_address).await? else {
            // Still unclaimed: the next claim gets it.
            ledger.available.push_front(fip);
            continue;
        };
        ledger.claimed.push(address.address.clone());
        addresses.push(address);
        set_address_ref(scope, &name).await?;
    }
    scope.status.claimed_ips = ledger.claimed_sorted();
    scope.status.available_ips = ledger.available_addresses();
    scope.status.failed_ips = ledger.failed.clone();
    let state = if max_reached {
        State::warning(
            MAX_IPS_REACHED,
            format!(
                "maxIPs ({}) addresses are claimed; no more floating IPs are allocated",
                scope.obj.spec.max_ips.unwrap_or_default()
            ),
        )
    } else {
        State::True
    };
    scope.set(FLOATING_IP_POOL_READY, state.clone());
    scope.set(READY, state);
    scope.flush().await?;
    if !waiting.is_empty() {
        // Resuming a Cluster changes no claim: look again, backing off while it lasts.
        return Ok(Action::requeue(
            scope.ctx.memo.delay(&scope.key(), "ClaimsPaused"),
        ));
    }
    Ok(scope.resync_later())
}

/// The pool's network: resolved once and kept in status (the webhook keeps the spec's
/// network immutable). Not found, several, or not external is a spec error
/// (UnableToFindNetwork, retried slowly until the cloud has it).
async fn network(scope: &mut Scope<'_>, s: &Session) -> Result<NetworkStatus> {
    if let Some(n) = &scope.status.floating_ip_network {
        return Ok(n.clone());
    }
    let param = scope.obj.spec.floating_ip_network.as_ref();
    let found = match find_external_network(s, param, "floatingIPNetwork").await {
        Ok(found) => found,
        Err(e @ capo_cloud::Error::Ambiguous { .. }) => {
            return Err(Error::InvalidSpec(e.to_string()));
        }
        Err(e) => return Err(e.into()),
    };
    let Some(n) = found else {
        return Err(Error::InvalidSpec(
            "the cloud has no external network to allocate floating IPs from; set spec.floatingIPNetwork"
                .to_owned(),
        ));
    };
    // Same fields as the cloud's v1beta1 form; v1beta2's schema only bounds them.
    let n = NetworkStatus {
        name: capo_cloud::networking::status_name(n.name, &n.id),
        id: n.id,
        tags: n.tags,
    };
    scope.status.floating_ip_network = Some(n.clone());
    scope.flush().await?;
    Ok(n)
}

/// The claims on this pool that are not going away and have no address yet, or whose
/// address is gone (deleted by hand: the claim is served again), oldest first.
fn pending(claims: &[DynamicObject], addresses: &[Address]) -> Vec<DynamicObject> {
    let mut pending: Vec<DynamicObject> = claims
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter(|c| {
            let held = c.data["status"]["addressRef"]["name"].as_str();
            held.is_none_or(|n| !addresses.iter().any(|a| a.name == n))
        })
        .cloned()
        .collect();
    pending.sort_by(|a, b| {
        let key = |o: &DynamicObject| (o.metadata.creation_timestamp.clone(), o.name_any());
        key(a).cmp(&key(b))
    });
    pending
}

/// The floating IP for the next claim: an available one (tagged if a crash skipped that),
/// else a new one; None when `maxIPs` forbids allocating.
async fn next_floating_ip(
    scope: &Scope<'_>,
    s: &Session,
    ledger: &mut Ledger,
    network_id: &str,
) -> Result<Option<FloatingIp>> {
    if let Some(mut fip) = ledger.available.pop_front() {
        if scope.owner.allocated(&fip) {
            fips::ensure_tagged(s, &scope.owner, &mut fip).await?;
        }
        return Ok(Some(fip));
    }
    if ledger.at_max(scope.obj.spec.max_ips) {
        return Ok(None);
    }
    let fip = fips::allocate(s, &scope.owner, network_id).await?;
    let note = format!("allocated floating IP {}", fip.floating_ip_address);
    scope
        .event(
            EventType::Normal,
            "SuccessfulCreateFloatingIP",
            "Allocate",
            Some(note),
        )
        .await;
    Ok(Some(fip))
}

/// Create the IPAddress answering `claim` with `address`. One that already exists under the
/// claim's name (created by an earlier run) is taken as it is; None when that one is being
/// deleted (the claim waits) or belongs to another pool (reported, the claim is left alone).
async fn create_address(
    scope: &Scope<'_>,
    claim: &DynamicObject,
    address: &str,
) -> Result<Option<Address>> {
    let api: Api<DynamicObject> = ipam::addresses(&scope.ctx.shared.client, &scope.namespace);
    let name = claim.name_any();
    let mut obj = DynamicObject::new(&name, &ipam::address_resource()).within(&scope.namespace);
    obj.metadata.finalizers = Some(vec![DELETE_FLOATING_IP_FINALIZER.to_owned()]);
    obj.metadata.owner_references = Some(vec![OwnerReference {
        api_version: format!("{}/{}", ipam::GROUP, ipam::VERSION),
        kind: ipam::CLAIM_KIND.to_owned(),
        name: name.clone(),
        uid: claim.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    if let Some(c) = claim.labels().get(CLUSTER_NAME_LABEL) {
        obj.metadata.labels = Some(BTreeMap::from([(CLUSTER_NAME_LABEL.to_owned(), c.clone())]));
    }
    obj.data = json!({"spec": {
        "address": address,
        "prefix": 32,
        "claimRef": {"name": name},
        "poolRef": {
            "apiGroup": capo_api::constants::GROUP,
            "kind": ipam::POOL_KIND,
            "name": scope.name,
        },
    }});
    let created = match api.create(&PostParams::default(), &obj).await {
        Ok(o) => o,
        Err(kube::Error::Api(ae)) if ae.code == 409 => api
            .get(&name)
            .await
            .kctx(|| format!("get IPAddress {name}"))?,
        Err(e) => return Err(Error::kube(format!("create IPAddress {name}"), e)),
    };
    if created.metadata.deletion_timestamp.is_some() {
        // The claim's previous address, still going away: served once it is gone.
        return Ok(None);
    }
    if ipam::floating_ip_pool_of(&created) != Some(scope.name.as_str()) {
        let note =
            format!("IPAddress {name} already exists for another pool; claim {name} is not served");
        tracing::warn!(pool = %scope.name, claim = %name, "{note}");
        scope
            .event(EventType::Warning, "IPAddressConflict", "Claim", Some(note))
            .await;
        return Ok(None);
    }
    tracing::info!(pool = %scope.name, claim = %name, address = %address, "claimed floating IP");
    Ok(Some(Address::from(created)))
}

/// Point claim `name` at the IPAddress of the same name.
async fn set_address_ref(scope: &Scope<'_>, name: &str) -> Result<()> {
    let api = ipam::claims(&scope.ctx.shared.client, &scope.namespace);
    let patch = json!({"status": {"addressRef": {"name": name}}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .kctx(|| format!("set status.addressRef of IPAddressClaim {name}"))?;
    Ok(())
}

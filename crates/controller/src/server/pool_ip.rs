//! A floating IP from an OpenStackFloatingIPPool (`spec.floatingIPPoolRef`), through Cluster
//! API IPAM: the server claims an address with an IPAddressClaim
//! `<server>-floating-ip-address` (owned by the server, with the claim finalizer), the pool
//! fulfils it with an IPAddress whose address is a Neutron floating IP it allocated, and the
//! server associates that floating IP with its first port. On delete the claim is released
//! (finalizer removed, claim deleted); the pool owns the floating IP itself.

use std::collections::BTreeMap;

use capo_api::constants::{CLUSTER_NAME_LABEL, IP_CLAIM_FINALIZER};
use capo_api::names::floating_ip_claim_name;
use capo_api::v1beta1::TypedLocalObjectReference;
use capo_cloud::Progress;
use capo_cloud::networking::floating_ip::{self as fip, MoveFrom};
use capo_openstack::Session;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::scope::Scope;
use crate::error::{Error, KubeContext, Result};
use crate::ipam;

fn claims(scope: &Scope<'_>) -> Api<DynamicObject> {
    ipam::claims(&scope.ctx.shared.client, &scope.namespace)
}

/// The pool's floating IP on `port_id`: Done(address) once associated, Waiting while the pool
/// has not answered the claim yet.
pub(super) async fn ensure(
    scope: &Scope<'_>,
    s: &Session,
    pool: &TypedLocalObjectReference,
    port_id: &str,
) -> Result<Progress<String>> {
    let name = floating_ip_claim_name(&scope.owner.name);
    let api = claims(scope);
    let Some(claim) = api
        .get_opt(&name)
        .await
        .kctx(|| format!("get IPAddressClaim {name}"))?
    else {
        create_claim(scope, &api, &name, pool).await?;
        return Ok(Progress::waiting(
            "IPAddressClaim",
            &name,
            format!("waiting for IPAddressClaim {name} to be fulfilled"),
        ));
    };
    let Some(address_name) = claim.data["status"]["addressRef"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
    else {
        return Ok(Progress::waiting(
            "IPAddressClaim",
            &name,
            format!(
                "waiting for pool {} to fulfil IPAddressClaim {name}",
                pool.name
            ),
        ));
    };
    let addresses = ipam::addresses(&scope.ctx.shared.client, &scope.namespace);
    let Some(ip) = addresses
        .get_opt(address_name)
        .await
        .kctx(|| format!("get IPAddress {address_name}"))?
    else {
        return Ok(Progress::waiting(
            "IPAddress",
            address_name,
            format!("waiting for IPAddress {address_name}"),
        ));
    };
    let Some(address) = ip.data["spec"]["address"]
        .as_str()
        .filter(|a| !a.is_empty())
    else {
        return Ok(Progress::waiting(
            "IPAddress",
            address_name,
            format!("IPAddress {address_name} has no address yet"),
        ));
    };
    if !fip::move_address(s, address, Some(port_id), MoveFrom::Anywhere).await? {
        return Ok(Progress::waiting(
            "floating IP",
            address,
            format!("floating IP {address} of pool {} not found", pool.name),
        ));
    }
    Ok(Progress::Done(address.to_owned()))
}

async fn create_claim(
    scope: &Scope<'_>,
    api: &Api<DynamicObject>,
    name: &str,
    pool: &TypedLocalObjectReference,
) -> Result<()> {
    let mut claim = DynamicObject::new(name, &ipam::claim_resource()).within(&scope.namespace);
    claim.metadata.finalizers = Some(vec![IP_CLAIM_FINALIZER.to_owned()]);
    claim.metadata.owner_references = scope.obj.controller_owner_ref(&()).map(|r| vec![r]);
    if let Some(c) = scope.obj.labels().get(CLUSTER_NAME_LABEL) {
        claim.metadata.labels = Some(BTreeMap::from([(CLUSTER_NAME_LABEL.to_owned(), c.clone())]));
    }
    let group = pool
        .api_group
        .clone()
        .unwrap_or_else(|| capo_api::constants::GROUP.to_owned());
    claim.data =
        json!({"spec": {"poolRef": {"apiGroup": group, "kind": pool.kind, "name": pool.name}}});
    match api.create(&PostParams::default(), &claim).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(ae)) if ae.code == 409 => Ok(()),
        Err(e) => Err(Error::kube(format!("create IPAddressClaim {name}"), e)),
    }
}

/// Release the claim: remove our finalizer and delete it (absent is done).
pub(super) async fn release(scope: &Scope<'_>) -> Result<()> {
    let name = floating_ip_claim_name(&scope.owner.name);
    let api = claims(scope);
    let Some(claim) = api
        .get_opt(&name)
        .await
        .kctx(|| format!("get IPAddressClaim {name}"))?
    else {
        return Ok(());
    };
    ipam::remove_finalizer(&api, &claim, IP_CLAIM_FINALIZER).await?;
    if claim.metadata.deletion_timestamp.is_none() {
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(ae)) if ae.code == 404 => {}
            Err(e) => return Err(Error::kube(format!("delete IPAddressClaim {name}"), e)),
        }
    }
    Ok(())
}

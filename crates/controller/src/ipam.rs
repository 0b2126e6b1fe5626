//! Cluster API IPAM objects (`ipam.cluster.x-k8s.io/v1beta2` IPAddressClaim and IPAddress),
//! read and written as dynamic objects: the servers' claims on a floating IP pool and the
//! pool's answers.

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use crate::error::{Error, Result};

/// API group of Cluster API IPAM.
pub const GROUP: &str = "ipam.cluster.x-k8s.io";
/// The served version capo reads and writes.
pub const VERSION: &str = "v1beta2";
/// Kind of a claim.
pub const CLAIM_KIND: &str = "IPAddressClaim";
/// Kind of an address.
pub const ADDRESS_KIND: &str = "IPAddress";
/// Kind of capo's pool, as named in a `poolRef`.
pub const POOL_KIND: &str = "OpenStackFloatingIPPool";

/// The API resource of IPAddressClaims.
pub fn claim_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk(GROUP, VERSION, CLAIM_KIND);
    ApiResource::from_gvk_with_plural(&gvk, "ipaddressclaims")
}

/// The API resource of IPAddresses.
pub fn address_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk(GROUP, VERSION, ADDRESS_KIND);
    ApiResource::from_gvk_with_plural(&gvk, "ipaddresses")
}

/// IPAddressClaims of `namespace`.
pub fn claims(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &claim_resource())
}

/// IPAddresses of `namespace`.
pub fn addresses(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &address_resource())
}

/// The OpenStackFloatingIPPool a claim's or an address's `spec.poolRef` names, if it names one
/// (group infrastructure.cluster.x-k8s.io, kind OpenStackFloatingIPPool).
pub fn floating_ip_pool_of(obj: &DynamicObject) -> Option<&str> {
    let pool = &obj.data["spec"]["poolRef"];
    let group = pool["apiGroup"].as_str().unwrap_or_default();
    let ours = group == capo_api::constants::GROUP && pool["kind"] == POOL_KIND;
    ours.then(|| pool["name"].as_str())
        .flatten()
        .filter(|n| !n.is_empty())
}

/// Remove `finalizer` from `obj` (optimistic concurrency on its resourceVersion; absent
/// finalizer or object is done).
pub async fn remove_finalizer(
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    finalizer: &str,
) -> Result<()> {
    if !obj.finalizers().iter().any(|f| f == finalizer) {
        return Ok(());
    }
    let rest: Vec<&String> = obj
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .collect();
    let name = obj.name_any();
    let patch =
        json!({"metadata": {"finalizers": rest, "resourceVersion": obj.resource_version()}});
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(ae)) if ae.code == 404 => Ok(()),
        Err(e) => Err(Error::kube(
            format!("remove finalizer {finalizer} of {name}"),
            e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(pool_ref: serde_json::Value) -> DynamicObject {
        let mut o = DynamicObject::new("c", &claim_resource());
        o.data = json!({"spec": {"poolRef": pool_ref}});
        o
    }

    #[test]
    fn only_floating_ip_pools_of_capos_group() {
        let ours =
            obj(json!({"apiGroup": capo_api::constants::GROUP, "kind": POOL_KIND, "name": "p"}));
        assert_eq!(floating_ip_pool_of(&ours), Some("p"));
        let other_kind = obj(
            json!({"apiGroup": capo_api::constants::GROUP, "kind": "InClusterIPPool", "name": "p"}),
        );
        assert_eq!(floating_ip_pool_of(&other_kind), None);
        let other_group = obj(json!({"apiGroup": "example.com", "kind": POOL_KIND, "name": "p"}));
        assert_eq!(floating_ip_pool_of(&other_group), None);
    }
}

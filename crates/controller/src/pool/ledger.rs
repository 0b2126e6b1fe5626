//! Which of the pool's addresses are claimed, available or failed, recomputed on every
//! reconcile from the two sources of truth: the pool's IPAddresses (claimed) and the project's
//! floating IPs (what exists). Nothing is taken from the pool's own status, so a lost or stale
//! status (`clusterctl move`, a crash before the status write) can neither hide a floating IP
//! nor hand one out twice.

use std::collections::VecDeque;

use capo_api::v1alpha1::OpenStackFloatingIPPoolSpec;
use capo_cloud::networking::floating_ip_pool::{Inventory, PoolOwner};
use capo_openstack::network::FloatingIp;
use kube::ResourceExt;
use kube::api::DynamicObject;

/// An IPAddress of the pool, as far as the pool cares.
#[derive(Debug, Clone)]
pub(super) struct Address {
    /// The object (for finalizer patches).
    pub obj: DynamicObject,
    /// Its name (the claim's name).
    pub name: String,
    /// `spec.address`.
    pub address: String,
    /// Being deleted.
    pub deleting: bool,
}

impl Address {
    /// Read an IPAddress.
    pub fn from(obj: DynamicObject) -> Self {
        Address {
            name: obj.name_any(),
            address: obj.data["spec"]["address"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            deleting: obj.metadata.deletion_timestamp.is_some(),
            obj,
        }
    }
}

/// The pool's addresses by state.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    /// Addresses held by an IPAddress, including one going away: its address is not handed
    /// out before the IPAddress is gone (its release may still delete the floating IP).
    pub claimed: Vec<String>,
    /// Unclaimed floating IPs of the pool, in hand-out order: pre-allocated ones first (in
    /// spec order), then those the pool allocated.
    pub available: VecDeque<FloatingIp>,
    /// Pre-allocated addresses the project has no floating IP for.
    pub failed: Vec<String>,
}

impl Ledger {
    /// The ledger of `spec`'s pool given its standing `addresses` (those already released are
    /// left out by the caller) and the project's floating IPs.
    pub fn new(
        spec: &OpenStackFloatingIPPoolSpec,
        owner: &PoolOwner,
        inventory: &Inventory,
        addresses: &[Address],
    ) -> Self {
        let claimed: Vec<String> = addresses
            .iter()
            .filter(|a| !a.address.is_empty())
            .map(|a| a.address.clone())
            .collect();
        let mut ledger = Ledger {
            claimed,
            ..Default::default()
        };
        for ip in &spec.pre_allocated_floating_ips {
            match inventory.by_address(ip) {
                Some(f) => ledger.offer(f),
                None => ledger.failed.push(ip.clone()),
            }
        }
        for f in inventory.allocated_by(owner) {
            ledger.offer(f);
        }
        ledger
    }

    fn offer(&mut self, f: &FloatingIp) {
        let address = &f.floating_ip_address;
        let known = self.claimed.contains(address)
            || self
                .available
                .iter()
                .any(|a| &a.floating_ip_address == address);
        if !known {
            self.available.push_back(f.clone());
        }
    }

    /// Take `addresses` held elsewhere (another pool's IPAddresses) out of the available ones.
    pub fn exclude(&mut self, addresses: &[String]) {
        self.available
            .retain(|f| !addresses.contains(&f.floating_ip_address));
    }

    /// Whether `max_ips` forbids allocating another floating IP (upstream: claimed addresses
    /// reached the limit).
    pub fn at_max(&self, max_ips: Option<i32>) -> bool {
        max_ips.is_some_and(|m| self.claimed.len() >= usize::try_from(m).unwrap_or(0))
    }

    /// Addresses for `status.availableIPs`.
    pub fn available_addresses(&self) -> Vec<String> {
        self.available
            .iter()
            .map(|f| f.floating_ip_address.clone())
            .collect()
    }

    /// Addresses for `status.claimedIPs` (sorted: a stable status writes nothing).
    pub fn claimed_sorted(&self) -> Vec<String> {
        let mut c = self.claimed.clone();
        c.sort();
        c.dedup();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capo_api::v1alpha1::ReclaimPolicy;
    use capo_api::v1beta2::OpenStackIdentityReference;
    use serde_json::json;

    fn owner() -> PoolOwner {
        PoolOwner {
            uid: "u".into(),
            namespace: "ns".into(),
            name: "p".into(),
        }
    }

    fn fip(id: &str, ip: &str, description: &str) -> serde_json::Value {
        json!({"id": id, "floating_ip_address": ip, "floating_network_id": "ext",
               "description": description, "tags": []})
    }

    fn address(name: &str, ip: &str, deleting: bool) -> Address {
        let mut obj = DynamicObject::new(name, &crate::ipam::address_resource());
        obj.data = json!({"spec": {"address": ip}});
        if deleting {
            obj.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ));
        }
        Address::from(obj)
    }

    fn spec(pre: &[&str]) -> OpenStackFloatingIPPoolSpec {
        OpenStackFloatingIPPoolSpec {
            floating_ip_network: None,
            identity_ref: serde_json::from_value::<OpenStackIdentityReference>(
                json!({"name": "c", "cloudName": "openstack"}),
            )
            .unwrap(),
            max_ips: None,
            pre_allocated_floating_ips: pre.iter().map(|s| (*s).to_owned()).collect(),
            reclaim_policy: ReclaimPolicy::Delete,
        }
    }

    #[test]
    fn pre_allocated_first_claimed_excluded_missing_failed() {
        let o = owner();
        let fips: Vec<FloatingIp> = serde_json::from_value(json!([
            fip("1", "203.0.113.1", &o.description()),
            fip("2", "203.0.113.2", "someone else's"),
            fip("3", "203.0.113.3", &o.description()),
            fip("4", "203.0.113.4", "pre"),
        ]))
        .unwrap();
        let inv = Inventory::from(fips);
        let addrs = [
            address("a", "203.0.113.3", false),
            address("b", "203.0.113.1", true),
        ];
        let l = Ledger::new(&spec(&["203.0.113.4", "198.51.100.9"]), &o, &inv, &addrs);
        // b is going away but still holds .1: not available until it is gone.
        assert_eq!(l.claimed, vec!["203.0.113.3", "203.0.113.1"]);
        assert_eq!(l.available_addresses(), vec!["203.0.113.4"]);
        assert_eq!(l.failed, vec!["198.51.100.9"]);
        assert!(!l.at_max(None));
        assert!(l.at_max(Some(2)));
        assert!(!l.at_max(Some(3)));
        let mut l = l;
        l.exclude(&["203.0.113.4".to_owned()]);
        assert!(l.available_addresses().is_empty());
    }
}

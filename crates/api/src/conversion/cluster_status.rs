//! The cluster status.
//!
//! v1beta2 drops `ready`, `failureReason` and `failureMessage` (readiness is the `Ready`
//! condition, provisioning is `initialization.provisioned`, which both versions have), renames
//! `apiServerLoadBalancer` to `apiServerManagedLoadBalancer`, and turns the failure-domain map
//! into a list sorted by name. On the way back `ready` is derived from the `Ready` condition as
//! upstream does; values that differ from that, and the failure fields, travel in the
//! conversion-data annotation.

use crate::conversion::conditions;
use crate::conversion::error::ConversionError;
use crate::conversion::error::join;
use crate::conversion::ports::{resolved_spec_to_v1beta1, resolved_spec_to_v1beta2};
use crate::conversion::recast::recast;
use crate::v1beta1;
use crate::v1beta2;
use std::collections::BTreeMap;

/// A v1beta1 cluster status in v1beta2; conditions are observed at `generation`.
pub(crate) fn to_v1beta2(
    s: &v1beta1::OpenStackClusterStatus,
    generation: Option<i64>,
) -> Result<v1beta2::OpenStackClusterStatus, ConversionError> {
    Ok(v1beta2::OpenStackClusterStatus {
        api_server_managed_load_balancer: opt(
            &s.api_server_load_balancer,
            "status.apiServerLoadBalancer",
        )?
        .map(load_balancer_address),
        bastion: s
            .bastion
            .as_ref()
            .map(|b| bastion_to_v1beta2(b, "status.bastion"))
            .transpose()?,
        bastion_security_group: opt(&s.bastion_security_group, "status.bastionSecurityGroup")?,
        conditions: conditions::to_v1beta2(&s.conditions, generation, "status.conditions")?,
        control_plane_security_group: opt(
            &s.control_plane_security_group,
            "status.controlPlaneSecurityGroup",
        )?,
        external_network: opt(&s.external_network, "status.externalNetwork")?,
        failure_domains: s
            .failure_domains
            .iter()
            .map(|(name, d)| v1beta2::FailureDomain {
                attributes: d.attributes.clone(),
                control_plane: d.control_plane,
                name: name.clone(),
            })
            .collect(),
        initialization: s.initialization.clone(),
        network: opt(&s.network, "status.network")?,
        router: opt(&s.router, "status.router")?,
        worker_security_group: opt(&s.worker_security_group, "status.workerSecurityGroup")?,
        extensions: s.extensions.clone(),
    })
}

/// A v1beta2 cluster status in v1beta1.
pub(crate) fn to_v1beta1(
    s: &v1beta2::OpenStackClusterStatus,
) -> Result<v1beta1::OpenStackClusterStatus, ConversionError> {
    let mut failure_domains = BTreeMap::new();
    for (i, d) in s.failure_domains.iter().enumerate() {
        let spec = v1beta1::FailureDomainSpec {
            attributes: d.attributes.clone(),
            control_plane: d.control_plane,
        };
        if failure_domains.insert(d.name.clone(), spec).is_some() {
            return Err(ConversionError::new(
                format!("status.failureDomains[{i}].name"),
                format!(
                    "repeats failure domain {:?}; names are keys of a map in v1beta1",
                    d.name
                ),
            ));
        }
    }
    Ok(v1beta1::OpenStackClusterStatus {
        api_server_load_balancer: opt(
            &s.api_server_managed_load_balancer,
            "status.apiServerManagedLoadBalancer",
        )?
        .map(load_balancer_floating_ip),
        bastion: s
            .bastion
            .as_ref()
            .map(|b| bastion_to_v1beta1(b, "status.bastion"))
            .transpose()?,
        bastion_security_group: opt(&s.bastion_security_group, "status.bastionSecurityGroup")?,
        conditions: conditions::to_v1beta1(&s.conditions, "status.conditions")?,
        control_plane_security_group: opt(
            &s.control_plane_security_group,
            "status.controlPlaneSecurityGroup",
        )?,
        external_network: opt(&s.external_network, "status.externalNetwork")?,
        failure_domains,
        failure_message: None,
        failure_reason: None,
        initialization: s.initialization.clone(),
        network: opt(&s.network, "status.network")?,
        ready: conditions::ready(&s.conditions).unwrap_or(false),
        router: opt(&s.router, "status.router")?,
        worker_security_group: opt(&s.worker_security_group, "status.workerSecurityGroup")?,
        extensions: s.extensions.clone(),
    })
}

/// v1beta1 leaves the load balancer's `ip` empty when it has no floating IP; v1beta2 requires
/// an address there, so it gets the one the load balancer is reached at, its VIP. The empty
/// v1beta1 value travels in the conversion data like any other difference.
fn load_balancer_address(mut lb: v1beta2::LoadBalancer) -> v1beta2::LoadBalancer {
    if lb.ip.is_empty() {
        lb.ip = lb.internal_ip.clone();
    }
    lb
}

/// The way back: v1beta1's `ip` holds only the floating IP (upstream v0.14 writes it when the
/// floating IP exists, and never the VIP), so the VIP that v1beta2 shows there becomes empty
/// again. A floating IP is never the VIP, so the two directions undo each other.
fn load_balancer_floating_ip(mut lb: v1beta1::LoadBalancer) -> v1beta1::LoadBalancer {
    if lb.ip == lb.internal_ip {
        lb.ip.clear();
    }
    lb
}

/// An optional value whose JSON is the same in both versions.
fn opt<T: serde::Serialize, U: serde::Serialize + serde::de::DeserializeOwned>(
    value: &Option<T>,
    path: &str,
) -> Result<Option<U>, ConversionError> {
    value.as_ref().map(|v| recast(v, path)).transpose()
}

fn bastion_to_v1beta2(
    b: &v1beta1::BastionStatus,
    path: &str,
) -> Result<v1beta2::BastionStatus, ConversionError> {
    Ok(v1beta2::BastionStatus {
        floating_ip: b.floating_ip.clone(),
        id: b.id.clone(),
        ip: b.ip.clone(),
        name: b.name.clone(),
        resolved: b
            .resolved
            .as_ref()
            .map(|r| resolved_spec_to_v1beta2(r, &join(path, "resolved")))
            .transpose()?,
        resources: opt(&b.resources, &join(path, "resources"))?,
        ssh_key_name: b.ssh_key_name.clone(),
        state: b.state.clone(),
    })
}

fn bastion_to_v1beta1(
    b: &v1beta2::BastionStatus,
    path: &str,
) -> Result<v1beta1::BastionStatus, ConversionError> {
    Ok(v1beta1::BastionStatus {
        floating_ip: b.floating_ip.clone(),
        id: b.id.clone(),
        ip: b.ip.clone(),
        name: b.name.clone(),
        resolved: b
            .resolved
            .as_ref()
            .map(|r| resolved_spec_to_v1beta1(r, &join(path, "resolved")))
            .transpose()?,
        resources: opt(&b.resources, &join(path, "resources"))?,
        ssh_key_name: b.ssh_key_name.clone(),
        state: b.state.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_domains_become_a_sorted_list_and_back() {
        let mut status = v1beta1::OpenStackClusterStatus::default();
        for name in ["b", "a"] {
            status.failure_domains.insert(
                name.into(),
                v1beta1::FailureDomainSpec {
                    control_plane: Some(name == "a"),
                    ..Default::default()
                },
            );
        }
        let up = to_v1beta2(&status, None).unwrap_or_default();
        let names: Vec<_> = up.failure_domains.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let down = to_v1beta1(&up).unwrap_or_default();
        assert_eq!(down, status);
    }

    #[test]
    fn repeated_failure_domains_are_refused() {
        let domain = v1beta2::FailureDomain {
            name: "az".into(),
            ..Default::default()
        };
        let status = v1beta2::OpenStackClusterStatus {
            failure_domains: vec![domain.clone(), domain],
            ..Default::default()
        };
        let err = to_v1beta1(&status).err().map(|e| e.path);
        assert_eq!(err, Some("status.failureDomains[1].name".to_owned()));
    }
}

//! The cluster spec, shared by OpenStackCluster and OpenStackClusterTemplate.
//!
//! v1beta2 groups v1beta1's flat API-server fields under `apiServer`, the network settings
//! under `managedNetwork` and the router's external IPs under `managedRouter`, inverts three
//! booleans, and renames `allNodesSecurityGroupRules`. A group is present in v1beta2 exactly
//! when one of its v1beta1 fields is set, so absent stays absent both ways; a group that is
//! present but empty in v1beta2 has no v1beta1 form and travels in the annotation.

use crate::conversion::error::{ConversionError, join};
use crate::conversion::recast::{negate, recast, recast_all};
use crate::conversion::{identity, machine_spec};
use crate::v1beta1;
use crate::v1beta2;

/// A v1beta1 cluster spec (at `path`) in v1beta2.
pub(crate) fn to_v1beta2(
    s: &v1beta1::OpenStackClusterSpec,
    path: &str,
) -> Result<v1beta2::OpenStackClusterSpec, ConversionError> {
    let api_set = s.api_server_fixed_ip.is_some()
        || s.api_server_floating_ip.is_some()
        || s.api_server_load_balancer.is_some()
        || s.api_server_port.is_some()
        || s.disable_api_server_floating_ip.is_some();
    let api_server = if api_set {
        Some(v1beta2::APIServer {
            enable_floating_ip: negate(s.disable_api_server_floating_ip),
            fixed_ip: s.api_server_fixed_ip.clone(),
            floating_ip: s.api_server_floating_ip.clone(),
            managed_load_balancer: s
                .api_server_load_balancer
                .as_ref()
                .map(|lb| load_balancer_to_v1beta2(lb, &join(path, "apiServerLoadBalancer")))
                .transpose()?,
            port: s.api_server_port,
        })
    } else {
        None
    };
    let managed_network =
        (s.network_mtu.is_some() || s.disable_port_security.is_some()).then(|| {
            v1beta2::ManagedNetwork {
                enable_port_security: negate(s.disable_port_security),
                mtu: s.network_mtu,
            }
        });
    let managed_router = if s.external_router_ips.is_empty() {
        None
    } else {
        Some(v1beta2::ManagedRouter {
            external_ips: recast_all(&s.external_router_ips, &join(path, "externalRouterIPs"))?,
        })
    };
    Ok(v1beta2::OpenStackClusterSpec {
        api_server,
        bastion: s
            .bastion
            .as_ref()
            .map(|b| bastion_to_v1beta2(b, &join(path, "bastion")))
            .transpose()?,
        control_plane_availability_zones: s.control_plane_availability_zones.clone(),
        control_plane_endpoint: s
            .control_plane_endpoint
            .as_ref()
            .map(|e| recast(e, &join(path, "controlPlaneEndpoint")))
            .transpose()?,
        control_plane_omit_availability_zone: s.control_plane_omit_availability_zone,
        enable_external_network: negate(s.disable_external_network),
        external_network: s.external_network.clone(),
        identity_ref: identity::to_v1beta2(&s.identity_ref),
        managed_network,
        managed_router,
        managed_security_groups: s
            .managed_security_groups
            .as_ref()
            .map(|g| security_groups_to_v1beta2(g, &join(path, "managedSecurityGroups")))
            .transpose()?,
        managed_subnets: recast_all(&s.managed_subnets, &join(path, "managedSubnets"))?,
        network: s.network.clone(),
        primary_subnet: s
            .primary_subnet
            .as_ref()
            .map(|p| recast(p, &join(path, "primarySubnet")))
            .transpose()?,
        router: s.router.clone(),
        subnets: recast_all(&s.subnets, &join(path, "subnets"))?,
        tags: s.tags.clone(),
        extensions: s.extensions.clone(),
    })
}

/// A v1beta2 cluster spec (at `path`) in v1beta1.
pub(crate) fn to_v1beta1(
    s: &v1beta2::OpenStackClusterSpec,
    path: &str,
) -> Result<v1beta1::OpenStackClusterSpec, ConversionError> {
    let api = s.api_server.clone().unwrap_or_default();
    let network = s.managed_network.clone().unwrap_or_default();
    let api_path = join(path, "apiServer");
    Ok(v1beta1::OpenStackClusterSpec {
        api_server_fixed_ip: api.fixed_ip,
        api_server_floating_ip: api.floating_ip,
        api_server_load_balancer: api
            .managed_load_balancer
            .as_ref()
            .map(|lb| load_balancer_to_v1beta1(lb, &join(&api_path, "managedLoadBalancer")))
            .transpose()?,
        api_server_port: api.port,
        bastion: s
            .bastion
            .as_ref()
            .map(|b| bastion_to_v1beta1(b, &join(path, "bastion")))
            .transpose()?,
        control_plane_availability_zones: s.control_plane_availability_zones.clone(),
        control_plane_endpoint: s
            .control_plane_endpoint
            .as_ref()
            .map(|e| recast(e, &join(path, "controlPlaneEndpoint")))
            .transpose()?,
        control_plane_omit_availability_zone: s.control_plane_omit_availability_zone,
        disable_api_server_floating_ip: negate(api.enable_floating_ip),
        disable_external_network: negate(s.enable_external_network),
        disable_port_security: negate(network.enable_port_security),
        external_network: s.external_network.clone(),
        external_router_ips: match &s.managed_router {
            Some(r) => recast_all(&r.external_ips, &join(path, "managedRouter.externalIPs"))?,
            None => Vec::new(),
        },
        identity_ref: identity::to_v1beta1(&s.identity_ref),
        managed_security_groups: s
            .managed_security_groups
            .as_ref()
            .map(|g| security_groups_to_v1beta1(g, &join(path, "managedSecurityGroups")))
            .transpose()?,
        managed_subnets: recast_all(&s.managed_subnets, &join(path, "managedSubnets"))?,
        network: s.network.clone(),
        network_mtu: network.mtu,
        primary_subnet: s
            .primary_subnet
            .as_ref()
            .map(|p| recast(p, &join(path, "primarySubnet")))
            .transpose()?,
        router: s.router.clone(),
        subnets: recast_all(&s.subnets, &join(path, "subnets"))?,
        tags: s.tags.clone(),
        extensions: s.extensions.clone(),
    })
}

/// v1beta1's load balancer requires `enabled`; v1beta2 leaves it optional (default true).
fn load_balancer_to_v1beta2(
    lb: &v1beta1::APIServerLoadBalancer,
    path: &str,
) -> Result<v1beta2::APIServerLoadBalancer, ConversionError> {
    Ok(v1beta2::APIServerLoadBalancer {
        additional_ports: lb.additional_ports.clone(),
        allowed_cidrs: lb.allowed_cidrs.clone(),
        availability_zone: lb.availability_zone.clone(),
        enabled: Some(lb.enabled),
        flavor: lb.flavor.clone(),
        monitor: lb
            .monitor
            .as_ref()
            .map(|m| recast(m, &join(path, "monitor")))
            .transpose()?,
        network: lb.network.clone(),
        provider: lb.provider.clone(),
        subnets: recast_all(&lb.subnets, &join(path, "subnets"))?,
    })
}

fn load_balancer_to_v1beta1(
    lb: &v1beta2::APIServerLoadBalancer,
    path: &str,
) -> Result<v1beta1::APIServerLoadBalancer, ConversionError> {
    Ok(v1beta1::APIServerLoadBalancer {
        additional_ports: lb.additional_ports.clone(),
        allowed_cidrs: lb.allowed_cidrs.clone(),
        availability_zone: lb.availability_zone.clone(),
        enabled: lb.is_enabled(),
        flavor: lb.flavor.clone(),
        monitor: lb
            .monitor
            .as_ref()
            .map(|m| recast(m, &join(path, "monitor")))
            .transpose()?,
        network: lb.network.clone(),
        provider: lb.provider.clone(),
        subnets: recast_all(&lb.subnets, &join(path, "subnets"))?,
    })
}

/// `allNodesSecurityGroupRules` is `clusterNodesSecurityGroupRules` in v1beta2, and
/// `allowAllInClusterTraffic` becomes optional (default false).
fn security_groups_to_v1beta2(
    g: &v1beta1::ManagedSecurityGroups,
    path: &str,
) -> Result<v1beta2::ManagedSecurityGroups, ConversionError> {
    Ok(v1beta2::ManagedSecurityGroups {
        allow_all_in_cluster_traffic: Some(g.allow_all_in_cluster_traffic),
        cluster_nodes_security_group_rules: recast_all(
            &g.all_nodes_security_group_rules,
            &join(path, "allNodesSecurityGroupRules"),
        )?,
        control_plane_nodes_security_group_rules: recast_all(
            &g.control_plane_nodes_security_group_rules,
            &join(path, "controlPlaneNodesSecurityGroupRules"),
        )?,
        worker_nodes_security_group_rules: recast_all(
            &g.worker_nodes_security_group_rules,
            &join(path, "workerNodesSecurityGroupRules"),
        )?,
    })
}

fn security_groups_to_v1beta1(
    g: &v1beta2::ManagedSecurityGroups,
    path: &str,
) -> Result<v1beta1::ManagedSecurityGroups, ConversionError> {
    Ok(v1beta1::ManagedSecurityGroups {
        all_nodes_security_group_rules: recast_all(
            &g.cluster_nodes_security_group_rules,
            &join(path, "clusterNodesSecurityGroupRules"),
        )?,
        allow_all_in_cluster_traffic: g.allow_all_in_cluster_traffic(),
        control_plane_nodes_security_group_rules: recast_all(
            &g.control_plane_nodes_security_group_rules,
            &join(path, "controlPlaneNodesSecurityGroupRules"),
        )?,
        worker_nodes_security_group_rules: recast_all(
            &g.worker_nodes_security_group_rules,
            &join(path, "workerNodesSecurityGroupRules"),
        )?,
    })
}

fn bastion_to_v1beta2(
    b: &v1beta1::Bastion,
    path: &str,
) -> Result<v1beta2::Bastion, ConversionError> {
    Ok(v1beta2::Bastion {
        availability_zone: b.availability_zone.clone(),
        enabled: b.enabled,
        floating_ip: b.floating_ip.clone(),
        spec: b
            .spec
            .as_ref()
            .map(|s| machine_spec::to_v1beta2(s, &join(path, "spec")))
            .transpose()?,
    })
}

fn bastion_to_v1beta1(
    b: &v1beta2::Bastion,
    path: &str,
) -> Result<v1beta1::Bastion, ConversionError> {
    Ok(v1beta1::Bastion {
        availability_zone: b.availability_zone.clone(),
        enabled: b.enabled,
        floating_ip: b.floating_ip.clone(),
        spec: b
            .spec
            .as_ref()
            .map(|s| machine_spec::to_v1beta1(s, &join(path, "spec")))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_appear_only_when_a_member_is_set() {
        let spec = v1beta1::OpenStackClusterSpec::default();
        let up = to_v1beta2(&spec, "spec").unwrap_or_default();
        assert!(
            up.api_server.is_none() && up.managed_network.is_none() && up.managed_router.is_none()
        );
        assert_eq!((up.enable_external_network, up.api_server), (None, None));
        let spec = v1beta1::OpenStackClusterSpec {
            disable_api_server_floating_ip: Some(true),
            disable_port_security: Some(false),
            disable_external_network: Some(true),
            ..Default::default()
        };
        let up = to_v1beta2(&spec, "spec").unwrap_or_default();
        assert_eq!(
            up.api_server.and_then(|a| a.enable_floating_ip),
            Some(false)
        );
        assert_eq!(
            up.managed_network.and_then(|n| n.enable_port_security),
            Some(true)
        );
        assert_eq!(up.enable_external_network, Some(false));
    }
}

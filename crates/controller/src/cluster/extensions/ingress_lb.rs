//! Ingress in Octavia mode: a second load balancer `k8s-clusterapi-cluster-<ns>-<name>-ingress`
//! on the cluster subnet, one listener/pool/TCP monitor per ingress port (80/443 by default),
//! an optional floating IP on its VIP; the machine controller keeps the worker machines as its
//! members. Built from the same idempotent services as the API load balancer.

use capo_api::extensions::{IngressLoadBalancer, LOAD_BALANCER_MODE_OCTAVIA, VipStatus};
use capo_api::v1beta1::{APIServerLoadBalancer, OpenStackClusterSpec};
use capo_cloud::Progress;
use capo_cloud::loadbalancer::{self as lb, LbInputs};
use capo_openstack::Session;

use super::super::scope::Scope;
use crate::error::Result;

/// Name of the ingress load balancer.
pub fn ingress_lb_name(namespace: &str, cluster: &str) -> String {
    format!(
        "{}-ingress",
        capo_api::names::cluster_resource_name(namespace, cluster)
    )
}

/// The spec the shared load-balancer service is driven with: the ingress ports as "API" ports
/// (first port + additional ports), no CIDR limits.
fn lb_spec(ingress: &IngressLoadBalancer) -> OpenStackClusterSpec {
    let ports = ingress.effective_ports();
    OpenStackClusterSpec {
        api_server_port: ports.first().copied(),
        api_server_load_balancer: Some(APIServerLoadBalancer {
            enabled: true,
            additional_ports: ports.iter().skip(1).copied().collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Ensure the ingress load balancer (and its floating IP); `Progress::Waiting` while Octavia
/// works. The VIP is recorded in status as soon as the load balancer exists.
pub(super) async fn reconcile(
    scope: &mut Scope<'_>,
    s: &Session,
    ingress: &IngressLoadBalancer,
) -> Result<Progress> {
    let Some(net) = scope.status.network.clone() else {
        return Ok(Progress::waiting(
            "network",
            "",
            "cluster network not ready",
        ));
    };
    let mut v: VipStatus = super::vips::recorded(scope, true);
    let name = ingress_lb_name(&scope.owner.namespace, &scope.owner.name);
    let spec = lb_spec(ingress);
    let inputs = LbInputs {
        spec: &spec,
        lb_network: &net,
        subnet_cidrs: &[],
        bastion_ips: &[],
        router_ips: &[],
        recorded_id: v.load_balancer_id.as_deref(),
        // The requested address, else the one recorded: a re-created load balancer keeps it.
        vip_address: ingress.vip_address.as_deref().or(v.vip.as_deref()),
        name: Some(&name),
    };
    let found = lb::ensure_api_load_balancer(s, &scope.owner, inputs).await?;
    v.mode = Some(LOAD_BALANCER_MODE_OCTAVIA.to_owned());
    v.load_balancer_id = Some(found.id.clone());
    v.vip = Some(found.vip_address.clone()).filter(|a| !a.is_empty());
    v.port_id = Some(found.vip_port_id.clone()).filter(|p| !p.is_empty());
    super::vips::record(scope, true, v.clone());
    scope.flush().await?;
    if !found.progress.is_done() {
        return Ok(found.progress);
    }
    if ingress.floating_ip == Some(true) {
        super::vips::ingress_floating_ip(scope, s, v, &found.vip_port_id).await?;
    }
    Ok(Progress::Done(()))
}

/// Delete the ingress load balancer (cascade); `Progress::Waiting` while Octavia deletes it.
pub(super) async fn cleanup(scope: &mut Scope<'_>, s: &Session) -> Result<Progress> {
    let recorded = super::vips::recorded(scope, true).load_balancer_id;
    let name = ingress_lb_name(&scope.owner.namespace, &scope.owner.name);
    Ok(lb::delete_load_balancer_named(s, &scope.owner, &name, recorded.as_deref()).await?)
}

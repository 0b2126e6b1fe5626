//! The control-plane endpoint: API load balancer (+ its floating IP), or a floating IP, or the
//! fixed IP; written to `spec.controlPlaneEndpoint` once. Never waits: while Octavia is busy
//! the step returns [`Step::Wait`].

use capo_api::constants::condition_types::API_ENDPOINT_READY;
use capo_api::v1beta1::{APIEndpoint, LoadBalancer};
use capo_cloud::loadbalancer::Progress;
use capo_cloud::loadbalancer::{self as lb, LbInputs, cidrs};
use capo_cloud::networking::floating_ip as fip;
use capo_cloud::plan::endpoint::{EndpointDecision, EndpointInputs, decide};
use capo_openstack::Session;

use super::Scope;
use crate::conditions::State;
use crate::error::{Error, Result};

/// Outcome of a step that may have to wait for the cloud.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Done.
    Done,
    /// In progress; requeue soon.
    Wait(String),
    /// Failed in a way only the operator can fix (load balancer in ERROR).
    Stuck(String),
}

fn lb_enabled(scope: &Scope<'_>) -> bool {
    scope
        .obj
        .spec
        .api_server_load_balancer
        .as_ref()
        .is_some_and(|l| l.enabled)
}

fn fip_wanted(scope: &Scope<'_>) -> bool {
    let spec = &scope.obj.spec;
    spec.disable_api_server_floating_ip != Some(true) && spec.disable_external_network != Some(true)
}

/// Ensure the API load balancer (when enabled) and its floating IP.
async fn reconcile_load_balancer(scope: &mut Scope<'_>, s: &Session) -> Result<Step> {
    let Some(net) = scope.status.network.clone() else {
        return Ok(Step::Wait("cluster network not ready".into()));
    };
    let spec = &scope.obj.spec;
    let lb_spec = spec.api_server_load_balancer.clone().unwrap_or_default();
    let lb_net = lb::balancer::resolve_lb_network(s, spec, &net).await?;
    let subnet_cidrs: Vec<String> = net.subnets.iter().map(|sn| sn.cidr.clone()).collect();
    let bastion_ips: Vec<String> = scope
        .status
        .bastion
        .iter()
        .flat_map(|b| [b.ip.clone(), b.floating_ip.clone()])
        .flatten()
        .collect();
    let router_ips = scope
        .status
        .router
        .as_ref()
        .map(|r| r.ips.clone())
        .unwrap_or_default();
    let recorded = scope.status.api_server_load_balancer.clone();
    let inputs = LbInputs {
        spec,
        lb_network: &lb_net,
        subnet_cidrs: &subnet_cidrs,
        bastion_ips: &bastion_ips,
        router_ips: &router_ips,
        recorded_id: recorded
            .as_ref()
            .map(|r| r.id.as_str())
            .filter(|i| !i.is_empty()),
        name: None,
    };
    let found = lb::ensure_api_load_balancer(s, &scope.owner, inputs).await?;
    let allowed = cidrs::allowed_cidrs(
        &lb_spec.allowed_cidrs,
        &cidrs::CidrSources {
            bastion_ips: &bastion_ips,
            subnet_cidrs: &subnet_cidrs,
            router_ips: &router_ips,
        },
    );
    scope.status.api_server_load_balancer = Some(LoadBalancer {
        allowed_cidrs: allowed,
        id: found.id.clone(),
        internal_ip: found.vip_address.clone(),
        ip: recorded.map(|r| r.ip).unwrap_or_default(),
        load_balancer_network: Some(lb_net),
        name: found.name.clone(),
        tags: found.tags.clone(),
    });
    scope.flush().await?;
    match found.progress {
        Progress::Ready => {}
        Progress::NotReady(m) => return Ok(Step::Wait(m)),
        Progress::Failed(m) => return Ok(Step::Stuck(m)),
    }
    if fip_wanted(scope) {
        let Some(ext) = scope.status.external_network.clone() else {
            return Err(Error::InvalidSpec(
                "the API server floating IP needs an external network: set spec.externalNetwork, or spec.disableAPIServerFloatingIP".into(),
            ));
        };
        let recorded_ip = scope
            .status
            .api_server_load_balancer
            .as_ref()
            .map(|l| l.ip.clone())
            .filter(|i| !i.is_empty());
        let fip = fip::ensure_api_floating_ip(
            s,
            &scope.owner,
            &scope.obj.spec,
            &ext.id,
            &found.vip_port_id,
            recorded_ip.as_deref(),
        )
        .await?;
        // Recorded before it is associated: a crash in between finds it again.
        if let Some(l) = scope.status.api_server_load_balancer.as_mut() {
            l.ip = fip.ip.clone();
        }
        scope.flush().await?;
        fip::associate_floating_ip(s, &fip, &found.vip_port_id).await?;
    }
    Ok(Step::Done)
}

/// The endpoint: load balancer, existing endpoint, floating IP or fixed IP (upstream order).
pub(super) async fn reconcile_endpoint(scope: &mut Scope<'_>, s: &Session) -> Result<Step> {
    scope.step = API_ENDPOINT_READY;
    if super::extensions::keepalived_control_plane(scope.obj) {
        return super::extensions::vips::reconcile_control_plane(scope, s).await;
    }
    if lb_enabled(scope) {
        match reconcile_load_balancer(scope, s).await? {
            Step::Done => {}
            other => return Ok(other),
        }
    }
    let lb_ip = scope.status.api_server_load_balancer.as_ref().map(|l| {
        if l.ip.is_empty() {
            l.internal_ip.clone()
        } else {
            l.ip.clone()
        }
    });
    let mut fip: Option<String> = None;
    loop {
        let inputs = EndpointInputs {
            load_balancer_ip: lb_ip.as_deref().filter(|i| !i.is_empty()),
            floating_ip: fip.as_deref(),
        };
        match decide(&scope.obj.spec, &inputs) {
            EndpointDecision::Use(ep) => {
                set_endpoint(scope, ep).await?;
                scope.set(API_ENDPOINT_READY, State::True);
                scope.flush().await?;
                return Ok(Step::Done);
            }
            EndpointDecision::WaitForLoadBalancer => {
                return Ok(Step::Wait("load balancer has no address yet".into()));
            }
            EndpointDecision::NeedFloatingIp { .. } if fip.is_none() => {
                let Some(ext) = scope.status.external_network.clone() else {
                    return Err(Error::InvalidSpec(
                        "no control-plane endpoint: no load balancer, no external network for a floating IP, and no spec.apiServerFixedIP".into(),
                    ));
                };
                let got = fip::ensure_api_floating_ip(
                    s,
                    &scope.owner,
                    &scope.obj.spec,
                    &ext.id,
                    "",
                    None,
                )
                .await?;
                fip = Some(got.ip);
            }
            EndpointDecision::NeedFloatingIp { .. } | EndpointDecision::Impossible => {
                return Err(Error::InvalidSpec(
                    "no control-plane endpoint: enable spec.apiServerLoadBalancer, allow the API server floating IP, or set spec.apiServerFixedIP".into(),
                ));
            }
        }
    }
}

/// Write `spec.controlPlaneEndpoint` unless a valid one is already there (set once).
pub(super) async fn set_endpoint(scope: &mut Scope<'_>, ep: APIEndpoint) -> Result<()> {
    let current = scope.obj.spec.control_plane_endpoint.as_ref();
    let valid = current.is_some_and(|e| {
        e.host.as_deref().is_some_and(|h| !h.is_empty()) && e.port.is_some_and(|p| p > 0)
    });
    if valid {
        if current != Some(&ep) {
            tracing::debug!(?current, decided = ?ep, "control-plane endpoint already set; kept");
        }
        return Ok(());
    }
    let patch =
        serde_json::json!({"spec": {"controlPlaneEndpoint": {"host": ep.host, "port": ep.port}}});
    crate::status::merge_patch(&scope.api, &scope.owner.name, patch).await?;
    Ok(())
}

/// `status.failureDomains` from Nova's availability zones.
pub(super) async fn reconcile_failure_domains(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    let domains = capo_cloud::compute::ensure_failure_domains(s, &scope.obj.spec).await?;
    scope.status.failure_domains = domains;
    scope.flush().await
}

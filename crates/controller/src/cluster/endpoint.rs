//! The control-plane endpoint, by the strategy [`strategy`] picks (keepalived VIP port, API
//! load balancer, floating IP or fixed IP, each with its floating IP when wanted); written to
//! `spec.controlPlaneEndpoint` once. Never waits: while Octavia is busy the step returns
//! [`Progress::Waiting`].

use capo_api::constants::condition_types::API_ENDPOINT_READY;
use capo_api::v1beta1::{APIEndpoint, LoadBalancer, OpenStackClusterSpec};
use capo_cloud::Progress;
use capo_cloud::loadbalancer::{self as lb, LbInputs, cidrs};
use capo_cloud::networking::floating_ip::{self as fip, FipTarget};
use capo_cloud::plan::endpoint::{EndpointDecision, EndpointInputs, Strategy, decide, strategy};
use capo_openstack::Session;

use super::extensions::vips;
use super::scope::Scope;
use crate::conditions::State;
use crate::error::{Error, Result};

/// Ensure the API load balancer (when enabled) and its floating IP.
async fn reconcile_load_balancer(scope: &mut Scope<'_>, s: &Session) -> Result<Progress> {
    let Some(net) = scope.status.network.clone() else {
        return Ok(Progress::waiting(
            "network",
            "",
            "cluster network not ready",
        ));
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
    let wants_fip = spec.wants_api_floating_ip();
    // The preset endpoint's address matters only while nothing else gives the VIP of a load
    // balancer still to be made, or the floating IP: looked up (perhaps in DNS) only then, as
    // upstream, never on the reconciles of a cluster that has both.
    let unset = |v: Option<&str>| v.is_none_or(str::is_empty);
    let vip_unknown = unset(recorded.as_ref().map(|r| r.internal_ip.as_str()))
        && unset(spec.api_server_fixed_ip.as_deref());
    let fip_unknown = unset(recorded.as_ref().map(|r| r.ip.as_str()))
        && unset(spec.api_server_floating_ip.as_deref());
    let preset = if (vip_unknown && !wants_fip) || (fip_unknown && wants_fip) {
        preset_endpoint_address(spec).await?
    } else {
        None
    };
    let vip_address = new_vip_address(recorded.as_ref(), spec, preset.as_deref());
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
        vip_address: vip_address.as_deref(),
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
    // Written by the wait, the failure or the floating IP's record that comes next (a load
    // balancer whose ID a crash lost is found again by name).
    match found.progress {
        Progress::Done(()) => {}
        not_yet @ (Progress::Waiting(_) | Progress::Stuck(_)) => return Ok(not_yet),
    }
    if wants_fip {
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
        let osc = scope.obj;
        let mut target = FipTarget::api_server(
            &osc.spec,
            &ext.id,
            &found.vip_port_id,
            recorded_ip.as_deref(),
        );
        // As upstream: without spec.apiServerFloatingIP or a recorded address, the address a
        // preset endpoint names is the floating IP to use. Whose it is follows its description:
        // the user's when they allocated it, ours when capo (or upstream, before a takeover)
        // allocated it for this cluster or allocates it now.
        target.named_ip = preset.as_deref();
        let api_fip = fip::ensure_floating_ip(s, &scope.owner, &target).await?;
        // Recorded before it is associated: a crash in between finds it again.
        if let Some(l) = scope.status.api_server_load_balancer.as_mut() {
            l.ip = api_fip.ip.clone();
        }
        scope.flush().await?;
        fip::associate_floating_ip(s, &api_fip, &found.vip_port_id).await?;
    }
    Ok(Progress::Done(()))
}

/// The VIP of a new load balancer, as upstream: the one recorded (a load balancer lost and made
/// again keeps the address the endpoint may name), else `spec.apiServerFixedIP`, else, when the
/// VIP is the endpoint (no API floating IP), the address the preset endpoint names.
fn new_vip_address(
    recorded: Option<&LoadBalancer>,
    spec: &OpenStackClusterSpec,
    preset: Option<&str>,
) -> Option<String> {
    recorded
        .map(|r| r.internal_ip.clone())
        .filter(|i| !i.is_empty())
        .or_else(|| spec.api_server_fixed_ip.clone().filter(|i| !i.is_empty()))
        .or_else(|| {
            preset
                .filter(|_| !spec.wants_api_floating_ip())
                .map(str::to_owned)
        })
}

/// The address a valid preset `spec.controlPlaneEndpoint` names (set by the user, or kept
/// through a move): its host as an IP, else the first address the resolver gives for the name,
/// as upstream reads it when it picks the load balancer's addresses.
async fn preset_endpoint_address(spec: &OpenStackClusterSpec) -> Result<Option<String>> {
    let Some(ep) = spec.control_plane_endpoint.as_ref() else {
        return Ok(None);
    };
    let Some(host) = ep.host.as_deref().filter(|h| !h.is_empty()) else {
        return Ok(None);
    };
    if ep.port.is_none_or(|p| p <= 0) {
        return Ok(None);
    }
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(Some(ip.to_string()));
    }
    let lookup = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tokio::net::lookup_host((host, 0)),
    )
    .await;
    match lookup {
        Ok(Ok(mut addrs)) => Ok(addrs.next().map(|a| a.ip().to_string())),
        Ok(Err(e)) => Err(Error::NotYet(format!(
            "spec.controlPlaneEndpoint.host {host:?} does not resolve: {e}"
        ))),
        Err(_) => Err(Error::NotYet(format!(
            "spec.controlPlaneEndpoint.host {host:?}: no answer from the resolver in 30 s"
        ))),
    }
}

/// The endpoint by its [`strategy`]; for the upstream ones, [`decide`] picks the address
/// (load balancer, existing endpoint, floating IP or fixed IP).
pub(super) async fn reconcile_endpoint(scope: &mut Scope<'_>, s: &Session) -> Result<Progress> {
    scope.step = API_ENDPOINT_READY;
    match strategy(&scope.obj.spec) {
        Strategy::KeepalivedVip => return reconcile_keepalived_vip(scope, s).await,
        Strategy::LoadBalancer => match reconcile_load_balancer(scope, s).await? {
            Progress::Done(()) => {}
            other => return Ok(other),
        },
        Strategy::FloatingIp | Strategy::FixedIp => {}
    }
    let lb_ip = scope.status.api_server_load_balancer.as_ref().map(|l| {
        if l.ip.is_empty() {
            l.internal_ip.clone()
        } else {
            l.ip.clone()
        }
    });
    let mut floating_ip: Option<String> = None;
    loop {
        let inputs = EndpointInputs {
            load_balancer_ip: lb_ip.as_deref().filter(|i| !i.is_empty()),
            floating_ip: floating_ip.as_deref(),
        };
        match decide(&scope.obj.spec, &inputs) {
            EndpointDecision::Use(ep) => return publish(scope, ep).await,
            EndpointDecision::WaitForLoadBalancer => {
                return Ok(Progress::waiting(
                    "load balancer",
                    "",
                    "load balancer has no address yet",
                ));
            }
            EndpointDecision::NeedFloatingIp { .. } if floating_ip.is_none() => {
                let Some(ext) = scope.status.external_network.clone() else {
                    return Err(Error::InvalidSpec(
                        "no control-plane endpoint: no load balancer, no external network for a floating IP, and no spec.apiServerFixedIP".into(),
                    ));
                };
                let target = FipTarget::api_server(&scope.obj.spec, &ext.id, "", None);
                let got = fip::ensure_floating_ip(s, &scope.owner, &target).await?;
                floating_ip = Some(got.ip);
            }
            EndpointDecision::NeedFloatingIp { .. } | EndpointDecision::Impossible => {
                return Err(Error::InvalidSpec(
                    "no control-plane endpoint: enable spec.apiServerLoadBalancer, allow the API server floating IP, or set spec.apiServerFixedIP".into(),
                ));
            }
        }
    }
}

/// Keepalived mode: the VIP port, the API floating IP on it (when wanted and an external
/// network exists), the endpoint on the floating IP, else on the VIP.
async fn reconcile_keepalived_vip(scope: &mut Scope<'_>, s: &Session) -> Result<Progress> {
    let address = (scope.obj.spec.extensions.as_ref())
        .and_then(|e| e.load_balancers.as_ref())
        .and_then(|l| l.control_plane.as_ref())
        .and_then(|c| c.vip_address.clone());
    let mut v = vips::ensure_port(scope, s, false, address.as_deref()).await?;
    let Some(port_id) = v.port_id.clone() else {
        return Ok(Progress::waiting("VIP port", "", "VIP port has no ID"));
    };
    let osc = scope.obj;
    if osc.spec.wants_api_floating_ip()
        && let Some(ext) = scope.status.external_network.clone()
    {
        let recorded_ip = v.floating_ip.clone();
        let target = FipTarget::api_server(&osc.spec, &ext.id, &port_id, recorded_ip.as_deref());
        v = vips::vip_floating_ip(scope, s, false, v, &target).await?;
    }
    let Some(host) = v.floating_ip.or(v.vip) else {
        return Ok(Progress::waiting(
            "VIP port",
            port_id,
            "VIP port has no address yet",
        ));
    };
    let port = Some(scope.obj.spec.api_server_port());
    publish(
        scope,
        APIEndpoint {
            host: Some(host),
            port,
        },
    )
    .await
}

/// Write `spec.controlPlaneEndpoint` unless a valid one is already there (set once), and
/// report the endpoint ready.
async fn publish(scope: &mut Scope<'_>, ep: APIEndpoint) -> Result<Progress> {
    let current = scope.obj.spec.control_plane_endpoint.as_ref();
    let valid = current.is_some_and(|e| {
        e.host.as_deref().is_some_and(|h| !h.is_empty()) && e.port.is_some_and(|p| p > 0)
    });
    if valid && current != Some(&ep) {
        tracing::debug!(?current, decided = ?ep, "control-plane endpoint already set; kept");
    }
    if !valid {
        let patch = serde_json::json!({"spec": {"controlPlaneEndpoint": {"host": ep.host, "port": ep.port}}});
        crate::status::merge_patch(&scope.api, &scope.owner.name, patch).await?;
    }
    scope.set(API_ENDPOINT_READY, State::True);
    scope.flush().await?;
    Ok(Progress::Done(()))
}

/// `status.failureDomains` from Nova's availability zones.
pub(super) async fn reconcile_failure_domains(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    let domains = capo_cloud::compute::ensure_failure_domains(s, &scope.obj.spec).await?;
    // Written with the next step's write (Ready, or the extensions' wait).
    scope.status.failure_domains = domains;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's "API server VIP is API Server Fixed IP": `spec.apiServerFixedIP` is the VIP
    /// asked for a new load balancer; a VIP recorded before the load balancer was lost comes
    /// first, and a preset endpoint's address only when there is no API floating IP.
    #[test]
    fn api_server_fixed_ip_is_the_new_load_balancers_vip() {
        let spec = OpenStackClusterSpec {
            api_server_fixed_ip: Some("1.2.3.4".into()),
            ..Default::default()
        };
        assert_eq!(
            new_vip_address(None, &spec, Some("5.6.7.8")).as_deref(),
            Some("1.2.3.4")
        );
        let recorded = LoadBalancer {
            internal_ip: "10.0.0.9".into(),
            ..Default::default()
        };
        assert_eq!(
            new_vip_address(Some(&recorded), &spec, None).as_deref(),
            Some("10.0.0.9")
        );
        let none = OpenStackClusterSpec::default();
        assert_eq!(new_vip_address(None, &none, Some("5.6.7.8")), None);
        let no_fip = OpenStackClusterSpec {
            disable_api_server_floating_ip: Some(true),
            ..Default::default()
        };
        assert_eq!(
            new_vip_address(None, &no_fip, Some("5.6.7.8")).as_deref(),
            Some("5.6.7.8")
        );
    }
}

//! API traffic to control-plane machines: a member per API port in the API load balancer's
//! pools, or (without a load balancer) the API floating IP on the machine's first port when
//! nobody holds it. The shared API floating IP is never deleted here: removing a machine only
//! moves it to another live control-plane machine, or disassociates it.

use capo_api::v1beta1::OpenStackCluster;
use capo_cloud::Progress;
use capo_cloud::loadbalancer as lb;
use capo_cloud::loadbalancer::children::api_ports;
use capo_cloud::loadbalancer::members::MemberTarget;
use capo_cloud::networking::floating_ip::{self as fip, MoveFrom};
use capo_cloud::plan::endpoint::{Strategy, strategy};
use capo_openstack::Session;

use crate::error::Result;

/// How the cluster routes API traffic to control-plane machines (serialized into the machine's
/// fingerprint, see [`super::steady`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(super) enum Mode {
    /// Octavia load balancer `lb_id` with these listener ports.
    LoadBalancer { lb_id: String, ports: Vec<i32> },
    /// The load balancer is enabled but not recorded yet.
    LoadBalancerPending,
    /// A floating IP with this address (the control-plane endpoint host).
    FloatingIp(String),
    /// Nothing to do per machine (fixed IP endpoint, no external network).
    None,
}

/// Condition reporting a worker's membership in the BA/ACP ingress load balancer.
pub(super) const INGRESS_LOAD_BALANCER_READY: &str = "IngressLoadBalancerReady";

/// The condition a machine's traffic step reports on.
pub(super) fn condition(control_plane: bool) -> &'static str {
    if control_plane {
        capo_api::constants::condition_types::API_SERVER_INGRESS_READY
    } else {
        INGRESS_LOAD_BALANCER_READY
    }
}

/// How traffic reaches a machine of `osc`: API traffic for control-plane machines; for
/// workers, the BA/ACP ingress load balancer in Octavia mode (else nothing).
pub(super) fn mode(osc: &OpenStackCluster, control_plane: bool) -> Mode {
    if control_plane {
        api_mode(osc)
    } else {
        worker_mode(osc)
    }
}

fn worker_mode(osc: &OpenStackCluster) -> Mode {
    let Some(ingress) = osc
        .spec
        .extensions
        .as_ref()
        .and_then(|e| e.load_balancers.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .filter(|i| i.mode == capo_api::extensions::LOAD_BALANCER_MODE_OCTAVIA)
    else {
        return Mode::None;
    };
    let id = osc
        .status
        .as_ref()
        .and_then(|s| s.extensions.as_ref())
        .and_then(|e| e.load_balancers.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .and_then(|i| i.load_balancer_id.clone());
    match id {
        Some(lb_id) => Mode::LoadBalancer {
            lb_id,
            ports: ingress.effective_ports(),
        },
        None => Mode::LoadBalancerPending,
    }
}

fn api_mode(osc: &OpenStackCluster) -> Mode {
    let spec = &osc.spec;
    match strategy(spec) {
        Strategy::LoadBalancer => {
            let id = osc
                .status
                .as_ref()
                .and_then(|s| s.api_server_load_balancer.as_ref())
                .map(|l| l.id.clone())
                .filter(|i| !i.is_empty());
            let l = spec.api_server_load_balancer.clone().unwrap_or_default();
            match id {
                Some(lb_id) => Mode::LoadBalancer {
                    lb_id,
                    ports: api_ports(spec.api_server_port(), &l),
                },
                None => Mode::LoadBalancerPending,
            }
        }
        Strategy::FloatingIp => (spec.control_plane_endpoint.as_ref())
            .and_then(|e| e.host.clone())
            .filter(|h| !h.is_empty())
            .map_or(Mode::None, Mode::FloatingIp),
        // A keepalived VIP's floating IP lives on the cluster's VIP port (machines only carry
        // the VIP as an allowed address pair); a fixed IP needs nothing per machine.
        Strategy::KeepalivedVip | Strategy::FixedIp => Mode::None,
    }
}

/// Ensure API traffic reaches the machine whose first port is `port_id`.
pub(super) async fn ensure(
    s: &Session,
    mode: &Mode,
    machine: &str,
    port_id: &str,
) -> Result<Progress> {
    match mode {
        Mode::LoadBalancer { lb_id, ports } => {
            let t = MemberTarget {
                lb_id,
                ports,
                machine,
            };
            Ok(lb::ensure_port_member(s, t, port_id).await?)
        }
        Mode::LoadBalancerPending => Ok(Progress::waiting(
            "API load balancer",
            "",
            "waiting for the API load balancer",
        )),
        Mode::FloatingIp(host) => {
            fip::move_address(s, host, Some(port_id), MoveFrom::Nowhere).await?;
            Ok(Progress::Done(()))
        }
        Mode::None => Ok(Progress::Done(())),
    }
}

/// Stop API traffic to the machine: remove its members, or move the API floating IP from its
/// port (`port_id`) to `successor` (another live control-plane machine's port), else
/// disassociate it. The floating IP itself always stays.
pub(super) async fn remove(
    s: &Session,
    mode: &Mode,
    machine: &str,
    port_id: Option<&str>,
    successor: Option<&str>,
) -> Result<Progress> {
    match mode {
        Mode::LoadBalancer { lb_id, ports } => {
            let t = MemberTarget {
                lb_id,
                ports,
                machine,
            };
            Ok(lb::delete_member(s, t).await?)
        }
        Mode::FloatingIp(host) => {
            if let Some(port_id) = port_id {
                fip::move_address(s, host, successor, MoveFrom::Port(port_id)).await?;
            }
            Ok(Progress::Done(()))
        }
        Mode::LoadBalancerPending | Mode::None => Ok(Progress::Done(())),
    }
}

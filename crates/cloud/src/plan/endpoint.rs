//! The control-plane endpoint: who provides it ([`strategy`], the one place that decides)
//! and, for the upstream strategies, which address it is ([`decide`]). Precedence:
//! 1. the BA/ACP keepalived VIP (`spec.extensions.loadBalancers.controlPlane`, Keepalived
//!    mode): a VIP port, with the API floating IP on it when wanted;
//! 2. API load balancer enabled → the load balancer's address (floating IP, or VIP);
//! 3. `spec.controlPlaneEndpoint` already valid → keep it (set once, never moved);
//! 4. neither the API floating IP nor the external network disabled → the floating IP
//!    (allocated by the caller);
//! 5. `spec.apiServerFixedIP` → that address;
//! 6. otherwise an error.
//!
//! Port: the existing endpoint's port, else `spec.apiServerPort`, else 6443.

use capo_api::v1beta1::{APIEndpoint, OpenStackClusterSpec};

/// Who provides the control-plane endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// A keepalived VIP port of the BA/ACP extension (the API floating IP on it, when wanted).
    KeepalivedVip,
    /// The Octavia API load balancer (and its floating IP, when wanted).
    LoadBalancer,
    /// The API floating IP, associated with one control-plane machine at a time.
    FloatingIp,
    /// `spec.apiServerFixedIP`, or nothing at all ([`decide`] says which).
    FixedIp,
}

/// The strategy `spec` asks for.
pub fn strategy(spec: &OpenStackClusterSpec) -> Strategy {
    if spec.keepalived_control_plane() {
        Strategy::KeepalivedVip
    } else if spec.api_load_balancer_enabled() {
        Strategy::LoadBalancer
    } else if spec.wants_api_floating_ip() {
        Strategy::FloatingIp
    } else {
        Strategy::FixedIp
    }
}

/// What the caller knows about addresses when it asks for the decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointInputs<'a> {
    /// The load balancer's address once it has one: `status.apiServerLoadBalancer.ip` (its
    /// floating IP), else its `internalIP` (VIP) when it has no floating IP.
    pub load_balancer_ip: Option<&'a str>,
    /// Address of the API floating IP, once allocated (or found).
    pub floating_ip: Option<&'a str>,
}

/// The decision.
#[derive(Debug, Clone, PartialEq)]
pub enum EndpointDecision {
    /// Use this endpoint (write it to spec if it is not there yet).
    Use(APIEndpoint),
    /// The load balancer has no address yet: retry after it does.
    WaitForLoadBalancer,
    /// Allocate (or find) the API floating IP, optionally the requested address, then ask again.
    NeedFloatingIp {
        /// `spec.apiServerFloatingIP`.
        requested: Option<String>,
    },
    /// Nothing can provide an endpoint (no LB, floating IP disabled, no fixed IP).
    Impossible,
}

/// Decide the control-plane endpoint of the upstream strategies (the keepalived VIP's address
/// is its port's, known only to the caller).
pub fn decide(spec: &OpenStackClusterSpec, inputs: &EndpointInputs<'_>) -> EndpointDecision {
    let existing = spec.control_plane_endpoint.as_ref().filter(|e| {
        e.host.as_deref().is_some_and(|h| !h.is_empty()) && e.port.is_some_and(|p| p > 0)
    });
    let port = existing
        .and_then(|e| e.port)
        .unwrap_or_else(|| spec.api_server_port());
    let at = |host: &str| {
        EndpointDecision::Use(APIEndpoint {
            host: Some(host.to_owned()),
            port: Some(port),
        })
    };
    let strategy = strategy(spec);
    if strategy == Strategy::LoadBalancer {
        return match inputs.load_balancer_ip {
            Some(ip) => at(ip),
            None => EndpointDecision::WaitForLoadBalancer,
        };
    }
    if let Some(e) = existing {
        return EndpointDecision::Use(e.clone());
    }
    if strategy == Strategy::FloatingIp {
        return match inputs.floating_ip {
            Some(ip) => at(ip),
            None => EndpointDecision::NeedFloatingIp {
                requested: spec.api_server_floating_ip.clone(),
            },
        };
    }
    match spec
        .api_server_fixed_ip
        .as_deref()
        .filter(|ip| !ip.is_empty())
    {
        Some(ip) => at(ip),
        None => EndpointDecision::Impossible,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capo_api::v1beta1::APIServerLoadBalancer;

    fn ep(host: &str, port: i32) -> EndpointDecision {
        EndpointDecision::Use(APIEndpoint {
            host: Some(host.into()),
            port: Some(port),
        })
    }

    #[test]
    fn strategy_precedence() {
        let mut spec = OpenStackClusterSpec::default();
        assert_eq!(strategy(&spec), Strategy::FloatingIp);
        spec.disable_api_server_floating_ip = Some(true);
        assert_eq!(strategy(&spec), Strategy::FixedIp);
        spec.api_server_load_balancer = Some(APIServerLoadBalancer {
            enabled: true,
            ..Default::default()
        });
        assert_eq!(strategy(&spec), Strategy::LoadBalancer);
    }

    #[test]
    fn load_balancer_first() {
        let spec = OpenStackClusterSpec {
            api_server_load_balancer: Some(APIServerLoadBalancer {
                enabled: true,
                ..Default::default()
            }),
            control_plane_endpoint: Some(APIEndpoint {
                host: Some("1.1.1.1".into()),
                port: Some(7443),
            }),
            ..Default::default()
        };
        assert_eq!(
            decide(&spec, &EndpointInputs::default()),
            EndpointDecision::WaitForLoadBalancer
        );
        let i = EndpointInputs {
            load_balancer_ip: Some("2.2.2.2"),
            floating_ip: None,
        };
        // The existing endpoint's port wins over apiServerPort.
        assert_eq!(decide(&spec, &i), ep("2.2.2.2", 7443));
    }

    #[test]
    fn existing_then_floating_then_fixed() {
        let mut spec = OpenStackClusterSpec {
            control_plane_endpoint: Some(APIEndpoint {
                host: Some("1.1.1.1".into()),
                port: Some(6443),
            }),
            api_server_port: Some(8443),
            ..Default::default()
        };
        let fip = EndpointInputs {
            load_balancer_ip: None,
            floating_ip: Some("3.3.3.3"),
        };
        assert_eq!(decide(&spec, &fip), ep("1.1.1.1", 6443));
        spec.control_plane_endpoint = Some(APIEndpoint::default());
        spec.api_server_floating_ip = Some("3.3.3.3".into());
        assert_eq!(
            decide(&spec, &EndpointInputs::default()),
            EndpointDecision::NeedFloatingIp {
                requested: Some("3.3.3.3".into())
            }
        );
        assert_eq!(decide(&spec, &fip), ep("3.3.3.3", 8443));
        spec.disable_external_network = Some(true);
        assert_eq!(decide(&spec, &fip), EndpointDecision::Impossible);
        spec.disable_external_network = None;
        spec.disable_api_server_floating_ip = Some(true);
        assert_eq!(decide(&spec, &fip), EndpointDecision::Impossible);
        spec.api_server_fixed_ip = Some("10.0.0.5".into());
        spec.api_server_port = None;
        assert_eq!(decide(&spec, &fip), ep("10.0.0.5", 6443));
    }
}

//! The listeners' `allowed_cidrs`, as upstream computes them but keeping IPv6.
//!
//! An empty `spec.apiServerLoadBalancer.allowedCIDRs` means "allow all" and stays empty.
//! Otherwise the cluster's own sources are added so that nodes, the bastion and traffic
//! leaving through the router can still reach the API: the bastion's IP, every cluster subnet
//! CIDR and the router's external IPs. Bare addresses become host prefixes (`/32`, `/128`).
//! Upstream drops IPv6 entries here; we keep them.

/// Inputs besides the spec list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CidrSources<'a> {
    /// The bastion's address(es) (floating and fixed).
    pub bastion_ips: &'a [String],
    /// CIDRs of the cluster subnets.
    pub subnet_cidrs: &'a [String],
    /// The router's external IPs.
    pub router_ips: &'a [String],
}

/// Normalise one entry: trim, and give a bare address its host prefix.
fn normalise(entry: &str) -> Option<String> {
    let e = entry.trim();
    if e.is_empty() {
        return None;
    }
    if e.contains('/') {
        return Some(e.to_lowercase());
    }
    match e.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => Some(format!("{e}/32")),
        Ok(std::net::IpAddr::V6(a)) => Some(format!("{a}/128")),
        Err(_) => Some(e.to_owned()),
    }
}

/// The desired `allowed_cidrs`: sorted, without duplicates; empty when the spec list is.
pub fn allowed_cidrs(spec: &[String], extra: &CidrSources<'_>) -> Vec<String> {
    if spec.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<String> = spec
        .iter()
        .chain(extra.bastion_ips)
        .chain(extra.subnet_cidrs)
        .chain(extra.router_ips)
        .filter_map(|e| normalise(e))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether the listener's current list equals the desired one (order-insensitive).
pub fn same_set(current: &[String], desired: &[String]) -> bool {
    let mut c: Vec<String> = current.iter().filter_map(|e| normalise(e)).collect();
    c.sort();
    c.dedup();
    c == desired
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_spec_allows_all() {
        let sn = ["10.0.0.0/24".to_string()];
        let x = CidrSources {
            subnet_cidrs: &sn,
            ..Default::default()
        };
        assert!(allowed_cidrs(&[], &x).is_empty());
    }

    #[test]
    fn adds_cluster_sources_and_keeps_ipv6() {
        let spec = ["192.0.2.0/24".to_string(), "2001:db8::/64".to_string()];
        let bastion = ["203.0.113.5".to_string()];
        let subnets = ["10.6.0.0/24".to_string(), "fd00::/64".to_string()];
        let router = ["172.24.4.10".to_string(), "2001:DB8:1::1".to_string()];
        let got = allowed_cidrs(
            &spec,
            &CidrSources {
                bastion_ips: &bastion,
                subnet_cidrs: &subnets,
                router_ips: &router,
            },
        );
        assert_eq!(
            got,
            vec![
                "10.6.0.0/24",
                "172.24.4.10/32",
                "192.0.2.0/24",
                "2001:db8:1::1/128",
                "2001:db8::/64",
                "203.0.113.5/32",
                "fd00::/64",
            ]
        );
        assert!(same_set(
            &got.iter().rev().cloned().collect::<Vec<_>>(),
            &got
        ));
    }

    #[test]
    fn the_list_is_sorted_once_each_whatever_the_spec_order() {
        let none = CidrSources::default();
        let list = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let sorted = list(&["10.0.0.0/8", "10.1.0.0/16", "10.2.0.0/16"]);
        assert_eq!(allowed_cidrs(&sorted, &none), sorted, "already canonical");
        let reversed: Vec<String> = sorted.iter().rev().cloned().collect();
        assert_eq!(allowed_cidrs(&reversed, &none), sorted, "out of order");
        let mut repeated = reversed.clone();
        repeated.push("10.2.0.0/16".into());
        assert_eq!(allowed_cidrs(&repeated, &none), sorted, "duplicates");
        assert!(same_set(&repeated, &sorted));
    }
}

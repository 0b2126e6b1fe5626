//! Address management for Neutron subnets: CIDR parsing, default gateway and allocation pools,
//! allocation from pools (first free address), requested addresses and SLAAC (EUI-64) addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::network::SVC;
use crate::world::World;

/// A parsed CIDR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// IPv6 (else IPv4).
    pub v6: bool,
    /// Network address as an integer.
    pub net: u128,
    /// Prefix length.
    pub prefix: u8,
}

/// Parse an address into (is_v6, integer).
pub fn parse_ip(s: &str) -> Option<(bool, u128)> {
    match s.parse::<IpAddr>().ok()? {
        IpAddr::V4(a) => Some((false, u32::from(a) as u128)),
        IpAddr::V6(a) => Some((true, u128::from(a))),
    }
}

/// Render an integer address.
pub fn fmt_ip(v6: bool, v: u128) -> String {
    if v6 {
        Ipv6Addr::from(v).to_string()
    } else {
        Ipv4Addr::from(v as u32).to_string()
    }
}

impl Cidr {
    /// Parse `a.b.c.d/n` or `x::/n`; `strict` rejects host bits (Neutron's subnet rule).
    pub fn parse(s: &str, strict: bool) -> Option<Cidr> {
        let (addr, len) = s.split_once('/')?;
        let (v6, ip) = parse_ip(addr)?;
        let prefix: u8 = len.parse().ok()?;
        let bits = if v6 { 128 } else { 32 };
        if prefix > bits {
            return None;
        }
        let c = Cidr {
            v6,
            net: ip & Self::mask(v6, prefix),
            prefix,
        };
        if strict && c.net != ip {
            return None;
        }
        Some(c)
    }

    fn mask(v6: bool, prefix: u8) -> u128 {
        let bits = if v6 { 128 } else { 32 };
        let all: u128 = if v6 { u128::MAX } else { u32::MAX as u128 };
        if prefix == 0 {
            0
        } else {
            all & !((1u128 << (bits - prefix as u32)).wrapping_sub(1)) & all
        }
    }

    fn last(&self) -> u128 {
        let bits = if self.v6 { 128 } else { 32 };
        let host = bits - self.prefix as u32;
        if host >= 128 {
            u128::MAX
        } else {
            self.net | ((1u128 << host) - 1)
        }
    }

    /// Whether an address is inside.
    pub fn contains(&self, v6: bool, ip: u128) -> bool {
        v6 == self.v6 && ip >= self.net && ip <= self.last()
    }

    /// First usable host address.
    pub fn first_host(&self) -> u128 {
        if self.last() > self.net {
            self.net + 1
        } else {
            self.net
        }
    }

    /// Last usable host address (IPv4 excludes broadcast).
    pub fn last_host(&self) -> u128 {
        if !self.v6 && self.prefix < 31 {
            self.last() - 1
        } else {
            self.last()
        }
    }

    /// Whether two CIDRs overlap.
    pub fn overlaps(&self, o: &Cidr) -> bool {
        self.v6 == o.v6 && self.net <= o.last() && o.net <= self.last()
    }

    /// Canonical text.
    pub fn to_text(self) -> String {
        format!("{}/{}", fmt_ip(self.v6, self.net), self.prefix)
    }
}

/// Default allocation pools: every host address except the gateway.
pub fn default_pools(c: &Cidr, gateway: Option<u128>) -> Value {
    let (first, last) = (c.first_host(), c.last_host());
    let pool = |a: u128, b: u128| json!({"start": fmt_ip(c.v6, a), "end": fmt_ip(c.v6, b)});
    let pools = match gateway {
        Some(g) if g == first && last > first => vec![pool(first + 1, last)],
        Some(g) if g == last && last > first => vec![pool(first, last - 1)],
        Some(g) if g > first && g < last => vec![pool(first, g - 1), pool(g + 1, last)],
        _ => vec![pool(first, last)],
    };
    Value::Array(pools)
}

/// EUI-64 address of a MAC inside a /64 prefix (SLAAC).
pub fn eui64(c: &Cidr, mac: &str) -> u128 {
    let b: Vec<u8> = mac
        .split(':')
        .filter_map(|x| u8::from_str_radix(x, 16).ok())
        .collect();
    if b.len() != 6 {
        return c.first_host();
    }
    let iid = [b[0] ^ 0x02, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]];
    c.net | iid.iter().fold(0u128, |acc, x| (acc << 8) | *x as u128)
}

/// Whether a subnet assigns addresses by SLAAC (no allocation from pools).
pub fn is_slaac(subnet: &Value) -> bool {
    matches!(
        subnet["ipv6_address_mode"].as_str(),
        Some("slaac") | Some("dhcpv6-stateless")
    )
}

/// Allocate an address on a subnet: the requested one, or SLAAC, or the first free one in the pools.
pub fn allocate(
    w: &mut World,
    subnet: &Value,
    requested: Option<&str>,
    mac: &str,
) -> ApiResult<String> {
    let sid = subnet["id"].as_str().unwrap_or_default().to_string();
    let cidr = subnet["cidr"].as_str().and_then(|c| Cidr::parse(c, false));
    let Some(c) = cidr else {
        return Err(ApiError::bad_request(
            SVC,
            format!("Subnet {sid} has no valid CIDR."),
        ));
    };
    let used = w.ipam.entry(sid.clone()).or_default();
    if let Some(ip) = requested {
        let ok = parse_ip(ip).filter(|(v6, v)| c.contains(*v6, *v));
        let Some((_, v)) = ok else {
            return Err(ApiError::bad_request(
                SVC,
                format!("IP address {ip} is not a valid IP for the specified subnet."),
            )
            .kind("InvalidIpForSubnet"));
        };
        if !used.insert(v) {
            return Err(ApiError::conflict(
                SVC,
                "IpAddressAlreadyAllocated",
                format!("IP address {ip} already allocated in subnet {sid}"),
            ));
        }
        return Ok(fmt_ip(c.v6, v));
    }
    if c.v6 && is_slaac(subnet) {
        let v = eui64(&c, mac);
        used.insert(v);
        return Ok(fmt_ip(true, v));
    }
    for p in subnet["allocation_pools"].as_array().into_iter().flatten() {
        let (Some((_, a)), Some((_, b))) = (
            p["start"].as_str().and_then(parse_ip),
            p["end"].as_str().and_then(parse_ip),
        ) else {
            continue;
        };
        let mut v = a;
        while v <= b {
            if used.insert(v) {
                return Ok(fmt_ip(c.v6, v));
            }
            v += 1;
        }
    }
    let net = subnet["network_id"].as_str().unwrap_or_default();
    Err(ApiError::conflict(
        SVC,
        "IpAddressGenerationFailure",
        format!("No more IP addresses available on network {net}."),
    ))
}

/// Return an address to its subnet.
pub fn release(w: &mut World, subnet_id: &str, ip: &str) {
    if let (Some(set), Some((_, v))) = (w.ipam.get_mut(subnet_id), parse_ip(ip)) {
        set.remove(&v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_ranges_and_pools() {
        let c = Cidr::parse("10.0.0.0/24", true).unwrap_or_else(|| unreachable!());
        assert_eq!(fmt_ip(false, c.first_host()), "10.0.0.1");
        assert_eq!(fmt_ip(false, c.last_host()), "10.0.0.254");
        let pools = default_pools(&c, Some(c.first_host()));
        assert_eq!(pools, json!([{"start": "10.0.0.2", "end": "10.0.0.254"}]));
        assert!(Cidr::parse("10.0.0.1/24", true).is_none());
        assert!(Cidr::parse("10.0.0.0/33", false).is_none());
    }

    #[test]
    fn v6_and_eui64() {
        let c = Cidr::parse("2001:db8::/64", true).unwrap_or_else(|| unreachable!());
        assert_eq!(
            fmt_ip(true, eui64(&c, "fa:16:3e:11:22:33")),
            "2001:db8::f816:3eff:fe11:2233"
        );
        assert!(c.overlaps(&Cidr::parse("2001:db8::/48", false).unwrap_or_else(|| unreachable!())));
    }

    #[test]
    fn allocation_is_first_free_and_exclusive() {
        let mut w = World::default();
        let s = json!({"id": "s", "cidr": "10.0.0.0/29", "network_id": "n",
                       "allocation_pools": [{"start": "10.0.0.2", "end": "10.0.0.3"}]});
        assert_eq!(
            allocate(&mut w, &s, None, "").ok().as_deref(),
            Some("10.0.0.2")
        );
        assert!(allocate(&mut w, &s, Some("10.0.0.2"), "").is_err());
        assert_eq!(
            allocate(&mut w, &s, None, "").ok().as_deref(),
            Some("10.0.0.3")
        );
        assert_eq!(
            allocate(&mut w, &s, None, "").map_err(|e| e.kind).err(),
            Some("IpAddressGenerationFailure")
        );
        release(&mut w, "s", "10.0.0.2");
        assert_eq!(
            allocate(&mut w, &s, None, "").ok().as_deref(),
            Some("10.0.0.2")
        );
    }
}

//! CIDR blocks compared the way Neutron stores them: host bits cleared, a bare address as
//! /32 or /128.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A parsed CIDR block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The network address (host bits cleared), widened to 128 bits.
    base: u128,
    /// Prefix length.
    len: u8,
    /// IPv6 rather than IPv4.
    v6: bool,
}

impl Cidr {
    /// Parse `a.b.c.d/n`, `x::y/n` or a bare address; `None` if it is not an address.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (addr, len) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l.parse::<u8>().ok()?)),
            None => (text, None),
        };
        let (bits, width, v6) = match addr.parse::<IpAddr>().ok()? {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32u8, false),
            IpAddr::V6(v6) => (u128::from(v6), 128u8, true),
        };
        let len = len.unwrap_or(width).min(width);
        Some(Self {
            base: bits & mask(width, len),
            len,
            v6,
        })
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// Whether the two blocks share an address (never across IP versions).
    pub fn overlaps(&self, other: &Cidr) -> bool {
        if self.v6 != other.v6 {
            return false;
        }
        let width = if self.v6 { 128 } else { 32 };
        let shorter = self.len.min(other.len);
        self.base & mask(width, shorter) == other.base & mask(width, shorter)
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.v6 {
            write!(f, "{}/{}", Ipv6Addr::from(self.base), self.len)
        } else {
            // The base came from a u32 and was only masked, so it fits.
            let v4 = u32::try_from(self.base).unwrap_or_default();
            write!(f, "{}/{}", Ipv4Addr::from(v4), self.len)
        }
    }
}

/// A mask of `len` leading ones in a `width`-bit address, in the low bits of a u128.
fn mask(width: u8, len: u8) -> u128 {
    let all = if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    if len == 0 {
        0
    } else {
        all & (all << (width - len))
    }
}

/// The canonical spelling of a block, or the text itself when it is not a CIDR.
pub fn canonical(text: &str) -> String {
    Cidr::parse(text).map_or_else(|| text.trim().to_owned(), |c| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_clears_host_bits_and_widens_bare_addresses() {
        assert_eq!(canonical("10.0.0.1/8"), "10.0.0.0/8");
        assert_eq!(canonical("10.1.2.3"), "10.1.2.3/32");
        assert_eq!(canonical("2001:db8::1/64"), "2001:db8::/64");
        assert_eq!(canonical("0.0.0.0/0"), "0.0.0.0/0");
        assert_eq!(canonical("::/0"), "::/0");
        assert_eq!(canonical("not-a-cidr"), "not-a-cidr");
        assert_eq!(Cidr::parse("10.0.0.0/33").map(|c| c.prefix_len()), Some(32));
        assert_eq!(Cidr::parse("10.0.0.0/x"), None);
    }

    #[test]
    fn overlap_needs_a_shared_address_of_the_same_version() {
        let c = |t: &str| Cidr::parse(t).unwrap_or_else(|| panic!("{t}"));
        assert!(c("10.6.0.0/24").overlaps(&c("10.0.0.0/8")));
        assert!(c("10.0.0.0/8").overlaps(&c("10.6.0.0/24")));
        assert!(!c("10.6.0.0/24").overlaps(&c("10.6.1.0/24")));
        assert!(!c("192.168.0.0/16").overlaps(&c("10.6.0.0/24")));
        assert!(c("0.0.0.0/0").overlaps(&c("10.6.0.0/24")));
        assert!(!c("::/0").overlaps(&c("10.6.0.0/24")));
        assert!(c("fd00::/8").overlaps(&c("fd00:1::/64")));
    }
}

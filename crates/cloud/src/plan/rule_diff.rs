//! Security-group rules compared by their semantic key, and the diff that reconciles them.
//!
//! Key: direction, ethertype, protocol, port range, remote group, remote prefix. Descriptions
//! are ignored, and equivalent spellings compare equal (`TCP`/`tcp`/`6`, `10.0.0.1/8` /
//! `10.0.0.0/8`, `0.0.0.0/0` / no prefix), so a rule Neutron stored differently from how we
//! sent it still matches and reconciling twice changes nothing.
//!
//! ## Which observed rules are ours
//! Rules we create carry [`RULE_MARKER`] at the end of their description. Only such rules are
//! deleted when no longer desired; rules without it (added by hand, by other tools, Neutron's
//! default egress rules, or upstream CAPO's rules after adoption) are left alone unless the
//! operator asks for strict mode. A marker, rather than IDs tracked in status, survives a lost
//! status (clusterctl move rebuilds status from the cloud) and needs no extra bookkeeping.

use capo_openstack::network::SecurityGroupRule;

/// Suffix of the description of every rule this provider creates.
pub const RULE_MARKER: &str = "[capo]";

/// The semantic identity of a rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleKey {
    /// `ingress` or `egress`.
    pub direction: String,
    /// `IPv4` or `IPv6`.
    pub ethertype: String,
    /// Normalised protocol name; None = any.
    pub protocol: Option<String>,
    /// Lowest port (or ICMP type).
    pub port_min: Option<u16>,
    /// Highest port (or ICMP code).
    pub port_max: Option<u16>,
    /// Remote security group ID.
    pub remote_group: Option<String>,
    /// Canonical remote CIDR; None = any address of the ethertype.
    pub remote_prefix: Option<String>,
}

/// A rule we want in a group: key plus the description to create it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredRule {
    /// Semantic key.
    pub key: RuleKey,
    /// Human description (without the marker).
    pub description: String,
}

/// Result of a diff: what to create and which observed rule IDs to delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleDiff {
    /// Rules to create.
    pub create: Vec<DesiredRule>,
    /// IDs of observed rules to delete.
    pub delete: Vec<String>,
}

impl RuleDiff {
    /// True when nothing needs to change.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.delete.is_empty()
    }
}

impl RuleKey {
    /// Build a normalised key.
    pub fn new(
        direction: &str,
        ethertype: &str,
        protocol: Option<&str>,
        ports: (Option<u16>, Option<u16>),
        remote_group: Option<&str>,
        remote_prefix: Option<&str>,
    ) -> Self {
        let protocol = normalize_protocol(protocol);
        let (port_min, port_max) = if protocol.is_some() {
            ports
        } else {
            (None, None)
        };
        Self {
            direction: direction.to_ascii_lowercase(),
            ethertype: normalize_ethertype(ethertype),
            protocol,
            port_min,
            port_max,
            remote_group: remote_group.filter(|g| !g.is_empty()).map(str::to_owned),
            remote_prefix: remote_prefix.and_then(normalize_prefix),
        }
    }

    /// The key of an observed Neutron rule.
    pub fn of(rule: &SecurityGroupRule) -> Self {
        Self::new(
            &rule.direction,
            &rule.ethertype,
            rule.protocol.as_deref(),
            (rule.port_range_min, rule.port_range_max),
            rule.remote_group_id.as_deref(),
            rule.remote_ip_prefix.as_deref(),
        )
    }
}

impl DesiredRule {
    /// The create body for group `security_group_id` (description carries the marker).
    pub fn to_create(&self, security_group_id: &str) -> SecurityGroupRule {
        let k = &self.key;
        SecurityGroupRule {
            id: String::new(),
            security_group_id: security_group_id.to_owned(),
            direction: k.direction.clone(),
            ethertype: k.ethertype.clone(),
            protocol: k.protocol.clone(),
            port_range_min: k.port_min,
            port_range_max: k.port_max,
            remote_ip_prefix: k.remote_prefix.clone(),
            remote_group_id: k.remote_group.clone(),
            description: Some(marked(&self.description)),
        }
    }
}

/// A description with the marker appended.
pub fn marked(description: &str) -> String {
    if description.is_empty() {
        RULE_MARKER.to_owned()
    } else {
        format!("{description} {RULE_MARKER}")
    }
}

/// Whether an observed rule was created by this provider.
pub fn is_ours(rule: &SecurityGroupRule) -> bool {
    rule.description
        .as_deref()
        .is_some_and(|d| d.trim_end().ends_with(RULE_MARKER))
}

/// Diff desired against observed rules of one group. Duplicated desired keys are created
/// once; an observed rule matching any desired key is kept whoever created it.
pub fn diff(desired: &[DesiredRule], observed: &[SecurityGroupRule], strict: bool) -> RuleDiff {
    let observed_keys: Vec<RuleKey> = observed.iter().map(RuleKey::of).collect();
    let mut out = RuleDiff::default();
    for d in desired {
        let present = observed_keys.contains(&d.key);
        let queued = out.create.iter().any(|c| c.key == d.key);
        if !present && !queued {
            out.create.push(d.clone());
        }
    }
    for (rule, key) in observed.iter().zip(&observed_keys) {
        let wanted = desired.iter().any(|d| &d.key == key);
        if !wanted && (strict || is_ours(rule)) {
            out.delete.push(rule.id.clone());
        }
    }
    out
}

fn normalize_ethertype(e: &str) -> String {
    if e.eq_ignore_ascii_case("ipv6") {
        "IPv6".to_owned()
    } else {
        "IPv4".to_owned()
    }
}

fn normalize_protocol(p: Option<&str>) -> Option<String> {
    let p = p?.trim().to_ascii_lowercase();
    let name = match p.as_str() {
        "" | "any" | "0" => return None,
        "6" => "tcp",
        "17" => "udp",
        "1" => "icmp",
        "58" | "icmpv6" => "ipv6-icmp",
        "132" => "sctp",
        "112" => "vrrp",
        other => other,
    };
    Some(name.to_owned())
}

/// Canonical CIDR (host bits cleared, bare address → /32 or /128); "any" prefixes → None.
fn normalize_prefix(p: &str) -> Option<String> {
    let canonical = super::cidr::canonical(p);
    (!canonical.is_empty() && !canonical.ends_with("/0")).then_some(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(id: &str, key: &RuleKey, description: &str) -> SecurityGroupRule {
        let mut r = DesiredRule {
            key: key.clone(),
            description: String::new(),
        }
        .to_create("sg");
        r.id = id.to_owned();
        r.description = Some(description.to_owned());
        r
    }

    fn tcp(port: u16, prefix: Option<&str>) -> RuleKey {
        RuleKey::new(
            "ingress",
            "IPv4",
            Some("tcp"),
            (Some(port), Some(port)),
            None,
            prefix,
        )
    }

    #[test]
    fn equivalent_spellings_compare_equal() {
        let a = RuleKey::new(
            "INGRESS",
            "ipv4",
            Some("6"),
            (Some(22), Some(22)),
            None,
            Some("10.1.2.3/8"),
        );
        assert_eq!(a, tcp(22, Some("10.0.0.0/8")));
        assert_eq!(tcp(22, Some("0.0.0.0/0")), tcp(22, None));
        assert_eq!(
            RuleKey::new(
                "egress",
                "IPv6",
                Some("any"),
                (Some(1), None),
                None,
                Some("::/0")
            ),
            RuleKey::new("egress", "IPv6", None, (None, None), None, None)
        );
        assert_eq!(
            normalize_prefix("2001:db8::1/64").as_deref(),
            Some("2001:db8::/64")
        );
        assert_eq!(
            normalize_prefix("192.0.2.7").as_deref(),
            Some("192.0.2.7/32")
        );
    }

    #[test]
    fn diff_creates_missing_and_deletes_only_ours() {
        let want = vec![
            DesiredRule {
                key: tcp(22, None),
                description: "SSH".into(),
            },
            DesiredRule {
                key: tcp(22, None),
                description: "dup".into(),
            },
            DesiredRule {
                key: tcp(6443, None),
                description: "API".into(),
            },
        ];
        let seen = vec![
            observed("a", &tcp(6443, None), "Kubernetes API"),
            observed("b", &tcp(8080, None), "old [capo]"),
            observed("c", &tcp(9090, None), "by hand"),
        ];
        let d = diff(&want, &seen, false);
        assert_eq!(d.create.len(), 1);
        assert_eq!(d.create[0].description, "SSH");
        assert_eq!(d.delete, vec!["b".to_string()]);
        let strict = diff(&want, &seen, true);
        assert_eq!(strict.delete, vec!["b".to_string(), "c".to_string()]);
    }

    #[test]
    fn applying_a_diff_converges() {
        let want = vec![DesiredRule {
            key: tcp(22, None),
            description: "SSH".into(),
        }];
        let d = diff(&want, &[], false);
        let created: Vec<_> = d
            .create
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut c = r.to_create("sg");
                c.id = i.to_string();
                c
            })
            .collect();
        // Nothing wanted and nothing there: nothing to do.
        assert!(diff(&[], &[], true).is_empty());
        assert!(is_ours(&created[0]));
        assert_eq!(created[0].description.as_deref(), Some("SSH [capo]"));
        assert!(diff(&want, &created, true).is_empty());
    }
}

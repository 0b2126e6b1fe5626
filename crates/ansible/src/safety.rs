//! Refusal of values that Ansible or the jump command would execute.
//!
//! Ansible templates every string of a vars file and an inventory, so a value containing Jinja
//! delimiters (for instance an NTP server `{{ lookup('pipe', ...) }}` in a cluster spec) would
//! run code on the machine running the playbook. The SSH user and the bastion address end up in
//! a `ProxyCommand` that a shell runs, so they are restricted to plain names and addresses.
//! Such values are refused with an error naming the variable (not the value) rather than
//! silently dropped, so the user sees why the documents are not rendered.

use crate::{ClusterFacts, Error, Result};

const JINJA_DELIMITERS: &[&str] = &["{{", "{%", "{#"];

/// Checks every string that the renderers would write.
pub(crate) fn check(facts: &ClusterFacts) -> Result<()> {
    let os = &facts.openstack;
    let cluster: [(&str, &Option<String>); 17] = [
        ("kube_network_plugin", &facts.kube_network_plugin),
        ("flannel_interface", &facts.flannel_interface),
        ("cilium_openstack_project_id", &facts.cilium_project_id),
        (
            "cilium_openstack_default_subnet_id",
            &facts.cilium_default_subnet_id,
        ),
        ("master_virtual_vip", &facts.control_plane_vip),
        ("ingress_virtual_vip", &facts.ingress_vip),
        ("cloud_master_vip", &os.mgmt),
        ("openstack_auth_domain", &os.hosts.keystone),
        ("openstack_cinder_domain", &os.hosts.cinder),
        ("openstack_nova_domain", &os.hosts.nova),
        ("openstack_neutron_domain", &os.hosts.neutron),
        ("openstack_project_name", &os.project),
        ("openstack_project_domain_name", &os.project_domain),
        ("openstack_region_name", &os.region),
        ("ntp_server", &facts.ntp_server),
        ("vip_mgmt", &facts.management_vip),
        ("ansible_user", &Some(facts.ssh_user.clone())),
    ];
    for (name, value) in cluster {
        template_free(name, value.as_deref())?;
    }
    for id in facts.cilium_security_group_ids.iter().flatten() {
        template_free("cilium_openstack_security_group_ids", Some(id))?;
    }
    for host in &facts.hosts {
        check_host(host)?;
    }
    shell_word("ansible_user", &facts.ssh_user, is_user_char)?;
    if let Some(bastion) = &facts.bastion {
        shell_word("bastion ansible_user", &bastion.user, is_user_char)?;
        shell_word("bastion ansible_host", &bastion.address, is_address_char)?;
    }
    Ok(())
}

fn check_host(host: &crate::HostFacts) -> Result<()> {
    template_free("inventory host name", Some(&host.name))?;
    template_free("ip", host.private_ip.as_deref())?;
    template_free("ansible_host", host.public_ip.as_deref())?;
    template_free("keepalived_interface", host.keepalived_interface.as_deref())?;
    if let Some(r) = &host.reserved {
        for value in [
            &r.kube_cpu_reserved,
            &r.kube_memory_reserved,
            &r.kube_ephemeral_storage_reserved,
            &r.system_cpu_reserved,
            &r.system_memory_reserved,
            &r.system_ephemeral_storage_reserved,
        ] {
            template_free("node_resources", value.as_deref())?;
        }
    }
    Ok(())
}

fn template_free(variable: &str, value: Option<&str>) -> Result<()> {
    match value {
        Some(v) if JINJA_DELIMITERS.iter().any(|d| v.contains(d)) => Err(Error::UnsafeValue {
            variable: variable.to_owned(),
            reason: "contains Jinja template delimiters",
        }),
        _ => Ok(()),
    }
}

/// A word of the jump command: non-empty, allowed characters only, and not starting with `-`
/// (which ssh would read as an option).
fn shell_word(variable: &str, value: &str, allowed: fn(char) -> bool) -> Result<()> {
    let ok = !value.is_empty() && !value.starts_with('-') && value.chars().all(allowed);
    if ok {
        Ok(())
    } else {
        Err(Error::UnsafeValue {
            variable: variable.to_owned(),
            reason: "must be a plain name or address (letters, digits, '.', '_', '-', ':')",
        })
    }
}

fn is_user_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

fn is_address_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BastionFacts, HostFacts};

    #[test]
    fn jinja_in_any_value_is_refused_by_name() {
        let mut facts = ClusterFacts::new();
        facts.ntp_server = Some("{{ lookup('pipe', 'id') }}".into());
        let err = check(&facts)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("ntp_server"), "{err}");
        assert!(!err.contains("lookup"), "the value is not echoed: {err}");

        let mut facts = ClusterFacts::new();
        facts.hosts.push(HostFacts {
            name: "w".into(),
            keepalived_interface: Some("{% raw %}".into()),
            ..HostFacts::default()
        });
        assert!(check(&facts).is_err());
    }

    #[test]
    fn jump_command_words_are_restricted() {
        for (user, address) in [
            ("ubuntu\" -o ProxyCommand=\"id", "203.0.113.5"),
            ("-oProxyCommand=id", "203.0.113.5"),
            ("ubuntu", "203.0.113.5;id"),
            ("ubuntu", ""),
        ] {
            let mut facts = ClusterFacts::new();
            facts.bastion = Some(BastionFacts {
                address: address.into(),
                user: user.into(),
            });
            assert!(check(&facts).is_err(), "{user} {address}");
        }
        let mut facts = ClusterFacts::new();
        facts.bastion = Some(BastionFacts {
            address: "2001:db8::5".into(),
            user: "cloud-user".into(),
        });
        assert!(check(&facts).is_ok());
        facts.ssh_user = "root; id".into();
        assert!(check(&facts).is_err());
    }
}

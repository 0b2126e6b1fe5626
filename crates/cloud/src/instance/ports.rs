//! Ports (and their trunks) of one server: `<server>-<nameSuffix|index>` on their network,
//! tagged with the spec tags and the server's ownership tag.

use capo_api::v1beta1::{BindingProfile, ResolvedPortSpec};
use capo_openstack::Session;
use capo_openstack::network::{
    self as net, AddressPair, FixedIp, ListFilter, PORT, Port, PortCreate, TRUNK, Trunk,
    TrunkCreate,
};
use serde_json::{Value, json};

use super::owner::{ServerOwner, pick, split_duplicates};
use crate::error::{Context, Error, Result};
use crate::networking::lookup::get_opt;

/// A port made (or adopted) for the server, and its trunk when one was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsuredPort {
    /// Port ID.
    pub id: String,
    /// Trunk ID (when `trunk: true`).
    pub trunk_id: Option<String>,
}

/// Upstream's port name: `<server>-<nameSuffix>`, or `<server>-<index>` without a suffix.
pub fn port_name(server: &str, name_suffix: Option<&str>, index: usize) -> String {
    match name_suffix.filter(|s| !s.is_empty()) {
        Some(sfx) => format!("{server}-{sfx}"),
        None => format!("{server}-{index}"),
    }
}

/// Ensure every port in order, calling `record` with each port's index right after it is
/// ensured (so the caller can persist the ID before the next create). `recorded[i]` is the
/// ID recorded for port `i` earlier, if any.
pub async fn ensure_ports(
    s: &Session,
    owner: &ServerOwner,
    specs: &[ResolvedPortSpec],
    recorded: &[String],
    mut record: impl FnMut(usize, &EnsuredPort),
) -> Result<Vec<EnsuredPort>> {
    let mut out = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let p = ensure_port(s, owner, spec, recorded.get(i).map(String::as_str)).await?;
        record(i, &p);
        out.push(p);
    }
    Ok(out)
}

/// Ensure one port (by recorded ID, else name + network + ownership, else create), its tags and,
/// when `spec.trunk`, its trunk. A lost create reply is healed on the rerun by the name lookup.
pub async fn ensure_port(
    s: &Session,
    owner: &ServerOwner,
    spec: &ResolvedPortSpec,
    recorded: Option<&str>,
) -> Result<EnsuredPort> {
    let port = match find_port(s, owner, spec, recorded).await? {
        Some(p) => p,
        None => {
            let trusted_attribute = spec
                .profile
                .as_ref()
                .is_some_and(|p| p.trusted_vf == Some(true))
                && trusted_vif_extension(s).await?;
            let body = port_body(spec, trusted_attribute)?;
            tracing::info!(name = %spec.name, network = %spec.network_id, "creating port");
            net::create::<Port>(s, PORT, &body)
                .await
                .ctx(|| format!("create port {}", spec.name))?
        }
    };
    let tags = owner.desired_tags(&spec.tags);
    ensure_tags(s, PORT, &port.id, &port.tags, &tags).await?;
    let trunk_id = if spec.trunk == Some(true) {
        Some(ensure_trunk(s, owner, spec, &port.id, &tags).await?)
    } else {
        None
    };
    Ok(EnsuredPort {
        id: port.id,
        trunk_id,
    })
}

async fn find_port(
    s: &Session,
    owner: &ServerOwner,
    spec: &ResolvedPortSpec,
    recorded: Option<&str>,
) -> Result<Option<Port>> {
    if let Some(id) = recorded.filter(|i| !i.is_empty())
        && let Some(p) = get_opt::<Port>(s, PORT, id).await?
    {
        return pick(
            "port",
            &spec.name,
            vec![p],
            |p| &p.id,
            |p| owner.classify_tags(&p.tags),
        );
    }
    let keep = named_ports(s, owner, spec).await?;
    pick(
        "port",
        &spec.name,
        keep,
        |p| &p.id,
        |p| owner.classify_tags(&p.tags),
    )
}

/// The ports named and placed like `spec`, less the duplicates a create whose reply was lost
/// left, which are deleted ([`split_duplicates`]: one kept, an attached one first; never
/// another owner's).
async fn named_ports(
    s: &Session,
    owner: &ServerOwner,
    spec: &ResolvedPortSpec,
) -> Result<Vec<Port>> {
    let filter = ListFilter::by_name(&spec.name).with("network_id", spec.network_id.clone());
    let found: Vec<Port> = net::list(s, PORT, &filter)
        .await
        .ctx(|| format!("list ports {:?}", spec.name))?;
    let (keep, extra) = split_duplicates(
        found,
        |p| &p.id,
        |p| !p.device_id.is_empty(),
        |p| owner.classify_tags(&p.tags),
    );
    for dup in &extra {
        tracing::warn!(name = %spec.name, id = %dup.id, "deleting a duplicate port left by a lost create reply");
        crate::networking::lookup::delete_opt(s, PORT, &dup.id).await?;
    }
    Ok(keep)
}

/// Delete the duplicates of a server's port once the server runs with it (attached, so it
/// is the one kept). Neutron may commit a port whose POST was still under way when its reply
/// was lost or its caller killed, after the next attempt looked by name and created its own;
/// such a port carries no tag yet (tags follow the create), so neither that lookup, done
/// before it was committed, nor the delete path (which looks by name only for names it has
/// not found) would see it again.
pub async fn delete_duplicate_ports(
    s: &Session,
    owner: &ServerOwner,
    spec: &ResolvedPortSpec,
) -> Result<()> {
    named_ports(s, owner, spec).await.map(drop)
}

/// Replace the allowed address pairs of the existing port `id` with `pairs` (one PUT; a
/// pair without a MAC takes the port's, as at create). Only for a port with port security:
/// Neutron refuses pairs on one without.
pub async fn set_address_pairs(
    s: &Session,
    id: &str,
    pairs: &[capo_api::v1beta1::AddressPair],
) -> Result<()> {
    let pairs: Vec<AddressPair> = pairs
        .iter()
        .map(|a| AddressPair {
            ip_address: a.ip_address.clone(),
            mac_address: a.mac_address.clone(),
        })
        .collect();
    net::update::<Port>(s, PORT, id, json!({"allowed_address_pairs": pairs}))
        .await
        .map(drop)
        .ctx(|| format!("update the allowed address pairs of port {id}"))
}

/// Whether Neutron has the `port-trusted-vif` extension, asked only for a port that wants a
/// trusted VF (the extension list is read once per session).
async fn trusted_vif_extension(s: &Session) -> Result<bool> {
    let extensions = s
        .network_extensions()
        .await
        .ctx(|| "list Neutron extensions".to_owned())?;
    Ok(extensions.contains(TRUSTED_VIF_EXTENSION))
}

/// Neutron's extension that gives ports their own `trusted` attribute.
const TRUSTED_VIF_EXTENSION: &str = "port-trusted-vif";

/// The create body (the client wraps it in `{"port": ...}`): typed fields, then `valueSpecs`
/// merged in as raw JSON. A trusted VF is asked for with the port's `trusted` attribute when
/// `trusted_attribute` (Neutron has `port-trusted-vif`), else in `binding:profile`, as upstream.
fn port_body(spec: &ResolvedPortSpec, trusted_attribute: bool) -> Result<Value> {
    let no_security = spec.disable_port_security == Some(true);
    let create = PortCreate {
        name: spec.name.clone(),
        network_id: spec.network_id.clone(),
        description: Some(spec.description.clone()).filter(|d| !d.is_empty()),
        fixed_ips: spec
            .fixed_ips
            .iter()
            .map(|f| FixedIp {
                subnet_id: f.subnet.clone(),
                ip_address: f.ip_address.clone(),
            })
            .collect(),
        // Port security off forbids groups; otherwise an empty list means Neutron's default.
        security_groups: if no_security {
            Some(Vec::new())
        } else {
            Some(spec.security_groups.clone()).filter(|g| !g.is_empty())
        },
        // Neutron refuses address pairs on a port without port security; upstream drops them.
        allowed_address_pairs: if no_security {
            Vec::new()
        } else {
            spec.allowed_address_pairs
                .iter()
                .map(|a| AddressPair {
                    ip_address: a.ip_address.clone(),
                    mac_address: a.mac_address.clone(),
                })
                .collect()
        },
        port_security_enabled: spec.disable_port_security.map(|d| !d),
        admin_state_up: spec.admin_state_up,
        mac_address: spec.mac_address.clone(),
        vnic_type: spec.vnic_type.clone(),
        host_id: spec.host_id.clone(),
        profile: spec
            .profile
            .as_ref()
            .and_then(|p| binding_profile(p, !trusted_attribute)),
        trusted: trusted_attribute.then_some(true),
        propagate_uplink_status: spec.propagate_uplink_status,
        device_owner: None,
    };
    let mut port = serde_json::to_value(&create)
        .map_err(|e| Error::InvalidSpec(format!("port {}: {e}", spec.name)))?;
    for vs in &spec.value_specs {
        // Upstream passes the value verbatim as JSON; a non-JSON value is sent as a string.
        let v = serde_json::from_str(&vs.value).unwrap_or_else(|_| json!(vs.value));
        port[vs.key.as_str()] = v;
    }
    Ok(port)
}

/// `binding:profile` of upstream's two switches (None when neither is set); the trusted VF
/// only when `with_trusted` (it is not asked for with the port's own attribute).
fn binding_profile(p: &BindingProfile, with_trusted: bool) -> Option<Value> {
    let mut m = serde_json::Map::new();
    if p.ovs_hw_offload == Some(true) {
        m.insert("capabilities".into(), json!(["switchdev"]));
    }
    if with_trusted && p.trusted_vf == Some(true) {
        m.insert("trusted".into(), json!(true));
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

/// One `PUT .../tags` when a desired tag is missing (existing tags are kept).
async fn ensure_tags(
    s: &Session,
    r: net::Resource,
    id: &str,
    current: &[String],
    desired: &[String],
) -> Result<()> {
    if desired.iter().all(|t| current.contains(t)) {
        return Ok(());
    }
    let mut all = current.to_vec();
    all.extend(desired.iter().filter(|t| !current.contains(t)).cloned());
    net::replace_tags(s, r, id, &all)
        .await
        .ctx(|| format!("tag {} {id}", r.singular))
}

/// The trunk named and described like the port, on the port.
async fn ensure_trunk(
    s: &Session,
    owner: &ServerOwner,
    spec: &ResolvedPortSpec,
    port_id: &str,
    tags: &[String],
) -> Result<String> {
    let name = spec.name.as_str();
    let filter = ListFilter::default().with("port_id", port_id);
    let found: Vec<Trunk> = net::list(s, TRUNK, &filter)
        .await
        .ctx(|| format!("list trunks of port {port_id}"))?;
    let trunk = match pick(
        "trunk",
        name,
        found,
        |t| &t.id,
        |t| owner.classify_tags(&t.tags),
    )? {
        Some(t) => t,
        None => {
            let body = TrunkCreate {
                name: name.to_owned(),
                port_id: port_id.to_owned(),
                description: Some(spec.description.clone()).filter(|d| !d.is_empty()),
            };
            net::create::<Trunk>(s, TRUNK, &body)
                .await
                .ctx(|| format!("create trunk {name}"))?
        }
    };
    ensure_tags(s, TRUNK, &trunk.id, &trunk.tags, tags).await?;
    Ok(trunk.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::Ownership;

    fn port(id: &str, device: &str, tags: &[&str]) -> Port {
        serde_json::from_value(json!({
            "id": id, "name": "m-0", "network_id": "n", "device_id": device,
            "tags": tags,
        }))
        .unwrap()
    }

    fn class(p: &Port) -> Ownership {
        if p.tags.iter().any(|t| t == "ours") {
            Ownership::Ours
        } else if p.tags.iter().any(|t| t == "theirs") {
            Ownership::Foreign("theirs".into())
        } else {
            Ownership::Unowned
        }
    }

    fn split_duplicates(
        ps: Vec<Port>,
        class: impl Fn(&Port) -> Ownership,
    ) -> (Vec<Port>, Vec<Port>) {
        super::split_duplicates(ps, |p| &p.id, |p| !p.device_id.is_empty(), class)
    }

    fn ids(ps: &[Port]) -> Vec<&str> {
        ps.iter().map(|p| p.id.as_str()).collect()
    }

    #[test]
    fn duplicate_creates_keep_one_and_delete_the_unattached_rest() {
        // Two untagged, unattached: the lowest ID is kept.
        let (keep, extra) = split_duplicates(vec![port("b", "", &[]), port("a", "", &[])], class);
        assert_eq!((ids(&keep), ids(&extra)), (vec!["a"], vec!["b"]));
        // The attached one wins, then a tagged one.
        let (keep, extra) = split_duplicates(
            vec![
                port("a", "", &["ours"]),
                port("b", "srv", &[]),
                port("c", "", &[]),
            ],
            class,
        );
        assert_eq!((ids(&keep), ids(&extra)), (vec!["b"], vec!["a", "c"]));
        let (keep, extra) =
            split_duplicates(vec![port("a", "", &[]), port("b", "", &["ours"])], class);
        assert_eq!((ids(&keep), ids(&extra)), (vec!["b"], vec!["a"]));
        // Another owner's port is never deleted, and stays for pick to report.
        let (keep, extra) =
            split_duplicates(vec![port("a", "", &[]), port("z", "", &["theirs"])], class);
        assert_eq!(
            (ids(&keep), ids(&extra)),
            (vec!["a", "z"], Vec::<&str>::new())
        );
        // Two attached ports are not duplicates of a lost reply: nothing is deleted.
        let (keep, extra) =
            split_duplicates(vec![port("a", "s1", &[]), port("b", "s2", &[])], class);
        assert_eq!(
            (ids(&keep), ids(&extra)),
            (vec!["a", "b"], Vec::<&str>::new())
        );
    }

    #[test]
    fn names_and_profile() {
        assert_eq!(port_name("m", Some("data"), 1), "m-data");
        assert_eq!(port_name("m", None, 0), "m-0");
        let p = BindingProfile {
            ovs_hw_offload: Some(true),
            trusted_vf: Some(true),
        };
        assert_eq!(
            binding_profile(&p, true),
            Some(json!({"capabilities": ["switchdev"], "trusted": true}))
        );
        assert_eq!(binding_profile(&BindingProfile::default(), true), None);
    }

    /// Upstream's "uses port_trusted_vif extension when available instead of binding:profile":
    /// with the extension the trusted VF is the port's own `trusted` attribute and
    /// `binding:profile` keeps only the other switch; without it, `binding:profile` carries it.
    #[test]
    fn trusted_vf_is_the_ports_attribute_when_neutron_has_port_trusted_vif() {
        let spec = ResolvedPortSpec {
            name: "m-0".into(),
            network_id: "n".into(),
            profile: Some(BindingProfile {
                ovs_hw_offload: Some(true),
                trusted_vf: Some(true),
            }),
            ..Default::default()
        };
        let with = port_body(&spec, true).unwrap();
        assert_eq!(with["trusted"], json!(true));
        assert_eq!(
            with["binding:profile"],
            json!({"capabilities": ["switchdev"]})
        );
        let without = port_body(&spec, false).unwrap();
        assert_eq!(without.get("trusted"), None);
        assert_eq!(
            without["binding:profile"],
            json!({"capabilities": ["switchdev"], "trusted": true})
        );
        let only_trusted = ResolvedPortSpec {
            profile: Some(BindingProfile {
                ovs_hw_offload: None,
                trusted_vf: Some(true),
            }),
            ..spec
        };
        let with = port_body(&only_trusted, true).unwrap();
        assert_eq!(
            (with.get("binding:profile"), &with["trusted"]),
            (None, &json!(true))
        );
    }

    #[test]
    fn port_body_carries_every_option_and_a_minimal_port_only_its_name_and_network() {
        use capo_api::v1beta1::{AddressPair as Pair, ResolvedFixedIP};
        let minimal = ResolvedPortSpec {
            name: "m-0".into(),
            network_id: "n".into(),
            ..Default::default()
        };
        assert_eq!(
            port_body(&minimal, false).unwrap(),
            json!({"name": "m-0", "network_id": "n"})
        );
        let full = ResolvedPortSpec {
            name: "m-data".into(),
            network_id: "n".into(),
            description: "Created by cluster-api-provider-openstack cluster c".into(),
            fixed_ips: vec![
                ResolvedFixedIP {
                    subnet: Some("s1".into()),
                    ip_address: Some("192.0.2.1".into()),
                },
                ResolvedFixedIP {
                    subnet: None,
                    ip_address: Some("198.51.100.1".into()),
                },
                ResolvedFixedIP {
                    subnet: Some("s2".into()),
                    ip_address: None,
                },
            ],
            security_groups: vec!["sg".into()],
            admin_state_up: Some(true),
            mac_address: Some("de:ad:be:ef:fe:ed".into()),
            allowed_address_pairs: vec![
                Pair {
                    ip_address: "192.0.2.1".into(),
                    mac_address: Some("de:ad:be:ef:fe:ed".into()),
                },
                Pair {
                    ip_address: "198.51.100.1".into(),
                    mac_address: None,
                },
            ],
            host_id: Some("host".into()),
            vnic_type: Some("normal".into()),
            profile: Some(BindingProfile {
                ovs_hw_offload: Some(true),
                trusted_vf: Some(true),
            }),
            propagate_uplink_status: Some(true),
            value_specs: vec![capo_api::v1beta1::ValueSpec {
                name: "v".into(),
                key: "test-key".into(),
                value: "test-value".into(),
            }],
            ..Default::default()
        };
        assert_eq!(
            port_body(&full, false).unwrap(),
            json!({
                "name": "m-data",
                "network_id": "n",
                "description": "Created by cluster-api-provider-openstack cluster c",
                "fixed_ips": [
                    {"subnet_id": "s1", "ip_address": "192.0.2.1"},
                    {"ip_address": "198.51.100.1"},
                    {"subnet_id": "s2"},
                ],
                "security_groups": ["sg"],
                "allowed_address_pairs": [
                    {"ip_address": "192.0.2.1", "mac_address": "de:ad:be:ef:fe:ed"},
                    {"ip_address": "198.51.100.1"},
                ],
                "admin_state_up": true,
                "mac_address": "de:ad:be:ef:fe:ed",
                "binding:vnic_type": "normal",
                "binding:host_id": "host",
                "binding:profile": {"capabilities": ["switchdev"], "trusted": true},
                "propagate_uplink_status": true,
                "test-key": "test-value",
            })
        );
    }

    #[test]
    fn port_security_on_keeps_address_pairs_and_off_drops_them() {
        let pair = capo_api::v1beta1::AddressPair {
            ip_address: "192.0.2.1".into(),
            mac_address: Some("de:ad:be:ef:fe:ed".into()),
        };
        let mut spec = ResolvedPortSpec {
            name: "m-0".into(),
            network_id: "n".into(),
            disable_port_security: Some(false),
            allowed_address_pairs: vec![pair],
            ..Default::default()
        };
        let on = port_body(&spec, false).unwrap();
        assert_eq!(on["port_security_enabled"], json!(true));
        assert_eq!(
            on["allowed_address_pairs"],
            json!([{"ip_address": "192.0.2.1", "mac_address": "de:ad:be:ef:fe:ed"}])
        );
        // Neutron refuses address pairs on a port without port security: they are left out.
        spec.disable_port_security = Some(true);
        let off = port_body(&spec, false).unwrap();
        assert_eq!(off["port_security_enabled"], json!(false));
        assert!(off.get("allowed_address_pairs").is_none(), "{off}");
    }

    #[test]
    fn port_security_off_and_value_specs() {
        let spec = ResolvedPortSpec {
            name: "m-0".into(),
            network_id: "n".into(),
            disable_port_security: Some(true),
            security_groups: vec!["sg".into()],
            vnic_type: Some("direct".into()),
            value_specs: vec![capo_api::v1beta1::ValueSpec {
                name: "x".into(),
                key: "dns_name".into(),
                value: "\"m\"".into(),
            }],
            ..Default::default()
        };
        let body = port_body(&spec, false).unwrap();
        assert_eq!(body["security_groups"], json!([]));
        assert_eq!(body["port_security_enabled"], json!(false));
        assert_eq!(body["binding:vnic_type"], json!("direct"));
        assert_eq!(body["dns_name"], json!("m"));
        assert!(body.get("description").is_none());
    }
}

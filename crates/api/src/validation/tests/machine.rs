//! Machine-shaped specs (machines, templates, servers, bastion) and their update rules.

use super::*;

#[test]
fn valid_objects_pass() {
    assert_eq!(machine_errors(json!({})), vec![]);
    assert_eq!(cluster_errors(json!({})), vec![]);
}

#[test]
fn params_need_exactly_one_of_id_or_filter() {
    let both = json!({"ports": [{"network": {"id": NET_ID, "filter": {"name": "net"}}}]});
    assert_eq!(
        machine_errors(both),
        one("spec.ports[0].network", "Forbidden")
    );
    let neither = json!({"securityGroups": [{}]});
    assert_eq!(
        machine_errors(neither),
        one("spec.securityGroups[0]", "Required")
    );
    let empty_filter = json!({"ports": [{"network": {"filter": {}}}]});
    assert_eq!(
        machine_errors(empty_filter),
        one("spec.ports[0].network.filter", "Required")
    );
    let subnet =
        json!({"ports": [{"fixedIPs": [{"subnet": {"id": SUBNET_ID, "filter": {"name": "s"}}}]}]});
    assert_eq!(
        machine_errors(subnet),
        one("spec.ports[0].fixedIPs[0].subnet", "Forbidden")
    );
}

#[test]
fn ids_must_be_uuids() {
    let patch = json!({"securityGroups": [{"id": "my-security-group"}]});
    assert_eq!(
        machine_errors(patch),
        one("spec.securityGroups[0].id", "Invalid")
    );
    let upper = json!({"securityGroups": [{"id": NET_ID.to_uppercase()}]});
    assert_eq!(machine_errors(upper), vec![]);
    let cluster_net = json!({"network": {"id": "not-a-uuid"}});
    assert_eq!(
        cluster_errors(cluster_net),
        one("spec.network.id", "Invalid")
    );
}

#[test]
fn image_param_needs_exactly_one_source() {
    let two = json!({"image": {"id": NET_ID, "imageRef": {"name": "ubuntu"}}});
    let m = machine(merged(json!({"flavor": "m1.small"}), two));
    assert_eq!(summary(m.validate_create()), one("spec.image", "Forbidden"));
    let none = machine(json!({"flavor": "m1.small", "image": {}}));
    assert_eq!(
        summary(none.validate_create()),
        one("spec.image", "Required")
    );
    let bad_ref = json!({"image": {"imageRef": {"name": ""}, "filter": null}});
    assert_eq!(
        machine_errors(bad_ref),
        one("spec.image.imageRef.name", "Required")
    );
}

#[test]
fn neutron_tags_are_non_empty_without_commas() {
    let patch = json!({"ports": [{"network": {"filter": {"tags": ["ok", "a,b", ""]}}}]});
    assert_eq!(
        machine_errors(patch),
        vec![
            ("spec.ports[0].network.filter.tags[1]".to_owned(), "Invalid"),
            ("spec.ports[0].network.filter.tags[2]".to_owned(), "Invalid"),
        ]
    );
    assert_eq!(
        cluster_errors(json!({"tags": ["x,y"]})),
        one("spec.tags[0]", "Invalid")
    );
    let not_any = json!({"network": {"filter": {"notTagsAny": [","]}}});
    assert_eq!(
        cluster_errors(not_any),
        one("spec.network.filter.notTagsAny[0]", "Invalid")
    );
}

#[test]
fn flavor_or_flavor_id_is_required() {
    let m = machine(json!({"image": {"id": NET_ID}}));
    assert_eq!(summary(m.validate_create()), one("spec.flavor", "Required"));
    let by_id = machine(json!({"flavorID": "42", "image": {"id": NET_ID}}));
    assert_eq!(summary(by_id.validate_create()), vec![]);
}

#[test]
fn root_is_reserved_only_when_root_volume_is_set() {
    let device = json!([{"name": "root", "sizeGiB": 10, "storage": {"type": "Volume"}}]);
    let with_root =
        json!({"rootVolume": {"sizeGiB": 20}, "additionalBlockDevices": device.clone()});
    assert_eq!(
        machine_errors(with_root),
        one("spec.additionalBlockDevices[0].name", "Forbidden")
    );
    assert_eq!(
        machine_errors(json!({"additionalBlockDevices": device})),
        vec![]
    );
}

#[test]
fn local_block_devices_take_no_volume_options() {
    let device = json!([{"name": "etcd", "sizeGiB": 10, "storage": {"type": "Local", "volume": {"type": "ssd"}}}]);
    let errors = machine_errors(json!({"additionalBlockDevices": device}));
    assert_eq!(
        errors,
        one("spec.additionalBlockDevices[0].storage.volume", "Forbidden")
    );
}

#[test]
fn volume_availability_zone_name_follows_from() {
    let missing = json!({"rootVolume": {"sizeGiB": 20, "availabilityZone": {"from": "Name"}}});
    assert_eq!(
        machine_errors(missing),
        one("spec.rootVolume.availabilityZone.name", "Required")
    );
    let extra = json!({"rootVolume": {"sizeGiB": 20, "availabilityZone": {"from": "Machine", "name": "az1"}}});
    assert_eq!(
        machine_errors(extra),
        one("spec.rootVolume.availabilityZone.name", "Forbidden")
    );
}

#[test]
fn no_security_groups_on_ports_without_port_security() {
    let port =
        json!({"ports": [{"disablePortSecurity": true, "securityGroups": [{"id": NET_ID}]}]});
    assert_eq!(
        machine_errors(port),
        one("spec.ports[0].securityGroups", "Forbidden")
    );
    let machine_level =
        json!({"ports": [{"disablePortSecurity": true}], "securityGroups": [{"id": NET_ID}]});
    assert_eq!(
        machine_errors(machine_level),
        one("spec.securityGroups", "Forbidden")
    );
    let enabled =
        json!({"ports": [{"disablePortSecurity": false, "securityGroups": [{"id": NET_ID}]}]});
    assert_eq!(machine_errors(enabled), vec![]);
}

#[test]
fn port_name_suffixes_are_unique() {
    let ports = json!({"ports": [{"nameSuffix": "data"}, {"nameSuffix": "data"}]});
    assert_eq!(
        machine_errors(ports),
        one("spec.ports[*].nameSuffix[1]", "Duplicate")
    );
}

#[test]
fn addresses_are_checked() {
    let pairs = json!({"ports": [{"allowedAddressPairs": [{"ipAddress": "10.0.0.5"}, {"ipAddress": "10.0.0.0/24"}, {"ipAddress": "vip"}]}]});
    assert_eq!(
        machine_errors(pairs),
        one("spec.ports[0].allowedAddressPairs[2].ipAddress", "Invalid")
    );
    let fixed = json!({"ports": [{"fixedIPs": [{"ipAddress": "10.0.0.300"}]}]});
    assert_eq!(
        machine_errors(fixed),
        one("spec.ports[0].fixedIPs[0].ipAddress", "Invalid")
    );
}

#[test]
fn scheduler_hint_value_matches_its_type() {
    let hints = json!({"schedulerHintAdditionalProperties": [{"name": "a", "value": {"type": "Bool", "string": "x"}}]});
    assert_eq!(
        machine_errors(hints),
        vec![
            (
                "spec.schedulerHintAdditionalProperties[0].value.bool".to_owned(),
                "Required"
            ),
            (
                "spec.schedulerHintAdditionalProperties[0].value.string".to_owned(),
                "Forbidden"
            ),
        ]
    );
}

fn updated_machine(old: Value, new: Value) -> Vec<(String, &'static str)> {
    let (old, new) = (
        machine(merged(machine_spec(), old)),
        machine(merged(machine_spec(), new)),
    );
    summary(new.validate_update(&old, &CTX))
}

#[test]
fn machine_spec_is_immutable_except_provider_id_and_identity() {
    assert_eq!(
        updated_machine(json!({}), json!({"flavor": "m1.large"})),
        one("spec.flavor", "Immutable")
    );
    assert_eq!(
        updated_machine(json!({}), json!({"providerID": "openstack:///abc"})),
        vec![]
    );
    // As upstream main: the controller rewrites an existing providerID (an older release's
    // `openstack:///<id>` gains the region), so a set one may change too.
    let moved = updated_machine(
        json!({"providerID": "openstack:///abc"}),
        json!({"providerID": "openstack://RegionOne/abc"}),
    );
    assert_eq!(moved, vec![]);
    let identity =
        json!({"identityRef": {"type": "Secret", "name": "other", "cloudName": "openstack"}});
    assert_eq!(updated_machine(json!({}), identity), vec![]);
    let tags = updated_machine(json!({"tags": ["a"]}), json!({"tags": ["a", "b"]}));
    assert_eq!(tags, one("spec.tags", "Immutable"));
}

fn template(spec: Value) -> OpenStackMachineTemplate {
    let spec = json!({"template": {"spec": spec}});
    object(
        "OpenStackMachineTemplate",
        "infrastructure.cluster.x-k8s.io/v1beta1",
        spec,
    )
}

#[test]
fn machine_templates_forbid_provider_id_and_changes() {
    let with_id = template(merged(
        machine_spec(),
        json!({"providerID": "openstack:///x"}),
    ));
    assert_eq!(
        summary(with_id.validate_create()),
        one("spec.template.spec.providerID", "Forbidden")
    );
    let (old, new) = (
        template(machine_spec()),
        template(merged(machine_spec(), json!({"flavor": "m1.large"}))),
    );
    assert_eq!(
        summary(new.validate_update(&old, &CTX)),
        one("spec.template.spec.flavor", "Immutable")
    );
    let dry_run = UpdateContext {
        topology_dry_run: true,
    };
    assert_eq!(summary(new.validate_update(&old, &dry_run)), vec![]);
}

/// Upstream's "Changing only allowedAddressPairs is allowed" (v0.15 line), on machines,
/// templates and servers: the pairs of an existing port may change; the pairs with another
/// field, or a port added, are still refused with the field named.
#[test]
fn only_the_address_pairs_of_existing_ports_may_change() {
    let port = |pairs: Value| json!({"ports": [{"network": {"id": "8f0e5a5e-2a4c-4d55-9d3e-3f1f5d0b6a11"}, "allowedAddressPairs": pairs}]});
    let (before, after) = (
        port(json!([{"ipAddress": "10.0.0.5"}])),
        port(json!([{"ipAddress": "10.0.0.5"}, {"ipAddress": "10.0.0.6"}])),
    );
    assert_eq!(updated_machine(before.clone(), after.clone()), vec![]);
    assert_eq!(updated_machine(before.clone(), port(json!([]))), vec![]);
    let with_flavor = merged(after.clone(), json!({"flavor": "m1.large"}));
    assert_eq!(
        updated_machine(before.clone(), with_flavor),
        one("spec.flavor", "Immutable")
    );
    let two_ports = json!({"ports": [{"network": {"id": "8f0e5a5e-2a4c-4d55-9d3e-3f1f5d0b6a11"}}, {"network": {"id": "8f0e5a5e-2a4c-4d55-9d3e-3f1f5d0b6a11"}}]});
    assert_eq!(
        updated_machine(before.clone(), two_ports),
        one("spec.ports", "Immutable")
    );
    let (old, new) = (
        template(merged(machine_spec(), before)),
        template(merged(machine_spec(), after)),
    );
    assert_eq!(summary(new.validate_update(&old, &CTX)), vec![]);
}

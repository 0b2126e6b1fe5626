//! Case-by-case tests of the admission rules. Each case asserts the exact field path and kind.

use super::{FieldErrorKind, UpdateContext, Validate, ValidationErrors};
use crate::v1alpha1::{OpenStackClusterIdentity, OpenStackFloatingIPPool, OpenStackServer};
use crate::v1beta1::{
    OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine, OpenStackMachineTemplate,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const NET_ID: &str = "7f8e1d2c-3b4a-4c5d-9e6f-0a1b2c3d4e5f";
const SUBNET_ID: &str = "0c7d6e5f-4a3b-4c2d-8e1f-9a8b7c6d5e4f";

fn object<T: DeserializeOwned>(kind: &str, api_version: &str, spec: Value) -> T {
    let value = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "test", "namespace": "default"},
        "spec": spec,
    });
    match serde_json::from_value(value) {
        Ok(object) => object,
        Err(e) => panic!("test fixture for {kind} does not deserialize: {e}"),
    }
}

fn machine_spec() -> Value {
    json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu-2404"}}})
}

fn machine(spec: Value) -> OpenStackMachine {
    object(
        "OpenStackMachine",
        "infrastructure.cluster.x-k8s.io/v1beta1",
        spec,
    )
}

fn identity() -> Value {
    json!({"type": "Secret", "name": "cloud-config", "cloudName": "openstack"})
}

fn cluster_spec() -> Value {
    json!({
        "identityRef": identity(),
        "managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["8.8.8.8"]}],
        "apiServerLoadBalancer": {"enabled": true},
    })
}

fn cluster(spec: Value) -> OpenStackCluster {
    object(
        "OpenStackCluster",
        "infrastructure.cluster.x-k8s.io/v1beta1",
        spec,
    )
}

/// Merges `patch` into `base` (objects recursively, everything else replaced).
fn merged(mut base: Value, patch: Value) -> Value {
    fn merge(base: &mut Value, patch: Value) {
        match (base, patch) {
            (Value::Object(b), Value::Object(p)) => {
                for (k, v) in p {
                    merge(b.entry(k).or_insert(Value::Null), v);
                }
            }
            (b, p) => *b = p,
        }
    }
    merge(&mut base, patch);
    base
}

/// `(path, kind name)` of every error, for compact assertions.
fn summary(result: Result<(), ValidationErrors>) -> Vec<(String, &'static str)> {
    let Err(errors) = result else {
        return Vec::new();
    };
    errors
        .0
        .iter()
        .map(|e| {
            let kind = match e.kind {
                FieldErrorKind::Required => "Required",
                FieldErrorKind::Invalid(_) => "Invalid",
                FieldErrorKind::Forbidden => "Forbidden",
                FieldErrorKind::Immutable => "Immutable",
                FieldErrorKind::Duplicate(_) => "Duplicate",
            };
            (e.path.to_string(), kind)
        })
        .collect()
}

fn one(path: &str, kind: &'static str) -> Vec<(String, &'static str)> {
    vec![(path.to_owned(), kind)]
}

fn machine_errors(patch: Value) -> Vec<(String, &'static str)> {
    summary(machine(merged(machine_spec(), patch)).validate_create())
}

fn cluster_errors(patch: Value) -> Vec<(String, &'static str)> {
    summary(cluster(merged(cluster_spec(), patch)).validate_create())
}

const CTX: UpdateContext = UpdateContext {
    topology_dry_run: false,
};

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

#[test]
fn remote_fields_are_exclusive_in_every_rule_list() {
    for list in [
        "allNodesSecurityGroupRules",
        "controlPlaneNodesSecurityGroupRules",
        "workerNodesSecurityGroupRules",
    ] {
        let rule = json!({"name": "r", "direction": "ingress", "remoteIPPrefix": "10.0.0.0/8", "remoteManagedGroups": ["worker"]});
        let patch =
            json!({"managedSecurityGroups": {"allowAllInClusterTraffic": false, list: [rule]}});
        assert_eq!(
            cluster_errors(patch),
            one(
                &format!("spec.managedSecurityGroups.{list}[0]"),
                "Forbidden"
            ),
            "{list}"
        );
    }
}

#[test]
fn security_group_rule_ports_and_families() {
    let rules = json!([
        {"name": "a", "direction": "ingress", "portRangeMin": 100, "portRangeMax": 90},
        {"name": "b", "direction": "ingress", "etherType": "IPv6", "remoteIPPrefix": "10.0.0.0/8"},
        {"name": "c", "direction": "ingress", "remoteGroupID": "worker"},
    ]);
    let errors = cluster_errors(
        json!({"managedSecurityGroups": {"allowAllInClusterTraffic": false, "allNodesSecurityGroupRules": rules}}),
    );
    let path = "spec.managedSecurityGroups.allNodesSecurityGroupRules";
    assert_eq!(
        errors,
        vec![
            (format!("{path}[0].portRangeMax"), "Invalid"),
            (format!("{path}[1].remoteIPPrefix"), "Invalid"),
            (format!("{path}[2].remoteGroupID"), "Invalid"),
        ]
    );
}

#[test]
fn external_network_rules_match_upstream_cel() {
    let bastion = json!({"disableExternalNetwork": true, "bastion": {"enabled": false, "floatingIP": "1.2.3.4"}});
    assert_eq!(
        cluster_errors(bastion),
        one("spec.bastion.floatingIP", "Forbidden")
    );
    let fip = json!({"disableExternalNetwork": true, "disableAPIServerFloatingIP": false});
    assert_eq!(
        cluster_errors(fip),
        one("spec.disableAPIServerFloatingIP", "Forbidden")
    );
}

#[test]
fn bastion_needs_a_valid_spec_when_enabled() {
    assert_eq!(
        cluster_errors(json!({"bastion": {"enabled": true}})),
        one("spec.bastion.spec", "Required")
    );
    assert_eq!(
        cluster_errors(json!({"bastion": {}})),
        one("spec.bastion.spec", "Required")
    );
    assert_eq!(
        cluster_errors(json!({"bastion": {"enabled": false}})),
        vec![]
    );
    let bad_spec = json!({"bastion": {"spec": {"image": {"filter": {"name": "u"}}}}});
    assert_eq!(
        cluster_errors(bad_spec),
        one("spec.bastion.spec.flavor", "Required")
    );
}

#[test]
fn managed_subnet_is_consistent() {
    let subnet = json!({"managedSubnets": [{
        "cidr": "10.6.0.0/24",
        "dnsNameservers": ["dns.example"],
        "allocationPools": [{"start": "10.6.0.10", "end": "10.6.1.20"}, {"start": "10.6.0.50", "end": "10.6.0.40"}],
    }]});
    assert_eq!(
        cluster_errors(subnet),
        vec![
            (
                "spec.managedSubnets[0].dnsNameservers[0]".to_owned(),
                "Invalid"
            ),
            (
                "spec.managedSubnets[0].allocationPools[0].end".to_owned(),
                "Invalid"
            ),
            (
                "spec.managedSubnets[0].allocationPools[1].end".to_owned(),
                "Invalid"
            ),
        ]
    );
    assert_eq!(
        cluster_errors(json!({"managedSubnets": [{"cidr": "10.6.0.0/33"}]})),
        one("spec.managedSubnets[0].cidr", "Invalid")
    );
}

#[test]
fn load_balancer_fields() {
    let lb = json!({"apiServerLoadBalancer": {"enabled": true, "additionalPorts": [8443, 8443, 70000], "allowedCIDRs": ["192.168.0.0/16", "2001:db8::/32", "nope"]}});
    assert_eq!(
        cluster_errors(lb),
        vec![
            (
                "spec.apiServerLoadBalancer.additionalPorts[2]".to_owned(),
                "Invalid"
            ),
            (
                "spec.apiServerLoadBalancer.additionalPorts[1]".to_owned(),
                "Duplicate"
            ),
            (
                "spec.apiServerLoadBalancer.allowedCIDRs[2]".to_owned(),
                "Invalid"
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
fn machine_spec_is_immutable_except_provider_id_once_and_identity() {
    assert_eq!(
        updated_machine(json!({}), json!({"flavor": "m1.large"})),
        one("spec.flavor", "Immutable")
    );
    assert_eq!(
        updated_machine(json!({}), json!({"providerID": "openstack:///abc"})),
        vec![]
    );
    let moved = updated_machine(
        json!({"providerID": "openstack:///abc"}),
        json!({"providerID": "openstack:///def"}),
    );
    assert_eq!(moved, one("spec.providerID", "Immutable"));
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

#[test]
fn cluster_templates_are_immutable() {
    let make = |spec: Value| -> OpenStackClusterTemplate {
        object(
            "OpenStackClusterTemplate",
            "infrastructure.cluster.x-k8s.io/v1beta1",
            json!({"template": {"spec": spec}}),
        )
    };
    let (old, new) = (
        make(cluster_spec()),
        make(merged(cluster_spec(), json!({"networkMTU": 1400}))),
    );
    assert_eq!(
        summary(new.validate_update(&old, &CTX)),
        one("spec.template.spec.networkMTU", "Immutable")
    );
}

fn updated_cluster(old: OpenStackCluster, new_patch: Value) -> Vec<(String, &'static str)> {
    let mut new_spec = serde_json::to_value(&old.spec).unwrap_or(Value::Null);
    new_spec = merged(new_spec, new_patch);
    let new = cluster(new_spec);
    summary(new.validate_update(&old, &CTX))
}

#[test]
fn cluster_update_rules() {
    let base = cluster(cluster_spec());
    assert_eq!(
        updated_cluster(base.clone(), json!({"network": {"id": NET_ID}})),
        one("spec.network", "Immutable")
    );
    let identity = json!({"identityRef": {"name": "rotated"}});
    assert_eq!(updated_cluster(base.clone(), identity), vec![]);
    let region = json!({"identityRef": {"region": "RegionTwo"}});
    assert_eq!(
        updated_cluster(base.clone(), region),
        one("spec.identityRef.region", "Immutable")
    );
    let cidrs = json!({"apiServerLoadBalancer": {"allowedCIDRs": ["10.0.0.0/8"], "monitor": {"delay": 20}}});
    assert_eq!(updated_cluster(base.clone(), cidrs), vec![]);
    let azs = json!({"controlPlaneAvailabilityZones": ["az1", "az2"]});
    assert_eq!(updated_cluster(base.clone(), azs), vec![]);
    let dns = json!({"managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["1.1.1.1"]}]});
    assert_eq!(updated_cluster(base.clone(), dns), vec![]);
    let cidr = json!({"managedSubnets": [{"cidr": "10.7.0.0/24", "dnsNameservers": ["8.8.8.8"]}]});
    assert_eq!(
        updated_cluster(base, cidr),
        one("spec.managedSubnets[0].cidr", "Immutable")
    );
}

#[test]
fn control_plane_endpoint_is_set_once() {
    let base = cluster(cluster_spec());
    let endpoint = json!({"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443}});
    assert_eq!(updated_cluster(base, endpoint.clone()), vec![]);
    let set = cluster(merged(cluster_spec(), endpoint));
    let moved = json!({"controlPlaneEndpoint": {"host": "10.0.0.2"}});
    assert_eq!(
        updated_cluster(set, moved),
        one("spec.controlPlaneEndpoint.host", "Immutable")
    );
}

#[test]
fn bastion_cannot_be_removed_while_enabled() {
    let with_bastion = cluster(merged(
        cluster_spec(),
        json!({"bastion": {"enabled": true, "spec": machine_spec()}}),
    ));
    let mut removed = with_bastion.clone();
    removed.spec.bastion = None;
    assert_eq!(
        summary(removed.validate_update(&with_bastion, &CTX)),
        one("spec.bastion", "Forbidden")
    );
    let disabled = json!({"bastion": {"enabled": false}});
    assert_eq!(updated_cluster(with_bastion, disabled), vec![]);
}

#[test]
fn managed_security_groups_cannot_be_disabled() {
    let with_groups = cluster(merged(
        cluster_spec(),
        json!({"managedSecurityGroups": {"allowAllInClusterTraffic": true}}),
    ));
    let mut removed = with_groups.clone();
    removed.spec.managed_security_groups = None;
    assert_eq!(
        summary(removed.validate_update(&with_groups, &CTX)),
        one("spec.managedSecurityGroups", "Forbidden")
    );
    let rules = json!({"managedSecurityGroups": {"allowAllInClusterTraffic": false, "workerNodesSecurityGroupRules": [{"name": "ssh", "direction": "ingress", "protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22}]}});
    assert_eq!(updated_cluster(with_groups, rules), vec![]);
}

#[test]
fn network_filter_may_be_pinned_to_its_resolved_id() {
    let mut by_filter = cluster(merged(
        cluster_spec(),
        json!({"network": {"filter": {"name": "net"}}}),
    ));
    let status = json!({"ready": false, "network": {"id": NET_ID, "name": "net"}});
    by_filter.status = serde_json::from_value(status).ok();
    let mut pinned = by_filter.clone();
    pinned.spec.network = serde_json::from_value(json!({"id": NET_ID})).ok();
    assert_eq!(summary(pinned.validate_update(&by_filter, &CTX)), vec![]);
    let mut other = by_filter.clone();
    other.spec.network = serde_json::from_value(json!({"id": SUBNET_ID})).ok();
    assert!(!summary(other.validate_update(&by_filter, &CTX)).is_empty());
}

#[test]
fn extension_rules() {
    let keepalived_with_lb =
        json!({"extensions": {"loadBalancers": {"controlPlane": {"mode": "Keepalived"}}}});
    assert_eq!(
        cluster_errors(keepalived_with_lb),
        one(
            "spec.extensions.loadBalancers.controlPlane.mode",
            "Forbidden"
        )
    );
    let keepalived = json!({"apiServerLoadBalancer": {"enabled": false}, "extensions": {"loadBalancers": {"controlPlane": {"mode": "Keepalived", "vipAddress": "10.6.0.5"}}}});
    assert_eq!(cluster_errors(keepalived), vec![]);
    let plugin = json!({"extensions": {"networking": {"kubeNetworkPlugin": "weave"}}});
    assert_eq!(
        cluster_errors(plugin),
        one("spec.extensions.networking.kubeNetworkPlugin", "Invalid")
    );
    let flannel =
        json!({"extensions": {"networkInterfaces": {"flannel": "a-very-long-interface-name"}}});
    assert_eq!(
        cluster_errors(flannel),
        one("spec.extensions.networkInterfaces.flannel", "Invalid")
    );
    let ingress = json!({"extensions": {"loadBalancers": {"ingress": {"mode": "Octavia", "ports": [80, 0]}}}});
    assert_eq!(
        cluster_errors(ingress),
        one("spec.extensions.loadBalancers.ingress.ports[1]", "Invalid")
    );
    let reserved = json!({"extensions": {"networkInterfaces": {"keepalived": "eth0"}, "nodeResources": {"reserved": {"kubeMemoryReserved": "lots"}}}});
    assert_eq!(
        machine_errors(reserved),
        one(
            "spec.extensions.nodeResources.reserved.kubeMemoryReserved",
            "Invalid"
        )
    );
}

#[test]
fn control_plane_vip_mode_is_immutable_but_other_extensions_are_not() {
    let spec = merged(
        cluster_spec(),
        json!({"extensions": {"loadBalancers": {"controlPlane": {"mode": "Octavia"}}, "platform": {"ntp": {"server": "ntp1"}}}}),
    );
    let base = cluster(spec);
    let ntp = json!({"extensions": {"platform": {"ntp": {"server": "ntp2"}}}});
    assert_eq!(updated_cluster(base.clone(), ntp), vec![]);
    let mode = json!({"apiServerLoadBalancer": {"enabled": false}, "extensions": {"loadBalancers": {"controlPlane": {"mode": "Keepalived"}}}});
    let errors = updated_cluster(base, mode);
    assert!(
        errors.contains(&(
            "spec.extensions.loadBalancers.controlPlane.mode".to_owned(),
            "Immutable"
        )),
        "{errors:?}"
    );
}

#[test]
fn server_pool_and_identity() {
    let server: OpenStackServer = object(
        "OpenStackServer",
        "infrastructure.cluster.x-k8s.io/v1alpha1",
        merged(
            machine_spec(),
            json!({"identityRef": identity(), "sshKeyName": "k", "ports": [{"network": {"id": "x"}}]}),
        ),
    );
    assert_eq!(
        summary(server.validate_create()),
        one("spec.ports[0].network.id", "Invalid")
    );
    let pool: OpenStackFloatingIPPool = object(
        "OpenStackFloatingIPPool",
        "infrastructure.cluster.x-k8s.io/v1alpha1",
        json!({"identityRef": identity(), "reclaimPolicy": "Delete", "preAllocatedFloatingIPs": ["1.2.3.4", "1.2.3.4", "x"]}),
    );
    assert_eq!(
        summary(pool.validate_create()),
        vec![
            ("spec.preAllocatedFloatingIPs[2]".to_owned(), "Invalid"),
            ("spec.preAllocatedFloatingIPs[1]".to_owned(), "Duplicate"),
        ]
    );
    let identity: OpenStackClusterIdentity = object(
        "OpenStackClusterIdentity",
        "infrastructure.cluster.x-k8s.io/v1alpha1",
        json!({"secretRef": {"name": "s", "namespace": "capo-system"}, "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Has"}]}}),
    );
    assert_eq!(
        summary(identity.validate_create()),
        one(
            "spec.namespaceSelector.matchExpressions[0].operator",
            "Invalid"
        )
    );
}

#[test]
fn messages_name_the_field_and_the_reason() {
    let m = machine(merged(
        machine_spec(),
        json!({"ports": [{"disablePortSecurity": true, "securityGroups": [{"id": NET_ID}]}]}),
    ));
    let message = m
        .validate_create()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        message,
        "spec.ports[0].securityGroups: Forbidden: cannot have security groups when disablePortSecurity is true"
    );
    let bad = machine(merged(
        machine_spec(),
        json!({"securityGroups": [{"id": "sg"}]}),
    ));
    let message = bad
        .validate_create()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        message,
        "spec.securityGroups[0].id: Invalid value: \"sg\": must be a UUID"
    );
}

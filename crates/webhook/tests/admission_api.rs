//! The webhooks behind a real kube-apiserver: a `ValidatingWebhookConfiguration` pointing at
//! the server on 127.0.0.1 (upstream's paths, `v1beta1` reviews for upstream's five webhooks as
//! upstream registers them, `v1` for the two capo additions); valid objects are admitted and
//! every kind of invalid create or update is refused with the offending field in the message.
//!
//! The configuration only matches objects labelled `capo.test/webhook: on`, so nothing else running
//! against this test binary's API server is affected.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use capo_webhook::{TOPOLOGY_DRY_RUN_ANNOTATION, WEBHOOKS};
use kube::api::PostParams;
use serde_json::{Value, json};

use common::apiserver::*;

#[tokio::test]
async fn valid_objects_of_every_kind_are_admitted() {
    let (client, ns) = setup().await;
    for hook in &WEBHOOKS {
        let name = format!("valid-{}", ns);
        let created = create(&client, &ns, hook.kind, &name, valid_spec(hook.kind)).await;
        assert!(created.is_ok(), "{}: {created:?}", hook.kind);
    }
}

/// Who refuses an invalid object first: the API server applies the CRD schema (OpenAPI formats,
/// enums, CEL) before calling validating webhooks, so rules both implement never reach ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    Webhook,
    Schema,
}

/// `(kind, patch on the valid spec, field named in the refusal, who refuses)`.
fn invalid_creates() -> Vec<(&'static str, Value, &'static str, By)> {
    let sg_conflict =
        json!({"ports": [{"disablePortSecurity": true, "securityGroups": [{"id": UUID_A}]}]});
    let rule = json!({"name": "r", "direction": "ingress", "remoteIPPrefix": "10.0.0.0/8", "remoteManagedGroups": ["worker"]});
    let root_device = json!({"rootVolume": {"sizeGiB": 20}, "additionalBlockDevices": [{"name": "root", "sizeGiB": 10, "storage": {"type": "Volume"}}]});
    use By::{Schema, Webhook};
    vec![
        (
            "OpenStackMachine",
            sg_conflict.clone(),
            "spec.ports[0].securityGroups",
            Webhook,
        ),
        (
            "OpenStackMachine",
            root_device,
            "spec.additionalBlockDevices[0].name",
            Webhook,
        ),
        (
            "OpenStackMachine",
            json!({"ports": [{"allowedAddressPairs": [{"ipAddress": "vip"}]}]}),
            "spec.ports[0].allowedAddressPairs[0].ipAddress",
            Webhook,
        ),
        (
            "OpenStackMachine",
            json!({"extensions": {"nodeResources": {"reserved": {"kubeMemoryReserved": "lots"}}}}),
            "spec.extensions.nodeResources.reserved.kubeMemoryReserved",
            Webhook,
        ),
        (
            "OpenStackMachine",
            json!({"ports": [{"network": {"id": UUID_A, "filter": {"name": "net"}}}]}),
            "spec.ports[0].network",
            Schema,
        ),
        (
            "OpenStackMachine",
            json!({"securityGroups": [{"id": "my-group"}]}),
            "spec.securityGroups[0].id",
            Schema,
        ),
        (
            "OpenStackMachine",
            json!({"ports": [{"network": {"filter": {"tags": ["a,b"]}}}]}),
            "spec.ports[0].network.filter.tags[0]",
            Schema,
        ),
        (
            "OpenStackMachineTemplate",
            json!({"template": {"spec": {"providerID": "openstack:///x"}}}),
            "spec.template.spec.providerID",
            Webhook,
        ),
        (
            "OpenStackMachineTemplate",
            json!({"template": {"spec": sg_conflict}}),
            "spec.template.spec.ports[0].securityGroups",
            Webhook,
        ),
        (
            "OpenStackCluster",
            json!({"managedSecurityGroups": {"allowAllInClusterTraffic": false, "allNodesSecurityGroupRules": [rule]}}),
            "spec.managedSecurityGroups.allNodesSecurityGroupRules[0]",
            Webhook,
        ),
        (
            "OpenStackCluster",
            json!({"apiServerLoadBalancer": {"enabled": true, "additionalPorts": [8443, 8443]}}),
            "spec.apiServerLoadBalancer.additionalPorts[1]",
            Schema,
        ),
        (
            "OpenStackCluster",
            json!({"managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["dns.example"]}]}),
            "spec.managedSubnets[0].dnsNameservers[0]",
            Webhook,
        ),
        (
            "OpenStackCluster",
            json!({"extensions": {"loadBalancers": {"controlPlane": {"mode": "Keepalived"}}}}),
            "spec.extensions.loadBalancers.controlPlane.mode",
            Webhook,
        ),
        (
            "OpenStackCluster",
            json!({"extensions": {"loadBalancers": {"ingress": {"mode": "Octavia", "ports": [80, 0]}}}}),
            "spec.extensions.loadBalancers.ingress.ports[1]",
            Schema,
        ),
        (
            "OpenStackCluster",
            json!({"extensions": {"networkInterfaces": {"flannel": "a-very-long-interface-name"}}}),
            "spec.extensions.networkInterfaces.flannel",
            Schema,
        ),
        (
            "OpenStackCluster",
            json!({"extensions": {"networking": {"kubeNetworkPlugin": "weave"}}}),
            "spec.extensions.networking.kubeNetworkPlugin",
            Schema,
        ),
        (
            "OpenStackCluster",
            json!({"bastion": {"enabled": true}}),
            "spec.bastion",
            Schema,
        ),
        (
            "OpenStackClusterTemplate",
            json!({"template": {"spec": {"managedSubnets": [{"cidr": "10.6.0.0/33"}]}}}),
            "spec.template.spec.managedSubnets[0].cidr",
            Webhook,
        ),
        (
            "OpenStackServer",
            json!({"ports": [{"disablePortSecurity": true, "securityGroups": [{"id": UUID_A}]}]}),
            "spec.ports[0].securityGroups",
            Webhook,
        ),
        (
            "OpenStackServer",
            json!({"ports": [{"network": {"id": "x"}}]}),
            "spec.ports[0].network.id",
            Schema,
        ),
        (
            "OpenStackFloatingIPPool",
            json!({"preAllocatedFloatingIPs": ["1.2.3.4", "x"]}),
            "spec.preAllocatedFloatingIPs[1]",
            Webhook,
        ),
        (
            "OpenStackClusterIdentity",
            json!({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Has"}]}}),
            "spec.namespaceSelector.matchExpressions[0].operator",
            Webhook,
        ),
    ]
}

#[tokio::test]
async fn invalid_creates_are_refused_naming_the_field() {
    let (client, ns) = setup().await;
    for (i, (kind, patch, field, by)) in invalid_creates().into_iter().enumerate() {
        let spec = merged(valid_spec(kind), patch);
        let result = create(&client, &ns, kind, &format!("bad-{i}-{ns}"), spec).await;
        match by {
            By::Webhook => assert_refused(result, kind, field),
            By::Schema => assert_refused_by_schema(result, kind, field),
        }
    }
}

#[tokio::test]
async fn machine_updates() {
    let (client, ns) = setup().await;
    let stored = created(&client, &ns, "OpenStackMachine", "m", json!({})).await;
    let flavor = spec_of(&stored, json!({"flavor": "m1.large"}));
    let result = update(&client, &stored, flavor, &replace_params(false)).await;
    assert_refused(result, "OpenStackMachine", "spec.flavor");

    let identity = json!({"type": "Secret", "name": "rotated", "cloudName": "openstack"});
    let rotated = spec_of(&stored, json!({"identityRef": identity}));
    let stored = update(&client, &stored, rotated, &replace_params(false))
        .await
        .unwrap();
    let with_id = spec_of(&stored, json!({"providerID": "openstack:///a"}));
    let stored = update(&client, &stored, with_id, &replace_params(false))
        .await
        .unwrap();
    // As upstream: the controller rewrites providerID (adding the region), so it may change.
    let moved = spec_of(&stored, json!({"providerID": "openstack://RegionOne/a"}));
    let stored = update(&client, &stored, moved, &replace_params(false))
        .await
        .unwrap();

    // Metadata-only updates (finalizers, labels) pass untouched.
    let mut finalized = stored.clone();
    finalized.metadata.finalizers = Some(vec![
        "openstackmachine.infrastructure.cluster.x-k8s.io".to_owned(),
    ]);
    let api = api(&client, &ns, "v1beta1", "OpenStackMachine");
    let result = api.replace("m", &PostParams::default(), &finalized).await;
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn template_updates_and_topology_dry_runs() {
    let (client, ns) = setup().await;
    let stored = created(&client, &ns, "OpenStackMachineTemplate", "t", json!({})).await;
    let changed = spec_of(
        &stored,
        json!({"template": {"spec": {"flavor": "m1.large"}}}),
    );
    let result = update(&client, &stored, changed.clone(), &replace_params(false)).await;
    assert_refused(
        result,
        "OpenStackMachineTemplate",
        "spec.template.spec.flavor",
    );
    let result = update(&client, &stored, changed.clone(), &replace_params(true)).await;
    assert_refused(
        result,
        "OpenStackMachineTemplate",
        "spec.template.spec.flavor",
    );

    // The topology controller's dry run: dryRun plus the annotation on the object.
    let mut annotated = stored.clone();
    annotated
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(TOPOLOGY_DRY_RUN_ANNOTATION.to_owned(), String::new());
    let result = update(&client, &annotated, changed.clone(), &replace_params(true)).await;
    assert!(result.is_ok(), "{result:?}");
    let result = update(&client, &annotated, changed, &replace_params(false)).await;
    assert_refused(
        result,
        "OpenStackMachineTemplate",
        "spec.template.spec.flavor",
    );

    let stored = created(&client, &ns, "OpenStackClusterTemplate", "ct", json!({})).await;
    let mtu = spec_of(&stored, json!({"template": {"spec": {"networkMTU": 1400}}}));
    let result = update(&client, &stored, mtu, &replace_params(false)).await;
    assert_refused(
        result,
        "OpenStackClusterTemplate",
        "spec.template.spec.networkMTU",
    );
}

#[tokio::test]
async fn cluster_updates() {
    let (client, ns) = setup().await;
    let octavia = json!({"extensions": {"loadBalancers": {"controlPlane": {"mode": "Octavia"}}}});
    let stored = created(&client, &ns, "OpenStackCluster", "c", octavia).await;
    let network = spec_of(&stored, json!({"network": {"id": UUID_A}}));
    let result = update(&client, &stored, network, &replace_params(false)).await;
    assert_refused(result, "OpenStackCluster", "spec.network");

    let keepalived = json!({"apiServerLoadBalancer": {"enabled": false},
        "extensions": {"loadBalancers": {"controlPlane": {"mode": "Keepalived"}}}});
    let result = update(
        &client,
        &stored,
        spec_of(&stored, keepalived),
        &replace_params(false),
    )
    .await;
    assert_refused(
        result,
        "OpenStackCluster",
        "spec.extensions.loadBalancers.controlPlane.mode",
    );

    let region = spec_of(&stored, json!({"identityRef": {"region": "RegionTwo"}}));
    let result = update(&client, &stored, region, &replace_params(false)).await;
    assert_refused_by_schema(result, "OpenStackCluster", "spec.identityRef");

    let allowed = json!({"apiServerLoadBalancer": {"allowedCIDRs": ["10.0.0.0/8"]},
        "controlPlaneAvailabilityZones": ["az1"], "identityRef": {"name": "rotated"}});
    let result = update(
        &client,
        &stored,
        spec_of(&stored, allowed),
        &replace_params(false),
    )
    .await;
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn server_pool_and_identity_updates() {
    let (client, ns) = setup().await;
    let server = created(&client, &ns, "OpenStackServer", "s", json!({})).await;
    let flavor = spec_of(&server, json!({"flavor": "m1.large"}));
    let result = update(&client, &server, flavor, &replace_params(false)).await;
    assert_refused(result, "OpenStackServer", "spec.flavor");

    let pool = created(&client, &ns, "OpenStackFloatingIPPool", "p", json!({})).await;
    let grown = spec_of(&pool, json!({"maxIPs": 10}));
    let pool = update(&client, &pool, grown, &replace_params(false))
        .await
        .unwrap();
    let moved = spec_of(&pool, json!({"floatingIPNetwork": {"id": UUID_B}}));
    let result = update(&client, &pool, moved, &replace_params(false)).await;
    assert_refused(result, "OpenStackFloatingIPPool", "spec.floatingIPNetwork");

    let name = format!("identity-{ns}");
    let identity = created(&client, &ns, "OpenStackClusterIdentity", &name, json!({})).await;
    let selector =
        json!({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}});
    let result = update(
        &client,
        &identity,
        spec_of(&identity, selector),
        &replace_params(false),
    )
    .await;
    assert_refused(
        result,
        "OpenStackClusterIdentity",
        "spec.namespaceSelector.matchExpressions[0].values",
    );
}

/// An object admitted without our rules (created while the webhook did not match it, as with
/// objects made under upstream CAPO) can still be updated as long as the update adds no new
/// problem.
#[tokio::test]
async fn updates_of_objects_admitted_under_looser_rules_ratchet() {
    let (client, ns) = setup().await;
    let spec = merged(
        valid_spec("OpenStackFloatingIPPool"),
        json!({"preAllocatedFloatingIPs": ["x"]}),
    );
    let mut unlabelled = dynamic(&ns, "v1alpha1", "OpenStackFloatingIPPool", "legacy", spec);
    unlabelled.metadata.labels = None;
    let api = api(&client, &ns, "v1alpha1", "OpenStackFloatingIPPool");
    let stored = api
        .create(&PostParams::default(), &unlabelled)
        .await
        .unwrap();

    let mut labelled = stored.clone();
    labelled.metadata.labels = Some(BTreeMap::from([(LABEL.to_owned(), "on".to_owned())]));
    labelled.data["spec"]["maxIPs"] = json!(7);
    let stored = api
        .replace("legacy", &PostParams::default(), &labelled)
        .await;
    let stored =
        stored.unwrap_or_else(|e| panic!("an unchanged old error must not block the update: {e}"));

    let worse = spec_of(&stored, json!({"preAllocatedFloatingIPs": ["x", "y"]}));
    let result = update(&client, &stored, worse, &replace_params(false)).await;
    assert_refused(
        result,
        "OpenStackFloatingIPPool",
        "spec.preAllocatedFloatingIPs[1]",
    );
}

//! The webhooks behind a real kube-apiserver: a `ValidatingWebhookConfiguration` pointing at
//! the server on 127.0.0.1 (upstream's paths, `v1beta1` reviews for upstream's five webhooks as
//! upstream registers them, `v1` for the two capo additions); valid objects are admitted and
//! every kind of invalid create or update is refused with the offending field in the message.
//!
//! The configuration only matches objects labelled with [`LABEL`], so nothing else running
//! against this test binary's API server is affected.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capo_webhook::{TOPOLOGY_DRY_RUN_ANNOTATION, WEBHOOKS};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, PostParams};
use serde_json::{Value, json};

const LABEL: &str = "capo.test/webhook";
const GROUP: &str = "infrastructure.cluster.x-k8s.io";
const UUID_A: &str = "7f8e1d2c-3b4a-4c5d-9e6f-0a1b2c3d4e5f";
const UUID_B: &str = "0c7d6e5f-4a3b-4c2d-8e1f-9a8b7c6d5e4f";

static SETUP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// Starts the webhook server and registers it, once per test binary; returns a namespace for
/// the calling test.
async fn setup() -> (Client, String) {
    let env = capo_testkit::shared_env().await.unwrap();
    SETUP
        .get_or_init(|| async {
            let dir = env.dir().join("webhook-certs");
            std::fs::create_dir_all(&dir).unwrap();
            let pki = common::Pki::new();
            pki.write_serving(&dir, "capo-webhook");
            let addr = common::spawn_server(&dir, Duration::from_secs(1));
            register(&env.client(), &format!("https://{addr}"), &pki.ca_pem).await;
            wait_until_active(&env.client()).await;
        })
        .await;
    let ns = env.new_namespace("webhook").await.unwrap();
    (env.client(), ns)
}

async fn register(client: &Client, base: &str, ca_pem: &str) {
    let webhooks = WEBHOOKS
        .iter()
        .map(|hook| ValidatingWebhook {
            name: hook.name.to_owned(),
            admission_review_versions: vec![
                if hook.upstream { "v1beta1" } else { "v1" }.to_owned(),
            ],
            client_config: WebhookClientConfig {
                url: Some(format!("{base}{}", hook.path)),
                ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
                service: None,
            },
            failure_policy: Some("Fail".to_owned()),
            match_policy: Some("Equivalent".to_owned()),
            side_effects: "None".to_owned(),
            timeout_seconds: Some(10),
            object_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(LABEL.to_owned(), "on".to_owned())])),
                ..LabelSelector::default()
            }),
            rules: Some(vec![RuleWithOperations {
                api_groups: Some(vec![hook.group.to_owned()]),
                api_versions: Some(vec![hook.version.to_owned()]),
                operations: Some(vec!["CREATE".to_owned(), "UPDATE".to_owned()]),
                resources: Some(vec![hook.resource.to_owned()]),
                scope: None,
            }]),
            ..ValidatingWebhook::default()
        })
        .collect();
    let config = ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some("capo-webhook-test".to_owned()),
            ..ObjectMeta::default()
        },
        webhooks: Some(webhooks),
    };
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    api.create(&PostParams::default(), &config).await.unwrap();
}

/// The API server picks up webhook configurations asynchronously: probe with an object only
/// the webhook refuses until it is refused.
async fn wait_until_active(client: &Client) {
    let ns = "default";
    let probe = template_object(
        ns,
        "probe",
        json!({"flavor": "f", "image": {"id": UUID_A}, "providerID": "x"}),
    );
    let api = api(client, ns, "v1beta1", "OpenStackMachineTemplate");
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match api.create(&params, &probe).await {
            Err(kube::Error::Api(s)) if s.message.contains("denied the request") => return,
            other => assert!(
                Instant::now() < deadline,
                "webhook not active after 60 s; last answer: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn plural(kind: &str) -> String {
    WEBHOOKS
        .iter()
        .find(|h| h.kind == kind)
        .map(|h| h.resource.to_owned())
        .unwrap()
}

fn api(client: &Client, ns: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &plural(kind));
    if kind == "OpenStackClusterIdentity" {
        Api::all_with(client.clone(), &resource)
    } else {
        Api::namespaced_with(client.clone(), ns, &resource)
    }
}

fn dynamic(ns: &str, version: &str, kind: &str, name: &str, spec: Value) -> DynamicObject {
    let namespace = (kind != "OpenStackClusterIdentity").then_some(ns);
    let value = json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: "on"}},
        "spec": spec,
    });
    serde_json::from_value(value).unwrap()
}

fn template_object(ns: &str, name: &str, spec: Value) -> DynamicObject {
    dynamic(
        ns,
        "v1beta1",
        "OpenStackMachineTemplate",
        name,
        json!({"template": {"spec": spec}}),
    )
}

fn version_of(kind: &str) -> &'static str {
    WEBHOOKS
        .iter()
        .find(|h| h.kind == kind)
        .map(|h| h.version)
        .unwrap()
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

fn identity_ref() -> Value {
    json!({"type": "Secret", "name": "cloud-config", "cloudName": "openstack"})
}

fn machine_spec() -> Value {
    json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu-2404"}}})
}

fn cluster_spec() -> Value {
    json!({
        "identityRef": identity_ref(),
        "managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["8.8.8.8"]}],
        "apiServerLoadBalancer": {"enabled": true},
    })
}

/// A valid spec of every kind.
fn valid_spec(kind: &str) -> Value {
    match kind {
        "OpenStackCluster" => cluster_spec(),
        "OpenStackClusterTemplate" => json!({"template": {"spec": cluster_spec()}}),
        "OpenStackMachine" => machine_spec(),
        "OpenStackMachineTemplate" => json!({"template": {"spec": machine_spec()}}),
        "OpenStackServer" => merged(
            machine_spec(),
            json!({"identityRef": identity_ref(), "sshKeyName": "key", "ports": [{"network": {"id": UUID_A}}]}),
        ),
        "OpenStackFloatingIPPool" => {
            json!({"identityRef": identity_ref(), "reclaimPolicy": "Delete", "maxIPs": 5})
        }
        "OpenStackClusterIdentity" => {
            json!({"secretRef": {"name": "clouds", "namespace": "capo-system"}})
        }
        other => panic!("no valid spec for {other}"),
    }
}

/// The API server's refusal of `result`, which must come from our webhook for `kind`, be
/// `Invalid` and name `field`.
fn assert_refused(result: Result<DynamicObject, kube::Error>, kind: &str, field: &str) {
    let status = match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("{kind}: expected a refusal naming {field}, got {other:?}"),
    };
    let hook = format!(
        "admission webhook \"validation.{}.{GROUP}\" denied the request",
        kind.to_lowercase()
    );
    let message = &status.message;
    assert!(
        message.contains(&hook),
        "{kind}: not refused by the webhook: {message}"
    );
    assert!(
        message.contains(&format!("{field}: ")),
        "{kind}: {field} not named: {message}"
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{message}"
    );
}

/// A refusal by the CRD schema (before any webhook is called) that names `field`.
fn assert_refused_by_schema(result: Result<DynamicObject, kube::Error>, kind: &str, field: &str) {
    let status = match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("{kind}: expected a refusal naming {field}, got {other:?}"),
    };
    let message = &status.message;
    assert!(
        !message.contains("admission webhook"),
        "{kind}: the schema should refuse first: {message}"
    );
    assert!(
        message.contains(&format!("{field}: ")),
        "{kind}: {field} not named: {message}"
    );
}

async fn create(
    client: &Client,
    ns: &str,
    kind: &str,
    name: &str,
    spec: Value,
) -> Result<DynamicObject, kube::Error> {
    let version = version_of(kind);
    let object = dynamic(ns, version, kind, name, spec);
    api(client, ns, version, kind)
        .create(&PostParams::default(), &object)
        .await
}

/// Replaces the stored object's spec with `spec`.
async fn update(
    client: &Client,
    stored: &DynamicObject,
    spec: Value,
    params: &PostParams,
) -> Result<DynamicObject, kube::Error> {
    let kind = stored.types.as_ref().map(|t| t.kind.clone()).unwrap();
    let ns = stored.metadata.namespace.clone().unwrap_or_default();
    let mut object = stored.clone();
    object.data["spec"] = spec;
    let name = object.metadata.name.clone().unwrap();
    api(client, &ns, version_of(&kind), &kind)
        .replace(&name, params, &object)
        .await
}

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

fn replace_params(dry_run: bool) -> PostParams {
    PostParams {
        dry_run,
        ..PostParams::default()
    }
}

/// Creates a valid object of `kind` (with `patch` merged into its spec) and returns it.
async fn created(client: &Client, ns: &str, kind: &str, name: &str, patch: Value) -> DynamicObject {
    let spec = merged(valid_spec(kind), patch);
    match create(client, ns, kind, name, spec).await {
        Ok(object) => object,
        Err(e) => panic!("creating {kind} {name}: {e}"),
    }
}

fn spec_of(object: &DynamicObject, patch: Value) -> Value {
    merged(object.data["spec"].clone(), patch)
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
    let moved = spec_of(&stored, json!({"providerID": "openstack:///b"}));
    let result = update(&client, &stored, moved, &replace_params(false)).await;
    assert_refused(result, "OpenStackMachine", "spec.providerID");

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

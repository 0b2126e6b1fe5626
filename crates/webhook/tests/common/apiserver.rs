//! Helpers for tests against the real API server: the webhook server registered once per test
//! binary, typed access to capo's kinds as dynamic objects, valid specs, refusal assertions.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capo_webhook::WEBHOOKS;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, PostParams};
use serde_json::{Value, json};

pub const LABEL: &str = "capo.test/webhook";
pub const GROUP: &str = "infrastructure.cluster.x-k8s.io";
pub const UUID_A: &str = "7f8e1d2c-3b4a-4c5d-9e6f-0a1b2c3d4e5f";
pub const UUID_B: &str = "0c7d6e5f-4a3b-4c2d-8e1f-9a8b7c6d5e4f";

pub static SETUP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// Starts the webhook server and registers it, once per test binary; returns a namespace for
/// the calling test.
pub async fn setup() -> (Client, String) {
    let env = capo_testkit::shared_env().await.unwrap();
    SETUP
        .get_or_init(|| async {
            let dir = env.dir().join("webhook-certs");
            std::fs::create_dir_all(&dir).unwrap();
            let pki = super::Pki::new();
            pki.write_serving(&dir, "capo-webhook");
            let addr = super::spawn_server(&dir, Duration::from_secs(1));
            register(&env.client(), &format!("https://{addr}"), &pki.ca_pem).await;
            wait_until_active(&env.client()).await;
        })
        .await;
    let ns = env.new_namespace("webhook").await.unwrap();
    (env.client(), ns)
}

pub async fn register(client: &Client, base: &str, ca_pem: &str) {
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
pub async fn wait_until_active(client: &Client) {
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

pub fn plural(kind: &str) -> String {
    WEBHOOKS
        .iter()
        .find(|h| h.kind == kind)
        .map(|h| h.resource.to_owned())
        .unwrap()
}

pub fn api(client: &Client, ns: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &plural(kind));
    if kind == "OpenStackClusterIdentity" {
        Api::all_with(client.clone(), &resource)
    } else {
        Api::namespaced_with(client.clone(), ns, &resource)
    }
}

pub fn dynamic(ns: &str, version: &str, kind: &str, name: &str, spec: Value) -> DynamicObject {
    let namespace = (kind != "OpenStackClusterIdentity").then_some(ns);
    let value = json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: "on"}},
        "spec": spec,
    });
    serde_json::from_value(value).unwrap()
}

pub fn template_object(ns: &str, name: &str, spec: Value) -> DynamicObject {
    dynamic(
        ns,
        "v1beta1",
        "OpenStackMachineTemplate",
        name,
        json!({"template": {"spec": spec}}),
    )
}

pub fn version_of(kind: &str) -> &'static str {
    WEBHOOKS
        .iter()
        .find(|h| h.kind == kind)
        .map(|h| h.version)
        .unwrap()
}

/// Merges `patch` into `base` (objects recursively, everything else replaced).
pub fn merged(mut base: Value, patch: Value) -> Value {
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

pub fn identity_ref() -> Value {
    json!({"type": "Secret", "name": "cloud-config", "cloudName": "openstack"})
}

pub fn machine_spec() -> Value {
    json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu-2404"}}})
}

pub fn cluster_spec() -> Value {
    json!({
        "identityRef": identity_ref(),
        "managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["8.8.8.8"]}],
        "apiServerLoadBalancer": {"enabled": true},
    })
}

/// A valid spec of every kind.
pub fn valid_spec(kind: &str) -> Value {
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
pub fn assert_refused(result: Result<DynamicObject, kube::Error>, kind: &str, field: &str) {
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
pub fn assert_refused_by_schema(
    result: Result<DynamicObject, kube::Error>,
    kind: &str,
    field: &str,
) {
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

pub async fn create(
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
pub async fn update(
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

pub fn replace_params(dry_run: bool) -> PostParams {
    PostParams {
        dry_run,
        ..PostParams::default()
    }
}

/// Creates a valid object of `kind` (with `patch` merged into its spec) and returns it.
pub async fn created(
    client: &Client,
    ns: &str,
    kind: &str,
    name: &str,
    patch: Value,
) -> DynamicObject {
    let spec = merged(valid_spec(kind), patch);
    match create(client, ns, kind, name, spec).await {
        Ok(object) => object,
        Err(e) => panic!("creating {kind} {name}: {e}"),
    }
}

pub fn spec_of(object: &DynamicObject, patch: Value) -> Value {
    merged(object.data["spec"].clone(), patch)
}

//! `config/default` renders the installable components (as `clusterctl` and
//! `kubectl kustomize config/default` see them) with upstream's namespace, name prefix and
//! provider label; every object passes a server-side dry run; the webhook configuration
//! matches what this crate serves; and the manager's RBAC grants what the controllers call
//! and nothing cluster-wide on Secrets beyond by-name access (checked with
//! SubjectAccessReviews against the real RBAC authorizer).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use capo_testkit::paths::{EnvDir, repo_root};
use capo_webhook::WEBHOOKS;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use serde::Deserialize;
use serde_json::{Value, json};

const NAMESPACE: &str = "capo-system";
const PROVIDER_LABEL: &str = "cluster.x-k8s.io/provider";
const PROVIDER: &str = "infrastructure-openstack";
const MANAGER: &str = "system:serviceaccount:capo-system:capo-manager";
/// Kinds whose CRDs (cert-manager's) the test API server does not have.
const CERT_MANAGER_KINDS: [&str; 2] = ["Certificate", "Issuer"];

fn kubectl() -> PathBuf {
    EnvDir::locate().unwrap().bin("kubectl")
}

/// `kubectl kustomize config/default`, parsed.
fn render() -> Vec<Value> {
    let out = Command::new(kubectl())
        .args(["kustomize", "config/default"])
        .current_dir(repo_root())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kustomize failed: {stderr}");
    assert!(stderr.trim().is_empty(), "kustomize warned: {stderr}");
    yaml_serde::Deserializer::from_str(&String::from_utf8_lossy(&out.stdout))
        .map(|doc| Value::deserialize(doc).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn kind(o: &Value) -> &str {
    o["kind"].as_str().unwrap_or_default()
}

fn name(o: &Value) -> &str {
    o["metadata"]["name"].as_str().unwrap_or_default()
}

fn one<'a>(objects: &'a [Value], wanted: &str) -> &'a Value {
    let found: Vec<&Value> = objects.iter().filter(|o| kind(o) == wanted).collect();
    assert_eq!(found.len(), 1, "expected one {wanted}");
    found[0]
}

fn to_yaml(objects: &[&Value]) -> String {
    objects
        .iter()
        .map(|o| yaml_serde::to_string(o).unwrap())
        .collect::<Vec<_>>()
        .join("---\n")
}

/// `kubectl apply --server-side` of `objects` (dry run or for real); returns stderr.
fn apply(kubeconfig: &std::path::Path, objects: &[&Value], dry_run: bool) -> String {
    let mut args = vec!["apply", "--server-side", "--force-conflicts", "-f", "-"];
    let field_manager = format!("--field-manager={}", capo_testkit::FIELD_MANAGER);
    if dry_run {
        args.push("--dry-run=server");
        // The CRDs exist already, installed by the test kit with the conversion webhook at a
        // URL on 127.0.0.1. Applied as the same field manager, as an upgrade by one tool goes,
        // the rendered Service reference replaces that URL instead of joining it (a CRD may
        // not name both).
        args.push(&field_manager);
    }
    let mut child = Command::new(kubectl())
        .args(&args)
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(to_yaml(objects).as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "kubectl apply (dry run: {dry_run}) failed:\n{stderr}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

#[test]
fn components_have_upstream_namespace_prefix_and_label() {
    let objects = render();
    for o in &objects {
        let labels = &o["metadata"]["labels"];
        assert_eq!(
            labels[PROVIDER_LABEL],
            json!(PROVIDER),
            "{} {}",
            kind(o),
            name(o)
        );
        let ns = o["metadata"]["namespace"].as_str();
        match kind(o) {
            "Namespace" => assert_eq!(name(o), NAMESPACE),
            "CustomResourceDefinition" => {
                assert!(name(o).ends_with(".infrastructure.cluster.x-k8s.io"));
                assert_eq!(
                    labels["cluster.x-k8s.io/v1beta1"],
                    json!("v1beta1"),
                    "{}",
                    name(o)
                );
            }
            "ClusterRole" | "ClusterRoleBinding" | "ValidatingWebhookConfiguration" => {
                assert!(name(o).starts_with("capo-"), "{}", name(o));
                assert_eq!(ns, None, "{}", name(o));
            }
            _ => {
                assert!(name(o).starts_with("capo-"), "{} {}", kind(o), name(o));
                assert_eq!(ns, Some(NAMESPACE), "{} {}", kind(o), name(o));
            }
        }
    }
    // Every generated CRD is installed, and nothing else under that kind.
    let mut crds: Vec<&str> = objects
        .iter()
        .filter(|o| kind(o) == "CustomResourceDefinition")
        .map(name)
        .collect();
    crds.sort_unstable();
    let mut plurals: Vec<String> = WEBHOOKS
        .iter()
        .map(|h| format!("{}.{}", h.resource, h.group))
        .collect();
    plurals.sort_unstable();
    assert_eq!(crds, plurals);
    let files = std::fs::read_dir(repo_root().join("config/crd/bases"))
        .unwrap()
        .count();
    assert_eq!(
        files,
        crds.len(),
        "config/crd/kustomization.yaml misses a file of bases/"
    );
}

#[test]
fn manager_deployment_is_hardened_and_wired_to_the_webhook_certificate() {
    let objects = render();
    let deployment = one(&objects, "Deployment");
    assert_eq!(name(deployment), "capo-controller-manager");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], json!(true));
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        json!("RuntimeDefault")
    );
    assert_eq!(pod["serviceAccountName"], json!("capo-manager"));
    let container = &pod["containers"][0];
    assert_eq!(container["image"], json!("capo-controller-manager:dev"));
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], json!(true));
    assert_eq!(security["allowPrivilegeEscalation"], json!(false));
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(security["runAsUser"], json!(65532));
    assert!(container["resources"]["requests"]["cpu"].is_string());
    assert!(container["resources"]["requests"]["memory"].is_string());
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for flag in [
        "--leader-elect",
        "--v=2",
        "--diagnostics-address=",
        "--insecure-diagnostics=",
    ] {
        assert!(
            args.iter().any(|a| a.starts_with(flag)),
            "{flag} missing: {args:?}"
        );
    }
    let port = |name: &str| {
        container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == json!(name))
            .map(|p| p["containerPort"].clone())
    };
    assert_eq!(port("healthz"), Some(json!(9440)));
    assert_eq!(port("webhook-server"), Some(json!(9443)));
    assert_eq!(
        container["livenessProbe"]["httpGet"]["path"],
        json!("/healthz")
    );
    assert_eq!(
        container["readinessProbe"]["httpGet"]["path"],
        json!("/readyz")
    );
    let mount = &container["volumeMounts"][0];
    assert_eq!(
        mount["mountPath"],
        json!("/tmp/k8s-webhook-server/serving-certs")
    );

    let certificate = one(&objects, "Certificate");
    let secret = &certificate["spec"]["secretName"];
    assert_eq!(secret, &json!("capo-webhook-service-cert"));
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    assert_eq!(&volume["secret"]["secretName"], secret);
}

#[test]
fn webhook_configuration_matches_the_served_webhooks_and_the_certificate() {
    let objects = render();
    let service = one(&objects, "Service");
    let certificate = one(&objects, "Certificate");
    let issuer = one(&objects, "Issuer");
    let config = one(&objects, "ValidatingWebhookConfiguration");
    assert_eq!(name(config), "capo-validating-webhook-configuration");
    assert_eq!(
        config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        json!(format!("{NAMESPACE}/{}", name(certificate)))
    );
    assert_eq!(
        certificate["spec"]["issuerRef"]["name"],
        json!(name(issuer))
    );
    let svc = format!("{}.{NAMESPACE}.svc", name(service));
    assert_eq!(
        certificate["spec"]["dnsNames"],
        json!([svc.clone(), format!("{svc}.cluster.local")])
    );
    assert_eq!(
        service["spec"]["ports"][0]["targetPort"],
        json!("webhook-server")
    );

    let webhooks = config["webhooks"].as_array().unwrap();
    assert_eq!(webhooks.len(), WEBHOOKS.len());
    for (rendered, served) in webhooks.iter().zip(&WEBHOOKS) {
        assert_eq!(rendered["name"], json!(served.name));
        let client = &rendered["clientConfig"]["service"];
        assert_eq!(client["name"], json!(name(service)));
        assert_eq!(client["namespace"], json!(NAMESPACE));
        assert_eq!(client["path"], json!(served.path));
        let rule = &rendered["rules"][0];
        assert_eq!(rule["apiGroups"], json!([served.group]));
        assert_eq!(rule["apiVersions"], json!([served.version]));
        assert_eq!(rule["resources"], json!([served.resource]));
        assert_eq!(rule["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(rendered["failurePolicy"], json!("Fail"));
        assert_eq!(rendered["sideEffects"], json!("None"));
        assert!(
            rendered["admissionReviewVersions"]
                .as_array()
                .unwrap()
                .contains(&json!("v1beta1"))
        );
    }
}

#[test]
fn multi_version_crds_convert_through_the_webhook_service_with_the_certificate_ca() {
    let objects = render();
    let service = one(&objects, "Service");
    let certificate = one(&objects, "Certificate");
    let mut converting = Vec::new();
    for crd in objects
        .iter()
        .filter(|o| kind(o) == "CustomResourceDefinition")
    {
        let versions = crd["spec"]["versions"].as_array().unwrap();
        if versions.len() < 2 {
            assert!(crd["spec"].get("conversion").is_none(), "{}", name(crd));
            continue;
        }
        converting.push(crd["spec"]["names"]["kind"].as_str().unwrap().to_owned());
        assert_eq!(
            crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            json!(format!("{NAMESPACE}/{}", name(certificate))),
            "{}",
            name(crd)
        );
        let conversion = &crd["spec"]["conversion"];
        assert_eq!(conversion["strategy"], json!("Webhook"));
        assert_eq!(
            conversion["webhook"]["clientConfig"]["service"],
            json!({"name": name(service), "namespace": NAMESPACE, "path": capo_webhook::CONVERSION_PATH})
        );
        assert_eq!(
            conversion["webhook"]["conversionReviewVersions"],
            json!(["v1"])
        );
    }
    assert_eq!(
        converting,
        [
            "OpenStackCluster",
            "OpenStackClusterTemplate",
            "OpenStackMachine",
            "OpenStackMachineTemplate"
        ]
    );
}

#[test]
fn no_role_lists_or_watches_secrets_or_uses_wildcards() {
    let objects = render();
    for role in objects
        .iter()
        .filter(|o| matches!(kind(o), "Role" | "ClusterRole"))
    {
        for rule in role["rules"].as_array().unwrap() {
            let strings = |key: &str| -> Vec<&str> {
                rule[key]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default()
            };
            let (resources, verbs) = (strings("resources"), strings("verbs"));
            assert!(!verbs.contains(&"*") && !resources.contains(&"*"), "{rule}");
            if strings("apiGroups").contains(&"") && resources.contains(&"secrets") {
                assert!(
                    !verbs.contains(&"list") && !verbs.contains(&"watch"),
                    "{rule}"
                );
            }
        }
    }
}

/// One authorization question for the manager's service account.
async fn allowed(
    client: &Client,
    verb: &str,
    group: &str,
    resource: &str,
    ns: Option<&str>,
) -> bool {
    allowed_on(client, verb, group, resource, ns, None).await
}

/// [`allowed`] for the object `name` (rules with `resourceNames`).
async fn allowed_on(
    client: &Client,
    verb: &str,
    group: &str,
    resource: &str,
    ns: Option<&str>,
    name: Option<&str>,
) -> bool {
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_owned())),
        None => (resource, None),
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(MANAGER.to_owned()),
            groups: Some(vec![
                "system:serviceaccounts".to_owned(),
                "system:authenticated".to_owned(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_owned()),
                group: Some(group.to_owned()),
                resource: Some(resource.to_owned()),
                subresource,
                namespace: ns.map(str::to_owned),
                name: name.map(str::to_owned),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    let answer = api.create(&PostParams::default(), &review).await.unwrap();
    answer.status.map(|s| s.allowed).unwrap_or(false)
}

#[tokio::test]
async fn components_pass_a_server_side_dry_run_and_rbac_is_least_privilege() {
    let env = capo_testkit::shared_env().await.unwrap();
    let _logs = env.logs_on_failure();
    let objects = render();
    let kubeconfig = env.kubeconfig_path();

    // The namespace first (for real: namespaced dry runs need it), then everything the test
    // server has the CRDs for. Pod Security warnings for the restricted level would appear
    // on stderr.
    let namespace: Vec<&Value> = objects.iter().filter(|o| kind(o) == "Namespace").collect();
    apply(kubeconfig, &namespace, false);
    let checked: Vec<&Value> = objects
        .iter()
        .filter(|o| !CERT_MANAGER_KINDS.contains(&kind(o)))
        .collect();
    assert_eq!(checked.len() + CERT_MANAGER_KINDS.len(), objects.len());
    let stderr = apply(kubeconfig, &checked, true);
    assert!(!stderr.contains("Warning"), "{stderr}");

    let rbac: Vec<&Value> = objects
        .iter()
        .filter(|o| {
            matches!(
                kind(o),
                "ServiceAccount" | "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding"
            )
        })
        .collect();
    apply(kubeconfig, &rbac, false);

    let client = env.client();
    let infra = "infrastructure.cluster.x-k8s.io";
    let expectations: &[(&str, &str, &str, Option<&str>, bool)] = &[
        ("get", "", "secrets", Some("tenant"), true),
        ("create", "", "secrets", Some("tenant"), true),
        ("patch", "", "secrets", Some("tenant"), true),
        ("delete", "", "secrets", Some("tenant"), true),
        ("list", "", "secrets", Some("tenant"), false),
        ("watch", "", "secrets", Some("tenant"), false),
        ("list", "", "secrets", None, false),
        ("watch", "", "secrets", None, false),
        ("list", infra, "openstackclusters", None, true),
        ("watch", infra, "openstackmachines", None, true),
        ("create", infra, "openstackservers", Some("tenant"), true),
        ("delete", infra, "openstackservers", Some("tenant"), true),
        (
            "patch",
            infra,
            "openstackclusters/status",
            Some("tenant"),
            true,
        ),
        (
            "patch",
            infra,
            "openstackfloatingippools/status",
            Some("tenant"),
            true,
        ),
        (
            "update",
            infra,
            "openstackmachines/finalizers",
            Some("tenant"),
            true,
        ),
        ("watch", infra, "openstackclusteridentities", None, true),
        (
            "create",
            infra,
            "openstackmachinetemplates",
            Some("tenant"),
            false,
        ),
        ("list", "cluster.x-k8s.io", "clusters", None, true),
        ("watch", "cluster.x-k8s.io", "machines", None, true),
        (
            "update",
            "cluster.x-k8s.io",
            "machines",
            Some("tenant"),
            false,
        ),
        (
            "delete",
            "cluster.x-k8s.io",
            "clusters",
            Some("tenant"),
            false,
        ),
        (
            "create",
            "ipam.cluster.x-k8s.io",
            "ipaddresses",
            Some("tenant"),
            true,
        ),
        (
            "patch",
            "ipam.cluster.x-k8s.io",
            "ipaddressclaims/status",
            Some("tenant"),
            true,
        ),
        ("list", "openstack.k-orc.cloud", "images", None, true),
        (
            "create",
            "openstack.k-orc.cloud",
            "images",
            Some("tenant"),
            false,
        ),
        ("create", "", "events", Some("tenant"), true),
        ("create", "events.k8s.io", "events", Some("tenant"), true),
        ("get", "", "namespaces", None, true),
        ("list", "", "namespaces", None, false),
        (
            "create",
            "coordination.k8s.io",
            "leases",
            Some(NAMESPACE),
            true,
        ),
        (
            "create",
            "coordination.k8s.io",
            "leases",
            Some("tenant"),
            false,
        ),
        ("get", "", "configmaps", Some(NAMESPACE), false),
        ("list", "", "pods", None, false),
    ];
    let mut wrong = Vec::new();
    for &(verb, group, resource, ns, expected) in expectations {
        if allowed(&client, verb, group, resource, ns).await != expected {
            wrong.push(format!(
                "{verb} {group}/{resource} in {ns:?}: expected allowed={expected}"
            ));
        }
    }
    // The storage-version migration reads capo's two-version CRDs and trims their storedVersions;
    // nothing else on CRDs, and no other CRD.
    let crds = "apiextensions.k8s.io";
    let ours = "openstackmachines.infrastructure.cluster.x-k8s.io";
    let theirs = "machines.cluster.x-k8s.io";
    let named = [
        ("get", "customresourcedefinitions", ours, true),
        ("patch", "customresourcedefinitions/status", ours, true),
        ("get", "customresourcedefinitions", theirs, false),
        (
            "get",
            "customresourcedefinitions",
            "openstackservers.infrastructure.cluster.x-k8s.io",
            false,
        ),
        ("patch", "customresourcedefinitions/status", theirs, false),
        ("update", "customresourcedefinitions", ours, false),
        ("patch", "customresourcedefinitions", ours, false),
        ("delete", "customresourcedefinitions", ours, false),
    ];
    for (verb, resource, name, expected) in named {
        if allowed_on(&client, verb, crds, resource, None, Some(name)).await != expected {
            wrong.push(format!(
                "{verb} {crds}/{resource} {name}: expected allowed={expected}"
            ));
        }
    }
    assert!(
        !allowed(&client, "list", crds, "customresourcedefinitions", None).await,
        "CRDs are read by name only"
    );
    assert!(wrong.is_empty(), "RBAC differs:\n{}", wrong.join("\n"));
}

#[test]
fn metadata_declares_this_release_series_on_contract_v1beta2() {
    let text = std::fs::read_to_string(repo_root().join("metadata.yaml")).unwrap();
    let metadata: Value = yaml_serde::from_str(&text).unwrap();
    assert_eq!(
        metadata["apiVersion"],
        json!("clusterctl.cluster.x-k8s.io/v1alpha3")
    );
    assert_eq!(metadata["kind"], json!("Metadata"));
    let version = env!("CARGO_PKG_VERSION");
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap());
    let (major, minor) = (parts.next().unwrap(), parts.next().unwrap());
    let series = metadata["releaseSeries"].as_array().unwrap();
    let this = series
        .iter()
        .find(|s| s["major"] == json!(major) && s["minor"] == json!(minor));
    let this = this.unwrap_or_else(|| panic!("metadata.yaml has no series for {version}"));
    // The CRDs carry the v1beta2 contract label and serve v1beta2 (see capo_api::crds).
    assert_eq!(this["contract"], json!("v1beta2"));
    // Earlier series keep the contract they were released with.
    assert_eq!(series[0]["contract"], json!("v1beta1"));
    // Upstream's v0.14 series, so clusterctl upgrades an upstream installation to capo.
    assert!(
        series.iter().any(|s| s["major"] == json!(0)
            && s["minor"] == json!(14)
            && s["contract"] == json!("v1beta1")),
        "metadata.yaml lacks upstream's 0.14 series (contract v1beta1)"
    );
}

//! The OpenStack credential the real Ansible bootstrap provider (`../shared/partners`, built by
//! `hack/partners.sh build`) writes into a control-plane machine's bootstrap data
//! (`/opt/auth-opts`, `/opt/cloud_config`), for each kind of identity an operator gives capo:
//! a password user, an unrestricted application credential, and a restricted one (Keystone's
//! default, which may not create other credentials). Each ends with a credential that
//! authenticates: the test asks Keystone for a token with what the node would read.
//!
//! - password and unrestricted: capo makes a credential for the cluster; the files carry it,
//!   not the identity's own.
//! - restricted: Keystone refuses one for the cluster (403); the files carry the identity's own
//!   credential, status says `shared`, `ExtensionsReady` is True with reason
//!   `AppCredentialShared`. The identity Secret is then edited to another credential (a
//!   rotation): the published Secret follows at the next sync, and a machine bootstrapped
//!   after that gets the new one. Deleting the cluster deletes the Secret and leaves the
//!   identity's credential in Keystone.
//!
//! Portable: capo-sim by default, the real Keystone with `CAPO_CLOUD=real`. The test plays
//! Cluster API (the Cluster's status, the Machines) and the AnsibleControlPlane (the initial
//! machine's annotation); no server is built, only bootstrap data is rendered. Without
//! `$CAPO_PARTNERS_BUILD_DIR` it prints why and passes (outside CI; in CI it fails).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/machines.rs"]
mod machines;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capo_api::v1beta1::OpenStackCluster;
use capo_openstack::credentials::{AuthMethod, Credentials};
use capo_openstack::request::{Request, Service};
use capo_testkit::partners::{PartnerProcess, PartnersDir};
use common::Harness;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

const K8S_VERSION: &str = "v1.34.3";

/// One identity kind: the cluster using it, its identity Secret and cloud name.
struct Case {
    cluster: &'static str,
    cidr: &'static str,
    secret: &'static str,
    cloud: &'static str,
}

const PASSWORD: Case = Case {
    cluster: "pw",
    cidr: "10.8.1.0/24",
    secret: "cloud-config",
    cloud: "openstack",
};
const UNRESTRICTED: Case = Case {
    cluster: "unr",
    cidr: "10.8.2.0/24",
    secret: "id-unrestricted",
    cloud: "appcred",
};
const RESTRICTED: Case = Case {
    cluster: "res",
    cidr: "10.8.3.0/24",
    secret: "id-restricted",
    cloud: "appcred",
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_data_carries_a_working_credential_for_every_identity_kind() {
    let Some(partners) = PartnersDir::from_env().expect("partners build") else {
        let why = format!(
            "{} is not set: run `export {}=$(hack/partners.sh build | tail -1)`",
            capo_testkit::partners::BUILD_DIR_VAR,
            capo_testkit::partners::BUILD_DIR_VAR
        );
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{why}");
        eprintln!("SKIPPED: {why}");
        return;
    };
    let t0 = Instant::now();
    let env = capo_testkit::shared_env().await.expect("test environment");
    let _logs = env.logs_on_failure();
    let mut h = Harness::new("abpcred").await;
    // A short sync period: the rotation below is seen at the next sync, as in production
    // within `--sync-period`.
    h.options.sync_period = Duration::from_secs(3);
    h.options.identity_read_max_age = Duration::from_secs(1);
    partners
        .install_crds(&h.client)
        .await
        .expect("partner CRDs");
    let _controllers = machines::start(&h);

    // The two application-credential identities, made by the test project's user.
    let s = h.session();
    let (unr_id, unr_secret) = make_app_credential(&s, "capo-test-unrestricted", true).await;
    let (res_id, res_secret) = make_app_credential(&s, "capo-test-restricted", false).await;
    put_identity(&h, UNRESTRICTED.secret, &unr_id, &unr_secret).await;
    put_identity(&h, RESTRICTED.secret, &res_id, &res_secret).await;

    let dir = tempfile::tempdir().unwrap();
    let consumer = PartnerProcess::spawn(
        "ansible-bootstrap",
        &partners.bin("ansible-bootstrap"),
        &[
            format!("--kubeconfig={}", env.kubeconfig_path().display()),
            "--diagnostics-address=0".into(),
            "--health-addr=0".into(),
            "--leader-elect=false".into(),
            // No MachinePool CRD here (see ansible_consumers.rs).
            "--feature-gates=MachinePool=false".into(),
        ],
        dir.path().join("ansible-bootstrap.log"),
    )
    .expect("start the bootstrap provider");

    for case in [&PASSWORD, &UNRESTRICTED, &RESTRICTED] {
        h.create_cluster(case.cluster, &spec(case)).await;
    }
    let mut published = BTreeMap::new();
    for case in [&PASSWORD, &UNRESTRICTED, &RESTRICTED] {
        let osc = h
            .wait_cluster(case.cluster, 180, "ready, credential published", |o| {
                o.status.as_ref().is_some_and(|s| s.ready) && recorded(o)["ref"].is_string()
            })
            .await;
        play_cluster_api(&h, case.cluster, &osc).await;
        published.insert(case.cluster, recorded(&osc));
    }
    eprintln!(
        "TIMING three clusters ready with their credential Secrets in {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    // Per-cluster credentials for the password and unrestricted identities.
    for case in [&PASSWORD, &UNRESTRICTED] {
        let r = &published[case.cluster];
        let id = r["id"].as_str().expect("a per-cluster credential ID");
        assert_ne!(
            id, unr_id,
            "{}: the identity's own credential",
            case.cluster
        );
        assert!(r["shared"].is_null(), "{}: {r}", case.cluster);
        let files = bootstrap_files(&h, &consumer, case.cluster, "cp-0").await;
        assert_eq!(files.id, id, "{}", case.cluster);
        authenticates(&h, &files, case.cluster).await;
    }
    // The restricted identity's own credential, shared.
    let r = &published[RESTRICTED.cluster];
    assert_eq!(r["shared"], json!(true), "{r}");
    assert!(r["id"].is_null(), "{r}");
    h.wait_cluster(
        RESTRICTED.cluster,
        120,
        "ExtensionsReady True with reason AppCredentialShared",
        |o| {
            o.status.as_ref().is_some_and(|s| {
                capo_controller::conditions::get(&s.conditions, "ExtensionsReady").is_some_and(
                    |c| c.status == "True" && c.reason.as_deref() == Some("AppCredentialShared"),
                )
            })
        },
    )
    .await;
    let files = bootstrap_files(&h, &consumer, RESTRICTED.cluster, "cp-0").await;
    assert_eq!(files.id, res_id);
    authenticates(&h, &files, RESTRICTED.cluster).await;
    assert!(
        !h.event_messages(RESTRICTED.cluster, "AppCredentialShared")
            .await
            .is_empty(),
        "no AppCredentialShared event"
    );

    // Rotation: the operator makes a new restricted credential, puts it in the identity
    // Secret and retires the old one. The published Secret follows; a machine bootstrapped
    // after that carries the new credential.
    let started = Instant::now();
    let (new_id, new_secret) = make_app_credential(&s, "capo-test-restricted-2", false).await;
    put_identity(&h, RESTRICTED.secret, &new_id, &new_secret).await;
    let secret_name = format!("{}-app-credential", RESTRICTED.cluster);
    common::poll(
        60,
        || async {
            let s = Api::<Secret>::namespaced(h.client.clone(), &h.ns)
                .get(&secret_name)
                .await
                .unwrap();
            let text = String::from_utf8(s.data.unwrap()["clouds.yaml"].0.clone()).unwrap();
            text.contains(&new_id).then_some(())
        },
        || async { "the published Secret did not follow the edited identity Secret".to_owned() },
    )
    .await;
    eprintln!(
        "TIMING rotated identity credential republished in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    capo_cloud::identity::delete_app_credential(&s, &res_id)
        .await
        .unwrap();
    // The consumer renders a control plane's credential files for the initial machine without
    // SSH; a replacement of it (the old one gone) gets them from the republished Secret.
    for (kind, api) in [
        ("Machine", capi("Machine")),
        ("AnsibleConfig", ansible_config()),
    ] {
        Api::<DynamicObject>::namespaced_with(h.client.clone(), &h.ns, &api)
            .delete(&format!("{}-cp-0", RESTRICTED.cluster), &Default::default())
            .await
            .unwrap_or_else(|e| panic!("delete {kind}: {e}"));
    }
    let files = bootstrap_files(&h, &consumer, RESTRICTED.cluster, "cp-0b").await;
    assert_eq!(files.id, new_id);
    authenticates(&h, &files, RESTRICTED.cluster).await;

    // No credential secret in any status or event of the namespace.
    let statuses: Vec<Value> = h
        .clusters()
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| serde_json::to_value(&o.status).unwrap())
        .collect();
    let events = Api::<k8s_openapi::api::core::v1::Event>::namespaced(h.client.clone(), &h.ns)
        .list(&Default::default())
        .await
        .unwrap();
    let visible = format!(
        "{}{}",
        serde_json::to_string(&statuses).unwrap(),
        serde_json::to_string(&events.items).unwrap()
    );
    for secret in [&unr_secret, &res_secret, &new_secret] {
        assert!(
            !visible.contains(secret.as_str()),
            "a secret in status or events"
        );
    }

    // Deletion: capo's per-cluster credentials go; the shared one is the identity's and stays.
    let per_cluster: Vec<String> = [&PASSWORD, &UNRESTRICTED]
        .iter()
        .map(|c| published[c.cluster]["id"].as_str().unwrap().to_owned())
        .collect();
    drop(consumer);
    // Cluster API's part: the Machines (and their bootstrap configs) go first.
    for api in [capi("Machine"), ansible_config()] {
        Api::<DynamicObject>::namespaced_with(h.client.clone(), &h.ns, &api)
            .delete_collection(&Default::default(), &Default::default())
            .await
            .unwrap();
    }
    h.delete_clusters_leaving_nothing(&[
        PASSWORD.cluster,
        UNRESTRICTED.cluster,
        RESTRICTED.cluster,
    ])
    .await;
    for id in &per_cluster {
        let left = capo_cloud::identity::get_app_credential(&s, id)
            .await
            .unwrap();
        assert!(left.is_none(), "credential {id} left in Keystone");
    }
    let kept = capo_cloud::identity::get_app_credential(&s, &new_id)
        .await
        .unwrap();
    assert!(kept.is_some(), "the identity's own credential was deleted");
    for id in [&unr_id, &new_id] {
        capo_cloud::identity::delete_app_credential(&s, id)
            .await
            .unwrap();
    }
    eprintln!("TIMING whole test {:.1} s", t0.elapsed().as_secs_f64());
}

/// The cluster of `case`. The restricted one has all the Ansible extensions resolve (a
/// bastion, keepalived VIPs), so that its `ExtensionsReady` becomes True and carries the
/// sharing note; the two others stop at unresolved variables, which does not hold back their
/// credential.
fn spec(case: &Case) -> String {
    let extensions = if case.cluster == RESTRICTED.cluster {
        format!(
            "{}{}",
            common::BASTION,
            common::keepalived_extensions("root")
        )
    } else {
        "extensions:\n  openStack: {}\n".to_owned()
    };
    format!(
        "identityRef:
  name: {}
  cloudName: {}
managedSubnets:
- cidr: {}
managedSecurityGroups:
  allowAllInClusterTraffic: true
{extensions}",
        case.secret, case.cloud, case.cidr
    )
}

/// `status.extensions.openStack.appCredential` (null when absent).
fn recorded(o: &OpenStackCluster) -> Value {
    serde_json::to_value(&o.status).unwrap()["extensions"]["openStack"]["appCredential"].clone()
}

/// A credential of the session's user: (ID, secret).
async fn make_app_credential(
    s: &capo_openstack::Session,
    name: &str,
    unrestricted: bool,
) -> (String, String) {
    let user = s.user_id().await.unwrap();
    let request = Request::post(
        Service::Identity,
        format!("users/{user}/application_credentials"),
        "test_application_credential_create",
        json!({"application_credential": {"name": name, "unrestricted": unrestricted}}),
    );
    // The real Keystone (two workers, memcached) has twice answered a new project's user 400
    // "Could not find role assignment" for a role its token carries, and accepted the same
    // request later (capo's own reconciles went on): its cache of computed assignments
    // catching up. The fixture waits for it as capo does; any other answer fails at once.
    let mut tries = 0;
    let reply = loop {
        match s.send(&request).await {
            Err(capo_openstack::Error::Api {
                status: 400,
                ref message,
                ..
            }) if tries < 10 && message.contains("Could not find role assignment") => {
                tries += 1;
                eprintln!("Keystone does not see the token's roles yet (try {tries}): {message}");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            other => break other.unwrap(),
        }
    };
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    let ac = &body["application_credential"];
    (
        ac["id"].as_str().unwrap().to_owned(),
        ac["secret"].as_str().unwrap().to_owned(),
    )
}

/// Write identity Secret `name` with cloud `appcred` authenticating by credential `id`.
async fn put_identity(h: &Harness, name: &str, id: &str, secret: &str) {
    let creds = h.session().credentials().clone();
    let region = creds.region.as_deref().map_or(String::new(), |r| {
        format!("    region_name: {}\n", json!(r))
    });
    let clouds = format!(
        "clouds:\n  appcred:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {}\n      application_credential_id: {}\n      application_credential_secret: {}\n{region}",
        json!(creds.auth_url()),
        json!(id),
        json!(secret),
    );
    let body: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": h.ns},
        "stringData": {"clouds.yaml": clouds},
    }))
    .unwrap();
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .patch(
            name,
            &PatchParams::apply("capo-test").force(),
            &Patch::Apply(&body),
        )
        .await
        .unwrap();
}

fn capi(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", kind))
}

fn ansible_config() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "bootstrap.cluster.x-k8s.io",
        "v1alpha1",
        "AnsibleConfig",
    ))
}

/// What Cluster API and the control plane provider would have done: the endpoint copied to the
/// Cluster, infrastructure provisioned, control plane initialized, the cluster CA Secret.
async fn play_cluster_api(h: &Harness, cluster: &str, osc: &OpenStackCluster) {
    let endpoint = osc.spec.control_plane_endpoint.clone().unwrap();
    h.apply_capi_cluster(
        cluster,
        &format!(
            "  paused: false
  controlPlaneEndpoint:
    host: {}
    port: {}
",
            endpoint.host.clone().unwrap(),
            endpoint.port.unwrap()
        ),
    )
    .await;
    Api::<DynamicObject>::namespaced_with(h.client.clone(), &h.ns, &capi("Cluster"))
        .patch_status(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "initialization": {"infrastructureProvisioned": true, "controlPlaneInitialized": true},
                "conditions": [{"type": "ControlPlaneInitialized", "status": "True", "reason": "Test",
                                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            }})),
        )
        .await
        .unwrap();
    let ca: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{cluster}-ca")},
        "stringData": {"tls.crt": "test CA certificate", "tls.key": "test CA key"},
    }))
    .unwrap();
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .create(&Default::default(), &ca)
        .await
        .unwrap();
}

/// The credential a node would read from `/opt/auth-opts` (and, the same, `/opt/cloud_config`).
struct NodeCredential {
    auth_url: String,
    id: String,
    secret: String,
    region: String,
}

/// Control-plane Machine `machine` of `cluster` bootstrapped by an AnsibleConfig: the consumer
/// renders its bootstrap data, whose two credential files are read back.
async fn bootstrap_files(
    h: &Harness,
    consumer: &PartnerProcess,
    cluster: &str,
    machine: &str,
) -> NodeCredential {
    let name = format!("{cluster}-{machine}");
    let spec = format!(
        "  version: {K8S_VERSION}
  bootstrap:
    configRef:
      apiGroup: bootstrap.cluster.x-k8s.io
      kind: AnsibleConfig
      name: {name}
"
    );
    machines::apply_capi_machine(h, cluster, &name, true, &spec).await;
    if machine.starts_with("cp-0") {
        Api::<DynamicObject>::namespaced_with(h.client.clone(), &h.ns, &capi("Machine"))
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {
                    "controlplane.cluster.x-k8s.io/ansible-initial-machine": "true",
                    "controlplane.cluster.x-k8s.io/ansible-etcd-anchor": "true",
                }}})),
            )
            .await
            .unwrap();
    }
    let uid = h.uid("Machine", &name).await;
    h.apply(&format!(
        "apiVersion: bootstrap.cluster.x-k8s.io/v1alpha1
kind: AnsibleConfig
metadata:
  name: {name}
  labels:
    cluster.x-k8s.io/cluster-name: {cluster}
  ownerReferences:
  - apiVersion: cluster.x-k8s.io/v1beta2
    kind: Machine
    name: {name}
    uid: {uid}
    controller: true
spec:
  role: [kube-master, etcd]
  varsConfigRefs:
    business:
      name: {cluster}-vars-business
    fixed:
      name: {cluster}-vars-fixed
  clusterTemplate:
    apiVersion: kubean.io/v1alpha1
    kind: Cluster
  clusterOperationTemplate:
    apiVersion: kubean.io/v1alpha1
    kind: ClusterOperation
    spec:
      image: kubean-job:test
"
    ))
    .await;
    let api: Api<DynamicObject> = Api::namespaced_with(h.client.clone(), &h.ns, &ansible_config());
    let deadline = Instant::now() + Duration::from_secs(90);
    let data_secret = loop {
        let ac = api.get(&name).await.unwrap();
        if let Some(s) = ac.data["status"]["dataSecretName"].as_str() {
            break s.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "AnsibleConfig {name} got no bootstrap data: {}\n--- {} ---\n{}",
            ac.data["status"],
            consumer.log.display(),
            consumer.tail(40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let data = Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .get(&data_secret)
        .await
        .unwrap()
        .data
        .unwrap();
    let doc: yaml_serde::Value =
        yaml_serde::from_str(&String::from_utf8_lossy(&data["value"].0)).unwrap();
    let file = |path: &str| -> BTreeMap<String, String> {
        let content = doc["write_files"]
            .as_sequence()
            .and_then(|files| files.iter().find(|f| f["path"].as_str() == Some(path)))
            .and_then(|f| f["content"].as_str())
            .unwrap_or_else(|| panic!("{name}: no {path} in the bootstrap data"));
        content
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    };
    let auth_opts = file("/opt/auth-opts");
    let cloud_config = file("/opt/cloud_config");
    for key in [
        "auth-url",
        "application-credential-id",
        "application-credential-secret",
        "region",
    ] {
        assert_eq!(
            auth_opts.get(key),
            cloud_config.get(key),
            "{name}: {key} differs between /opt/auth-opts and /opt/cloud_config"
        );
    }
    let get = |k: &str| {
        auth_opts
            .get(k)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: no {k} in /opt/auth-opts"))
    };
    NodeCredential {
        auth_url: get("auth-url"),
        id: get("application-credential-id"),
        secret: get("application-credential-secret"),
        region: get("region"),
    }
}

/// A token for the node's credential (and a Neutron call with it): it authenticates.
async fn authenticates(h: &Harness, c: &NodeCredential, cluster: &str) {
    let clouds = format!(
        "clouds:\n  node:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {}\n      application_credential_id: {}\n      application_credential_secret: {}\n    region_name: {}\n",
        json!(c.auth_url),
        json!(c.id),
        json!(c.secret),
        json!(c.region),
    );
    let creds = Credentials::from_clouds_yaml(&clouds, "node", None, None).unwrap();
    assert_eq!(creds.method, AuthMethod::ApplicationCredential);
    let session = h.sessions.session(&creds).unwrap();
    let project = session
        .project_id()
        .await
        .unwrap_or_else(|e| panic!("{cluster}: the node's credential does not authenticate: {e}"));
    assert_eq!(project, h.project(), "{cluster}");
    session
        .send(&Request::get(
            Service::Network,
            "networks",
            "test_network_list",
        ))
        .await
        .unwrap_or_else(|e| panic!("{cluster}: Neutron refused the node's credential: {e}"));
    eprintln!("{cluster}: the node's credential {} authenticates", c.id);
}

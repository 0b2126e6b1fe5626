//! The environment starts, every CRD (ours, Cluster API, ORC) is installed and Established,
//! and the basic hand-outs (client, kubeconfig, namespaces) work.

use capo_testkit::{apply_yaml, is_established, shared_env};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// CRDs that must be served, from all three sources.
const REQUIRED: &[&str] = &[
    "clusters.cluster.x-k8s.io",
    "machines.cluster.x-k8s.io",
    "machinesets.cluster.x-k8s.io",
    "machinedeployments.cluster.x-k8s.io",
    "ipaddressclaims.ipam.cluster.x-k8s.io",
    "ipaddresses.ipam.cluster.x-k8s.io",
    "images.openstack.k-orc.cloud",
];

/// Our CRDs, from config/crd/bases.
const OURS: &[&str] = &[
    "openstackclusters.infrastructure.cluster.x-k8s.io",
    "openstackclustertemplates.infrastructure.cluster.x-k8s.io",
    "openstackmachines.infrastructure.cluster.x-k8s.io",
    "openstackmachinetemplates.infrastructure.cluster.x-k8s.io",
    "openstackclusteridentities.infrastructure.cluster.x-k8s.io",
    "openstackfloatingippools.infrastructure.cluster.x-k8s.io",
    "openstackservers.infrastructure.cluster.x-k8s.io",
];

#[tokio::test]
async fn crds_are_installed_and_established() -> TestResult {
    let env = shared_env().await?;
    let _logs = env.logs_on_failure();
    let api: Api<CustomResourceDefinition> = Api::all(env.client());
    // Our CRDs are required whenever config/crd/bases has any; an empty folder is the one
    // case where only the Cluster API and ORC CRDs can be checked.
    let ours_expected = std::fs::read_dir(capo_testkit::paths::our_crd_dir())
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false);
    if !ours_expected {
        eprintln!("WARNING: config/crd/bases is empty; checking only the Cluster API and ORC CRDs");
    }
    let wanted = REQUIRED.iter().chain(OURS.iter().filter(|_| ours_expected));
    for name in wanted {
        let crd = api.get(name).await?;
        assert!(is_established(&crd), "{name} is not Established");
    }
    Ok(())
}

#[tokio::test]
async fn namespaces_are_fresh_and_apply_persists() -> TestResult {
    let env = shared_env().await?;
    let _logs = env.logs_on_failure();
    let a = env.new_namespace("env").await?;
    let b = env.new_namespace("env").await?;
    assert_ne!(a, b);
    assert!(a.starts_with("env-"));
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n  k: v\n";
    let applied = apply_yaml(&env.client(), &a, cm, false).await?;
    assert_eq!(applied.map(|objs| objs.len()).ok(), Some(1));
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(env.client(), &a);
    assert_eq!(
        maps.get("probe")
            .await?
            .data
            .and_then(|d| d.get("k").cloned())
            .as_deref(),
        Some("v")
    );
    // A dry run persists nothing.
    let other = cm.replace("probe", "dry");
    assert!(apply_yaml(&env.client(), &a, &other, true).await?.is_ok());
    assert!(maps.get_opt("dry").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn kubeconfig_works_with_kubectl() -> TestResult {
    let env = shared_env().await?;
    let kubectl = capo_testkit::paths::EnvDir::locate()?.bin("kubectl");
    let out = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(env.kubeconfig_path())
        .args(["get", "crd", "images.openstack.k-orc.cloud", "-o", "name"])
        .output()?;
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "customresourcedefinition.apiextensions.k8s.io/images.openstack.k-orc.cloud"
    );
    Ok(())
}

//! Every upstream-style manifest passes a server-side dry-run apply against our CRDs (plus the
//! Cluster API and ORC CRDs): the upstream CAPO v0.14.7 cluster templates with their variables
//! filled in, the seed 001 (CAPO book) examples rebuilt by the api crate
//! (`crates/api/tests/data/seed-001/accepted`), and the v1beta1/v1alpha1 examples under
//! `tests/data/examples/`. The book's stale snippets (`seed-001/rejected`) are refused.
//!
//! Kinds whose CRDs the environment does not install (kubeadm bootstrap/control plane,
//! ClusterClass) are left out of each template; the test prints what it skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use capo_testkit::{apply_yaml, envsubst, parse_objects, shared_env};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Kinds served by the test environment's CRDs or built in.
const SERVED: &[&str] = &[
    "Secret",
    "ConfigMap",
    "Cluster",
    "MachineDeployment",
    "MachineSet",
    "Machine",
    "IPAddressClaim",
    "IPAddress",
    "Image",
    "OpenStackCluster",
    "OpenStackClusterTemplate",
    "OpenStackMachine",
    "OpenStackMachineTemplate",
    "OpenStackFloatingIPPool",
    "OpenStackServer",
    "OpenStackClusterIdentity",
];

/// Values for the variables of the upstream templates (`clusterctl generate cluster` inputs).
fn template_vars() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("CLUSTER_NAME", "capo-demo"),
        ("KUBERNETES_VERSION", "v1.34.3"),
        ("CONTROL_PLANE_MACHINE_COUNT", "3"),
        ("WORKER_MACHINE_COUNT", "2"),
        ("OPENSTACK_CLOUD", "openstack"),
        ("OPENSTACK_CLOUD_CACERT_B64", "Cg=="),
        ("OPENSTACK_CLOUD_YAML_B64", "Y2xvdWRzOiB7fQo="),
        ("OPENSTACK_CONTROL_PLANE_MACHINE_FLAVOR", "m1.medium"),
        ("OPENSTACK_NODE_MACHINE_FLAVOR", "m1.small"),
        ("OPENSTACK_DNS_NAMESERVERS", "192.0.2.53"),
        (
            "OPENSTACK_EXTERNAL_NETWORK_ID",
            "5f5e4b2c-8a53-4f4e-9a52-2f7d3c0c1a11",
        ),
        ("OPENSTACK_FAILURE_DOMAIN", "nova"),
        ("OPENSTACK_IMAGE_NAME", "ubuntu-2404-kube-v1.34.3"),
        ("OPENSTACK_FLATCAR_IMAGE_NAME", "flatcar-stable"),
        ("FLATCAR_IMAGE_NAME", "flatcar-stable"),
        ("OPENSTACK_SSH_KEY_NAME", "capo-key"),
    ])
}

fn seed_dir(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../api/tests/data/seed-001")
        .join(sub)
}

fn data_dir(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(sub)
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    files.sort();
    files
}

/// Keeps the documents whose kind is served; returns the kept YAML and the skipped kinds.
fn served_documents(yaml: &str) -> Result<(String, Vec<String>), Box<dyn std::error::Error>> {
    let mut kept = Vec::new();
    let mut skipped = Vec::new();
    for object in parse_objects(yaml)? {
        let kind = object
            .types
            .as_ref()
            .map(|t| t.kind.clone())
            .unwrap_or_default();
        if SERVED.contains(&kind.as_str()) {
            kept.push(yaml_serde::to_string(&object)?);
        } else {
            skipped.push(kind);
        }
    }
    Ok((kept.join("---\n"), skipped))
}

/// Dry-run applies each file into a fresh namespace; returns the failures.
async fn dry_run_files(
    files: &[PathBuf],
    substitute: bool,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let env = shared_env().await?;
    let client = env.client();
    let vars = template_vars();
    let mut failures = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let raw = std::fs::read_to_string(file)?;
        let text = if substitute {
            envsubst(&raw, &vars)?
        } else {
            raw
        };
        let (yaml, skipped) = served_documents(&text)?;
        let ns = env.new_namespace("examples").await?;
        match apply_yaml(&client, &ns, &yaml, true).await? {
            Ok(objects) => eprintln!(
                "{name}: {} objects accepted; not served, skipped: {skipped:?}",
                objects.len()
            ),
            Err(rejected) => failures.push(format!("{name}: {rejected}")),
        }
    }
    Ok(failures)
}

/// [`dry_run_files`] on the shared test environment; fails listing every rejected file.
async fn assert_all_pass_dry_run(files: &[PathBuf], substitute: bool) -> TestResult {
    let env = shared_env().await?;
    let _logs = env.logs_on_failure();
    let failures = dry_run_files(files, substitute).await?;
    assert!(failures.is_empty(), "rejected:\n{}", failures.join("\n"));
    Ok(())
}

#[tokio::test]
async fn upstream_cluster_templates_pass_dry_run() -> TestResult {
    let files = yaml_files(&data_dir("upstream-templates"));
    assert!(files.len() >= 9, "upstream templates missing: {files:?}");
    assert_all_pass_dry_run(&files, true).await
}

#[tokio::test]
async fn v1beta1_and_v1alpha1_examples_pass_dry_run() -> TestResult {
    let files = yaml_files(&data_dir("examples"));
    assert!(!files.is_empty(), "no examples in tests/data/examples");
    assert_all_pass_dry_run(&files, false).await
}

#[tokio::test]
async fn seed_001_book_examples_pass_dry_run() -> TestResult {
    let files = yaml_files(&seed_dir("accepted"));
    assert!(
        !files.is_empty(),
        "no seed 001 examples in crates/api/tests/data/seed-001/accepted"
    );
    assert_all_pass_dry_run(&files, false).await
}

#[tokio::test]
async fn seed_001_stale_examples_are_rejected() -> TestResult {
    let files = yaml_files(&seed_dir("rejected"));
    assert!(
        !files.is_empty(),
        "no stale seed 001 examples in crates/api/tests/data/seed-001/rejected"
    );
    let env = shared_env().await?;
    let _logs = env.logs_on_failure();
    let ns = env.new_namespace("stale").await?;
    for file in files {
        let yaml = std::fs::read_to_string(&file)?;
        let verdict = apply_yaml(&env.client(), &ns, &yaml, true).await?;
        match verdict {
            Ok(_) => panic!("{} was accepted", file.display()),
            Err(rejected) => eprintln!("{}: {rejected}", file.display()),
        }
    }
    Ok(())
}

//! `hack/release.sh` writes a clusterctl provider repository version directory: the components
//! name the release image with `imagePullPolicy: IfNotPresent` and keep the manager's hardened
//! pod; metadata.yaml and the templates are the repository's; bad input leaves nothing behind
//! (and a previous release in place). Needs kubectl (the test environment's) and python3, not a
//! release build: the image archive is a small one made with hack/lib/oci.sh.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use capo_testkit::paths::{EnvDir, repo_root};
use serde_json::{Value, json};

const REGISTRY: &str = "registry.example.com/capo";
const VERSION: &str = "v0.2.0";
const IMAGE: &str = "registry.example.com/capo/capo-controller-manager:v0.2.0";

/// A small OCI archive named `image`, as hack/image.sh would write for that reference.
fn image_archive(dir: &Path, image: &str) -> PathBuf {
    let rootfs = dir.join("rootfs");
    fs::create_dir_all(&rootfs).unwrap();
    fs::write(rootfs.join("manager"), "#!/bin/sh\n").unwrap();
    let archive = dir.join("image.tar");
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"set -euo pipefail; say() { :; }; source hack/lib/oci.sh; oci_image "$1" "$2" "$3""#)
        .arg("oci")
        .arg(&rootfs)
        .arg(image)
        .arg(&archive)
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "oci_image failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    archive
}

fn release(args: &[&str], kubectl: &Path) -> Output {
    Command::new(repo_root().join("hack/release.sh"))
        .args(args)
        .env("KUBECTL", kubectl)
        .env("CAPO_REGISTRY", REGISTRY)
        .current_dir(repo_root())
        .output()
        .unwrap()
}

fn kubectl() -> PathBuf {
    EnvDir::locate().unwrap().bin("kubectl")
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn release_directory_has_the_image_the_hardened_manager_and_upstreams_file_names() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = image_archive(tmp.path(), IMAGE);
    let base = tmp.path().join("repo/infrastructure-openstack");
    let out_dir = base.join(VERSION);
    let out = release(
        &[
            VERSION,
            "--out",
            out_dir.to_str().unwrap(),
            "--image-archive",
            archive.to_str().unwrap(),
        ],
        &kubectl(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "hack/release.sh failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().last(), Some(out_dir.to_str().unwrap()));
    // Only the finished directory: no temporary one left beside it.
    assert_eq!(names(&base), vec![VERSION.to_string()]);

    let components = fs::read_to_string(out_dir.join("infrastructure-components.yaml")).unwrap();
    assert!(!components.contains("capo-controller-manager:dev"));
    let objects: Vec<Value> = capo_testkit::parse_objects(&components)
        .unwrap()
        .iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect();
    let deployments: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == json!("Deployment"))
        .collect();
    assert_eq!(deployments.len(), 1);
    let deployment = deployments[0];
    assert_eq!(
        deployment["metadata"]["name"],
        json!("capo-controller-manager")
    );
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], json!(true));
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        json!("RuntimeDefault")
    );
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let manager = &containers[0];
    assert_eq!(manager["image"], json!(IMAGE));
    assert_eq!(manager["imagePullPolicy"], json!("IfNotPresent"));
    let security = &manager["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], json!(true));
    assert_eq!(security["allowPrivilegeEscalation"], json!(false));
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(security["runAsUser"], json!(65532));
    assert_eq!(security["runAsGroup"], json!(65532));

    let root = repo_root();
    assert_eq!(
        fs::read(out_dir.join("metadata.yaml")).unwrap(),
        fs::read(root.join("metadata.yaml")).unwrap()
    );
    let mut shipped = 0;
    for name in names(&root.join("templates")) {
        if name.ends_with(".yaml")
            && (name.starts_with("cluster-template") || name.starts_with("clusterclass"))
        {
            assert_eq!(
                fs::read(out_dir.join(&name)).unwrap(),
                fs::read(root.join("templates").join(&name)).unwrap(),
                "{name}"
            );
            shipped += 1;
        }
    }
    assert!(shipped > 1);
    assert_eq!(
        fs::read(out_dir.join(format!("capo-controller-manager-{VERSION}.tar"))).unwrap(),
        fs::read(&archive).unwrap()
    );
}

#[test]
fn bad_input_leaves_nothing_half_written() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = image_archive(tmp.path(), IMAGE);
    let base = tmp.path().join("infrastructure-openstack");
    let out_dir = base.join(VERSION);
    let kubectl = kubectl();
    let run = |version: &str, kubectl: &Path, archive: &Path| {
        release(
            &[
                version,
                "--out",
                out_dir.to_str().unwrap(),
                "--image-archive",
                archive.to_str().unwrap(),
            ],
            kubectl,
        )
    };
    let fails = |out: Output, message: &str| {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "expected a failure: {stderr}");
        assert!(stderr.contains(message), "{message:?} not in {stderr}");
        assert!(out.stdout.is_empty());
    };

    fails(
        run("0.2.0", &kubectl, &archive),
        "is not vMAJOR.MINOR.PATCH",
    );
    fails(run("v0.2", &kubectl, &archive), "is not vMAJOR.MINOR.PATCH");
    fails(run("v9.9.0", &kubectl, &archive), "metadata.yaml (");
    let other = image_archive(&tmp.path().join("other"), "localhost/capo/other:v0.2.0");
    fails(
        run(VERSION, &kubectl, &other),
        "not registry.example.com/capo",
    );
    assert!(!base.exists() || names(&base).is_empty());

    // A release, then one whose kustomize output lacks the image: the first stays as it was.
    let ok = run(VERSION, &kubectl, &archive);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let before = fs::read(out_dir.join("infrastructure-components.yaml")).unwrap();
    let stub = tmp.path().join("kubectl-stub");
    fs::write(&stub, "#!/bin/sh\necho 'kind: ConfigMap'\n").unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    fs::set_permissions(&stub, mode).unwrap();
    fails(
        run(VERSION, &stub, &archive),
        "do not contain the image registry.example.com/capo/capo-controller-manager:v0.2.0",
    );
    assert_eq!(names(&base), vec![VERSION.to_string()]);
    assert_eq!(
        fs::read(out_dir.join("infrastructure-components.yaml")).unwrap(),
        before
    );
}

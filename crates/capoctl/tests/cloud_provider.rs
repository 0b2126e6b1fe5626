//! `capoctl cloud-conf --format occm-values|cinder-csi-values|env`: the cluster name
//! `<namespace>-<cluster>` in the form cloud-provider-openstack's install routes read it, without
//! a clouds.yaml; `kubectl set env -e -` applies the env output to a controller's container; bad
//! or meaningless flags are errors naming the flag.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failing test should panic

use std::io::Write;
use std::process::{Command, Output, Stdio};

use yaml_serde::Value;

/// `capoctl cloud-conf <args>` with an empty environment (no OS_CLOUD, no clouds.yaml).
fn cloud_conf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capoctl"))
        .current_dir(std::env::temp_dir())
        .env_clear()
        .arg("cloud-conf")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(out: Output) -> String {
    assert!(
        out.status.success(),
        "capoctl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Exit status 1, nothing on stdout, the message on stderr.
fn failure(out: Output) -> String {
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    String::from_utf8(out.stderr).unwrap()
}

fn yaml(text: &str) -> Value {
    yaml_serde::from_str(text).unwrap()
}

#[test]
fn helm_values_give_both_charts_the_name_and_the_cloud_config_secret() {
    let cluster = ["-n", "team-a", "--cluster", "prod"];
    let name = capo_api::names::cloud_provider_cluster_name("team-a", "prod");
    assert_eq!(name, "team-a-prod");
    let secret = yaml("enabled: true\ncreate: false\nname: cloud-config\n");

    let occm = yaml(&stdout(cloud_conf(
        &[&cluster[..], &["--format", "occm-values"]].concat(),
    )));
    // The chart's DaemonSet passes cluster.name as --cluster-name and mounts secret.name.
    assert_eq!(occm["cluster"]["name"].as_str(), Some(name.as_str()));
    assert_eq!(occm["secret"], secret);

    let csi = yaml(&stdout(cloud_conf(
        &[&cluster[..], &["--format", "cinder-csi-values"]].concat(),
    )));
    // The chart's controller plugin passes clusterID as --cluster.
    assert_eq!(csi["clusterID"].as_str(), Some(name.as_str()));
    assert_eq!(csi["secret"], secret);
}

/// A controller written like cloud-provider-openstack's manifests: `--cluster-name` from
/// `$(CLUSTER_NAME)`, whose value is `kubernetes`, in one container of several.
const CONTROLLER: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller
  namespace: kube-system
spec:
  selector:
    matchLabels: {app: controller}
  template:
    metadata:
      labels: {app: controller}
    spec:
      containers:
      - name: sidecar
        image: example.invalid/sidecar
      - name: plugin
        image: example.invalid/plugin
        args: [--cluster-name=$(CLUSTER_NAME)]
        env:
        - {name: CLOUD_CONFIG, value: /etc/config/cloud.conf}
        - {name: CLUSTER_NAME, value: kubernetes}
";

#[test]
fn kubectl_set_env_reads_the_env_format() {
    let env = stdout(cloud_conf(&[
        "-n",
        "ns",
        "--cluster",
        "c1",
        "--format",
        "env",
    ]));
    assert_eq!(env, "CLUSTER_NAME=ns-c1\n");

    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("controller.yaml");
    std::fs::write(&manifest, CONTROLLER).unwrap();
    let kubectl = capo_testkit::paths::EnvDir::locate()
        .unwrap()
        .bin("kubectl");
    let mut child = Command::new(kubectl)
        .args([
            "set", "env", "--local", "-o", "yaml", "-c", "plugin", "-e", "-", "-f",
        ])
        .arg(&manifest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(env.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let updated = yaml(&stdout(out));
    let containers = &updated["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers[1]["env"],
        yaml(
            "[{name: CLOUD_CONFIG, value: /etc/config/cloud.conf}, {name: CLUSTER_NAME, value: ns-c1}]"
        )
    );
    assert_eq!(
        containers[0]["env"],
        Value::Null,
        "only the named container"
    );
}

#[test]
fn the_default_format_is_cloud_conf_and_refuses_a_cluster() {
    let err = failure(cloud_conf(&["-n", "ns", "--cluster", "c1"]));
    assert_eq!(
        err,
        "capoctl: --cluster has no place in cloud.conf (the CCM and the CSI plugin take the \
         cluster name as a flag): add --format occm-values, cinder-csi-values or env\n"
    );
    let err = failure(cloud_conf(&[]));
    assert_eq!(
        err,
        "capoctl: --clouds-yaml (or OS_CLIENT_CONFIG_FILE) is required with --format cloud-conf\n"
    );
}

#[test]
fn the_name_formats_need_a_valid_cluster_and_no_ca_file() {
    for format in ["occm-values", "cinder-csi-values", "env"] {
        let err = failure(cloud_conf(&["--format", format]));
        assert_eq!(
            err,
            format!("capoctl: --namespace and --cluster are required with --format {format}\n")
        );
        let err = failure(cloud_conf(&[
            "-n",
            "ns",
            "--cluster",
            "c1",
            "--format",
            format,
            "--ca-file",
            "/ca",
        ]));
        assert_eq!(
            err,
            format!(
                "capoctl: --ca-file is a cloud.conf line; --format {format} has no cloud.conf\n"
            )
        );
        let err = failure(cloud_conf(&[
            "-n",
            "Prod",
            "--cluster",
            "c1",
            "--format",
            format,
        ]));
        assert_eq!(
            err,
            "capoctl: --namespace contains 'P': only lowercase letters, digits and '-' are allowed\n"
        );
    }
    // clap: one without the other is a usage error (exit 2), naming the missing flag.
    let out = cloud_conf(&["--cluster", "c1", "--format", "env"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--namespace <NAMESPACE>"));
}

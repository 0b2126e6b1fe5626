//! Error paths: each message names the file and field, exits non-zero, and never prints a secret.
#![allow(clippy::unwrap_used)] // a failing test should panic

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const PASSWORD: &str = "Sup3r-S3cret-pw";
const APP_SECRET: &str = "AppCred-S3cret-xyz";

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capoctl"))
        .current_dir(dir)
        .env_clear()
        .args(args)
        .output()
        .unwrap()
}

/// A fresh directory holding `clouds.yaml` with `text`.
fn with_clouds_yaml(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("capoctl-errors-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("clouds.yaml"), text).unwrap();
    dir
}

/// Fails with exit code 1, nothing on stdout, and a stderr without either secret.
fn failure(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(
        !err.contains(PASSWORD) && !err.contains(APP_SECRET),
        "secret leaked: {err}"
    );
    err
}

#[test]
fn missing_file_names_the_path() {
    let dir = std::env::temp_dir();
    for cmd in ["env", "cloud-conf"] {
        let out = run(
            &dir,
            &[
                cmd,
                "--clouds-yaml",
                "/nonexistent/clouds.yaml",
                "--cloud",
                "x",
            ],
        );
        let err = failure(&out);
        assert!(
            err.starts_with("capoctl: cannot read /nonexistent/clouds.yaml: "),
            "{err}"
        );
    }
}

#[test]
fn unknown_cloud_lists_the_available_names() {
    let text = format!(
        "clouds:\n  alpha:\n    auth: {{auth_url: u, password: {PASSWORD}}}\n  beta:\n    auth: {{auth_url: u, application_credential_secret: {APP_SECRET}}}\n"
    );
    let dir = with_clouds_yaml("unknown", &text);
    for cmd in ["env", "cloud-conf"] {
        let err = failure(&run(
            &dir,
            &[cmd, "--clouds-yaml", "clouds.yaml", "--cloud", "gamma"],
        ));
        assert_eq!(
            err,
            "capoctl: clouds.yaml: no cloud named \"gamma\" under clouds (available: alpha, beta)\n"
        );
    }
}

#[test]
fn malformed_yaml_names_file_and_line_without_content() {
    let text = format!(
        "clouds:\n  alpha:\n    auth:\n      password: \"{PASSWORD}\n      application_credential_secret: [{APP_SECRET}\n"
    );
    let dir = with_clouds_yaml("malformed", &text);
    for cmd in ["env", "cloud-conf"] {
        let err = failure(&run(
            &dir,
            &[cmd, "--clouds-yaml", "clouds.yaml", "--cloud", "alpha"],
        ));
        assert!(
            err.starts_with("capoctl: clouds.yaml: malformed YAML at line "),
            "{err}"
        );
    }
}

#[test]
fn wrong_shape_and_missing_fields_name_the_field() {
    let dir = with_clouds_yaml(
        "shape",
        &format!("clouds:\n  a: {PASSWORD}\n  b:\n    auth: {{password: {PASSWORD}}}\n"),
    );
    let err = failure(&run(
        &dir,
        &["env", "--clouds-yaml", "clouds.yaml", "--cloud", "a"],
    ));
    assert_eq!(err, "capoctl: clouds.yaml: clouds.a is not a mapping\n");
    let err = failure(&run(
        &dir,
        &["cloud-conf", "--clouds-yaml", "clouds.yaml", "--cloud", "b"],
    ));
    assert_eq!(
        err,
        "capoctl: clouds.yaml: clouds.b.auth.auth_url is missing\n"
    );
}

#[test]
fn missing_cacert_file_names_that_file() {
    let dir = with_clouds_yaml(
        "cacert",
        &format!(
            "clouds:\n  a:\n    auth: {{auth_url: u, password: {PASSWORD}}}\n    cacert: /nonexistent/ca.pem\n"
        ),
    );
    let err = failure(&run(
        &dir,
        &["env", "--clouds-yaml", "clouds.yaml", "--cloud", "a"],
    ));
    assert!(
        err.starts_with("capoctl: cannot read /nonexistent/ca.pem: "),
        "{err}"
    );
}

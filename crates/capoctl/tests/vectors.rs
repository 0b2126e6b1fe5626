//! Runs `capoctl` on every test vector under `tests/vectors/` and compares its output byte for
//! byte with what upstream's `templates/env.rc` and `templates/create_cloud_conf.sh` produced for
//! the same input (see `tests/vectors/README.md`).
#![allow(clippy::unwrap_used)] // a failing test should panic

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const VARS: [&str; 4] = [
    "OPENSTACK_CLOUD",
    "OPENSTACK_CLOUD_YAML_B64",
    "OPENSTACK_CLOUD_PROVIDER_CONF_B64",
    "OPENSTACK_CLOUD_CACERT_B64",
];

fn vector_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 5,
        "expected the vectors under {}",
        root.display()
    );
    dirs
}

/// `capoctl <args> --clouds-yaml clouds.yaml --cloud <name>` in the vector's directory, with a
/// clean environment plus `$OS_PASSWORD` when the vector has one.
fn capoctl(dir: &Path, args: &[&str]) -> Output {
    let cloud = fs::read_to_string(dir.join("cloud")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capoctl"));
    cmd.current_dir(dir).env_clear().args(args).args([
        "--clouds-yaml",
        "clouds.yaml",
        "--cloud",
        &cloud,
    ]);
    if let Ok(pw) = fs::read_to_string(dir.join("os_password")) {
        cmd.env("OS_PASSWORD", pw);
    }
    cmd.output().unwrap()
}

fn stdout_of(dir: &Path, out: Output) -> String {
    assert!(
        out.status.success(),
        "{}: capoctl failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn expected(dir: &Path, file: &str) -> String {
    fs::read_to_string(dir.join("expected").join(file)).unwrap()
}

#[test]
fn env_matches_upstream_env_rc() {
    for dir in vector_dirs() {
        let json = stdout_of(&dir, capoctl(&dir, &["env", "--format", "json"]));
        let got: serde_json::Value = serde_json::from_str(&json).unwrap();
        for var in VARS {
            assert_eq!(
                got[var].as_str(),
                Some(expected(&dir, var).as_str()),
                "{}: {var}",
                dir.display()
            );
        }
    }
}

#[test]
fn cloud_conf_matches_upstream_create_cloud_conf() {
    for dir in vector_dirs() {
        let got = stdout_of(&dir, capoctl(&dir, &["cloud-conf"]));
        assert_eq!(got, expected(&dir, "cloud.conf"), "{}", dir.display());
        // The default of --format, spelled out.
        let got = stdout_of(
            &dir,
            capoctl(&dir, &["cloud-conf", "--format", "cloud-conf"]),
        );
        assert_eq!(got, expected(&dir, "cloud.conf"), "{}", dir.display());
    }
}

/// The shell format, evaluated by a POSIX shell, yields the same values (quoting is right).
#[test]
fn shell_format_round_trips_through_sh() {
    for dir in vector_dirs() {
        let script = stdout_of(&dir, capoctl(&dir, &["env"]));
        let print: Vec<String> = VARS
            .iter()
            .map(|v| format!("printf '%s\\n' \"${v}\""))
            .collect();
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{script}\n{}", print.join("\n")))
            .env_clear()
            .output()
            .unwrap();
        let want: String = VARS.iter().map(|v| expected(&dir, v) + "\n").collect();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            want,
            "{}",
            dir.display()
        );
    }
}

#[test]
fn dotenv_format_lists_the_variables_in_order() {
    let dir = vector_dirs()
        .into_iter()
        .find(|d| d.ends_with("cacert"))
        .unwrap();
    let got = stdout_of(&dir, capoctl(&dir, &["env", "--format", "dotenv"]));
    let want: String = VARS
        .iter()
        .map(|v| format!("{v}={}\n", expected(&dir, v)))
        .collect();
    assert_eq!(got, want);
}

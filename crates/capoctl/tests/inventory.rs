//! `capoctl inventory` against a real kube-apiserver: prints the inventory or the variables of
//! a cluster's `<cluster>-ansible` Secret, writes them with the SSH key (0600), and names the
//! Secret when it is missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

fn capoctl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_capoctl"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prints_and_writes_the_inventory_and_names_a_missing_secret() {
    capo_openstack::tls::ensure_crypto_provider();
    let env = capo_testkit::shared_env().await.unwrap();
    let ns = env.new_namespace("inv").await.unwrap();
    let api: Api<Secret> = Api::namespaced(env.client(), &ns);
    for (name, data) in [
        (
            "c1-ansible",
            serde_json::json!({"inventory.yaml": "all:\n  hosts: {}\n", "vars.yaml": "ntp_server: ntp.example\n"}),
        ),
        (
            "c1-ssh",
            serde_json::json!({"ssh-privatekey": "-----BEGIN OPENSSH PRIVATE KEY-----\ntest\n", "ssh-publickey": "ssh-ed25519 AAAA test"}),
        ),
    ] {
        let s: Secret = serde_json::from_value(
            serde_json::json!({"metadata": {"name": name}, "stringData": data}),
        )
        .unwrap();
        api.create(&Default::default(), &s).await.unwrap();
    }
    let kc = env.kubeconfig_path().to_str().unwrap().to_owned();
    let out = capoctl()
        .args(["inventory", "-n", &ns, "c1", "--kubeconfig", &kc])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "all:\n  hosts: {}\n");
    let out = capoctl()
        .args(["inventory", "-n", &ns, "c1", "--vars", "--kubeconfig", &kc])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ntp_server: ntp.example\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = capoctl()
        .args(["inventory", "-n", &ns, "c1", "--kubeconfig", &kc, "--write"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("inventory.yaml").is_file() && dir.path().join("vars.yaml").is_file());
    let key = dir.path().join("id_ed25519");
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("PRIVATE KEY"),
        "the key itself is never printed"
    );
    let out = capoctl()
        .args(["inventory", "-n", &ns, "nope", "--kubeconfig", &kc])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("Secret {ns}/nope-ansible not found")),
        "{err}"
    );
}

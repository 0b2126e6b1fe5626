//! The rendered documents as real Ansible (ansible-core from the project virtualenv) reads them.
//!
//! The virtualenv is `$CAPO_VENV` (exported by `hack/test.sh`, path printed by
//! `hack/python-env.sh`), else `.venv` at the repository root. Without it these tests fail
//! under CI (`CI=true`) and are skipped with a printed reason elsewhere.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failing test should panic

use capo_ansible::{BastionFacts, ClusterFacts, HostFacts, Role, render_inventory, render_vars};
use capo_api::extensions::reserved_for_flavor;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const CONTROL_PLANES: [&str; 3] = ["demo-cp-0", "demo-cp-1", "demo-cp-2"];
const WORKERS: [&str; 2] = ["demo-md-0", "demo-md-1"];

fn facts() -> ClusterFacts {
    facts_with_bastion("203.0.113.5")
}

fn facts_with_bastion(address: &str) -> ClusterFacts {
    let mut facts = ClusterFacts::new();
    facts.kube_network_plugin = Some("cilium".into());
    facts.control_plane_vip = Some("10.6.0.5".into());
    facts.ingress_requested = true;
    facts.ingress_vip = Some("10.6.0.6".into());
    facts.bastion = Some(BastionFacts {
        address: address.into(),
        user: "ubuntu".into(),
    });
    let hosts = CONTROL_PLANES
        .iter()
        .map(|n| (n, Role::ControlPlane))
        .chain(WORKERS.iter().map(|n| (n, Role::Worker)));
    for (i, (name, role)) in hosts.enumerate() {
        facts.hosts.push(HostFacts {
            name: (*name).into(),
            role,
            private_ip: Some(format!("10.6.0.{}", 10 + i)),
            public_ip: None,
            keepalived_interface: (role == Role::ControlPlane).then(|| "ens3".into()),
            reserved: Some(reserved_for_flavor(4, 8192)),
        });
    }
    facts
}

/// `bin/<tool>` of the project virtualenv, or `None` (after printing why) when it is absent
/// outside CI.
fn venv_tool(tool: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("CAPO_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv"));
    let path = venv.join("bin").join(tool);
    if path.is_file() {
        return Some(path);
    }
    let why = format!(
        "{} not found: set CAPO_VENV or run hack/python-env.sh (creates .venv with ansible-core)",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}");
    }
    eprintln!("SKIPPED: {why}");
    None
}

/// Runs an Ansible tool in `dir` with its state kept there, failing on any inventory that
/// does not parse (by default Ansible only warns and carries on with an empty inventory).
fn run(tool: &Path, dir: &Path, args: &[&str]) -> String {
    let out = ansible_command(tool, dir, args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} {args:?} failed:\n{stdout}\n{stderr}",
        tool.display()
    );
    // Kubespray's documented layout names the bastion host like its group, which Ansible
    // mentions; any other warning is a defect of the rendering.
    let unexpected: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("[WARNING]"))
        .filter(|l| !l.contains("Found both group and host with same name: bastion"))
        .collect();
    assert!(unexpected.is_empty(), "warnings: {stderr}");
    stdout
}

fn ansible_command(tool: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(tool);
    command
        .args(args)
        .current_dir(dir)
        .env("ANSIBLE_HOME", dir.join(".ansible"))
        .env("ANSIBLE_LOCAL_TEMP", dir.join(".ansible/tmp"))
        .env("ANSIBLE_SSH_CONTROL_PATH_DIR", dir.join(".ansible/cp"))
        .env("ANSIBLE_INVENTORY_ENABLED", "yaml")
        .env("ANSIBLE_INVENTORY_UNPARSED_FAILED", "true")
        .env("ANSIBLE_NOCOLOR", "1")
        .env_remove("ANSIBLE_CONFIG");
    command
}

fn write_documents(dir: &Path) {
    write_documents_for(dir, &facts());
}

fn write_documents_for(dir: &Path, facts: &ClusterFacts) {
    std::fs::write(dir.join("inventory.yaml"), render_inventory(facts).unwrap()).unwrap();
    std::fs::write(dir.join("vars.yaml"), render_vars(facts).unwrap()).unwrap();
}

fn names(value: &Value) -> Vec<String> {
    let mut names: Vec<String> = value
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    names.sort();
    names
}

#[test]
fn ansible_inventory_list_puts_hosts_in_kubespray_groups() {
    let Some(tool) = venv_tool("ansible-inventory") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write_documents(dir.path());
    let list: Value =
        serde_json::from_str(&run(&tool, dir.path(), &["-i", "inventory.yaml", "--list"])).unwrap();

    assert_eq!(names(&list["kube_control_plane"]["hosts"]), CONTROL_PLANES);
    assert_eq!(names(&list["etcd"]["hosts"]), CONTROL_PLANES);
    assert_eq!(names(&list["kube_node"]["hosts"]), WORKERS);
    assert_eq!(names(&list["bastion"]["hosts"]), ["bastion"]);
    assert_eq!(
        names(&list["k8s_cluster"]["children"]),
        ["kube_control_plane", "kube_node"]
    );
    assert_eq!(
        names(&list["all"]["children"]),
        ["bastion", "etcd", "k8s_cluster", "ungrouped"]
    );

    let vars = &list["_meta"]["hostvars"];
    for (i, name) in CONTROL_PLANES.iter().chain(WORKERS.iter()).enumerate() {
        let ip = format!("10.6.0.{}", 10 + i);
        let host = &vars[*name];
        assert_eq!(host["ansible_host"], ip.as_str(), "{name}");
        assert_eq!(host["ansible_user"], "ubuntu", "{name}");
        assert_eq!(host["ip"], ip.as_str(), "{name}");
        assert_eq!(host["access_ip"], ip.as_str(), "{name}");
        let args = host["ansible_ssh_common_args"].as_str().unwrap_or_default();
        assert!(args.contains("ubuntu@203.0.113.5"), "{name}: {args}");
        if CONTROL_PLANES.contains(name) {
            assert_eq!(host["etcd_member_name"], *name);
            assert_eq!(host["keepalived_interface"], "ens3");
        } else {
            assert!(host.get("etcd_member_name").is_none(), "{name}");
            assert!(host.get("keepalived_interface").is_none(), "{name}");
        }
    }
    assert_eq!(vars["bastion"]["ansible_host"], "203.0.113.5");
    assert_eq!(vars["bastion"]["ansible_user"], "ubuntu");
    assert!(vars["bastion"].get("ansible_ssh_common_args").is_none());
}

#[test]
fn ansible_inventory_graph_nests_the_groups() {
    let Some(tool) = venv_tool("ansible-inventory") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write_documents(dir.path());
    let graph = run(&tool, dir.path(), &["-i", "inventory.yaml", "--graph"]);
    let expected = "\
@all:
  |--@ungrouped:
  |--@k8s_cluster:
  |  |--@kube_control_plane:
  |  |  |--demo-cp-0
  |  |  |--demo-cp-1
  |  |  |--demo-cp-2
  |  |--@kube_node:
  |  |  |--demo-md-0
  |  |  |--demo-md-1
  |--@etcd:
  |  |--demo-cp-0
  |  |--demo-cp-1
  |  |--demo-cp-2
  |--@bastion:
  |  |--bastion
";
    assert_eq!(graph, expected);
}

/// A playbook loads `vars.yaml` as variables and Ansible templates the jump command with the
/// key file the playbook chose; `debug` needs no connection, so nothing is contacted.
#[test]
fn ansible_consumes_vars_and_templates_the_jump_command() {
    let Some(tool) = venv_tool("ansible") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write_documents(dir.path());
    let out = run(
        &tool,
        dir.path(),
        &[
            "demo-cp-1",
            "-i",
            "inventory.yaml",
            "-e",
            "@vars.yaml",
            "-e",
            "ansible_ssh_private_key_file=/keys/id_ed25519",
            "-m",
            "debug",
            "-a",
            "msg={{ ansible_ssh_common_args }}|{{ node_resources[inventory_hostname].kube_memory_reserved }}|{{ harbor_addr }}|{{ kube_network_plugin }}",
        ],
    );
    let expected = "-o ProxyCommand=\\\"ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
        -W %h:%p -p 22 ubuntu@203.0.113.5 -i /keys/id_ed25519\\\"|1843Mi|10.6.0.6|cilium";
    assert!(out.contains(expected), "{out}");
}

/// A real connection attempt: Ansible hands the templated jump command to ssh, and ssh goes
/// through it rather than to the private address. The bastion is 127.0.0.1, so the attempt ends
/// at once on this machine (nothing is contacted elsewhere) and the host is unreachable.
#[test]
fn ssh_connects_through_the_jump_command() {
    let Some(tool) = venv_tool("ansible") else {
        return;
    };
    // The OpenSSH client is a system package hack/test.sh does not install.
    if !on_path("ssh") {
        eprintln!("SKIPPED ssh_connects_through_the_jump_command: ssh not found on PATH");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_documents_for(dir.path(), &facts_with_bastion("127.0.0.1"));
    let out = ansible_command(
        &tool,
        dir.path(),
        &[
            "demo-cp-0",
            "-i",
            "inventory.yaml",
            "-m",
            "ping",
            "-vvv",
            "-e",
            "ansible_ssh_private_key_file=/nonexistent/id_ed25519",
        ],
    )
    .env("ANSIBLE_TIMEOUT", "10")
    .output()
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(4), "unreachable expected:\n{text}");
    let proxy = "'ProxyCommand=ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
        -W %h:%p -p 22 ubuntu@127.0.0.1 -i /nonexistent/id_ed25519'";
    assert!(text.contains(proxy), "{text}");
    // ssh names the peer "UNKNOWN port 65535" only for a connection made through a
    // ProxyCommand; a direct attempt would name 10.6.0.10.
    assert!(text.contains("UNKNOWN port 65535"), "{text}");
    assert!(!text.contains("connect to host 10.6.0.10"), "{text}");
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

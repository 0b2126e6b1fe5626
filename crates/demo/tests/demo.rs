//! `capo-demo` run to completion, as `hack/demo.sh` runs it: the real Cluster API controllers
//! and capo bring the cluster up on capo-sim (Available, every Machine Running with a node and a
//! providerID), Cluster API deletes it, the cloud is empty at the end, and the exit status is 0;
//! and `--keep` stays up until Ctrl-C.
//!
//! Like the end-to-end tier, these run inside a network namespace with only loopback (Cluster
//! API's managers listen on every interface): `hack/e2e.sh` runs them there. Anywhere else they
//! print SKIPPED with the reason and pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

/// Why the demo cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    if !capo_testkit::capi::loopback_only_network() {
        return Some(
            "not inside a network namespace with only loopback (run hack/e2e.sh)".to_owned(),
        );
    }
    if std::env::var_os(capo_testkit::capi::BUILD_DIR_VAR).is_none() {
        return Some(format!(
            "{} is unset (hack/e2e.sh builds Cluster API and sets it)",
            capo_testkit::capi::BUILD_DIR_VAR
        ));
    }
    None
}

fn demo() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capo-demo"));
    // The management cluster's own check of the namespace (hack/e2e.sh sets it too).
    cmd.env(capo_e2e_netns(), "1");
    cmd
}

/// `capo_e2e::management::NETNS_VAR`, without depending on the crate for one name.
fn capo_e2e_netns() -> &'static str {
    "CAPO_E2E_NETNS"
}

#[test]
fn demo_runs_to_completion() {
    if let Some(why) = skip_reason() {
        println!("SKIPPED demo_runs_to_completion: {why}");
        return;
    }
    let out = demo().args(["--timeout=4m"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    println!("{stdout}");
    for want in [
        "management cluster up:",
        "clusterctl generate cluster demo --from templates/cluster-template.yaml",
        "applied unchanged (server-side apply): ",
        "KubeadmControlPlane demo-control-plane",
        "MachineDeployment demo-md-0",
        "OpenStackCluster demo: network ",
        "OpenStackCluster demo: router ",
        "OpenStackCluster demo: security groups ",
        "OpenStackCluster demo: API load balancer ",
        "OpenStackCluster demo: control-plane endpoint https://127.100.",
        "Cluster demo: Available=True",
        "figures: apply to all 3 Machines Running: ",
        "figures: apply to Cluster Available: ",
        "figures: up (all Machines Running, Cluster Available): ",
        "Kubernetes API ",
        "=== Cluster demo is Available ===",
        "deleting Cluster demo",
        "figures: delete to every object gone: ",
        "cloud check: nothing of the cluster is left",
        "stopping capo-controller-manager",
    ] {
        assert!(stdout.contains(want), "{want:?} not in:\n{stdout}");
    }
    // Every Machine reached Running with a node, control plane and workers alike, and the
    // summary lists each with its providerID.
    let summary = stdout
        .split("=== Cluster demo is Available ===")
        .nth(1)
        .unwrap();
    let rows: Vec<&str> = summary
        .lines()
        .filter(|l| l.contains("openstack:///"))
        .collect();
    assert_eq!(rows.len(), 3, "{summary}");
    assert!(rows.iter().all(|r| r.contains(" Running ")), "{summary}");
    assert_eq!(
        rows.iter().filter(|r| r.contains("control plane")).count(),
        1,
        "{summary}"
    );
    assert!(
        stdout.contains("(control plane): Running, node demo-control-plane-")
            && stdout.contains("(worker): Running, node demo-md-0-"),
        "{stdout}"
    );
    // What the cloud holds after deletion: nothing of the cluster.
    let after = stdout
        .lines()
        .find(|l| l.contains("cloud after deletion"))
        .unwrap();
    for gone in [
        "servers",
        "ports",
        "loadbalancers",
        "floatingips",
        "routers",
    ] {
        assert!(!after.contains(&format!(" {gone}")), "{after}");
    }
    // Nothing secret on the terminal: the simulator's password is in the identity Secret only.
    assert!(!stdout.contains("password"), "{stdout}");
    assert!(!stderr.contains("password"), "{stderr}");
}

/// `--keep`: the demo stays up once the cluster is Available, tells how to reach it, and stops
/// cleanly on Ctrl-C (SIGINT).
#[test]
fn demo_keep_runs_until_interrupted() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    if let Some(why) = skip_reason() {
        println!("SKIPPED demo_keep_runs_until_interrupted: {why}");
        return;
    }
    let mut child = demo()
        .args([
            "--keep",
            "--timeout=4m",
            "--cluster-name=kept",
            "--control-plane-machine-count=1",
            "--worker-machine-count=1",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Lines arrive through a channel so that a hanging demo fails the test instead of hanging it.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut commands = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if let Some(cmd) = line.strip_prefix("  nsenter ") {
                    commands.push(cmd.to_owned());
                }
                if line.starts_with("logs: ") {
                    break;
                }
            }
            Err(e) => {
                let _ = child.kill();
                panic!("no keep message ({e}):\n{seen}");
            }
        }
    }
    assert!(seen.contains("=== Cluster kept is Available ==="), "{seen}");
    assert!(
        seen.contains("Everything keeps running until Ctrl-C"),
        "{seen}"
    );
    // The printed commands work as printed: kubectl and clusterctl on the management cluster,
    // then the workload cluster's kubeconfig and its Nodes. This test runs in the demo's network
    // namespace already, so the nsenter part is checked, then left out.
    assert_eq!(commands.len(), 4, "{seen}");
    let dir = std::env::temp_dir().join(format!("capo-demo-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut outputs = Vec::new();
    for cmd in &commands {
        let (enter, cmd) = cmd.split_once(" -- ").unwrap();
        assert!(
            enter.contains(&format!("--net=/proc/{}/ns/net", child.id())),
            "{enter}"
        );
        let out = Command::new("bash")
            .args(["-c", cmd])
            .current_dir(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{cmd}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push(stdout.into_owned());
    }
    let _ = std::fs::remove_dir_all(&dir);
    for (i, want) in [
        "machine.cluster.x-k8s.io/kept-control-plane-",
        "Cluster capo-demo/kept",
        "",
        "kept-md-0-",
    ]
    .into_iter()
    .enumerate()
    {
        assert!(
            outputs[i].contains(want),
            "{want:?} not in:\n{}",
            outputs[i]
        );
    }

    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the demo did not stop within 60 s of SIGINT:\n{seen}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "exit after Ctrl-C: {status}\n{seen}");
}

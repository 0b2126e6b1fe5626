//! `capoctl demo` run to completion, as `hack/demo.sh` runs it: capo-sim, a real
//! kube-apiserver + etcd and the manager; the sample cluster becomes Ready, its endpoint and
//! machines are printed, deletion leaves the cloud empty, and the exit status is 0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn demo_runs_to_completion() {
    let out = Command::new(env!("CARGO_BIN_EXE_capoctl"))
        .args(["demo", "--timeout=4m"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for want in [
        "OpenStackCluster demo: network ",
        "OpenStackCluster demo: router ",
        "OpenStackCluster demo: security groups ",
        "OpenStackCluster demo: API load balancer ",
        "OpenStackCluster demo: control-plane endpoint https://",
        "OpenStackMachine demo-control-plane-2: Ready (openstack:///",
        "OpenStackMachine demo-md-0-1: Ready (openstack:///",
        "cluster demo: OpenStackCluster and all 5 machines Ready",
        "=== cluster demo is Ready ===",
        "requests to Ready: ",
        "Kubernetes API by the manager",
        "cloud check: no resource left in the project",
        "stopped capo-controller-manager",
    ] {
        assert!(stdout.contains(want), "{want:?} not in:\n{stdout}");
    }
    // The inventory is printed when the build publishes it, and said to be missing otherwise.
    assert!(
        stdout.contains("=== Ansible inventory (Secret capo-demo/demo-ansible")
            || stdout.contains("Ansible inventory: not available yet"),
        "{stdout}"
    );
    // Nothing secret on the terminal: the simulator's password is in the identity Secret only.
    assert!(!stdout.contains("password"), "{stdout}");
}

/// `--keep`: the demo stays up after the cluster is Ready and stops cleanly on Ctrl-C (SIGINT).
#[test]
fn demo_keep_runs_until_interrupted() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let mut child = Command::new(env!("CARGO_BIN_EXE_capoctl"))
        .args(["demo", "--keep", "--timeout=4m", "--cluster-name=kept"])
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
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if line.starts_with("Everything keeps running until Ctrl-C") {
                    break;
                }
            }
            Err(e) => {
                let _ = child.kill();
                panic!("no keep message ({e}):\n{seen}");
            }
        }
    }
    assert!(seen.contains("=== cluster kept is Ready ==="), "{seen}");
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

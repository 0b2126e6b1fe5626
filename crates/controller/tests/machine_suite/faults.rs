//! Machines under stress: controllers restarted after every OpenStack write of a create and a
//! delete, transient 5xx/409/429 answers, and pause.
use std::time::{Duration, Instant};

use crate::common::Harness;
use crate::machines::*;
use capo_controller::conditions;
use capo_sim::FaultSpec;
use kube::api::{Patch, PatchParams};

fn named(h: &Harness, prefix: &str) -> [usize; 3] {
    ["servers", "ports", "volumes"].map(|col| {
        sim_items(h, col)
            .iter()
            .filter(|i| i["name"].as_str().unwrap_or_default().starts_with(prefix))
            .count()
    })
}

/// Restart the controllers after every new OpenStack write until `done`; returns the
/// number of restarts.
async fn restart_after_every_write(
    h: &Harness,
    secs: u64,
    done: impl AsyncFn(&Harness) -> bool,
) -> usize {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut seen = h.writes().len();
    let mut running = start(h);
    let mut restarts = 0;
    while !done(h).await {
        let now = h.writes().len();
        if now > seen {
            seen = now;
            drop(running);
            running = start(h);
            restarts += 1;
        }
        assert!(
            Instant::now() < deadline,
            "did not converge: {:?}",
            h.inventory().await
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    restarts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_after_every_write_converges_and_deletes_everything() {
    let h = Harness::new("mrestart").await;
    {
        let _c = start(&h);
        h.create_cluster("c1", CLUSTER_LB).await;
        h.wait_ready("c1").await;
    }
    // Slow answers, so that the controllers are killed after each write, before the next.
    let latency = ["compute", "network", "load-balancer", "image", "volume"]
        .map(|s| (s.to_owned(), 40))
        .into_iter()
        .collect();
    h.sim().control().set_latency(latency);
    h.sim().control().clear_requests();
    create_machine(&h, "c1", "cp-r", true, BOOT_FROM_VOLUME).await;
    let restarts = restart_after_every_write(&h, 90, async |h: &Harness| {
        machines(h)
            .get_opt("cp-r")
            .await
            .unwrap()
            .is_some_and(|m| m.status.and_then(|s| s.ready) == Some(true))
    })
    .await;
    println!("create: controllers restarted {restarts} times");
    assert!(
        restarts >= 4,
        "too few restarts to mean anything: {restarts}"
    );
    assert_eq!(named(&h, "cp-r"), [1, 1, 1]);
    assert_eq!(sim_items(&h, "members").len(), 1);
    delete_machine(&h, "cp-r").await;
    let restarts = restart_after_every_write(&h, 90, async |h: &Harness| {
        machines(h).get_opt("cp-r").await.unwrap().is_none()
            && servers(h).get_opt("cp-r").await.unwrap().is_none()
    })
    .await;
    println!("delete: controllers restarted {restarts} times");
    assert_eq!(named(&h, "cp-r"), [0, 0, 0]);
    assert_eq!(sim_items(&h, "members").len(), 0);
}

fn transient(method: &str, path: &str, status: u16, count: u32) -> FaultSpec {
    serde_json::from_value(serde_json::json!({
        "method": method,
        "path_regex": path,
        "status": status,
        "count": count,
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_errors_on_every_step_recover() {
    let (h, _c) = ready_cluster("mtransient", CLUSTER_LB).await;
    h.sim()
        .control()
        .add_faults(vec![
            transient("POST", "/ports$", 503, 2),
            transient("PUT", "/ports/[^/]+/tags$", 409, 1),
            transient("POST", "/volumes$", 429, 2),
            transient("POST", "/servers$", 503, 2),
            transient("GET", "/servers/[^/]+$", 500, 2),
            transient("POST", "/members$", 409, 2),
        ])
        .unwrap();
    create_machine(&h, "c1", "cp-t", true, BOOT_FROM_VOLUME).await;
    let m = wait_machine_ready(&h, "cp-t").await;
    assert!(h.sim().control().faults().is_empty(), "every fault fired");
    assert!(m.status.unwrap().failure_reason.is_none());
    assert_eq!(named(&h, "cp-t"), [1, 1, 1]);
    assert_eq!(sim_items(&h, "members").len(), 1);
    h.sim()
        .control()
        .add_faults(vec![
            transient("DELETE", "/servers/[^/]+$", 503, 2),
            transient("DELETE", "/ports/[^/]+$", 409, 1),
            transient("DELETE", "/volumes/[^/]+$", 500, 1),
            transient("DELETE", "/members/[^/]+$", 409, 1),
        ])
        .unwrap();
    delete_machine(&h, "cp-t").await;
    wait_machine_gone(&h, "cp-t", 60).await;
    assert_eq!(named(&h, "cp-t"), [0, 0, 0]);
    assert_eq!(sim_items(&h, "members").len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_cluster_gets_no_server_until_unpaused() {
    let (h, _c) = ready_cluster("mpause", CLUSTER_FIP).await;
    let capi: kube::Api<capo_controller::capi::Cluster> =
        kube::Api::namespaced(h.client.clone(), &h.ns);
    let pause = |v: bool| serde_json::json!({"spec": {"paused": v}});
    capi.patch("c1", &PatchParams::default(), &Patch::Merge(pause(true)))
        .await
        .unwrap();
    create_machine(&h, "c1", "w-p", false, MACHINE).await;
    let m = wait_machine(&h, "w-p", 30, "Paused condition", |m| {
        m.status
            .as_ref()
            .is_some_and(|s| conditions::is_true(&s.conditions, "Paused"))
    })
    .await;
    assert!(m.metadata.finalizers.is_none(), "no finalizer while paused");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(servers(&h).get_opt("w-p").await.unwrap().is_none());
    assert_eq!(named(&h, "w-p"), [0, 0, 0]);
    capi.patch("c1", &PatchParams::default(), &Patch::Merge(pause(false)))
        .await
        .unwrap();
    wait_machine_ready(&h, "w-p").await;
    delete_machine(&h, "w-p").await;
    wait_machine_gone(&h, "w-p", 60).await;
}

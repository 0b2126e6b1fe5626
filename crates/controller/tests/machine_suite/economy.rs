//! Request counts of machines against capo-sim (printed; run with `--nocapture`): worker and
//! control-plane create with warm caches, steady reconciles, deletes, with only the machine
//! and server controllers running (the cluster's own reconciles are counted elsewhere). Asserts the budgets of
//! issue 7: ≤ 12 requests per warm worker create, ≤ 1 per machine per steady reconcile.
use std::time::Duration;

use crate::common::Harness;
use crate::machines::*;
use kube::api::{Patch, PatchParams};

/// Requests of the test project's OpenStack APIs since the last call (identity excluded).
fn take(h: &Harness) -> Vec<String> {
    let r = h.requests();
    h.sim().control().clear_requests();
    r
}

fn writes(reqs: &[String]) -> Vec<&str> {
    reqs.iter()
        .map(String::as_str)
        .filter(|r| !r.starts_with("GET "))
        .collect()
}

fn report(what: &str, reqs: &[String]) {
    let writes = reqs.iter().filter(|r| !r.starts_with("GET ")).count();
    println!("{what}: {} requests, {writes} writes", reqs.len());
    for (k, n) in histogram(reqs) {
        println!("  {n:>3} {k}");
    }
}

/// Let in-flight reconciles finish.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(800)).await;
}

/// Touch an object's annotations: a watch event, hence one reconcile, with nothing changed.
async fn touch(h: &Harness, name: &str, n: usize) {
    let patch = serde_json::json!({"metadata": {"annotations": {"test/touch": n.to_string()}}});
    let pp = PatchParams::default();
    machines(h)
        .patch(name, &pp, &Patch::Merge(&patch))
        .await
        .unwrap();
    servers(h)
        .patch(name, &pp, &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_counts_of_machine_create_steady_delete() {
    let h = Harness::new("econ").await;
    let all = start(&h);
    h.create_cluster("c1", CLUSTER_LB).await;
    h.wait_ready("c1").await;
    // Only the machine and server controllers from here: their requests alone are counted.
    drop(all);
    let _c = start_machine_controllers(&h);
    // Warm-up: the session, the flavor and image lookups.
    create_machine(&h, "c1", "w-0", false, MACHINE).await;
    wait_machine_ready(&h, "w-0").await;
    settle().await;
    take(&h);

    create_machine(&h, "c1", "w-1", false, MACHINE).await;
    wait_machine_ready(&h, "w-1").await;
    settle().await;
    let worker = take(&h);
    report("worker create (warm)", &worker);
    assert_eq!(
        writes(&worker),
        [
            "POST /network/v2.0/ports",
            "PUT /network/v2.0/ports/{id}/tags",
            "POST /compute/v2.1/servers",
        ],
        "worker create writes"
    );

    create_machine(&h, "c1", "cp-0", true, MACHINE).await;
    wait_machine_ready(&h, "cp-0").await;
    settle().await;
    report("control-plane create with LB (warm)", &take(&h));

    for (name, rounds) in [("w-1", 3), ("cp-0", 3)] {
        for i in 0..rounds {
            touch(&h, name, i).await;
        }
        settle().await;
        let steady = take(&h);
        report(
            &format!("{rounds} steady reconciles of {name} (machine + server)"),
            &steady,
        );
        assert!(
            steady.len() <= rounds,
            "steady reconcile of {name} must cost ≤ 1 request: {steady:?}"
        );
    }

    delete_machine(&h, "w-1").await;
    wait_machine_gone(&h, "w-1", 60).await;
    settle().await;
    let delete = take(&h);
    report("worker delete", &delete);
    assert_eq!(
        writes(&delete),
        [
            "DELETE /compute/v2.1/servers/{id}",
            "DELETE /network/v2.0/ports/{id}",
        ],
        "worker delete writes"
    );
    delete_machine(&h, "cp-0").await;
    wait_machine_gone(&h, "cp-0", 60).await;
    settle().await;
    report("control-plane delete with LB", &take(&h));
    assert!(
        worker.len() <= 12,
        "warm worker create must cost ≤ 12 requests: {worker:?}"
    );
}

//! Deletion on a Nova that soft-deletes (`reclaim_instance_interval > 0`): a deleted server
//! stays `SOFT_DELETED` until Nova reclaims it, and capo, as upstream v0.14, counts it as
//! gone. A machine booting from a volume with a data volume, and the cluster's bastion, are
//! deleted; deletion finishes while Nova still holds the servers, their ports are gone, their
//! volumes are left for Nova to delete with them, and after the reclaim nothing is left.
//!
//! On capo-sim the simulator soft-deletes (an hour's interval) and the test reclaims by its
//! control API. On the real services (`CAPO_CLOUD=real`) Nova soft-deletes when it was started
//! with `CAPO_OPENSTACK_RECLAIM_INTERVAL=<seconds>` and the test runs with the same variable;
//! without it the same test checks the ordinary (hard) delete. The test reads each server while
//! its owner is deleted and asserts Nova showed it `SOFT_DELETED`; the real Nova's interval is
//! seconds, so when it reclaims a server before the deletion is seen finished, what the server
//! held while soft-deleted (its volumes, marked for Nova) is not looked at (the test says so),
//! and only capo-sim proves that deletion does not wait for the reclaim.
use crate::common::{BASTION, Harness, open_spec, poll};
use crate::machines::*;
use capo_openstack::compute::{self, Server};

/// A machine booting from a 10 GiB volume, with a 1 GiB data volume.
const MACHINE_WITH_VOLUMES: &str = "flavor: m1.small
image:
  filter:
    name: ubuntu-2404-kube-v1.34
rootVolume:
  sizeGiB: 10
additionalBlockDevices:
- name: etcd
  sizeGiB: 1
  storage:
    type: Volume
";

/// Nova's reclaim interval in seconds on the cloud under test (None: no soft delete).
fn reclaim_interval(h: &Harness) -> Option<u64> {
    if !h.cloud.is_real() {
        // An hour: nothing is reclaimed unless the test asks.
        h.sim().control().set_server_reclaim_ms(3_600_000);
        return Some(3600);
    }
    std::env::var("CAPO_OPENSTACK_RECLAIM_INTERVAL")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
}

/// Server `id` as Nova shows it to the project's member (None: 404).
async fn server(h: &Harness, id: &str) -> Option<Server> {
    let s = session(h).await;
    match compute::get_server(&s, id).await {
        Ok(v) => Some(v),
        Err(e) if e.is_not_found() => None,
        Err(e) => panic!("get server {id}: {e}"),
    }
}

/// What [`watch_server`] records for a server Nova answers 404 for.
const GONE: &str = "gone";
const SOFT_DELETED: &str = "SOFT_DELETED";

/// Run `work` while reading server `id` every 200 ms; returns the statuses Nova showed in order
/// (repeats merged, [`GONE`] for a 404), the last one read after `work` finished.
async fn watch_server(h: &Harness, id: &str, work: impl Future<Output = ()>) -> Vec<String> {
    let done = std::cell::Cell::new(false);
    let watcher = async {
        let mut seen: Vec<String> = Vec::new();
        loop {
            let finished = done.get();
            let status = server(h, id)
                .await
                .map_or_else(|| GONE.to_string(), |s| s.status);
            if seen.last() != Some(&status) {
                seen.push(status);
            }
            if finished {
                return seen;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    };
    let work = async {
        work.await;
        done.set(true);
    };
    tokio::join!(work, watcher).1
}

/// Wait until Nova no longer shows any of `ids` (it reclaimed them).
async fn reclaimed(h: &Harness, ids: &[String], interval: u64) {
    if !h.cloud.is_real() {
        assert_eq!(h.sim().control().reclaim_servers(), ids.len());
    }
    // Nova's periodic task runs about once a minute and reclaims what is older than the
    // interval; `poll` multiplies by 4 on the real services.
    poll(
        (interval + 90) / 4 + 1,
        || async {
            for id in ids {
                if server(h, id).await.is_some() {
                    return None;
                }
            }
            Some(())
        },
        || async { format!("servers {ids:?} not reclaimed") },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machines_and_bastion_deleted_on_a_soft_deleting_nova_leave_nothing() {
    let h = Harness::new("msd").await;
    let interval = reclaim_interval(&h);
    let _c = start(&h);
    h.create_cluster("c1", &open_spec("10.9.0.0/24", BASTION))
        .await;
    let cluster = h
        .wait_cluster("c1", 90, "cluster and bastion ready", |o| {
            o.status
                .as_ref()
                .is_some_and(|s| s.ready && s.bastion.as_ref().is_some_and(|b| b.id.is_some()))
        })
        .await;
    let bastion = cluster.status.unwrap().bastion.unwrap().id.unwrap();
    create_machine(&h, "c1", "c1-md-0", false, MACHINE_WITH_VOLUMES).await;
    let m = wait_machine_ready(&h, "c1-md-0").await;
    let worker = m.status.unwrap().instance_id.unwrap();
    let volumes = |items: Vec<serde_json::Value>| {
        items
            .into_iter()
            .filter(|v| {
                v["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("c1-md-0-"))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(volumes(items(&h, "volumes").await).len(), 2);

    let started = std::time::Instant::now();
    delete_machine(&h, "c1-md-0").await;
    let seen = watch_server(&h, &worker, wait_machine_gone(&h, "c1-md-0", 60)).await;
    println!(
        "machine deleted in {:?}; Nova showed {seen:?}",
        started.elapsed()
    );
    let ports_gone = || async {
        let ports = items(&h, "ports").await;
        assert!(
            !ports.iter().any(|p| p["name"]
                .as_str()
                .unwrap_or_default()
                .starts_with("c1-md-0")),
            "{ports:?}"
        );
    };
    match interval {
        Some(_) => {
            assert!(seen.iter().any(|s| s == SOFT_DELETED), "{seen:?}");
            if seen.last().map(String::as_str) == Some(SOFT_DELETED) {
                // Its ports are gone; its volumes stay attached until the reclaim, marked for
                // Nova to delete with the server.
                ports_gone().await;
                let vols = volumes(items(&h, "volumes").await);
                assert_eq!(vols.len(), 2, "{vols:?}");
                let s = session(&h).await;
                let marked = compute::list_volume_attachments_dot(&s, &worker)
                    .await
                    .unwrap();
                assert_eq!(marked.len(), 2, "{marked:?}");
                assert!(
                    marked.iter().all(|a| a.delete_on_termination == Some(true)),
                    "{marked:?}"
                );
            } else {
                // The real Nova reclaimed the server (its interval is seconds) before the
                // deletion was seen finished: what it held while soft-deleted cannot be looked
                // at any more; the end of the test still checks that nothing is left.
                assert!(h.cloud.is_real(), "{seen:?}");
                println!("Nova reclaimed the server before the machine was seen gone");
                ports_gone().await;
            }
        }
        None => {
            assert!(!seen.iter().any(|s| s == SOFT_DELETED), "{seen:?}");
            assert_eq!(seen.last().map(String::as_str), Some(GONE), "{seen:?}");
        }
    }

    // The cluster (its bastion, network, router, groups) goes too while Nova holds the servers.
    let started = std::time::Instant::now();
    h.delete_cluster("c1").await;
    let seen = watch_server(&h, &bastion, h.wait_gone("c1", 120)).await;
    println!(
        "cluster deleted in {:?}; Nova showed the bastion {seen:?}",
        started.elapsed()
    );
    if interval.is_some() {
        assert!(seen.iter().any(|s| s == SOFT_DELETED), "{seen:?}");
        assert!(
            seen.last().map(String::as_str) == Some(SOFT_DELETED) || h.cloud.is_real(),
            "{seen:?}"
        );
    }
    if let Some(secs) = interval {
        let started = std::time::Instant::now();
        reclaimed(&h, &[worker.clone(), bastion.clone()], secs).await;
        println!(
            "servers reclaimed {:?} after the cluster was gone",
            started.elapsed()
        );
    }
    // Nova deletes the volumes with the servers; Cinder takes a moment on the real services.
    poll(
        30,
        || async { h.inventory().await.is_empty().then_some(()) },
        || async { format!("left behind: {:?}", h.inventory().await) },
    )
    .await;
}

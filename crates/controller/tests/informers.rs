//! The manager's watched stores answer reads from memory once their first list is in, for
//! every kind, in one namespace and across all of them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use capo_controller::{Context, Options};
use capo_openstack::{ApiMetrics, ClientConfig, SessionCache};

async fn reads_are_served(options: Options) {
    let env = capo_testkit::shared_env().await.unwrap();
    let sessions = Arc::new(SessionCache::new(
        ClientConfig::default(),
        ApiMetrics::unregistered(),
    ));
    let ctx = Context::new(env.client(), sessions, options);
    let i = &ctx.shared.informers;
    for round in 0..2 {
        let t0 = Instant::now();
        assert!(i.clusters.get("default", "none").await.unwrap().is_none());
        assert!(i.machines.get("default", "none").await.unwrap().is_none());
        assert!(
            i.openstack_clusters
                .get("default", "none")
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            i.openstack_machines
                .get("default", "none")
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            i.openstack_servers
                .get("default", "none")
                .await
                .unwrap()
                .is_none()
        );
        let took = t0.elapsed();
        println!("round {round}: five reads in {took:?}");
        assert!(took < Duration::from_secs(5), "round {round}: {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_across_all_namespaces() {
    reads_are_served(Options::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_in_one_namespace() {
    reads_are_served(Options {
        namespace: Some("default".into()),
        ..Default::default()
    })
    .await;
}

/// Many reconciles reading a store before its first list is in are all answered once it is
/// (the readiness signal alone wakes only one waiter).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_reads_all_return() {
    let env = capo_testkit::shared_env().await.unwrap();
    let sessions = Arc::new(SessionCache::new(
        ClientConfig::default(),
        ApiMetrics::unregistered(),
    ));
    let ctx = Context::new(env.client(), sessions, Options::default());
    let t0 = Instant::now();
    let reads: Vec<_> = (0..8)
        .map(|i| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                ctx.shared
                    .informers
                    .machines
                    .get("default", &format!("m{i}"))
                    .await
                    .unwrap()
            })
        })
        .collect();
    for r in reads {
        assert!(r.await.unwrap().is_none());
    }
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
}

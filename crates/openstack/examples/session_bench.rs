//! Session economy benchmark against an in-process capo-sim. Prints figures, asserts nothing.
//!
//! 1. One credential, 1,000 API calls (8 concurrent): Keystone token requests, version
//!    discoveries and HTTP connections opened.
//! 2. 50 distinct credentials (users seeded into the simulator), 20 calls each, with a cache big
//!    enough for all of them, then with upstream's default size of 10: tokens and connections.
//!
//! Run: `cargo run --release -p capo-openstack --example session_bench`

use std::sync::Arc;
use std::time::Instant;

use capo_openstack::TagFilter;
use capo_openstack::compute::list_servers;
use capo_openstack::network::{self as net, ListFilter, NETWORK, Network};
use capo_openstack::retry::RateLimit;
use capo_openstack::{ApiMetrics, ClientConfig, Credentials, SessionCache};
use capo_sim::{Sim, SimConfig};

const CONCURRENCY: usize = 8;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sim = Sim::start(SimConfig::default()).await?;
    let base = Credentials::from_clouds_yaml(&sim.clouds_yaml(), "capo-sim", None, None)?;

    println!("== one credential, 1000 calls, {CONCURRENCY} concurrent");
    let metrics = ApiMetrics::unregistered();
    let cache = Arc::new(SessionCache::new(config(64), metrics.clone()));
    let started = Instant::now();
    sim.control().clear_requests();
    run(&cache, std::slice::from_ref(&base), 1000).await?;
    report(&metrics, &cache, started);
    report_sim(&sim);

    // 50 users in the same project.
    let project = base.entry.auth.project_name.clone().unwrap_or_default();
    let mut seed = capo_sim::Seed::default();
    for i in 0..50 {
        seed.users.push(capo_sim::seed::SeedUser {
            id: None,
            name: format!("bench{i}"),
            password: format!("bench-pass-{i}"),
            projects: vec![project.clone()],
            admin: false,
        });
    }
    sim.control().reseed(seed);
    let creds: Vec<Credentials> = (0..50)
        .map(|i| {
            let mut c = base.clone();
            c.cloud_name = format!("bench{i}");
            c.entry.auth.username = Some(format!("bench{i}"));
            c.entry.auth.user_id = None;
            c.entry.auth.password = Some(capo_openstack::credentials::Secret::new(format!(
                "bench-pass-{i}"
            )));
            c
        })
        .collect();
    for capacity in [64, 10] {
        println!("== 50 credentials x 20 calls, cache capacity {capacity}");
        let metrics = ApiMetrics::unregistered();
        let cache = Arc::new(SessionCache::new(config(capacity), metrics.clone()));
        let started = Instant::now();
        sim.control().clear_requests();
        run(&cache, &creds, 1000).await?;
        report(&metrics, &cache, started);
        report_sim(&sim);
    }
    sim.shutdown().await?;
    Ok(())
}

/// The default config with a rate limit high enough not to dominate the timing (the default,
/// 50 requests/s per cloud, would make each phase take about 20 s).
fn config(capacity: usize) -> ClientConfig {
    ClientConfig {
        capacity,
        rate_limit: RateLimit {
            per_second: 5000.0,
            burst: 500,
        },
        ..ClientConfig::default()
    }
}

/// `calls` API calls spread round-robin over `creds`, `CONCURRENCY` at a time; every call asks
/// the cache for its session, as a reconcile would.
async fn run(
    cache: &Arc<SessionCache>,
    creds: &[Credentials],
    calls: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let creds = Arc::new(creds.to_vec());
    let mut tasks = Vec::new();
    for worker in 0..CONCURRENCY {
        let cache = cache.clone();
        let creds = creds.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = worker;
            while i < calls {
                let s = cache.session(&creds[i % creds.len()])?;
                if i % 2 == 0 {
                    list_servers(&s, Some("^none$"), &TagFilter::default()).await?;
                } else {
                    net::list::<Network>(&s, NETWORK, &ListFilter::by_name("none")).await?;
                }
                i += CONCURRENCY;
            }
            Ok::<(), capo_openstack::Error>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

fn report(m: &ApiMetrics, cache: &SessionCache, started: Instant) {
    let api = m.requests("server_list") + m.requests("network_list");
    println!("  API calls:                {api}");
    println!("  Keystone token requests:  {}", m.requests("token_create"));
    println!(
        "  compute version GETs:     {}",
        m.requests("compute_version_get")
    );
    println!("  HTTP connections opened:  {}", cache.connections_opened());
    println!("  connection pools held:    {}", cache.pools());
    println!(
        "  sessions created/cached:  {}/{}",
        cache.sessions_created(),
        cache.len()
    );
    println!("  elapsed:                  {:.2?}", started.elapsed());
}

/// The simulator's own view (its request counters), independent of the client's metrics.
fn report_sim(sim: &Sim) {
    let counters = sim.control().counters();
    let total: u64 = counters.values().sum();
    let tokens: u64 = counters
        .iter()
        .filter(|(k, _)| k.contains("POST") && k.ends_with("/auth/tokens"))
        .map(|(_, v)| v)
        .sum();
    println!("  simulator saw:            {total} requests, {tokens} token POSTs");
}

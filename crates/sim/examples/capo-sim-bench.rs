//! Benchmark (not a test): requests per second for token issue, GET by id and list-with-filter
//! against 10,000 networks, with the simulator confined to one core (a current-thread runtime on
//! its own OS thread), plus the process's peak RSS.
//! Run: `cargo run --release -p capo-sim --example capo-sim-bench [-- OBJECTS]`.

use std::time::Instant;

use capo_sim::{Seed, Sim, SimConfig};
use serde_json::{Value, json};

const CONCURRENCY: usize = 8;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Start the simulator on a dedicated single-threaded runtime; returns its base URL.
fn start_sim(seed: Seed) -> Result<String, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => return drop(tx.send(Err(e.to_string()))),
        };
        rt.block_on(async move {
            match Sim::start(SimConfig {
                seed,
                ..SimConfig::default()
            })
            .await
            {
                Ok(sim) => {
                    let _ = tx.send(Ok(sim.base_url()));
                    std::future::pending::<()>().await;
                }
                Err(e) => drop(tx.send(Err(e.to_string()))),
            }
        });
    });
    rx.recv().map_err(|e| e.to_string())?
}

/// Run `total` requests from `CONCURRENCY` workers; returns requests per second.
async fn rate<F, Fut>(total: usize, make: F) -> Result<f64, String>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for worker in 0..CONCURRENCY {
        let make = make.clone();
        set.spawn(async move {
            let mut i = worker;
            while i < total {
                make(i).await?;
                i += CONCURRENCY;
            }
            Ok::<(), String>(())
        });
    }
    while let Some(r) = set.join_next().await {
        r.map_err(|e| e.to_string())??;
    }
    Ok(total as f64 / start.elapsed().as_secs_f64())
}

fn auth_body() -> Value {
    json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "capo-user", "domain": {"name": "Default"}, "password": "capo-password"}}},
                    "scope": {"project": {"name": "capo", "domain": {"name": "Default"}}}}})
}

async fn run(objects: usize) -> Result<(), String> {
    let mut seed = Seed::default();
    for v in seed.quotas.values_mut() {
        *v = -1;
    }
    let base = start_sim(seed)?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(CONCURRENCY)
        .build()
        .map_err(|e| e.to_string())?;
    let e = |e: reqwest::Error| e.to_string();

    let (h, b) = (http.clone(), base.clone());
    let tokens = rate(2000, move |_| {
        let (h, b) = (h.clone(), b.clone());
        async move {
            let r = h
                .post(format!("{b}/identity/v3/auth/tokens"))
                .json(&auth_body())
                .send()
                .await
                .map_err(e)?;
            if r.status().as_u16() != 201 {
                return Err(format!("token issue: {}", r.status()));
            }
            r.bytes().await.map(|_| ()).map_err(e)
        }
    })
    .await?;
    let r = http
        .post(format!("{base}/identity/v3/auth/tokens"))
        .json(&auth_body())
        .send()
        .await
        .map_err(e)?;
    let token = r
        .headers()
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .ok_or("no token")?
        .to_string();

    let ids = std::sync::Arc::new(parking_lot::Mutex::new(vec![String::new(); objects]));
    let (h, b, t, ids2) = (http.clone(), base.clone(), token.clone(), ids.clone());
    let creates = rate(objects, move |i| {
        let (h, b, t, ids) = (h.clone(), b.clone(), t.clone(), ids2.clone());
        async move {
            let body = json!({"network": {"name": format!("bench-{i}"), "description": if i % 10 == 0 { "tenth" } else { "" }}});
            let v: Value = h.post(format!("{b}/network/v2.0/networks")).header("x-auth-token", t).json(&body).send().await.map_err(e)?.json().await.map_err(e)?;
            ids.lock()[i] = v["network"]["id"].as_str().ok_or("no id")?.to_string();
            Ok(())
        }
    })
    .await?;
    let ids: Vec<String> = ids.lock().clone();
    let ids = std::sync::Arc::new(ids);

    let (h, b, t, ids2) = (http.clone(), base.clone(), token.clone(), ids.clone());
    let gets = rate(20_000, move |i| {
        let (h, b, t, ids) = (h.clone(), b.clone(), t.clone(), ids2.clone());
        async move {
            let id = &ids[(i * 7919) % ids.len()];
            let r = h
                .get(format!("{b}/network/v2.0/networks/{id}"))
                .header("x-auth-token", t)
                .send()
                .await
                .map_err(e)?;
            if !r.status().is_success() {
                return Err(format!("get: {}", r.status()));
            }
            r.bytes().await.map(|_| ()).map_err(e)
        }
    })
    .await?;

    let (h, b, t) = (http.clone(), base.clone(), token.clone());
    let lists = rate(500, move |i| {
        let (h, b, t) = (h.clone(), b.clone(), t.clone());
        async move {
            let r = h
                .get(format!(
                    "{b}/network/v2.0/networks?name=bench-{}",
                    (i * 31) % objects
                ))
                .header("x-auth-token", t)
                .send()
                .await
                .map_err(e)?;
            let v: Value = r.json().await.map_err(e)?;
            if v["networks"].as_array().map(Vec::len) != Some(1) {
                return Err("list filter did not find exactly one network".into());
            }
            Ok(())
        }
    })
    .await?;

    println!(
        "capo-sim benchmark: {objects} networks, {CONCURRENCY} concurrent clients, simulator on one core"
    );
    println!("  token issue (POST /identity/v3/auth/tokens):      {tokens:>9.0} req/s");
    println!("  network create (POST /network/v2.0/networks):     {creates:>9.0} req/s");
    println!("  GET by id (GET /network/v2.0/networks/{{id}}):      {gets:>9.0} req/s");
    println!("  list with filter (GET /networks?name=..):         {lists:>9.0} req/s");
    match peak_rss_kib() {
        Some(kib) => println!(
            "  peak RSS (VmHWM, whole process):                 {:>9.1} MiB",
            kib as f64 / 1024.0
        ),
        None => println!("  peak RSS: unavailable (no /proc/self/status)"),
    }
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let objects = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    match run(objects).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capo-sim-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

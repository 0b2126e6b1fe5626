//! Octavia, Glance and the control API over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use capo_sim::{FaultSpec, SimConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};

const LB: &str = "/load-balancer/v2/lbaas";

async fn status(c: &common::Client, lb: &str) -> String {
    let (_, v) = c.get(&format!("{LB}/loadbalancers/{lb}")).await;
    v["loadbalancer"]["provisioning_status"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

async fn settle(c: &common::Client, lb: &str) {
    for _ in 0..50 {
        if status(c, lb).await == "ACTIVE" {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("load balancer {lb} never became ACTIVE");
}

#[tokio::test]
async fn load_balancer_lifecycle_with_children_and_cascade() {
    let sim = common::with_lb_delays(60, 40, 20).await;
    let c = common::capo(&sim).await;
    let (_, sub) = c.net_with_subnet("n", "10.0.0.0/24").await;
    let l = c.create_lb(&sub).await;
    let lb = l["loadbalancer"]["id"].as_str().unwrap().to_string();
    assert_eq!(l["loadbalancer"]["provisioning_status"], "PENDING_CREATE");
    let vip_port = l["loadbalancer"]["vip_port_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, p) = c.get(&format!("/network/v2.0/ports/{vip_port}")).await;
    assert_eq!(p["port"]["device_owner"], "Octavia");
    let listener = json!({"listener": {"loadbalancer_id": lb, "protocol": "TCP", "protocol_port": 6443, "allowed_cidrs": ["10.0.0.0/8"]}});
    let (st, e) = c.post(&format!("{LB}/listeners"), listener.clone()).await;
    assert_eq!(st, StatusCode::CONFLICT);
    assert!(e["faultstring"].as_str().unwrap().contains("immutable"));
    settle(&c, &lb).await;
    let (st, li) = c.post(&format!("{LB}/listeners"), listener).await;
    assert_eq!(st, StatusCode::CREATED);
    assert_eq!(status(&c, &lb).await, "PENDING_UPDATE");
    settle(&c, &lb).await;
    let li = li["listener"]["id"].as_str().unwrap().to_string();
    let (_, po) = c
        .post(
            &format!("{LB}/pools"),
            json!({"pool": {"listener_id": li, "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}}),
        )
        .await;
    let pool = po["pool"]["id"].as_str().unwrap().to_string();
    settle(&c, &lb).await;
    let (st, _) = c
        .post(
            &format!("{LB}/pools/{pool}/members"),
            json!({"member": {"address": "10.0.0.20", "protocol_port": 6443, "subnet_id": sub}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    settle(&c, &lb).await;
    let (st, _) = c.post(&format!("{LB}/healthmonitors"), json!({"healthmonitor": {"pool_id": pool, "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 3}})).await;
    assert_eq!(st, StatusCode::CREATED);
    settle(&c, &lb).await;
    let (_, show) = c.get(&format!("{LB}/loadbalancers/{lb}")).await;
    assert_eq!(show["loadbalancer"]["listeners"], json!([{"id": li}]));
    let (_, pv) = c.get(&format!("{LB}/pools/{pool}")).await;
    assert_eq!(pv["pool"]["members"].as_array().unwrap().len(), 1);
    assert!(pv["pool"]["healthmonitor_id"].is_string());
    let (_, list) = c.get(&format!("{LB}/loadbalancers?name=lb")).await;
    assert_eq!(
        list.as_object().unwrap().keys().next().unwrap(),
        "loadbalancers"
    );
    assert_eq!(
        c.delete(&format!("{LB}/loadbalancers/{lb}")).await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        c.delete(&format!("{LB}/loadbalancers/{lb}?cascade=true"))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    let (st, e) = c.get(&format!("{LB}/loadbalancers/{lb}")).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(e["faultcode"], "Client");
    assert_eq!(
        c.get(&format!("/network/v2.0/ports/{vip_port}")).await.0,
        StatusCode::NOT_FOUND
    );
    let (_, pr) = c.get("/load-balancer/v2.0/lbaas/providers").await;
    assert!(
        pr["providers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "amphora")
    );
}

/// Octavia flavors: listed with `name`/`enabled` filters; a load balancer takes an enabled one's
/// ID, and is refused an unknown or a disabled one (Octavia's InvalidOption / DisabledOption).
#[tokio::test]
async fn octavia_flavors_listed_filtered_and_checked_on_create() {
    let sim = common::with_lb_delays(0, 0, 0).await;
    let c = common::capo(&sim).await;
    let (_, all) = c.get(&format!("{LB}/flavors")).await;
    let all = all["flavors"].as_array().unwrap().clone();
    assert_eq!(all.len(), 2, "{all:?}");
    for f in &all {
        for k in ["id", "name", "description", "enabled", "flavor_profile_id"] {
            assert!(f.get(k).is_some(), "{k} missing in {f}");
        }
    }
    let (_, one) = c.get(&format!("{LB}/flavors?name=amphora-single")).await;
    let one = one["flavors"].as_array().unwrap().clone();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["enabled"], true);
    let (_, off) = c.get(&format!("{LB}/flavors?enabled=false")).await;
    assert_eq!(off["flavors"][0]["name"], "amphora-ha");
    assert_eq!(off["flavors"].as_array().unwrap().len(), 1);

    let (_, sub) = c.net_with_subnet("n", "10.0.0.0/24").await;
    let create = |flavor: &Value| json!({"loadbalancer": {"name": "lb", "vip_subnet_id": sub, "flavor_id": flavor}});
    let (st, l) = c
        .post(&format!("{LB}/loadbalancers"), create(&one[0]["id"]))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{l}");
    assert_eq!(l["loadbalancer"]["flavor_id"], one[0]["id"]);
    let (st, e) = c
        .post(
            &format!("{LB}/loadbalancers"),
            create(&off["flavors"][0]["id"]),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(
        e["faultstring"].as_str().unwrap().contains("not allowed"),
        "{e}"
    );
    let (st, e) = c
        .post(&format!("{LB}/loadbalancers"), create(&json!("nope")))
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(
        e["faultstring"]
            .as_str()
            .unwrap()
            .contains("not a valid option"),
        "{e}"
    );
}

#[tokio::test]
async fn glance_filters_patch_upload_and_errors() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (_, v) = c.get("/image/v2/images?os_distro=flatcar").await;
    assert_eq!(v["images"].as_array().unwrap().len(), 1);
    assert_eq!(v["images"][0]["os_type"], "linux");
    let (st, img) = c.post("/image/v2/images", json!({"name": "mine", "disk_format": "qcow2", "container_format": "bare", "tags": ["t1"], "os_type": "linux"})).await;
    assert_eq!(st, StatusCode::CREATED);
    assert_eq!(img["status"], "queued");
    let id = img["id"].as_str().unwrap().to_string();
    let r = c
        .http
        .put(format!("{}/image/v2/images/{id}/file", c.base))
        .header("x-auth-token", &c.token)
        // qcow2 data: Glance 33 inspects the data against disk_format (415 otherwise, see
        // tests/fidelity.rs).
        .body({
            let mut d = b"QFI\xfb\x00\x00\x00\x03".to_vec();
            d.resize(1024, 1);
            d
        })
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let patch = json!([{"op": "replace", "path": "/name", "value": "renamed"}, {"op": "add", "path": "/hw_qemu_guest_agent", "value": "yes"}]);
    let r = c
        .http
        .patch(format!("{}/image/v2/images/{id}", c.base))
        .header("x-auth-token", &c.token)
        .header(
            "content-type",
            "application/openstack-images-v2.1-json-patch",
        )
        .body(patch.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let (_, v) = c.get("/image/v2/images?tag=t1").await;
    assert_eq!(v["images"][0]["name"], "renamed");
    assert_eq!(v["images"][0]["size"], 1024);
    assert_eq!(v["images"][0]["status"], "active");
    let (_, v) = c.get("/image/v2/images?limit=2").await;
    assert!(v["next"].as_str().unwrap().starts_with("/v2/images?"));
    let o = common::login(&sim, "capo-other-user", "capo-other-password", "capo-other").await;
    assert_eq!(
        o.get(&format!("/image/v2/images/{id}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.delete(&format!("/image/v2/images/{id}")).await.0,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn control_faults_latency_log_counters_and_reset() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let ctl = sim.control();
    ctl.add_faults(vec![FaultSpec {
        method: Some("GET".into()),
        path_regex: "/network/v2.0/networks$".into(),
        status: 503,
        body: None,
        count: Some(1),
        rate: None,
        after_action: false,
        headers: Default::default(),
    }])
    .unwrap();
    let (st, e) = c.get("/network/v2.0/networks").await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(e["NeutronError"]["type"], "SimulatedFault");
    assert_eq!(c.get("/network/v2.0/networks").await.0, StatusCode::OK);
    // A lost reply: the network is created but the client sees a 500.
    ctl.add_faults(vec![FaultSpec {
        method: Some("POST".into()),
        path_regex: "/networks$".into(),
        status: 500,
        body: Some(json!({"x": 1})),
        count: Some(1),
        rate: None,
        after_action: true,
        headers: Default::default(),
    }])
    .unwrap();
    let (st, b) = c
        .post(
            "/network/v2.0/networks",
            json!({"network": {"name": "lost"}}),
        )
        .await;
    assert_eq!(
        (st, b),
        (StatusCode::INTERNAL_SERVER_ERROR, json!({"x": 1}))
    );
    let (_, l) = c.get("/network/v2.0/networks?name=lost").await;
    assert_eq!(l["networks"].as_array().unwrap().len(), 1);
    let counters = ctl.counters();
    assert_eq!(counters.get("network GET /network/v2.0/networks"), Some(&3));
    assert!(ctl.requests().iter().any(|r| r.injected && r.status == 500));
    let http = reqwest::Client::new();
    let r = http
        .put(format!("{}/_sim/latency", sim.base_url()))
        .body(r#"{"network": 50}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let t = std::time::Instant::now();
    c.get("/network/v2.0/networks").await;
    assert!(t.elapsed() >= std::time::Duration::from_millis(50));
    let dump: Value = http
        .get(format!(
            "{}/_sim/state?project={}",
            sim.base_url(),
            c.project
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(dump["networks"].as_array().unwrap().len(), 1);
    assert_eq!(
        http.post(format!("{}/_sim/reset", sim.base_url()))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::NO_CONTENT
    );
    assert!(ctl.state(Some(&c.project)).as_object().unwrap().is_empty());
    assert_eq!(
        c.get("/network/v2.0/networks").await.0,
        StatusCode::UNAUTHORIZED,
        "reset drops tokens"
    );
}

#[tokio::test]
async fn tls_and_state_persistence() {
    let dir = std::env::temp_dir().join(format!("capo-sim-test-{}", std::process::id()));
    let state = dir.join("state.json");
    std::fs::create_dir_all(&dir).unwrap();
    let sim = common::start(SimConfig {
        tls: true,
        state_file: Some(state.clone()),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(sim.base_url().starts_with("https://"));
    let path = sim.write_clouds_yaml(&dir).unwrap();
    assert!(std::fs::read_to_string(&path).unwrap().contains("cacert:"));
    let ca = reqwest::Certificate::from_pem(sim.ca_pem().unwrap().as_bytes()).unwrap();
    let http = reqwest::Client::builder()
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let r = http
        .get(format!("{}/identity/v3", sim.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let auth = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "capo-user", "domain": {"name": "Default"}, "password": "capo-password"}}},
                               "scope": {"project": {"name": "capo", "domain": {"name": "Default"}}}}});
    let r = http
        .post(format!("{}/identity/v3/auth/tokens", sim.base_url()))
        .json(&auth)
        .send()
        .await
        .unwrap();
    let token = r.headers()["x-subject-token"].to_str().unwrap().to_string();
    let r = http
        .post(format!("{}/network/v2.0/networks", sim.base_url()))
        .header("x-auth-token", &token)
        .json(&json!({"network": {"name": "kept"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    sim.shutdown().await.unwrap();
    assert!(state.exists());
    let again = common::start(SimConfig {
        state_file: Some(state.clone()),
        ..Default::default()
    })
    .await
    .unwrap();
    let r = reqwest::Client::new()
        .get(format!(
            "{}/network/v2.0/networks?name=kept",
            again.base_url()
        ))
        .header("x-auth-token", &token)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["networks"].as_array().unwrap().len(),
        1,
        "state and tokens survive a restart"
    );
    again.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn delays_merge_and_glance_sort() {
    let sim = common::sim().await;
    let http = reqwest::Client::new();
    let r = http
        .put(format!("{}/_sim/delays", sim.base_url()))
        .body(r#"{"server_build_ms": 7}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let d = sim.control().delays();
    assert_eq!(
        (d.server_build_ms, d.volume_create_ms),
        (7, 0),
        "unspecified delays keep their value"
    );
    let c = common::capo(&sim).await;
    let (_, v) = c.get("/image/v2/images?sort=name:asc").await;
    let names: Vec<&str> = v["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}

#[tokio::test]
async fn fault_headers_over_http_and_typed() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let http = reqwest::Client::new();
    let faults_url = format!("{}/_sim/faults", sim.base_url());
    // JSON: `headers` is optional; a rule with headers sets them on the injected reply.
    let r = http
        .post(&faults_url)
        .json(&json!([
            {"method": "GET", "path_regex": "/compute/v2.1/flavors$", "status": 429, "count": 1,
             "headers": {"Retry-After": "2"}},
            {"method": "GET", "path_regex": "/network/v2.0/networks$", "status": 503, "count": 1}
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let listed: Value = http
        .get(&faults_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed[0]["headers"], json!({"Retry-After": "2"}));
    assert!(listed[1].get("headers").is_none(), "{listed}");
    let get = |path: &str| {
        http.get(format!("{}{path}", sim.base_url()))
            .header("x-auth-token", &c.token)
            .send()
    };
    let r = get("/compute/v2.1/flavors").await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()["retry-after"], "2");
    let r = get("/network/v2.0/networks").await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().get("retry-after").is_none());
    // Both one-shot rules are spent: normal replies, without the fault's header.
    let r = get("/compute/v2.1/flavors").await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers().get("retry-after").is_none());
    // An invalid header name is refused and arms nothing.
    let r = http
        .post(&faults_url)
        .json(&json!({"path_regex": "x", "status": 500, "headers": {"bad name": "1"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(sim.control().faults().is_empty());
    // Typed API, also on a lost reply (after_action): the header rides on the replaced reply.
    sim.control()
        .add_faults(vec![FaultSpec {
            method: Some("POST".into()),
            path_regex: "/networks$".into(),
            status: 503,
            count: Some(1),
            after_action: true,
            headers: [("Retry-After".to_string(), "5".to_string())].into(),
            ..Default::default()
        }])
        .unwrap();
    let r = http
        .post(format!("{}/network/v2.0/networks", sim.base_url()))
        .header("x-auth-token", &c.token)
        .json(&json!({"network": {"name": "hdr"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["retry-after"], "5");
    assert!(
        r.headers().contains_key("x-openstack-request-id"),
        "the usual headers stay"
    );
    let bad = FaultSpec {
        path_regex: "x".into(),
        status: 500,
        headers: [("Retry-After".to_string(), "line\nbreak".to_string())].into(),
        ..Default::default()
    };
    assert!(sim.control().add_faults(vec![bad]).is_err());
}

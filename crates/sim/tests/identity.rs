//! Keystone over HTTP: password, application credential and token auth, validation, 401s, catalog.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use reqwest::StatusCode;
use serde_json::{Value, json};

async fn issue(base: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}/identity/v3/auth/tokens"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn password_token_has_catalog_and_validates() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (s, v) = c.get("/identity/v3/auth/catalog").await;
    assert_eq!(s, StatusCode::OK);
    let types: Vec<&str> = v["catalog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    for t in [
        "identity",
        "compute",
        "network",
        "load-balancer",
        "image",
        "volumev3",
        "block-storage",
    ] {
        assert!(types.contains(&t), "{t}");
    }
    let resp = reqwest::Client::new()
        .get(format!("{}/identity/v3/auth/tokens", sim.base_url()))
        .header("x-auth-token", &c.token)
        .header("x-subject-token", &c.token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["x-subject-token"].to_str().unwrap(), c.token);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["token"]["project"]["name"], "capo");
    assert!(body["token"]["expires_at"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn bad_credentials_and_missing_tokens_are_401() {
    let sim = common::sim().await;
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "capo-user", "domain": {"name": "Default"}, "password": "wrong"}}}}});
    let resp = issue(&sim.base_url(), body).await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], 401);
    let resp = reqwest::get(format!("{}/network/v2.0/networks", sim.base_url()))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let mut c = common::capo(&sim).await;
    c.token = "nope".into();
    assert_eq!(
        c.get("/compute/v2.1/servers").await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn application_credentials_by_id_and_by_name() {
    let sim = common::sim().await;
    let yaml = sim.clouds_yaml();
    let id = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("application_credential_id: "))
        .unwrap()
        .to_string();
    let body = json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": id, "secret": "capo-appcred-secret"}}}});
    let resp = issue(&sim.base_url(), body).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["token"]["project"]["name"], "capo");
    assert_eq!(v["token"]["application_credential"]["id"], id.as_str());
    let by_name = json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential":
        {"name": "capo-appcred", "secret": "capo-appcred-secret", "user": {"name": "capo-user", "domain": {"name": "Default"}}}}}});
    assert_eq!(
        issue(&sim.base_url(), by_name).await.status(),
        StatusCode::CREATED
    );
    let wrong = json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": id, "secret": "x"}}}});
    assert_eq!(
        issue(&sim.base_url(), wrong).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn token_method_rescopes_and_other_project_is_refused() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let body = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": c.token}}, "scope": {"project": {"id": c.project}}}});
    assert_eq!(
        issue(&sim.base_url(), body).await.status(),
        StatusCode::CREATED
    );
    let other = sim.control().project_id("capo-other").unwrap();
    let body = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": c.token}}, "scope": {"project": {"id": other}}}});
    assert_eq!(
        issue(&sim.base_url(), body).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn expired_tokens_are_rejected() {
    let sim = common::start(capo_sim::SimConfig {
        token_ttl_s: 0,
        ..Default::default()
    })
    .await
    .unwrap();
    let c = common::capo(&sim).await;
    assert_eq!(
        c.get("/network/v2.0/networks").await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn version_documents() {
    let sim = common::sim().await;
    let get = |p: &str| reqwest::get(format!("{}{p}", sim.base_url()));
    let r = get("/identity/").await.unwrap();
    assert_eq!(r.status(), StatusCode::MULTIPLE_CHOICES);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["versions"]["values"][0]["id"], "v3.14");
    let v: Value = get("/compute/").await.unwrap().json().await.unwrap();
    assert_eq!(v["versions"][1]["version"], "2.96");
    let v: Value = get("/network/").await.unwrap().json().await.unwrap();
    assert!(
        v["versions"][0]["links"][0]["href"]
            .as_str()
            .unwrap()
            .ends_with("/network/v2.0/")
    );
    let v: Value = get("/load-balancer/").await.unwrap().json().await.unwrap();
    assert!(
        v["versions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["status"] == "CURRENT")
    );
    let v: Value = get("/image/versions").await.unwrap().json().await.unwrap();
    assert_eq!(v["versions"][0]["id"], "v2.16");
    let v: Value = get("/volume/v3/").await.unwrap().json().await.unwrap();
    assert_eq!(v["versions"][0]["min_version"], "3.0");
}

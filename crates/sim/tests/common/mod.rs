//! Shared helpers for the HTTP integration tests: start a simulator and talk to it as a project.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use capo_sim::{Delays, Sim, SimConfig};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Delays of zero: every state machine completes on the next request.
pub fn instant() -> Delays {
    Delays {
        server_build_ms: 0,
        volume_create_ms: 0,
        lb_provision_ms: 0,
        lb_update_ms: 0,
        lb_delete_ms: 0,
    }
}

/// Start a simulator with instant transitions.
pub async fn sim() -> Sim {
    start(SimConfig {
        delays: instant(),
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

/// Start a simulator with instant transitions and one quota of the seeded project set.
pub async fn with_quota(key: &str, limit: i64) -> Sim {
    let mut seed = capo_sim::Seed::default();
    seed.quotas.insert(key.into(), limit);
    start(SimConfig {
        seed,
        delays: instant(),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// Start a simulator whose load balancers take these milliseconds to provision, update and delete.
pub async fn with_lb_delays(provision: u64, update: u64, delete: u64) -> Sim {
    let delays = Delays {
        lb_provision_ms: provision,
        lb_update_ms: update,
        lb_delete_ms: delete,
        ..instant()
    };
    start(SimConfig {
        delays,
        ..Default::default()
    })
    .await
    .unwrap()
}

/// Start a simulator; installs ring as the crypto provider the tests' reqwest clients need.
pub async fn start(config: SimConfig) -> capo_sim::Result<Sim> {
    capo_tls::ensure_crypto_provider();
    Sim::start(config).await
}

/// An authenticated client for one project.
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
    pub project: String,
    pub headers: Vec<(String, String)>,
}

/// Issue a password token and return a client scoped to `project`.
pub async fn login(sim: &Sim, user: &str, password: &str, project: &str) -> Client {
    let http = reqwest::Client::new();
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": user, "domain": {"name": "Default"}, "password": password}}},
                               "scope": {"project": {"name": project, "domain": {"id": "default"}}}}});
    let (token, v) = issue_token(&http, &sim.base_url(), &body).await;
    let project = v["token"]["project"]["id"].as_str().unwrap().to_string();
    Client {
        http,
        base: sim.base_url(),
        token,
        project,
        headers: vec![],
    }
}

/// `POST /identity/v3/auth/tokens` with `body`: must answer 201; the token and the reply.
pub async fn issue_token(http: &reqwest::Client, base: &str, body: &Value) -> (String, Value) {
    let resp = http
        .post(format!("{base}/identity/v3/auth/tokens"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let token = resp.headers()["x-subject-token"]
        .to_str()
        .unwrap()
        .to_string();
    let v: Value = resp.json().await.unwrap();
    (token, v)
}

/// The default project's client.
pub async fn capo(sim: &Sim) -> Client {
    login(sim, "capo-user", "capo-password", "capo").await
}

impl Client {
    /// Send a request; returns status and JSON body (Null when empty or not JSON).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{}", self.base, path))
            .header("x-auth-token", &self.token);
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }
    pub async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::PUT, path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None).await
    }
    /// Create a network with one IPv4 subnet; returns (network id, subnet id).
    pub async fn net_with_subnet(&self, name: &str, cidr: &str) -> (String, String) {
        let (s, n) = self
            .post("/network/v2.0/networks", json!({"network": {"name": name}}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{n}");
        let net = n["network"]["id"].as_str().unwrap().to_string();
        let (s, sub) = self.post("/network/v2.0/subnets", json!({"subnet": {"network_id": net, "cidr": cidr, "ip_version": 4, "name": format!("{name}-subnet")}})).await;
        assert_eq!(s, StatusCode::CREATED, "{sub}");
        (net, sub["subnet"]["id"].as_str().unwrap().to_string())
    }
    /// Create a load balancer named `lb` on a subnet (201 asserted); returns the reply.
    pub async fn create_lb(&self, subnet: &str) -> Value {
        let (st, l) = self
            .post(
                "/load-balancer/v2/lbaas/loadbalancers",
                json!({"loadbalancer": {"name": "lb", "vip_subnet_id": subnet}}),
            )
            .await;
        assert_eq!(st, StatusCode::CREATED, "{l}");
        l
    }
    /// The seeded external network id.
    pub async fn public_net(&self) -> String {
        let (_, v) = self
            .get("/network/v2.0/networks?router:external=true")
            .await;
        v["networks"][0]["id"].as_str().unwrap().to_string()
    }
}

//! Fault handling against capo-sim: re-auth on 401, backoff on 429, retries of idempotent
//! requests, no blind repeat of a POST whose reply was lost, TLS trust, per-region sessions.

mod common;

use std::time::{Duration, Instant};

use capo_openstack::compute::list_flavors;
use capo_openstack::network::{self as net, ListFilter, NETWORK, Network, NetworkCreate};
use capo_openstack::{Credentials, ErrorKind};
use capo_sim::FaultSpec;

fn fault(method: &str, path_regex: &str, status: u16, count: u32, after_action: bool) -> FaultSpec {
    FaultSpec {
        method: Some(method.into()),
        path_regex: path_regex.into(),
        status,
        body: None,
        count: Some(count),
        rate: None,
        after_action,
        headers: Default::default(),
    }
}

#[tokio::test]
async fn unauthorized_mid_session_reauthenticates_once() {
    let env = common::env().await;
    let s = env.session("capo-sim");
    assert!(!s.authenticated(), "no token before the first request");
    list_flavors(&s).await.unwrap();
    assert_eq!(s.token_requests(), 1);
    assert!(s.authenticated());
    env.sim
        .control()
        .add_faults(vec![fault("GET", "/compute/v2.1/flavors", 401, 1, false)])
        .unwrap();
    list_flavors(&s).await.unwrap();
    assert_eq!(s.token_requests(), 2, "exactly one re-authentication");
    // A 401 that persists is reported, after a single re-auth.
    env.sim
        .control()
        .add_faults(vec![fault("GET", "/compute/v2.1/flavors", 401, 5, false)])
        .unwrap();
    let e = list_flavors(&s).await.unwrap_err();
    assert_eq!(e.kind(), Some(&ErrorKind::Unauthorized), "{e}");
    assert_eq!(s.token_requests(), 3);
    // Keystone accepted the credentials again: the refusal came from the service.
    assert!(s.authenticated());
    // Keystone refusing the credentials at the re-authentication is remembered.
    env.sim
        .control()
        .add_faults(vec![
            fault("GET", "/compute/v2.1/flavors", 401, 1, false),
            fault("POST", "auth/tokens", 401, 1, false),
        ])
        .unwrap();
    let e = list_flavors(&s).await.unwrap_err();
    assert_eq!(e.kind(), Some(&ErrorKind::Unauthorized), "{e}");
    assert!(!s.authenticated(), "the last token request failed");
}

#[tokio::test]
async fn rate_limited_backs_off_then_succeeds() {
    let env = common::env().await;
    let s = env.session("capo-sim");
    list_flavors(&s).await.unwrap();
    env.sim
        .control()
        .add_faults(vec![fault("GET", "/compute/v2.1/flavors", 429, 2, false)])
        .unwrap();
    let started = Instant::now();
    list_flavors(&s).await.unwrap();
    // Two backoffs of the (test-sized) policy: at least base/2 + base.
    assert!(
        started.elapsed() >= Duration::from_millis(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(env.logged("GET", "/compute/v2.1/flavors"), 4);
    assert_eq!(env.metrics.errors("flavor_list"), 2);
}

/// A one-shot 429 on the flavor list carrying `Retry-After: <secs>`.
fn rate_limit_with_retry_after(secs: u64) -> FaultSpec {
    FaultSpec {
        headers: [("Retry-After".to_string(), secs.to_string())].into(),
        ..fault("GET", "/compute/v2.1/flavors/detail$", 429, 1, false)
    }
}

#[tokio::test]
async fn retry_after_within_ceiling_is_waited_for() {
    let env = common::env().await;
    let s = env.session("capo-sim");
    list_flavors(&s).await.unwrap();
    env.sim
        .control()
        .add_faults(vec![rate_limit_with_retry_after(1)])
        .unwrap();
    env.sim.control().clear_requests();
    let started = tokio::time::Instant::now();
    list_flavors(&s).await.unwrap();
    let took = started.elapsed();
    // The policy's own backoff here is 10-20 ms; only the server's hint explains a second.
    // Lower bound only (slack for timer granularity): the 429's round trip adds to `took`.
    assert!(took >= Duration::from_millis(950), "{took:?}");
    let statuses: Vec<(u16, bool)> = env
        .sim
        .control()
        .requests()
        .iter()
        .filter(|e| e.path.ends_with("/flavors/detail"))
        .map(|e| (e.status, e.injected))
        .collect();
    assert_eq!(statuses, [(429, true), (200, false)]);
}

#[tokio::test]
async fn retry_after_above_ceiling_goes_back_to_the_caller() {
    let env = common::env().await;
    let s = env.session("capo-sim");
    list_flavors(&s).await.unwrap();
    let ceiling = common::fast_config().retry.max_retry_after;
    let hint = ceiling + Duration::from_secs(1);
    env.sim
        .control()
        .add_faults(vec![rate_limit_with_retry_after(hint.as_secs())])
        .unwrap();
    env.sim.control().clear_requests();
    let started = tokio::time::Instant::now();
    let e = list_flavors(&s).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(
        e.kind(),
        Some(&ErrorKind::RateLimited {
            retry_after: Some(hint)
        }),
        "{e}"
    );
    // Not slept on and not retried: one request, answered well before the hint.
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(env.logged("GET", "/compute/v2.1/flavors"), 1);
}

#[tokio::test]
async fn get_failing_twice_with_503_is_retried() {
    let env = common::env().await;
    let s = env.session("capo-sim");
    env.sim
        .control()
        .add_faults(vec![fault("GET", "/network/v2.0/networks", 503, 2, false)])
        .unwrap();
    let nets: Vec<Network> = net::list(&s, NETWORK, &ListFilter::default())
        .await
        .unwrap();
    assert!(!nets.is_empty());
    assert_eq!(env.logged("GET", "/network/v2.0/networks"), 3);
    assert_eq!(env.metrics.requests("network_list"), 3);
    assert_eq!(env.metrics.errors("network_list"), 2);
}

#[tokio::test]
async fn lost_post_reply_is_not_repeated() {
    let env = common::env().await;
    let s = env.session("capo-sim");
    env.sim
        .control()
        .add_faults(vec![fault("POST", "/network/v2.0/networks$", 502, 1, true)])
        .unwrap();
    let e = net::create::<Network>(
        &s,
        NETWORK,
        &NetworkCreate {
            name: "once".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), Some(&ErrorKind::OutcomeUnknown), "{e}");
    assert_eq!(
        env.logged("POST", "/network/v2.0/networks"),
        1,
        "POST sent exactly once"
    );
    // The caller adopts by name: the network exists exactly once.
    let found: Vec<Network> = net::list(&s, NETWORK, &ListFilter::by_name("once"))
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
}

#[tokio::test]
async fn tls_trust() {
    let a = common::env_with(capo_sim::SimConfig {
        tls: true,
        ..Default::default()
    })
    .await;
    let b = capo_sim::Sim::start(capo_sim::SimConfig {
        tls: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let yaml = a.sim.clouds_yaml();
    // Right CA: works.
    let good = Credentials::from_clouds_yaml(
        &yaml,
        "capo-sim",
        None,
        Some(a.sim.ca_pem().unwrap().as_bytes()),
    )
    .unwrap();
    list_flavors(&a.cache.session(&good).unwrap())
        .await
        .unwrap();
    // Another CA: a clear certificate error, never a silent fallback.
    let wrong = Credentials::from_clouds_yaml(
        &yaml,
        "capo-sim",
        None,
        Some(b.ca_pem().unwrap().as_bytes()),
    )
    .unwrap();
    let e = list_flavors(&a.cache.session(&wrong).unwrap())
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert_eq!(e.kind(), Some(&ErrorKind::Transient), "{msg}");
    assert!(msg.to_lowercase().contains("certificate"), "{msg}");
    // No CA at all: system roots do not know the simulator's CA either.
    let none = Credentials::from_clouds_yaml(&yaml, "capo-sim", None, None).unwrap();
    assert!(
        list_flavors(&a.cache.session(&none).unwrap())
            .await
            .is_err()
    );
    // verify: false is honoured (with a warning) even without the CA.
    let insecure_yaml = yaml.replacen(
        "    interface: public\n",
        "    interface: public\n    verify: false\n",
        1,
    );
    let insecure = Credentials::from_clouds_yaml(&insecure_yaml, "capo-sim", None, None).unwrap();
    list_flavors(&a.cache.session(&insecure).unwrap())
        .await
        .unwrap();
    // A CA that does not parse is rejected up front.
    assert!(Credentials::from_clouds_yaml(&yaml, "capo-sim", None, Some(b"not a pem")).is_err());
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn two_regions_get_separate_sessions() {
    let env = common::env().await;
    let yaml = env.sim.clouds_yaml();
    let r1 = Credentials::from_clouds_yaml(&yaml, "capo-sim", Some("RegionOne"), None).unwrap();
    let r2 = Credentials::from_clouds_yaml(&yaml, "capo-sim", Some("RegionTwo"), None).unwrap();
    let s1 = env.cache.session(&r1).unwrap();
    let s2 = env.cache.session(&r2).unwrap();
    assert_eq!(env.cache.sessions_created(), 2);
    list_flavors(&s1).await.unwrap();
    // The simulator's catalog has RegionOne only: the RegionTwo session must not borrow it.
    let e = list_flavors(&s2).await.unwrap_err();
    assert!(matches!(e, capo_openstack::Error::NoEndpoint { .. }), "{e}");
    assert_eq!((s1.token_requests(), s2.token_requests()), (1, 1));
    // Same region again: cached.
    env.cache.session(&r1).unwrap();
    assert_eq!(env.cache.sessions_created(), 2);
}

#[tokio::test]
async fn application_credential_and_project_id() {
    let env = common::env().await;
    let s = env.session("capo-sim-appcred");
    let pid = s.project_id().await.unwrap();
    assert!(!pid.is_empty());
    list_flavors(&s).await.unwrap();
    let other = env.session("capo-sim-other");
    assert_ne!(other.project_id().await.unwrap(), pid);
    assert_eq!(env.metrics.requests("token_create"), 2);
    // Catalog endpoint hosts for status fields: no credentials, one entry per service.
    let hosts = s.endpoint_hosts().await.unwrap();
    assert_eq!(hosts.get("auth").map(String::as_str), Some("127.0.0.1"));
    assert_eq!(hosts.get("compute").map(String::as_str), Some("127.0.0.1"));
    assert!(
        hosts.contains_key("network") && hosts.contains_key("volumev3"),
        "{hosts:?}"
    );
}

#[tokio::test]
async fn token_renewed_before_expiry_without_a_401() {
    let env = common::env_with(capo_sim::SimConfig {
        token_ttl_s: 2,
        ..Default::default()
    })
    .await;
    let s = env.session("capo-sim");
    list_flavors(&s).await.unwrap();
    list_flavors(&s).await.unwrap();
    assert_eq!(s.token_requests(), 1, "token reused");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    list_flavors(&s).await.unwrap();
    assert_eq!(s.token_requests(), 2, "renewed once");
    let unauthorized = env
        .sim
        .control()
        .requests()
        .iter()
        .filter(|e| e.status == 401)
        .count();
    assert_eq!(
        unauthorized, 0,
        "renewal happened before the cloud had to refuse the token"
    );
}

#[tokio::test]
async fn wrong_password_is_unauthorized_without_echo() {
    let env = common::env().await;
    let mut creds = env.creds("capo-sim");
    creds.entry.auth.password = Some(capo_openstack::credentials::Secret::new("wrong-pass-4711"));
    let s = env.cache.session(&creds).unwrap();
    let e = list_flavors(&s).await.unwrap_err();
    assert_eq!(e.kind(), Some(&ErrorKind::Unauthorized), "{e}");
    assert!(!e.to_string().contains("wrong-pass-4711"));
    assert!(!format!("{e:?}").contains("wrong-pass-4711"));
    assert_eq!(s.token_requests(), 1, "a rejected password is not retried");
}

/// `auth_type: token` (and `v3token`): an existing Keystone token, rescoped to the entry's
/// project, as upstream's clientconfig uses it; the token never shows in Debug output.
#[tokio::test]
async fn token_auth_type_rescopes_an_existing_token() {
    let env = common::env().await;
    let password = env.session("capo-sim");
    let project = password.project_id().await.unwrap();
    // A token of the same user, obtained outside capo as `openstack token issue` would.
    let reply = reqwest::Client::new()
        .post(format!("{}/auth/tokens", env.sim.auth_url()))
        .json(&serde_json::json!({"auth": {"identity": {"methods": ["password"], "password": {
            "user": {"name": "capo-user", "domain": {"name": "Default"}, "password": "capo-password"}}}}}))
        .send()
        .await
        .unwrap();
    assert!(reply.status().is_success(), "{}", reply.status());
    let token = reply.headers()["x-subject-token"]
        .to_str()
        .unwrap()
        .to_owned();
    for auth_type in ["token", "v3token"] {
        let yaml = format!(
            "clouds:\n  t:\n    auth_type: {auth_type}\n    auth:\n      auth_url: {}\n      token: {token}\n      project_id: {project}\n    region_name: RegionOne\n",
            env.sim.auth_url()
        );
        let creds = capo_openstack::Credentials::from_clouds_yaml(&yaml, "t", None, None).unwrap();
        assert_eq!(creds.method, capo_openstack::credentials::AuthMethod::Token);
        assert!(!format!("{creds:?}").contains(&token), "token in Debug");
        let s = env.cache.session(&creds).unwrap();
        assert_eq!(s.project_id().await.unwrap(), project);
        list_flavors(&s).await.unwrap();
    }
}

//! The OpenStack clients through an HTTP forward proxy, as upstream's do with `HTTP_PROXY` /
//! `HTTPS_PROXY` (Go's `ProxyFromEnvironment`).
//!
//! The proxy is a minimal one written here, on loopback, in front of capo-sim (also on
//! loopback): nothing leaves the machine. Go's rules send requests to loopback addresses
//! direct, never through a proxy, so the tests that need traffic through it build their
//! settings with `proxy_loopback_for_tests()`, a switch the manager never uses; one test below
//! checks, without that switch, that loopback traffic indeed bypasses the proxy (the rule itself
//! is unit-tested in `capo_openstack::proxy`). The settings are built explicitly here: the
//! library reads no environment variable (the manager does, once, at start).

// Test proxy: a broken exchange should fail the test loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use base64::Engine;
use capo_openstack::compute::list_flavors;
use capo_openstack::proxy::ProxySettings;
use capo_openstack::{ApiMetrics, ClientConfig, Credentials, Session, SessionCache};
use capo_sim::{Sim, SimConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy saw: one entry per request.
#[derive(Default)]
struct Seen {
    /// Request lines, as received (absolute form).
    lines: Vec<String>,
    /// `Proxy-Authorization` values (None when absent).
    auth: Vec<Option<String>>,
}

/// A forward proxy for `http://` requests in absolute form, one request per connection
/// (it asks the upstream for `Connection: close` and relays the reply until EOF). It only
/// forwards to loopback addresses.
async fn start_proxy() -> (u16, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let (conn, _) = listener.accept().await.unwrap();
            tokio::spawn(relay(conn, s.clone()));
        }
    });
    (port, seen)
}

async fn relay(mut client: TcpStream, seen: Arc<Mutex<Seen>>) {
    // Request head.
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = client.read(&mut chunk).await.unwrap();
        if n == 0 {
            return; // a pooled connection closed without a request
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap().to_owned();
    let mut parts = request_line.split(' ');
    let (method, target, version) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let rest = target
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("not an absolute-form http request: {request_line}"));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    assert!(
        authority.starts_with("127.0.0.1:"),
        "the test proxy only forwards to loopback: {authority}"
    );
    let mut auth = None;
    let mut content_length = 0usize;
    let mut headers = String::new();
    for h in lines.filter(|h| !h.is_empty()) {
        let (name, value) = h.split_once(':').unwrap();
        let lname = name.trim().to_ascii_lowercase();
        match lname.as_str() {
            "proxy-authorization" => auth = Some(value.trim().to_owned()),
            "proxy-connection" | "connection" => {}
            "transfer-encoding" => panic!("chunked request bodies are not handled: {h}"),
            _ => {
                if lname == "content-length" {
                    content_length = value.trim().parse().unwrap();
                }
                headers.push_str(h);
                headers.push_str("\r\n");
            }
        }
    }
    let mut body = buf[head_end..].to_vec();
    while body.len() < content_length {
        let mut chunk = [0u8; 4096];
        let n = client.read(&mut chunk).await.unwrap();
        assert!(n > 0, "request body cut short");
        body.extend_from_slice(&chunk[..n]);
    }
    {
        let mut s = seen.lock().unwrap();
        s.lines.push(request_line.clone());
        s.auth.push(auth);
    }
    let mut upstream = TcpStream::connect(authority).await.unwrap();
    let forwarded = format!("{method} {path} {version}\r\n{headers}Connection: close\r\n\r\n");
    upstream.write_all(forwarded.as_bytes()).await.unwrap();
    upstream.write_all(&body).await.unwrap();
    let mut reply = Vec::new();
    upstream.read_to_end(&mut reply).await.unwrap();
    client.write_all(&reply).await.unwrap();
    let _ = client.shutdown().await;
}

struct Env {
    sim: Sim,
    cache: SessionCache,
}

async fn env(proxy: ProxySettings) -> Env {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let mut config = ClientConfig::default();
    config.http.proxy = proxy;
    let cache = SessionCache::new(config, ApiMetrics::unregistered());
    Env { sim, cache }
}

impl Env {
    fn session(&self) -> Session {
        let creds =
            Credentials::from_clouds_yaml(&self.sim.clouds_yaml(), "capo-sim", None, None).unwrap();
        self.cache.session(&creds).unwrap()
    }
    fn sim_port(&self) -> u16 {
        url::Url::parse(&self.sim.base_url())
            .unwrap()
            .port()
            .unwrap()
    }
}

#[tokio::test]
async fn requests_go_through_the_http_proxy_with_its_credentials() {
    let (pport, seen) = start_proxy().await;
    let proxy = ProxySettings::new(
        Some(&format!("http://capo:pr%40xy@127.0.0.1:{pport}")),
        None,
        "",
    )
    .unwrap()
    .proxy_loopback_for_tests();
    let env = env(proxy).await;
    let s = env.session();
    let flavors = list_flavors(&s).await.unwrap();
    assert!(!flavors.is_empty());
    list_flavors(&s).await.unwrap();

    let sim_requests = env.sim.control().requests().len();
    let seen = seen.lock().unwrap();
    // Every request the simulator served (token, discovery, flavors) came through the proxy.
    assert!(sim_requests >= 3, "{sim_requests}");
    assert_eq!(seen.lines.len(), sim_requests, "{:?}", seen.lines);
    let prefix = format!("http://127.0.0.1:{}/", env.sim_port());
    for line in &seen.lines {
        assert!(
            line.split(' ').nth(1).unwrap().starts_with(&prefix),
            "{line}"
        );
    }
    assert!(
        seen.lines
            .iter()
            .any(|l| l.starts_with("POST ") && l.contains("/auth/tokens"))
    );
    // The URL's user and password (percent-decoded) as Basic proxy credentials.
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("capo:pr@xy")
    );
    assert!(
        seen.auth.iter().all(|a| a.as_deref() == Some(&basic)),
        "{:?}",
        seen.auth
    );
}

#[tokio::test]
async fn https_proxy_is_not_used_for_http_urls_and_no_proxy_applies() {
    let (pport, seen) = start_proxy().await;
    // Only an HTTPS proxy: capo-sim's http:// URLs go direct (no fallback, as in Go).
    let https_only = ProxySettings::new(None, Some(&format!("127.0.0.1:{pport}")), "")
        .unwrap()
        .proxy_loopback_for_tests();
    let env1 = env(https_only).await;
    list_flavors(&env1.session()).await.unwrap();
    assert!(!env1.sim.control().requests().is_empty());
    // An HTTP proxy, but NO_PROXY names the simulator's address: direct too.
    let listed = ProxySettings::new(
        Some(&format!("127.0.0.1:{pport}")),
        None,
        "keystone.example, 127.0.0.0/8",
    )
    .unwrap()
    .proxy_loopback_for_tests();
    let env2 = env(listed).await;
    list_flavors(&env2.session()).await.unwrap();
    assert!(!env2.sim.control().requests().is_empty());
    assert!(seen.lock().unwrap().lines.is_empty());
}

#[tokio::test]
async fn loopback_requests_bypass_the_proxy_as_in_go() {
    let (pport, seen) = start_proxy().await;
    // The settings the manager would build from HTTP_PROXY=http://127.0.0.1:<port>.
    let proxy = ProxySettings::new(Some(&format!("http://127.0.0.1:{pport}")), None, "").unwrap();
    let env = env(proxy).await;
    list_flavors(&env.session()).await.unwrap();
    assert!(!env.sim.control().requests().is_empty());
    assert!(seen.lock().unwrap().lines.is_empty());
}

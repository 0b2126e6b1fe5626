//! The built `capo-controller-manager` binary against a real kube-apiserver: probes, metrics,
//! leader election (acquire, follower, release on SIGTERM, hand-over), exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_capo-controller-manager");
const LEASE: &str = "controller-leader-election-capo";

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// One manager process with its probe and metrics addresses; killed when dropped.
struct Manager {
    child: Child,
    health: SocketAddr,
    metrics: SocketAddr,
}

impl Manager {
    fn start(kubeconfig: &std::path::Path, extra: &[&str]) -> Manager {
        let health = free_addr();
        let metrics = free_addr();
        let child = Command::new(BIN)
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--health-addr={health}"))
            .arg(format!("--diagnostics-address={metrics}"))
            .args(["--insecure-diagnostics", "--webhook-port=0"])
            .args(extra)
            .stdin(Stdio::null())
            .spawn()
            .expect("start manager");
        Manager {
            child,
            health,
            metrics,
        }
    }

    /// Wait for `path` on the probe server to answer 200.
    async fn wait_ok(&mut self, path: &str, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Ok((200, _)) = get(self.health, path).await {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("manager exited with {status} before {path} was ok");
            }
            assert!(Instant::now() < deadline, "{path} not ok after {secs} s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGTERM, then wait (at most 45 s) for the exit status.
    async fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(45);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "manager did not stop after SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Minimal HTTP/1.1 GET: (status, body).
async fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

async fn holder(api: &Api<Lease>) -> Option<String> {
    api.get_opt(LEASE)
        .await
        .unwrap()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

async fn wait_holder(api: &Api<Lease>, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let h = holder(api).await;
        if let Some(h) = &h
            && pred(h)
        {
            return h.clone();
        }
        assert!(Instant::now() < deadline, "lease: {what}; holder {h:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A Cluster and its OpenStackCluster `name` whose identity Secret holds `clouds_yaml`.
async fn create_cluster(client: &kube::Client, ns: &str, name: &str, clouds_yaml: &str) {
    let apply = |yaml: String| async move {
        capo_testkit::apply_yaml(client, ns, &yaml, false)
            .await
            .unwrap()
            .unwrap()
    };
    let secret = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{name}-cloud-config")},
        "stringData": {"clouds.yaml": clouds_yaml},
    });
    apply(serde_json::to_string(&secret).unwrap()).await;
    apply(format!(
        "apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {name}}}
spec:
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: OpenStackCluster, name: {name}}}
"
    ))
    .await;
    let clusters: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        ns,
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "cluster.x-k8s.io",
            "v1beta2",
            "Cluster",
        )),
    );
    let uid = clusters.get(name).await.unwrap().metadata.uid.unwrap();
    apply(format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackCluster
metadata:
  name: {name}
  labels: {{cluster.x-k8s.io/cluster-name: {name}}}
  ownerReferences:
  - {{apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster, name: {name}, uid: {uid}}}
spec:
  identityRef: {{name: {name}-cloud-config, cloudName: capo-sim}}
  managedSubnets: [{{cidr: 10.6.0.0/24}}]
"
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_metrics_and_graceful_stop() {
    let env = capo_testkit::shared_env().await.expect("test environment");
    let ns = env.new_namespace("mgr").await.unwrap();
    let sim = capo_sim::Sim::start(capo_sim::SimConfig::default())
        .await
        .unwrap();
    // A wrong password: every reconcile fails at Keystone, so the reconcile and OpenStack
    // request metrics, errors included, all get samples.
    let clouds = sim.clouds_yaml();
    let bad: String = clouds
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("password:") {
                "      password: wrong-password".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    create_cluster(&env.client(), &ns, "c1", &bad).await;
    let mut m = Manager::start(env.kubeconfig_path(), &[&format!("--namespace={ns}")]);
    m.wait_ok("/healthz", 60).await;
    m.wait_ok("/readyz", 30).await;

    let wanted = [
        "capo_controller_reconciles_total{controller=\"openstackcluster\"}",
        "capo_controller_reconcile_errors_total{controller=\"openstackcluster\"",
        "capo_controller_reconcile_duration_seconds_count{controller=\"openstackcluster\"}",
        "capo_openstack_api_requests_total{request=\"token_create\"}",
        "capo_openstack_api_request_errors_total{request=\"token_create\"}",
        "capo_openstack_api_request_duration_seconds_count{request=\"token_create\"}",
        "capo_kube_api_requests_total ",
        "capo_kube_api_throttle_seconds_total ",
        "capo_conversion_objects_total ",
        "capo_conversion_seconds_total ",
        "process_resident_memory_bytes ",
        "process_start_time_seconds ",
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = get(m.metrics, "/metrics").await.unwrap();
        assert_eq!(status, 200, "{body}");
        let missing: Vec<_> = wanted.iter().filter(|w| !body.contains(*w)).collect();
        if missing.is_empty() {
            assert!(!body.contains("wrong-password"));
            break;
        }
        assert!(Instant::now() < deadline, "missing {missing:?} in:\n{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, _) = get(m.health, "/nope").await.unwrap();
    assert_eq!(status, 404);

    let status = m.terminate().await;
    assert_eq!(status.code(), Some(0), "exit status after SIGTERM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_election_acquire_follow_release_hand_over() {
    let env = capo_testkit::shared_env().await.expect("test environment");
    let ns = env.new_namespace("lease").await.unwrap();
    let leases: Api<Lease> = Api::namespaced(env.client(), &ns);
    let args = [
        "--leader-elect".to_owned(),
        format!("--leader-elect-namespace={ns}"),
        format!("--namespace={ns}"),
        "--leader-elect-retry-period=500ms".to_owned(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let mut first = Manager::start(env.kubeconfig_path(), &args);
    first.wait_ok("/readyz", 60).await;
    let first_id = wait_holder(&leases, "acquired by the first", |h| !h.is_empty()).await;
    let lease = leases.get(LEASE).await.unwrap().spec.unwrap();
    assert_eq!(lease.lease_duration_seconds, Some(15));
    assert!(lease.acquire_time.is_some() && lease.renew_time.is_some());

    // A second replica is ready (probes answer) but follows.
    let mut second = Manager::start(env.kubeconfig_path(), &args);
    second.wait_ok("/readyz", 60).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(holder(&leases).await.as_deref(), Some(first_id.as_str()));

    // The first stops: it releases the lease, so the second takes it well before the
    // 15 s lease duration would have run out.
    let stopped = Instant::now();
    assert_eq!(first.terminate().await.code(), Some(0));
    let second_id = wait_holder(&leases, "taken over by the second", |h| {
        !h.is_empty() && h != first_id
    })
    .await;
    assert!(
        stopped.elapsed() < Duration::from_secs(12),
        "hand-over took {:?}: the lease was not released",
        stopped.elapsed()
    );
    let lease = leases.get(LEASE).await.unwrap().spec.unwrap();
    assert_eq!(lease.lease_transitions, Some(1));

    // Let its controllers finish their first list (a controller stopped before that only
    // ends by the manager's stop timeout).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(second.terminate().await.code(), Some(0));
    let after = holder(&leases).await;
    assert_eq!(after.as_deref(), Some(""), "released by {second_id}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_errors_exit_non_zero_with_a_message() {
    let env = capo_testkit::shared_env().await.expect("test environment");
    // Usage error: clap's exit code 2.
    let out = Command::new(BIN).arg("--sync-period=10").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sync-period"));
    // Webhooks on, certificate directory missing: the start fails and says why.
    let dir = std::env::temp_dir().join(format!("capo-no-certs-{}", std::process::id()));
    let out = Command::new(BIN)
        .arg(format!("--kubeconfig={}", env.kubeconfig_path().display()))
        .arg(format!("--health-addr={}", free_addr()))
        .arg(format!("--diagnostics-address={}", free_addr()))
        .arg(format!("--webhook-port={}", free_addr().port()))
        .arg(format!("--webhook-cert-dir={}", dir.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("webhook"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_that_loses_its_lease_stops_with_an_error() {
    let env = capo_testkit::shared_env().await.expect("test environment");
    let ns = env.new_namespace("lost").await.unwrap();
    let leases: Api<Lease> = Api::namespaced(env.client(), &ns);
    let args = [
        "--leader-elect".to_owned(),
        format!("--leader-elect-namespace={ns}"),
        format!("--namespace={ns}"),
        "--leader-elect-lease-duration=4s".to_owned(),
        "--leader-elect-renew-deadline=3s".to_owned(),
        "--leader-elect-retry-period=500ms".to_owned(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut m = Manager::start(env.kubeconfig_path(), &args);
    m.wait_ok("/readyz", 60).await;
    wait_holder(&leases, "acquired", |h| !h.is_empty()).await;

    // Another replica (here: the test) takes the lease over, as after a network partition.
    let mut lease = leases.get(LEASE).await.unwrap();
    let spec = lease.spec.as_mut().unwrap();
    spec.holder_identity = Some("intruder".to_owned());
    spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    ));
    leases
        .replace(LEASE, &Default::default(), &lease)
        .await
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = m.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the manager kept running without its lease"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status.code(), Some(1), "a lost lease is an error exit");
    // It did not release a lease it no longer holds.
    assert_eq!(holder(&leases).await.as_deref(), Some("intruder"));
}

/// The capacity of OpenStackMachineTemplate `name`, if written.
async fn template_capacity(client: &kube::Client, ns: &str, name: &str) -> Option<Value> {
    let gvk = kube::api::GroupVersionKind::gvk(
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "OpenStackMachineTemplate",
    );
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &kube::api::ApiResource::from_gvk(&gvk));
    let t = api.get(name).await.unwrap();
    t.data["status"].get("capacity").cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autoscale_from_zero_gate_starts_the_template_controller() {
    let env = capo_testkit::shared_env().await.expect("test environment");
    let ns = env.new_namespace("osmt").await.unwrap();
    let client = env.client();
    let sim = capo_sim::Sim::start(capo_sim::SimConfig::default())
        .await
        .unwrap();
    create_cluster(&client, &ns, "c1", &sim.clouds_yaml()).await;
    let clusters: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "cluster.x-k8s.io",
            "v1beta2",
            "Cluster",
        )),
    );
    let uid = clusters.get("c1").await.unwrap().metadata.uid.unwrap();
    // No identityRef: the template uses its cluster's.
    let template = format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata:
  name: md-0
  ownerReferences:
  - {{apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster, name: c1, uid: {uid}}}
spec:
  template:
    spec:
      flavor: m1.medium
      image: {{filter: {{name: ubuntu-2404-kube-v1.34}}}}
"
    );
    capo_testkit::apply_yaml(&client, &ns, &template, false)
        .await
        .unwrap()
        .unwrap();

    // Gate off (the default): the template is never reconciled.
    let namespace = format!("--namespace={ns}");
    let mut m = Manager::start(env.kubeconfig_path(), &[&namespace]);
    m.wait_ok("/readyz", 60).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(template_capacity(&client, &ns, "md-0").await, None);
    let (_, body) = get(m.metrics, "/metrics").await.unwrap();
    assert!(!body.contains("controller=\"openstackmachinetemplate\""));
    assert_eq!(m.terminate().await.code(), Some(0));

    // Gate on, with its concurrency flag: capacity from the flavor.
    let mut m = Manager::start(
        env.kubeconfig_path(),
        &[
            &namespace,
            "--feature-gates=AutoScaleFromZero=true",
            "--openstackmachinetemplate-concurrency=2",
        ],
    );
    m.wait_ok("/readyz", 60).await;
    let want = serde_json::json!({"cpu": "2", "memory": "4Gi", "storage": "40Gi"});
    let deadline = Instant::now() + Duration::from_secs(60);
    while template_capacity(&client, &ns, "md-0").await.as_ref() != Some(&want) {
        let got = template_capacity(&client, &ns, "md-0").await;
        assert!(Instant::now() < deadline, "capacity {got:?}, want {want}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The reconcile is counted when it returns, just after its status write: poll.
    let metric = "capo_controller_reconciles_total{controller=\"openstackmachinetemplate\"}";
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, body) = get(m.metrics, "/metrics").await.unwrap();
        if body.contains(metric) {
            break;
        }
        assert!(Instant::now() < deadline, "no template reconcile metrics");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(m.terminate().await.code(), Some(0));
}

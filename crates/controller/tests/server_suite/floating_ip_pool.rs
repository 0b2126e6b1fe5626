//! The OpenStackFloatingIPPool controller against a real kube-apiserver and capo-sim: claims
//! answered (pre-allocated addresses first), Retain and Delete, maxIPs, a missing network,
//! pool deletion blocked by its addresses, and the controller killed at every step. After
//! each: every floating IP the pool allocated is claimed by exactly one IPAddress or listed as
//! available (nothing leaked, nothing handed out twice).
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::common::{Harness, poll};
use capo_api::v1alpha1::OpenStackFloatingIPPool;
use capo_controller::conditions::{self, is_true};
use capo_controller::{Context, ipam};
use capo_openstack::network::{self as net, FLOATING_IP, FloatingIp, FloatingIpCreate};
use capo_sim::control::FaultSpec;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

/// A running pool controller (a fresh context: like a manager restart); killed on drop.
pub struct PoolController {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PoolController {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

/// Start the pool controller.
pub fn start_pool(h: &Harness) -> PoolController {
    start_pool_with(h, h.client.clone())
}

/// Start the pool controller on `client`.
fn start_pool_with(h: &Harness, client: kube::Client) -> PoolController {
    let ctx = Context::new(client, h.sessions.clone(), h.options.clone());
    let (stop, mut rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(capo_controller::pool::run(ctx, async move {
        let _ = rx.wait_for(|v| *v).await;
    }));
    PoolController { stop, task }
}

/// A Kubernetes client that pauses after each write it made (not after reads), so that a kill
/// noticed after a write lands before the next one.
async fn client_pausing_after_writes(pause: Duration) -> kube::Client {
    let env = capo_testkit::shared_env().await.unwrap();
    kube::client::ClientBuilder::try_from(env.config().clone())
        .unwrap()
        .with_layer(&PauseAfterWrites(pause))
        .build()
}

#[derive(Clone, Copy)]
struct PauseAfterWrites(Duration);

impl<S> tower_layer::Layer<S> for PauseAfterWrites {
    type Service = Pausing<S>;
    fn layer(&self, inner: S) -> Pausing<S> {
        Pausing(inner, self.0)
    }
}

struct Pausing<S>(S, Duration);

impl<S, B> tower_service::Service<http::Request<B>> for Pausing<S>
where
    S: tower_service::Service<http::Request<B>>,
    S::Future: Send + 'static,
    S::Response: Send,
    S::Error: Send,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let write = req.method() != http::Method::GET;
        let pause = self.1;
        let reply = self.0.call(req);
        Box::pin(async move {
            let r = reply.await;
            if write {
                tokio::time::sleep(pause).await;
            }
            r
        })
    }
}

/// Apply pool `name` with the identity of the harness and `rest` (spec lines).
pub async fn apply_pool(h: &Harness, name: &str, rest: &str) {
    let rest = crate::common::indent(rest, 2);
    h.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: OpenStackFloatingIPPool
metadata:
  name: {name}
spec:
  identityRef:
    name: cloud-config
    cloudName: openstack
{rest}"
    ))
    .await;
}

fn pools(h: &Harness) -> Api<OpenStackFloatingIPPool> {
    Api::namespaced(h.client.clone(), &h.ns)
}

/// Create claim `name` on pool `pool`, as a server does.
pub(crate) async fn claim(h: &Harness, name: &str, pool: &str) {
    h.apply(&format!(
        "apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata:
  name: {name}
spec:
  poolRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: OpenStackFloatingIPPool
    name: {pool}
"
    ))
    .await;
}

/// The address claim `name` was given (waits for it).
pub(crate) async fn address_of(h: &Harness, name: &str) -> String {
    let claims = ipam::claims(&h.client, &h.ns);
    let addresses = ipam::addresses(&h.client, &h.ns);
    poll(
        30,
        || async {
            let c = claims.get_opt(name).await.unwrap()?;
            let a = c.data["status"]["addressRef"]["name"].as_str()?.to_owned();
            let ip = addresses.get_opt(&a).await.unwrap()?;
            ip.data["spec"]["address"].as_str().map(str::to_owned)
        },
        || async { format!("claim {name} not served: {}", pool_status(h).await) },
    )
    .await
}

async fn pool_status(h: &Harness) -> String {
    let all = pools(h).list(&ListParams::default()).await.unwrap();
    let s: Vec<_> = all
        .items
        .into_iter()
        .map(|p| (p.name_any(), p.status))
        .collect();
    format!("{s:?}")
}

/// The IPAddresses of the namespace.
async fn ip_addresses(h: &Harness) -> Vec<DynamicObject> {
    ipam::addresses(&h.client, &h.ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

/// The project's floating IPs as the simulator holds them.
async fn floating_ips(h: &Harness) -> Vec<Value> {
    h.items()
        .await
        .get("floatingips")
        .cloned()
        .unwrap_or_default()
}

/// Floating IPs pool `pool` allocated (capo's description).
async fn allocated_by(h: &Harness, pool: &str) -> Vec<Value> {
    let prefix = format!(
        "capo floating IP of OpenStackFloatingIPPool {}/{pool} (",
        h.ns
    );
    floating_ips(h)
        .await
        .into_iter()
        .filter(|f| {
            f["description"]
                .as_str()
                .unwrap_or_default()
                .starts_with(&prefix)
        })
        .collect()
}

/// Nothing leaked or handed out twice: the IPAddresses of `pool` hold distinct addresses that
/// exist, and every floating IP the pool allocated is held by one or listed as available.
async fn assert_books_balance(h: &Harness, pool: &str) {
    let held: Vec<String> = ip_addresses(h)
        .await
        .iter()
        .filter(|a| ipam::floating_ip_pool_of(a) == Some(pool))
        .map(|a| a.data["spec"]["address"].as_str().unwrap().to_owned())
        .collect();
    let distinct: BTreeSet<&String> = held.iter().collect();
    assert_eq!(
        distinct.len(),
        held.len(),
        "an address handed out twice: {held:?}"
    );
    let all: BTreeSet<String> = floating_ips(h)
        .await
        .iter()
        .map(|f| f["floating_ip_address"].as_str().unwrap().to_owned())
        .collect();
    for a in &held {
        assert!(all.contains(a), "IPAddress {a} has no floating IP");
    }
    let p = pools(h).get(pool).await.unwrap();
    let available = p.status.map(|s| s.available_ips).unwrap_or_default();
    for f in allocated_by(h, pool).await {
        let ip = f["floating_ip_address"].as_str().unwrap().to_owned();
        assert!(
            held.contains(&ip) || available.contains(&ip),
            "floating IP {ip} leaked: neither claimed ({held:?}) nor available ({available:?})"
        );
        let tag = format!("cluster-api-provider-openstack-fip-pool-{pool}");
        assert!(f["tags"].as_array().unwrap().contains(&json!(tag)), "{f}");
    }
}

/// Wait until pool `name` satisfies `pred`.
async fn wait_pool(
    h: &Harness,
    name: &str,
    what: &str,
    pred: impl Fn(&OpenStackFloatingIPPool) -> bool,
) -> OpenStackFloatingIPPool {
    poll(
        30,
        || async {
            let p = pools(h).get_opt(name).await.unwrap()?;
            pred(&p).then_some(p)
        },
        || async { format!("timed out waiting for {what}: {}", pool_status(h).await) },
    )
    .await
}

fn condition_reason(p: &OpenStackFloatingIPPool, type_: &str) -> Option<String> {
    let conds = &p.status.as_ref()?.conditions;
    conditions::get(conds, type_).map(|c| c.reason.clone())
}

async fn delete_claim(h: &Harness, name: &str) {
    ipam::claims(&h.client, &h.ns)
        .delete(name, &Default::default())
        .await
        .unwrap();
    poll(
        30,
        || async {
            let gone = ipam::addresses(&h.client, &h.ns)
                .get_opt(name)
                .await
                .unwrap()
                .is_none();
            gone.then_some(())
        },
        || async { format!("IPAddress {name} not released: {}", pool_status(h).await) },
    )
    .await;
}

/// A floating IP on the external network made by the user (for preAllocatedFloatingIPs).
async fn user_floating_ip(h: &Harness) -> FloatingIp {
    let s = h.session();
    let ext: Vec<capo_openstack::network::Network> = net::list(
        &s,
        capo_openstack::network::NETWORK,
        &net::ListFilter::default().with("router:external", "true"),
    )
    .await
    .unwrap();
    let body = FloatingIpCreate {
        floating_network_id: ext[0].id.clone(),
        description: Some("the user's".into()),
        ..Default::default()
    };
    net::create(&s, FLOATING_IP, &body).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_served_pre_allocated_first_and_retained_addresses_reused() {
    let h = Harness::new("pool-retain").await;
    let mine = user_floating_ip(&h).await;
    let _c = start_pool(&h);
    apply_pool(
        &h,
        "p",
        &format!(
            "reclaimPolicy: Retain\npreAllocatedFloatingIPs:\n- {}\n- 198.51.100.77\n",
            mine.floating_ip_address
        ),
    )
    .await;
    claim(&h, "c1", "p").await;
    assert_eq!(address_of(&h, "c1").await, mine.floating_ip_address);
    claim(&h, "c2", "p").await;
    claim(&h, "c3", "p").await;
    let a2 = address_of(&h, "c2").await;
    let a3 = address_of(&h, "c3").await;
    assert_ne!(a2, a3);
    assert_eq!(allocated_by(&h, "p").await.len(), 2);
    let ip = ipam::addresses(&h.client, &h.ns).get("c2").await.unwrap();
    assert_eq!(ip.data["spec"]["prefix"], 32);
    assert_eq!(ip.data["spec"]["claimRef"]["name"], "c2");
    assert_eq!(
        ip.data["spec"]["poolRef"]["kind"],
        "OpenStackFloatingIPPool"
    );
    assert_eq!(
        ip.finalizers(),
        ["openstackfloatingippool.infrastructure.cluster.x-k8s.io/delete-floating-ip"]
    );
    assert_eq!(ip.owner_references()[0].kind, "IPAddressClaim");
    let p = wait_pool(&h, "p", "three claimed", |p| {
        p.status.as_ref().is_some_and(|s| s.claimed_ips.len() == 3)
    })
    .await;
    let st = p.status.clone().unwrap();
    assert_eq!(st.failed_ips, vec!["198.51.100.77"]);
    assert_eq!(st.floating_ip_network.unwrap().name, "public");
    assert!(is_true(
        &st.conditions,
        "OpenstackFloatingIPPoolReadyCondition"
    ));

    // Retain: the address goes back to the pool and is reused, nothing new is allocated.
    delete_claim(&h, "c2").await;
    let p = wait_pool(&h, "p", "c2's address available", |p| {
        p.status
            .as_ref()
            .is_some_and(|s| s.available_ips.contains(&a2))
    })
    .await;
    assert_eq!(p.status.unwrap().claimed_ips.len(), 2);
    assert!(
        floating_ips(&h)
            .await
            .iter()
            .any(|f| f["floating_ip_address"] == json!(a2))
    );
    claim(&h, "c4", "p").await;
    assert_eq!(address_of(&h, "c4").await, a2);
    assert_eq!(allocated_by(&h, "p").await.len(), 2);
    assert_books_balance(&h, "p").await;

    // Pool deletion waits for its addresses, then releases what it allocated; the user's
    // pre-allocated address stays.
    pools(&h).delete("p", &Default::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let p = pools(&h).get("p").await.unwrap();
    assert!(
        p.metadata.deletion_timestamp.is_some(),
        "blocked while IPAddresses exist"
    );
    for c in ["c1", "c3", "c4"] {
        delete_claim(&h, c).await;
    }
    poll(
        30,
        || async {
            pools(&h)
                .get_opt("p")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        },
        || async { format!("pool not deleted: {}", pool_status(&h).await) },
    )
    .await;
    let left: Vec<String> = floating_ips(&h)
        .await
        .iter()
        .map(|f| f["floating_ip_address"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(left, vec![mine.floating_ip_address.clone()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_policy_releases_the_floating_ip_with_its_address() {
    let h = Harness::new("pool-delete").await;
    let _c = start_pool(&h);
    apply_pool(&h, "p", "reclaimPolicy: Delete\n").await;
    claim(&h, "c1", "p").await;
    claim(&h, "c2", "p").await;
    let a1 = address_of(&h, "c1").await;
    address_of(&h, "c2").await;
    assert_eq!(allocated_by(&h, "p").await.len(), 2);
    delete_claim(&h, "c1").await;
    let left = allocated_by(&h, "p").await;
    assert_eq!(left.len(), 1);
    assert_ne!(left[0]["floating_ip_address"], json!(a1));
    assert_books_balance(&h, "p").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_ips_reached_then_served_when_raised() {
    let h = Harness::new("pool-max").await;
    let _c = start_pool(&h);
    apply_pool(&h, "p", "reclaimPolicy: Delete\nmaxIPs: 1\n").await;
    claim(&h, "c1", "p").await;
    address_of(&h, "c1").await;
    claim(&h, "c2", "p").await;
    wait_pool(&h, "p", "MaxIPsReached", |p| {
        condition_reason(p, "OpenstackFloatingIPPoolReadyCondition").as_deref()
            == Some("MaxIPsReached")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        allocated_by(&h, "p").await.len(),
        1,
        "no allocation beyond maxIPs"
    );
    let c2 = ipam::claims(&h.client, &h.ns).get("c2").await.unwrap();
    assert!(c2.data["status"]["addressRef"]["name"].as_str().is_none());
    apply_pool(&h, "p", "reclaimPolicy: Delete\nmaxIPs: 2\n").await;
    address_of(&h, "c2").await;
    wait_pool(&h, "p", "ready again", |p| {
        p.status
            .as_ref()
            .is_some_and(|s| is_true(&s.conditions, "OpenstackFloatingIPPoolReadyCondition"))
    })
    .await;
    assert_books_balance(&h, "p").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_network_is_reported_and_converges_once_it_exists() {
    let h = Harness::new("pool-net").await;
    let _c = start_pool(&h);
    let name = format!("ext-{}", h.ns);
    apply_pool(
        &h,
        "p",
        &format!("reclaimPolicy: Delete\nfloatingIPNetwork:\n  filter:\n    name: {name}\n"),
    )
    .await;
    claim(&h, "c1", "p").await;
    let p = wait_pool(&h, "p", "UnableToFindNetwork", |p| {
        condition_reason(p, "OpenstackFloatingIPPoolReadyCondition").as_deref()
            == Some("UnableToFindNetwork")
    })
    .await;
    println!("missing network: {:?}", p.status.unwrap().conditions);
    assert!(floating_ips(&h).await.is_empty(), "nothing allocated");
    if h.cloud.is_real() {
        // A second external network on the shared real services would make the tests running
        // beside this one find two where they expect the only one.
        return;
    }
    // The cloud's admin adds the network; the pool finds it on its next (slow) retry.
    let admin = h.admin_session();
    let network = create_external_network(&admin, &name, "172.30.4.0/24").await;
    let a = address_of(&h, "c1").await;
    assert!(a.starts_with("172.30.4."), "{a}");
    let p = pools(&h).get("p").await.unwrap();
    assert_eq!(p.status.unwrap().floating_ip_network.unwrap().name, name);
    assert_books_balance(&h, "p").await;
    delete_claim(&h, "c1").await;
    assert!(
        floating_ips(&h).await.is_empty(),
        "released with its address"
    );
    net::delete(&admin, capo_openstack::network::NETWORK, &network)
        .await
        .unwrap();
}

/// An external network with a subnet, made by the cloud's admin; its ID.
async fn create_external_network(
    admin: &capo_openstack::Session,
    name: &str,
    cidr: &str,
) -> String {
    use capo_openstack::{Request, Service};
    let body = json!({"network": {"name": name, "router:external": true}});
    let req = Request::post(Service::Network, "networks", "test_network", body);
    let n: Value = admin.fetch(&req, "network").await.unwrap();
    let body = json!({"subnet": {"network_id": n["id"], "cidr": cidr, "ip_version": 4}});
    admin
        .send(&Request::post(
            Service::Network,
            "subnets",
            "test_subnet",
            body,
        ))
        .await
        .unwrap();
    n["id"].as_str().unwrap().to_owned()
}

/// How many claims of the namespace have an address.
async fn served(h: &Harness) -> usize {
    let list = ipam::claims(&h.client, &h.ns)
        .list(&ListParams::default())
        .await
        .unwrap();
    list.items
        .iter()
        .filter(|c| c.data["status"]["addressRef"]["name"].is_string())
        .count()
}

/// What the writes so far left: Neutron's writes, the IPAddresses, the served claims and the
/// pool's resourceVersion (its finalizer and status).
async fn progress(h: &Harness) -> (usize, usize, usize, String) {
    let writes = h.writes().len();
    let p = pools(h).get("p").await.unwrap();
    let rv = p.resource_version().unwrap_or_default();
    (writes, ip_addresses(h).await.len(), served(h).await, rv)
}

/// Clear claim `name`'s addressRef (the state a crash between the IPAddress create and the
/// claim's status write leaves).
async fn clear_address_ref(h: &Harness, name: &str) {
    ipam::claims(&h.client, &h.ns)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": null})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_every_write_nothing_leaks_or_is_handed_out_twice() {
    let h = Harness::new("pool-crash").await;
    apply_pool(&h, "p", "reclaimPolicy: Delete\n").await;
    for c in ["c1", "c2", "c3"] {
        claim(&h, c, "p").await;
    }
    // Each Neutron call takes a while and the controller pauses after each of its Kubernetes
    // writes, so a kill noticed after one write lands before the next.
    h.sim()
        .control()
        .set_latency([("network".to_owned(), 60)].into_iter().collect());
    let slow = client_pausing_after_writes(Duration::from_millis(60)).await;
    let mut kills = 0;
    let mut seen = progress(&h).await;
    while served(&h).await < 3 {
        let c = start_pool_with(&h, slow.clone());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let now = progress(&h).await;
            if now != seen {
                println!("kill {kills} after {now:?}");
                break;
            }
            assert!(Instant::now() < deadline, "no progress after {kills} kills");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(c);
        kills += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = progress(&h).await;
    }
    println!("killed the pool controller {kills} times");
    // Finalizer, network in status, and per claim: allocation, tag, IPAddress, claim status
    // (14 writes; a kill may land after two when the second follows at once; the points in
    // between that a kill misses are made exactly below).
    assert!(kills >= 8, "killed {kills} times only");
    let _c = start_pool(&h);
    wait_pool(&h, "p", "three claimed", |p| {
        p.status.as_ref().is_some_and(|s| s.claimed_ips.len() == 3)
    })
    .await;
    assert_eq!(
        allocated_by(&h, "p").await.len(),
        3,
        "one floating IP per claim"
    );
    assert_books_balance(&h, "p").await;
    drop(_c);

    // The crash points a kill may miss, made exactly. A lost reply to the allocation, then a
    // failed tag write (the floating IP exists, untagged, recorded nowhere):
    h.sim().control().set_latency(Default::default());
    h.sim()
        .control()
        .add_faults(vec![
            FaultSpec {
                method: Some("POST".into()),
                path_regex: "/floatingips$".into(),
                status: 500,
                count: Some(1),
                after_action: true,
                ..Default::default()
            },
            FaultSpec {
                method: Some("PUT".into()),
                path_regex: "/floatingips/.*/tags".into(),
                status: 500,
                count: Some(1),
                ..Default::default()
            },
        ])
        .unwrap();
    let _c = start_pool(&h);
    claim(&h, "c4", "p").await;
    address_of(&h, "c4").await;
    let fired = h
        .sim()
        .control()
        .requests()
        .iter()
        .filter(|r| r.injected)
        .count();
    assert_eq!(fired, 2);
    assert_eq!(
        allocated_by(&h, "p").await.len(),
        4,
        "the lost allocation was used"
    );
    assert_books_balance(&h, "p").await;
    drop(_c);

    // Killed after the IPAddress, before the claim's status: the same address is completed.
    let before = address_of(&h, "c4").await;
    clear_address_ref(&h, "c4").await;
    let _c = start_pool(&h);
    assert_eq!(address_of(&h, "c4").await, before);
    drop(_c);

    // Killed after the allocation, before the IPAddress: the floating IP is found unclaimed
    // and given to the claim, not allocated again.
    let addresses = ipam::addresses(&h.client, &h.ns);
    let ip = addresses.get("c4").await.unwrap();
    ipam::remove_finalizer(
        &addresses,
        &ip,
        "openstackfloatingippool.infrastructure.cluster.x-k8s.io/delete-floating-ip",
    )
    .await
    .unwrap();
    addresses.delete("c4", &Default::default()).await.unwrap();
    clear_address_ref(&h, "c4").await;
    let _c = start_pool(&h);
    assert_eq!(address_of(&h, "c4").await, before);
    assert_eq!(allocated_by(&h, "p").await.len(), 4);
    assert_books_balance(&h, "p").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_quota_is_reported_then_served_when_raised() {
    let h = Harness::new("pool-quota").await;
    h.set_neutron_quota("floatingip", 0).await;
    let _c = start_pool(&h);
    apply_pool(&h, "p", "reclaimPolicy: Delete\n").await;
    claim(&h, "c1", "p").await;
    let p = wait_pool(&h, "p", "the cloud's refusal", |p| {
        let conds = p
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default();
        conditions::get(&conds, "OpenstackFloatingIPPoolReadyCondition")
            .is_some_and(|c| c.reason == "OpenStackError" && c.message.contains("uota"))
    })
    .await;
    println!("quota: {:?}", p.status.unwrap().conditions);
    assert!(floating_ips(&h).await.is_empty());
    h.set_neutron_quota("floatingip", 10).await;
    address_of(&h, "c1").await;
    assert_books_balance(&h, "p").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_of_a_paused_cluster_wait_for_it() {
    let h = Harness::new("pool-pause").await;
    h.set_cluster_paused("c1", true).await;
    let _c = start_pool(&h);
    apply_pool(&h, "p", "reclaimPolicy: Delete\n").await;
    h.apply(
        "apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata:
  name: paused-claim
spec:
  clusterName: c1
  poolRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: OpenStackFloatingIPPool
    name: p
",
    )
    .await;
    claim(&h, "free", "p").await;
    address_of(&h, "free").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let c = ipam::claims(&h.client, &h.ns)
        .get("paused-claim")
        .await
        .unwrap();
    assert!(
        c.data["status"]["addressRef"].is_null(),
        "served while paused"
    );
    assert_eq!(allocated_by(&h, "p").await.len(), 1);
    h.set_cluster_paused("c1", false).await;
    address_of(&h, "paused-claim").await;
    assert_books_balance(&h, "p").await;
}

/// The pool's requests: one list of the project's floating IPs per reconcile, one allocation
/// and one tag write per new address, one delete per released address (sim only: reads the
/// simulator's request log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn economy_of_a_pool() {
    let h = Harness::new("pool-economy").await;
    let _c = start_pool(&h);
    apply_pool(&h, "p", "reclaimPolicy: Delete\n").await;
    wait_pool(&h, "p", "network resolved", |p| {
        p.status
            .as_ref()
            .is_some_and(|s| s.floating_ip_network.is_some())
    })
    .await;
    h.sim().control().clear_requests();
    for c in ["c1", "c2", "c3"] {
        claim(&h, c, "p").await;
    }
    for c in ["c1", "c2", "c3"] {
        address_of(&h, c).await;
    }
    let writes = h.writes();
    println!(
        "3 claims: {} requests, writes {writes:?}",
        h.requests().len()
    );
    let count = |w: &str| writes.iter().filter(|r| r.as_str() == w).count();
    assert_eq!(count("POST /network/v2.0/floatingips"), 3, "{writes:?}");
    assert_eq!(
        writes.len(),
        6,
        "one allocation and one tag write each: {writes:?}"
    );
    h.sim().control().clear_requests();
    delete_claim(&h, "c2").await;
    let writes = h.writes();
    println!(
        "1 release: {} requests, writes {writes:?}",
        h.requests().len()
    );
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(writes[0].starts_with("DELETE "), "{writes:?}");
}

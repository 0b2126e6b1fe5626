//! OpenStackCluster lifecycle against a real kube-apiserver and capo-sim: create, steady,
//! delete, for the main network layouts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use capo_api::v1alpha1::OpenStackClusterIdentity;
use capo_controller::identity_secret::IDENTITY_IN_USE_FINALIZER;
use common::{Harness, poll};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::DeleteParams;

const MANAGED_LB: &str = "identityRef:
  name: cloud-config
  cloudName: openstack
managedSubnets:
- cidr: 10.6.0.0/24
  dnsNameservers: [10.0.0.2]
apiServerLoadBalancer:
  enabled: true
managedSecurityGroups:
  allowAllInClusterTraffic: false
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_network_with_load_balancer_create_steady_delete() {
    let mut h = Harness::new("lb").await;
    h.start();
    let memo_at_start = h.memo_sizes();
    // Every (internalIP, ip) the status shows while the cluster is made, read every 20 ms.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let watcher = {
        let (api, seen) = (h.clusters(), seen.clone());
        tokio::spawn(async move {
            loop {
                let lb = (api.get_opt("c1").await.ok().flatten())
                    .and_then(|o| o.status)
                    .and_then(|s| s.api_server_load_balancer);
                if let Some(lb) = lb {
                    let pair = (lb.internal_ip, lb.ip);
                    let mut seen = seen.lock().unwrap();
                    if seen.last() != Some(&pair) {
                        seen.push(pair);
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    h.create_cluster("c1", MANAGED_LB).await;
    let o = h.wait_ready("c1").await;
    watcher.abort();
    let st = o.status.clone().unwrap();
    let ep = o.spec.control_plane_endpoint.clone().unwrap();
    let lb = st.api_server_load_balancer.clone().unwrap();
    assert_eq!(
        ep.host.as_deref(),
        Some(lb.ip.as_str()),
        "endpoint is the LB floating IP"
    );
    assert_eq!(ep.port, Some(6443));
    assert!(lb.ip.starts_with("172.24.4."), "{lb:?}");
    // What upstream writes, phase by phase: the VIP in internalIP from the first write, `ip`
    // empty until the floating IP exists and then that address; never the VIP in `ip` (readers
    // take `ip` as the public address).
    let seen = seen.lock().unwrap().clone();
    println!("apiServerLoadBalancer (internalIP, ip) as seen: {seen:?}");
    assert!(!seen.is_empty());
    for (internal, ip) in &seen {
        assert_eq!(internal, &lb.internal_ip, "{seen:?}");
        assert!(ip.is_empty() || ip == &lb.ip, "{seen:?}");
    }
    assert_eq!(st.network.as_ref().unwrap().subnets.len(), 1);
    assert!(st.router.is_some());
    assert!(st.control_plane_security_group.is_some() && st.worker_security_group.is_some());
    assert_eq!(
        st.initialization.as_ref().and_then(|i| i.provisioned),
        Some(true)
    );
    for c in [
        "Ready",
        "NetworkReady",
        "RouterReady",
        "SecurityGroupsReady",
        "APIEndpointReady",
    ] {
        assert!(
            capo_controller::conditions::is_true(&st.conditions, c),
            "{c}: {:?}",
            st.conditions
        );
    }
    assert_eq!(st.failure_domains.len(), 2, "{:?}", st.failure_domains);
    let inv = h.inventory().await;
    assert_eq!(inv.get("networks"), Some(&1), "{inv:?}");
    assert_eq!(inv.get("loadbalancers"), Some(&1), "{inv:?}");
    assert_eq!(inv.get("floatingips"), Some(&1), "{inv:?}");

    assert_eq!(
        o.metadata.finalizers.as_deref(),
        Some(&["openstackcluster.infrastructure.cluster.x-k8s.io".to_owned()][..])
    );
    // Converged: the network layer and the whole cluster are remembered, with the periodic look.
    let memo = h.memo_sizes();
    assert_eq!((memo.converged, memo.resyncs), (2, 1), "{memo:?}");
    h.delete_cluster("c1").await;
    h.wait_gone("c1", 60).await;
    let inv = h.inventory().await;
    assert!(inv.is_empty(), "left behind: {inv:?}");
    // Nothing of the deleted cluster is remembered (the network layer's entry used to stay).
    assert_eq!(h.memo_sizes(), memo_at_start);
}

/// A cluster with no load balancer and a non-default API port.
fn no_lb() -> String {
    common::open_spec("10.7.0.0/24", "apiServerPort: 8443\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_load_balancer_the_endpoint_is_a_floating_ip_deleted_with_the_cluster() {
    let mut h = Harness::new("nolb").await;
    h.start();
    h.create_cluster("c2", &no_lb()).await;
    let o = h.wait_ready("c2").await;
    let ep = o.spec.control_plane_endpoint.clone().unwrap();
    assert!(
        ep.host.as_deref().unwrap().starts_with("172.24.4."),
        "{ep:?}"
    );
    assert_eq!(ep.port, Some(8443), "apiServerPort is the endpoint port");
    assert!(
        o.status
            .as_ref()
            .unwrap()
            .api_server_load_balancer
            .is_none()
    );
    let inv = h.inventory().await;
    assert_eq!(inv.get("floatingips"), Some(&1), "{inv:?}");
    assert_eq!(inv.get("loadbalancers"), None, "{inv:?}");
    // The API rule follows apiServerPort (upstream hard-codes 6443).
    let items = h.items().await;
    let api_rule = items["security_group_rules"]
        .iter()
        .any(|r| r["port_range_min"] == 8443 && r["direction"] == "ingress");
    assert!(api_rule, "no ingress rule for 8443");
    h.delete_cluster("c2").await;
    h.wait_gone("c2", 60).await;
    assert!(
        h.inventory().await.is_empty(),
        "left behind: {:?}",
        h.inventory().await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_existing_network_by_id_and_by_filter_dual_stack_and_byo_router_are_never_deleted() {
    use capo_openstack::network::{self as net, Network, Subnet};
    let mut h = Harness::new("byo").await;
    let s = h.session();
    let netw: Network = net::create(&s, net::NETWORK, &serde_json::json!({"name": "user-net"}))
        .await
        .unwrap();
    let v4: Subnet = net::create(
        &s,
        net::SUBNET,
        &serde_json::json!({"name": "user-v4", "network_id": netw.id, "cidr": "10.9.0.0/24", "ip_version": 4}),
    )
    .await
    .unwrap();
    let _v6: Subnet = net::create(
        &s,
        net::SUBNET,
        &serde_json::json!({"name": "user-v6", "network_id": netw.id, "cidr": "fd00:9::/64", "ip_version": 6, "ipv6_address_mode": "slaac", "ipv6_ra_mode": "slaac"}),
    )
    .await
    .unwrap();
    let router: serde_json::Value =
        net::create(&s, net::ROUTER, &serde_json::json!({"name": "user-router"}))
            .await
            .unwrap();
    let before = h.inventory().await;
    h.start();
    // By network id, both subnets by filter (dual stack), BYO router by name.
    h.create_cluster(
        "by-id",
        &format!(
            "identityRef:
  name: cloud-config
  cloudName: openstack
network:
  id: {}
subnets:
- filter:
    name: user-v4
- filter:
    name: user-v6
router:
  filter:
    name: user-router
disableAPIServerFloatingIP: true
apiServerFixedIP: 10.9.0.10
",
            netw.id
        ),
    )
    .await;
    let o = h.wait_ready("by-id").await;
    let st = o.status.clone().unwrap();
    assert_eq!(st.network.as_ref().unwrap().id, netw.id);
    assert_eq!(st.network.as_ref().unwrap().subnets.len(), 2);
    assert_eq!(
        st.router.as_ref().unwrap().id,
        router["id"].as_str().unwrap()
    );
    assert_eq!(
        o.spec.control_plane_endpoint.unwrap().host.as_deref(),
        Some("10.9.0.10")
    );
    // The network inferred from a subnet (no spec.network).
    h.create_cluster(
        "by-filter",
        &format!(
            "identityRef:
  name: cloud-config
  cloudName: openstack
subnets:
- id: {}
disableAPIServerFloatingIP: true
apiServerFixedIP: 10.9.0.11
managedSecurityGroups: {{}}
",
            v4.id
        ),
    )
    .await;
    let o2 = h.wait_ready("by-filter").await;
    assert_eq!(o2.status.unwrap().network.unwrap().id, netw.id);
    for name in ["by-id", "by-filter"] {
        h.delete_cluster(name).await;
        h.wait_gone(name, 60).await;
    }
    assert_eq!(
        h.inventory().await,
        before,
        "user resources must survive, ours must go"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_cluster_makes_no_cloud_call_until_unpaused() {
    let mut h = Harness::new("paused").await;
    h.start();
    h.sim().control().clear_requests();
    h.create_cluster_paused("p1", &no_lb(), true).await;
    let o = h
        .wait_cluster("p1", 30, "Paused condition", |o| {
            o.status
                .as_ref()
                .is_some_and(|s| capo_controller::conditions::is_true(&s.conditions, "Paused"))
        })
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        h.requests().is_empty(),
        "paused cluster called OpenStack: {:?}",
        h.requests()
    );
    assert!(o.metadata.finalizers.is_none(), "no finalizer while paused");
    h.set_cluster_paused("p1", false).await;
    let o = h.wait_ready("p1").await;
    let paused = capo_controller::conditions::get(&o.status.as_ref().unwrap().conditions, "Paused")
        .map(|c| c.status.clone());
    assert_eq!(
        paused.as_deref(),
        Some("False"),
        "Paused=False after unpause"
    );
    h.delete_cluster("p1").await;
    h.wait_gone("p1", 60).await;
}

/// Secret `name` of the test namespace as (finalizers, being deleted); `None` once gone.
async fn secret_state(h: &Harness, name: &str) -> Option<(Vec<String>, bool)> {
    let api = Api::<Secret>::namespaced(h.client.clone(), &h.ns);
    let meta = api.get_metadata_opt(name).await.expect("get Secret");
    meta.map(|m| {
        let deleting = m.metadata.deletion_timestamp.is_some();
        (m.metadata.finalizers.unwrap_or_default(), deleting)
    })
}

/// Whether the Secret carries the identity finalizer.
fn guarded(state: &Option<(Vec<String>, bool)>) -> bool {
    state
        .as_ref()
        .is_some_and(|(f, _)| f.iter().any(|f| f == IDENTITY_IN_USE_FINALIZER))
}

/// A Secret no capo object names, in the test namespace.
async fn create_unused_secret(h: &Harness, name: &str) {
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": h.ns},
        "stringData": {"clouds.yaml": "clouds: {}\n"},
    }))
    .unwrap();
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .create(&Default::default(), &secret)
        .await
        .unwrap();
}

/// GitOps order: the identity Secret deleted before the cluster. It stays (terminating)
/// while the cluster uses it, the cluster's deletion still authenticates and leaves nothing,
/// then the Secret goes. A Secret nothing names is never touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_secret_deleted_first_stays_until_the_cluster_using_it_is_gone() {
    let mut h = Harness::new("idfirst").await;
    // Every reconcile reads the Secret: without the finalizer the deletion would fail.
    h.options.identity_read_max_age = Duration::ZERO;
    create_unused_secret(&h, "unused").await;
    h.start();
    h.start_identity_finalizer();
    h.create_cluster("c5", &common::open_spec("10.9.0.0/24", ""))
        .await;
    poll(
        30,
        || async { guarded(&secret_state(&h, "cloud-config").await).then_some(()) },
        || async { format!("no finalizer: {:?}", secret_state(&h, "cloud-config").await) },
    )
    .await;
    h.wait_ready("c5").await;

    // `kubectl delete secret cloud-config`.
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .delete("cloud-config", &DeleteParams::default())
        .await
        .unwrap();
    let state = secret_state(&h, "cloud-config").await;
    assert!(
        guarded(&state) && state.as_ref().is_some_and(|s| s.1),
        "the Secret is terminating and kept: {state:?}"
    );

    h.delete_cluster_leaving_nothing("c5").await;
    poll(
        30,
        || async {
            secret_state(&h, "cloud-config")
                .await
                .is_none()
                .then_some(())
        },
        || async {
            format!(
                "Secret not released: {:?}",
                secret_state(&h, "cloud-config").await
            )
        },
    )
    .await;
    let unused = secret_state(&h, "unused").await;
    assert_eq!(unused, Some((Vec::new(), false)), "never touched");
}

/// Two clusters share the Secret, one naming it directly and one through an
/// OpenStackClusterIdentity; deleted at the same time, the finalizer stays while either exists
/// and is removed once both are gone (the Secret itself stays: nobody deleted it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_sharing_an_identity_secret_release_it_with_the_last() {
    let mut h = Harness::new("idshared").await;
    // Cluster-scoped: named after the test's unique namespace.
    let identity = h.ns.clone();
    let identities = Api::<OpenStackClusterIdentity>::all(h.client.clone());
    create_cluster_identity(&h, &h.ns).await;
    h.start();
    h.start_identity_finalizer();
    h.create_cluster("c6", &common::open_spec("10.10.0.0/24", ""))
        .await;
    let through_identity = common::open_spec("10.11.0.0/24", "").replace(
        "identityRef:\n  name: cloud-config\n",
        &format!("identityRef:\n  type: ClusterIdentity\n  name: {identity}\n"),
    );
    h.create_cluster("c7", &through_identity).await;
    h.wait_ready("c6").await;
    h.wait_ready("c7").await;
    assert!(guarded(&secret_state(&h, "cloud-config").await));

    h.delete_cluster("c6").await;
    h.delete_cluster("c7").await;
    // Sampled until both are gone: the Secret is read first, so a Secret seen without the
    // finalizer means both clusters were already gone when it was read.
    let clusters = h.clusters();
    poll(
        120,
        || async {
            let state = secret_state(&h, "cloud-config").await;
            let left = [
                clusters.get_opt("c6").await.unwrap().is_some(),
                clusters.get_opt("c7").await.unwrap().is_some(),
            ];
            if left.contains(&true) {
                assert!(guarded(&state), "released while {left:?} exist: {state:?}");
                None
            } else {
                Some(())
            }
        },
        || async { "the clusters were not deleted".to_owned() },
    )
    .await;
    poll(
        30,
        || async {
            let state = secret_state(&h, "cloud-config").await;
            (state.is_some() && !guarded(&state)).then_some(())
        },
        || async {
            format!(
                "finalizer stuck: {:?}",
                secret_state(&h, "cloud-config").await
            )
        },
    )
    .await;
    let inv = h.inventory().await;
    assert!(inv.is_empty(), "left behind: {inv:?}");
    identities
        .delete(&identity, &DeleteParams::default())
        .await
        .unwrap();
}

/// A rule added by hand to a converged cluster's security group goes once the strict-rules
/// annotation is set: the annotation is an input of the network layer, whose memo entry would
/// otherwise skip the security groups until the verify period (here an hour).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_rules_annotation_on_a_converged_cluster_removes_rules_added_by_hand() {
    use capo_openstack::{Request, Service};
    let mut h = Harness::new("strict").await;
    h.options.verify_period = Duration::from_secs(3600);
    h.start();
    h.create_cluster("s1", MANAGED_LB).await;
    let o = h.wait_ready("s1").await;
    let sg = o.status.unwrap().control_plane_security_group.unwrap().id;
    let rule: serde_json::Value = h
        .session()
        .send_json(&Request::post(
            Service::Network,
            "security-group-rules",
            "test_hand_rule",
            serde_json::json!({"security_group_rule": {
                "security_group_id": sg, "direction": "ingress", "ethertype": "IPv4",
                "protocol": "tcp", "port_range_min": 2222, "port_range_max": 2222,
                "remote_ip_prefix": "192.0.2.0/24"}}),
        ))
        .await
        .expect("add a rule by hand");
    let id = rule["security_group_rule"]["id"].clone();
    let present = |items: &std::collections::BTreeMap<String, Vec<serde_json::Value>>| {
        items
            .get("security_group_rules")
            .is_some_and(|rules| rules.iter().any(|r| r["id"] == id))
    };
    assert!(present(&h.items().await), "the hand rule was made");
    // Not strict: the hand rule stays through a steady reconcile.
    h.clusters()
        .patch(
            "s1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"nudge": "1"}}})),
        )
        .await
        .expect("label");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        present(&h.items().await),
        "left alone without the annotation"
    );
    let strict = capo_api::constants::STRICT_RULES_ANNOTATION;
    h.clusters()
        .patch(
            "s1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                serde_json::json!({"metadata": {"annotations": {strict: "true"}}}),
            ),
        )
        .await
        .expect("annotate");
    poll(
        30,
        || async { (!present(&h.items().await)).then_some(()) },
        || async { "the hand rule is still there under the strict-rules annotation".into() },
    )
    .await;
    h.delete_cluster("s1").await;
    h.wait_gone("s1", 60).await;
}

/// A wrong password put into the identity Secret of a converged cluster is reported at the next
/// sync once the Secret's shared read is stale (here after a second; a minute in the manager):
/// `Ready=False` with reason `InvalidCredentials`, the password nowhere in the status; the right
/// one again brings the cluster back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_secret_edited_on_a_converged_cluster_is_used_within_a_sync_period() {
    use k8s_openapi::ByteString;
    let mut h = Harness::new("rotate").await;
    h.options.identity_read_max_age = Duration::from_secs(1);
    h.options.sync_period = Duration::from_secs(2);
    h.options.verify_period = Duration::from_secs(3600);
    h.start();
    h.create_cluster("r1", &no_lb()).await;
    let o = h.wait_ready("r1").await;
    assert_eq!(
        authentication(&o),
        Some(("True".into(), "Ready".into(), String::new()))
    );
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), &h.ns);
    let set_password = |password: Option<&'static str>| {
        let mut doc: serde_json::Value = yaml_serde::from_str(&h.cloud.clouds_yaml()).unwrap();
        if let Some(p) = password {
            doc["clouds"][common::cloud::CLOUD]["auth"]["password"] = p.into();
        }
        let yaml = yaml_serde::to_string(&doc).unwrap();
        let secrets = secrets.clone();
        async move {
            let mut s = secrets.get("cloud-config").await.unwrap();
            s.data = Some([("clouds.yaml".to_owned(), ByteString(yaml.into_bytes()))].into());
            s.string_data = None;
            secrets
                .replace("cloud-config", &Default::default(), &s)
                .await
                .unwrap();
        }
    };
    set_password(Some("not-the-password")).await;
    let o = h
        .wait_cluster("r1", 20, "the wrong password seen", |o| {
            (o.status.as_ref()).is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.r#type == "Ready"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("InvalidCredentials")
                })
            })
        })
        .await;
    let (status, reason, message) = authentication(&o).unwrap_or_default();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "OpenStackAuthenticationFailed")
    );
    assert!(message.contains("401"), "{message}");
    assert!(!message.contains("not-the-password"), "{message}");
    println!("with the wrong password: {}", common::status_json(Some(o)));
    set_password(None).await;
    let o = h
        .wait_cluster("r1", 20, "ready again with the right password", |o| {
            o.status
                .as_ref()
                .is_some_and(|s| capo_controller::conditions::is_true(&s.conditions, "Ready"))
        })
        .await;
    assert_eq!(
        authentication(&o).map(|a| a.0).as_deref(),
        Some("True"),
        "authenticated again"
    );
    h.delete_cluster("r1").await;
    h.wait_gone("r1", 60).await;
}

/// The external network the clusters' floating IPs come from (the only one there is).
async fn external_network(h: &Harness) -> String {
    use capo_openstack::network::{self as net, ListFilter, NETWORK, Network};
    let nets: Vec<Network> = net::list(
        &h.session(),
        NETWORK,
        &ListFilter::default().with("router:external", "true"),
    )
    .await
    .unwrap();
    nets.first().expect("an external network").id.clone()
}

/// A control-plane endpoint set before capo made anything (by the user, who allocated the
/// floating IP it names, or kept through a move) gives the API floating IP and port, as
/// upstream reads it: capo associates that address with the load balancer instead of
/// allocating another one the endpoint would never name, the listener serves the endpoint's
/// port, and the address is left to its owner when the cluster goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preset_endpoint_names_the_api_floating_ip() {
    use capo_openstack::network::{self as net, FLOATING_IP, FloatingIp};
    let mut h = Harness::new("preset").await;
    h.start();
    let ext = external_network(&h).await;
    let s = h.session();
    let users: FloatingIp = net::create(
        &s,
        FLOATING_IP,
        &serde_json::json!({"floating_network_id": ext, "description": "the user's"}),
    )
    .await
    .unwrap();
    let address = users.floating_ip_address.clone();
    let spec = format!("{MANAGED_LB}controlPlaneEndpoint:\n  host: {address}\n  port: 7443\n");
    h.create_cluster("p1", &spec).await;
    let o = h.wait_ready("p1").await;
    let lb = o.status.unwrap().api_server_load_balancer.unwrap();
    assert_eq!(
        lb.ip, address,
        "the endpoint's address is the API floating IP"
    );
    let got: FloatingIp = net::get(&s, FLOATING_IP, &users.id).await.unwrap();
    let items = h.items().await;
    let vip_port = (items["loadbalancers"].first())
        .and_then(|l| l["vip_port_id"].as_str())
        .unwrap()
        .to_owned();
    assert_eq!(got.port_id.as_deref(), Some(vip_port.as_str()));
    assert_eq!(items["floatingips"].len(), 1, "no other floating IP");
    let ports: Vec<i64> = (items["listeners"].iter())
        .filter_map(|l| l["protocol_port"].as_i64())
        .collect();
    assert_eq!(ports, [7443], "the listener serves the endpoint's port");
    h.delete_cluster("p1").await;
    h.wait_gone("p1", 120).await;
    let left: Vec<String> = h.inventory().await.into_keys().collect();
    assert_eq!(left, ["floatingips"], "only the user's floating IP is left");
    net::delete(&s, FLOATING_IP, &users.id).await.unwrap();
}

/// With the VIP as the endpoint (no API floating IP), the load balancer's VIP is the address a
/// preset endpoint names, and a load balancer deleted behind capo's back is made again with
/// the VIP recorded in status: the endpoint, which never changes once set, keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_load_balancer_is_made_again_with_the_recorded_vip() {
    let mut h = Harness::new("relb").await;
    h.options.sync_period = Duration::from_secs(2);
    h.start();
    let spec = format!(
        "{MANAGED_LB}disableAPIServerFloatingIP: true\ncontrolPlaneEndpoint:\n  host: 10.6.0.77\n  port: 6443\n"
    );
    h.create_cluster("v1", &spec).await;
    let o = h.wait_ready("v1").await;
    let lb = o.status.unwrap().api_server_load_balancer.unwrap();
    assert_eq!(lb.internal_ip, "10.6.0.77", "the preset endpoint's address");
    assert_eq!(lb.ip, "");
    let delete = capo_openstack::Request::delete(
        capo_openstack::Service::LoadBalancer,
        format!("lbaas/loadbalancers/{}?cascade=true", lb.id),
        "test_delete",
    );
    h.session().send(&delete).await.unwrap();
    let o = h
        .wait_cluster("v1", 60, "a new load balancer, ready", |o| {
            (o.status.as_ref()).is_some_and(|s| {
                s.ready && (s.api_server_load_balancer.as_ref()).is_some_and(|l| l.id != lb.id)
            })
        })
        .await;
    let again = o.status.unwrap().api_server_load_balancer.unwrap();
    assert_eq!(again.internal_ip, "10.6.0.77", "the recorded VIP");
    let items = h.items().await;
    assert_eq!(items["loadbalancers"].len(), 1);
    assert_eq!(items["loadbalancers"][0]["vip_address"], "10.6.0.77");
    assert_eq!(
        o.spec.control_plane_endpoint.unwrap().host.as_deref(),
        Some("10.6.0.77")
    );
    h.delete_cluster("v1").await;
    h.wait_gone("v1", 60).await;
    assert!(h.inventory().await.is_empty());
}

/// Until Cluster API sets its owner reference, an OpenStackCluster is left alone: no
/// finalizer, no status, no cloud call (upstream's "should do nothing when owner is missing").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_its_owner_reference_gets_nothing_until_it_is_set() {
    let mut h = Harness::new("noowner").await;
    h.start();
    h.sim().control().clear_requests();
    let spec = common::indent(&no_lb(), 2);
    h.apply(&format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackCluster
metadata:
  name: o1
spec:
{spec}"
    ))
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let o = h.clusters().get("o1").await.unwrap();
    assert!(
        o.metadata.finalizers.is_none(),
        "{:?}",
        o.metadata.finalizers
    );
    assert!(o.status.is_none(), "{:?}", o.status);
    assert!(
        h.requests().is_empty(),
        "called OpenStack: {:?}",
        h.requests()
    );
    // The owner reference set (by creating through the harness): reconciled to Ready.
    h.create_cluster("o1", &no_lb()).await;
    h.wait_ready("o1").await;
    h.delete_cluster("o1").await;
    h.wait_gone("o1", 60).await;
}

/// Upstream's five "standard-attr-tag is not supported" cases (network, subnet, router,
/// security groups, port): upstream makes the resources untagged. capo's ownership is the tag
/// (it never adopts or deletes what it cannot prove its own), so on such a Neutron it makes
/// the first network only, says why in the Ready condition, and the deletion removes that
/// network (found by name, as after a crash between a create and its tag write).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_neutron_without_tags_is_named_in_the_condition_and_the_deletion_leaves_nothing() {
    let mut h = Harness::new("notags").await;
    h.sim().control().set_without_neutron_tags(true);
    h.start();
    h.create_cluster("t1", &no_lb()).await;
    let o = h
        .wait_cluster("t1", 60, "a condition naming standard-attr-tag", |o| {
            o.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.r#type == "Ready"
                        && c.message
                            .as_deref()
                            .is_some_and(|m| m.contains("no standard-attr-tag extension"))
                })
            })
        })
        .await;
    assert!(!o.status.as_ref().is_some_and(|s| s.ready));
    // Retried with backoff meanwhile: the network is found by name each time, never made
    // twice.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let inv = h.inventory().await;
    assert_eq!(
        inv,
        std::collections::BTreeMap::from([("networks".to_owned(), 1)]),
        "only the first network is made"
    );
    h.delete_cluster_leaving_nothing("t1").await;
}

/// Upstream's "should fail when namespace is denied access to ClusterIdentity": a cluster
/// whose namespace the OpenStackClusterIdentity's selector refuses makes no cloud resource and
/// says why in OpenStackAuthenticationSucceeded (False, OpenStackAuthenticationFailed, the
/// identity and the namespace named); once the selector lets the namespace in, the cluster
/// converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_the_cluster_identity_refuses_gets_authentication_failed_then_converges() {
    let mut h = Harness::new("iddenied").await;
    h.options.sync_period = Duration::from_secs(2);
    let identity = h.ns.clone();
    let identities = Api::<OpenStackClusterIdentity>::all(h.client.clone());
    create_cluster_identity(&h, "some-other-namespace").await;
    h.start();
    let through_identity = common::open_spec("10.12.0.0/24", "").replace(
        "identityRef:\n  name: cloud-config\n",
        &format!("identityRef:\n  type: ClusterIdentity\n  name: {identity}\n"),
    );
    h.create_cluster("d1", &through_identity).await;
    let o = h
        .wait_cluster("d1", 30, "authentication refused", |o| {
            authentication(o).is_some_and(|(s, _, _)| s == "False")
        })
        .await;
    let (_, reason, message) = authentication(&o).unwrap();
    assert_eq!(reason, "OpenStackAuthenticationFailed");
    assert!(
        message.contains(&identity) && message.contains(&h.ns),
        "{message}"
    );
    assert!(h.inventory().await.is_empty(), "{:?}", h.inventory().await);
    let allow = serde_json::json!({"spec": {"namespaceSelector": only_namespace(&h.ns)}});
    identities
        .patch(
            &identity,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&allow),
        )
        .await
        .unwrap();
    let o = h.wait_ready("d1").await;
    assert_eq!(authentication(&o).map(|a| a.0), Some("True".into()));
    h.delete_cluster_leaving_nothing("d1").await;
    identities
        .delete(&identity, &DeleteParams::default())
        .await
        .unwrap();
}

/// OpenStackClusterIdentity named after the test's namespace (it is cluster-scoped), on the
/// test's `cloud-config` Secret, usable from namespace `allowed` only.
async fn create_cluster_identity(h: &Harness, allowed: &str) {
    let spec: OpenStackClusterIdentity = serde_json::from_value(serde_json::json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1",
        "kind": "OpenStackClusterIdentity",
        "metadata": {"name": h.ns},
        "spec": {
            "secretRef": {"name": "cloud-config", "namespace": h.ns},
            "namespaceSelector": only_namespace(allowed),
        },
    }))
    .unwrap();
    let identities = Api::<OpenStackClusterIdentity>::all(h.client.clone());
    identities.create(&Default::default(), &spec).await.unwrap();
}

/// A namespace selector matching namespace `ns` only.
fn only_namespace(ns: &str) -> serde_json::Value {
    serde_json::json!({"matchLabels": {"kubernetes.io/metadata.name": ns}})
}

/// `OpenStackAuthenticationSucceeded` of `o`: (status, reason, message).
fn authentication(o: &capo_api::v1beta1::OpenStackCluster) -> Option<(String, String, String)> {
    o.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.r#type == "OpenStackAuthenticationSucceeded")
            .map(|c| {
                (
                    c.status.clone(),
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            })
    })
}

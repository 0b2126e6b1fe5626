//! API load balancer, listeners/pools/monitors, members and API floating IP against capo-sim:
//! create across several calls, steady reconcile, monitor change, allowedCIDRs with IPv6, a
//! same-named listener of another LB, a lost create reply, delete.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use capo_api::v1beta1::{
    APIServerLoadBalancer, APIServerLoadBalancerMonitor, OpenStackClusterSpec,
};
use capo_cloud::Progress;
use capo_cloud::loadbalancer::members::MemberTarget;
use capo_cloud::loadbalancer::{self as lb, ApiLoadBalancer, LbInputs};
use capo_cloud::networking::floating_ip as fip;
use capo_cloud::{Error, Owner};
use capo_openstack::loadbalancer::{
    self as lbaas, LISTENER, LOAD_BALANCER, Listener, ListenerBody, ListenerCreate, LoadBalancer,
    LoadBalancerCreate,
};
use capo_sim::{Delays, FaultSpec};
use common::*;
use std::time::Duration;

fn lb_spec(extra: APIServerLoadBalancer) -> OpenStackClusterSpec {
    OpenStackClusterSpec {
        api_server_load_balancer: Some(APIServerLoadBalancer {
            enabled: true,
            ..extra
        }),
        ..managed_spec()
    }
}

fn fast_delays(env: &Env) {
    env.sim.control().set_delays(Delays {
        lb_provision_ms: 60,
        lb_update_ms: 15,
        lb_delete_ms: 15,
        ..Delays::default()
    });
}

/// Networking first (not counted), then the LB inputs a controller would pass.
struct Cluster {
    rec: Recorded,
    cidrs: Vec<String>,
    router_ips: Vec<String>,
}

async fn networking(env: &Env, o: &Owner, spec: &OpenStackClusterSpec) -> Cluster {
    let rec = reconcile_fresh(env, o, spec).await.unwrap();
    let cidrs = rec
        .network
        .as_ref()
        .unwrap()
        .subnets
        .iter()
        .map(|s| s.cidr.clone())
        .collect();
    let router_ips = rec.router.as_ref().unwrap().ips.clone();
    env.sim.control().clear_requests();
    Cluster {
        rec,
        cidrs,
        router_ips,
    }
}

fn inputs<'a>(
    spec: &'a OpenStackClusterSpec,
    c: &'a Cluster,
    recorded: Option<&'a str>,
) -> LbInputs<'a> {
    LbInputs {
        spec,
        lb_network: c.rec.network.as_ref().unwrap(),
        subnet_cidrs: &c.cidrs,
        bastion_ips: &[],
        router_ips: &c.router_ips,
        recorded_id: recorded,
        vip_address: spec.api_server_fixed_ip.as_deref(),
        name: None,
    }
}

/// A simulator with fast delays, the cluster's networking and a converged API load balancer
/// for `spec`, owned by `uid-1`: the starting point of the tests that change one thing after.
async fn converged(spec: &OpenStackClusterSpec) -> (Env, Owner, Cluster, ApiLoadBalancer) {
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let c = networking(&env, &o, spec).await;
    let (l, _) = converge(&env, &o, spec, &c, None).await;
    (env, o, c, l)
}

/// Call `ensure_api_load_balancer` until Ready (the test waits; the library never does).
/// Returns the result and the number of calls.
async fn converge(
    env: &Env,
    o: &Owner,
    spec: &OpenStackClusterSpec,
    c: &Cluster,
    mut recorded: Option<String>,
) -> (ApiLoadBalancer, usize) {
    for call in 1..=200 {
        let out = lb::ensure_api_load_balancer(&env.s, o, inputs(spec, c, recorded.as_deref()))
            .await
            .unwrap();
        assert!(!out.id.is_empty(), "IDs are returned at once");
        recorded = Some(out.id.clone());
        match &out.progress {
            Progress::Done(()) => return (out, call),
            Progress::Waiting(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            Progress::Stuck(m) => panic!("load balancer failed: {m}"),
        }
    }
    panic!("load balancer did not converge");
}

/// The API floating IP: allocate (record), then associate.
async fn api_fip(
    env: &Env,
    o: &Owner,
    spec: &OpenStackClusterSpec,
    c: &Cluster,
    l: &ApiLoadBalancer,
    recorded: Option<&str>,
) -> fip::ApiFloatingIp {
    let ext = c.rec.external.as_ref().unwrap().id.clone();
    let target = fip::FipTarget::api_server(spec, &ext, &l.vip_port_id, recorded);
    let fip = fip::ensure_floating_ip(&env.s, o, &target).await.unwrap();
    fip::associate_floating_ip(&env.s, &fip, &l.vip_port_id)
        .await
        .unwrap();
    fip
}

/// Delete the API floating IPs this cluster allocated (a user-provided one stays).
async fn delete_api_fips(env: &Env, o: &Owner, spec: &OpenStackClusterSpec) {
    let requested = spec.api_server_floating_ip.as_deref();
    fip::delete_floating_ips(&env.s, o, fip::Purpose::ApiServer, requested)
        .await
        .unwrap();
}

async fn delete_all(
    env: &Env,
    o: &Owner,
    spec: &OpenStackClusterSpec,
    c: &Cluster,
    id: Option<&str>,
) -> (usize, usize) {
    delete_api_fips(env, o, spec).await;
    let mut calls = 0;
    loop {
        calls += 1;
        match lb::delete_api_load_balancer(&env.s, o, id).await.unwrap() {
            Progress::Done(()) => break,
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
        assert!(calls < 200, "delete did not finish");
    }
    let lb_requests = trace(env).len();
    delete(env, o, spec, &c.rec).await.unwrap();
    (calls, lb_requests)
}

fn named(env: &Env, col: &str, name: &str) -> Vec<serde_json::Value> {
    items(env, col)
        .into_iter()
        .filter(|i| i["name"] == name)
        .collect()
}

#[tokio::test]
async fn create_steady_members_delete() {
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let spec = lb_spec(APIServerLoadBalancer {
        additional_ports: vec![8443],
        ..Default::default()
    });
    let before = ids(&env);
    let c = networking(&env, &o, &spec).await;

    let (l, calls) = converge(&env, &o, &spec, &c, None).await;
    let fip = api_fip(&env, &o, &spec, &c, &l, None).await;
    let create = trace(&env);
    let create_writes = writes(&env).len();
    assert!(calls > 2, "create spans several calls ({calls})");
    assert!(l.tags.contains(&o.tag()));
    assert!(fip.ours);
    let name = "k8s-clusterapi-cluster-ns-c1-kubeapi";
    assert_eq!(l.name, name);
    for port in [6443, 8443] {
        let n = format!("{name}-{port}");
        assert_eq!(named(&env, "listeners", &n).len(), 1);
        assert_eq!(named(&env, "pools", &n)[0]["lb_algorithm"], "ROUND_ROBIN");
        let hm = &named(&env, "healthmonitors", &n)[0];
        assert_eq!(
            (
                hm["type"].as_str(),
                hm["delay"].as_i64(),
                hm["timeout"].as_i64()
            ),
            (Some("TCP"), Some(10), Some(5))
        );
        assert_eq!(
            (hm["max_retries"].as_i64(), hm["max_retries_down"].as_i64()),
            (Some(5), Some(3))
        );
    }
    let fips = items(&env, "floatingips");
    assert_eq!(fips.len(), 1);
    assert_eq!(fips[0]["port_id"].as_str(), Some(l.vip_port_id.as_str()));
    env.sim.control().clear_requests();

    // Steady reconcile: reads only.
    let (again, steady_calls) = converge(&env, &o, &spec, &c, Some(l.id.clone())).await;
    let again_fip = api_fip(&env, &o, &spec, &c, &again, Some(&fip.ip)).await;
    assert_eq!(
        (steady_calls, &again.id, &again_fip.id),
        (1, &l.id, &fip.id)
    );
    let steady = steady_trace(&env, "steady reconcile");

    // Members for a machine (what the machine controller will do).
    let ports = [6443, 8443];
    let t = MemberTarget {
        lb_id: &l.id,
        ports: &ports,
        machine: "cp-0",
    };
    let mut n = 0;
    while !lb::ensure_member(&env.s, t, "10.6.0.10")
        .await
        .unwrap()
        .is_done()
    {
        n += 1;
        assert!(n < 100);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        named(&env, "members", &format!("{name}-6443-cp-0")).len(),
        1
    );
    assert_eq!(
        named(&env, "members", &format!("{name}-8443-cp-0")).len(),
        1
    );
    while !lb::delete_member(&env.s, t).await.unwrap().is_done() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(items(&env, "members").is_empty());
    env.sim.control().clear_requests();

    let (del_calls, del_lb) = delete_all(&env, &o, &spec, &c, Some(&l.id)).await;
    let del = trace(&env);
    assert_eq!(
        ids(&env),
        before,
        "delete leaves exactly the seeded resources"
    );
    println!(
        "LB requests (2 ports, FIP): create {} ({create_writes} writes, {calls} calls), steady {}, delete {del_lb} ({del_calls} calls; {} with networking)",
        create.len(),
        steady.len(),
        del.len()
    );
    // The create's reads depend on how often the caller polls while Octavia is busy; its
    // writes and the steady reconcile do not.
    golden(
        "lb_create_writes",
        &create
            .iter()
            .filter(|l| !l.starts_with("GET "))
            .cloned()
            .collect::<Vec<_>>(),
    );
    golden("lb_steady", &steady);
}

#[tokio::test]
async fn monitor_change_is_reconciled() {
    let mut spec = lb_spec(APIServerLoadBalancer::default());
    let (env, o, c, l) = converged(&spec).await;
    if let Some(lbs) = spec.api_server_load_balancer.as_mut() {
        lbs.monitor = Some(APIServerLoadBalancerMonitor {
            delay: Some(20),
            timeout: Some(7),
            max_retries: Some(4),
            max_retries_down: Some(2),
        });
    }
    env.sim.control().clear_requests();
    let (_, calls) = converge(&env, &o, &spec, &c, Some(l.id.clone())).await;
    assert_eq!(writes(&env).len(), 1, "one PUT: {:?}", writes(&env));
    assert!(calls >= 2);
    let hm = &items(&env, "healthmonitors")[0];
    assert_eq!(
        [
            &hm["delay"],
            &hm["timeout"],
            &hm["max_retries"],
            &hm["max_retries_down"]
        ]
        .map(|v| v.as_i64()),
        [Some(20), Some(7), Some(4), Some(2)]
    );
}

#[tokio::test]
async fn allowed_cidrs_keep_ipv6_and_follow_spec() {
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let mut spec = lb_spec(APIServerLoadBalancer {
        allowed_cidrs: vec!["192.0.2.0/24".into(), "2001:db8::/64".into()],
        ..Default::default()
    });
    let c = networking(&env, &o, &spec).await;
    let (l, _) = converge(&env, &o, &spec, &c, None).await;
    let got = items(&env, "listeners")[0]["allowed_cidrs"].clone();
    let got: Vec<String> = serde_json::from_value(got).unwrap();
    let mut want = vec![
        "10.6.0.0/24".to_string(),
        "192.0.2.0/24".into(),
        "2001:db8::/64".into(),
    ];
    want.extend(c.router_ips.iter().map(|ip| format!("{ip}/32")));
    want.sort();
    assert_eq!(got, want);

    // Spec change: the listener is updated in place.
    if let Some(lbs) = spec.api_server_load_balancer.as_mut() {
        lbs.allowed_cidrs.push("2001:db8:5::/48".into());
    }
    env.sim.control().clear_requests();
    converge(&env, &o, &spec, &c, Some(l.id.clone())).await;
    assert_eq!(
        writes(&env),
        vec!["PUT /load-balancer/v2/lbaas/listeners/{id}".to_string()]
    );
    let got: Vec<String> =
        serde_json::from_value(items(&env, "listeners")[0]["allowed_cidrs"].clone()).unwrap();
    assert!(got.contains(&"2001:db8:5::/48".to_string()), "{got:?}");
}

#[tokio::test]
async fn listener_of_another_lb_with_our_name_is_ignored() {
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let spec = lb_spec(APIServerLoadBalancer::default());
    let c = networking(&env, &o, &spec).await;
    let subnet = c.rec.network.as_ref().unwrap().subnets[0].id.clone();
    // Another load balancer with a listener carrying our listener's name.
    let other: LoadBalancer = lbaas::create(
        &env.s,
        LOAD_BALANCER,
        &LoadBalancerCreate {
            name: "someone-else".into(),
            vip_subnet_id: Some(subnet),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let decoy = "k8s-clusterapi-cluster-ns-c1-kubeapi-6443";
    let mut made = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let body = ListenerCreate {
            listener: ListenerBody {
                name: decoy.into(),
                protocol: "TCP".into(),
                protocol_port: 6443,
                ..Default::default()
            },
            loadbalancer_id: other.id.clone(),
        };
        if let Ok(l) = lbaas::create::<Listener>(&env.s, LISTENER, &body).await {
            made = Some(l);
            break;
        }
    }
    let decoy_listener = made.expect("decoy listener created");
    let (l, _) = converge(&env, &o, &spec, &c, None).await;
    let ours: Vec<_> = named(&env, "listeners", decoy);
    assert_eq!(
        ours.len(),
        2,
        "our own listener was created next to the decoy"
    );
    let decoy_now: Listener = lbaas::get(&env.s, LISTENER, &decoy_listener.id)
        .await
        .unwrap();
    assert_eq!(
        decoy_now.default_pool_id, None,
        "the decoy got no pool from us"
    );
    assert_ne!(l.id, other.id);
}

#[tokio::test]
async fn lost_reply_on_create_leaves_one_load_balancer() {
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let spec = lb_spec(APIServerLoadBalancer::default());
    let c = networking(&env, &o, &spec).await;
    env.sim
        .control()
        .add_faults(vec![FaultSpec {
            method: Some("POST".into()),
            path_regex: "/lbaas/loadbalancers$".into(),
            status: 504,
            count: Some(1),
            after_action: true,
            ..Default::default()
        }])
        .unwrap();
    let first = lb::ensure_api_load_balancer(&env.s, &o, inputs(&spec, &c, None)).await;
    match first {
        Err(e @ Error::OpenStack { .. }) => assert!(e.is_retryable(), "{e}"),
        Ok(out) => panic!("the lost reply was not noticed: {out:?}"),
        Err(e) => panic!("unexpected error {e}"),
    }
    let (l, _) = converge(&env, &o, &spec, &c, None).await;
    let lbs = items(&env, "loadbalancers");
    assert_eq!(lbs.len(), 1, "exactly one load balancer");
    assert_eq!(lbs[0]["id"].as_str(), Some(l.id.as_str()));
}

#[tokio::test]
async fn foreign_load_balancer_is_refused_and_kept_on_delete() {
    let env = env().await;
    fast_delays(&env);
    let spec = lb_spec(APIServerLoadBalancer::default());
    let theirs = owner("uid-other");
    let c = networking(&env, &theirs, &spec).await;
    let (l, _) = converge(&env, &theirs, &spec, &c, None).await;
    let o = owner("uid-1");
    let err = lb::ensure_api_load_balancer(&env.s, &o, inputs(&spec, &c, None))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ForeignResource { .. }), "{err}");
    assert_eq!(
        lb::delete_api_load_balancer(&env.s, &o, None)
            .await
            .unwrap(),
        Progress::Done(())
    );
    assert_eq!(
        items(&env, "loadbalancers")[0]["id"].as_str(),
        Some(l.id.as_str())
    );
}

#[tokio::test]
async fn adopts_untagged_upstream_load_balancer() {
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let spec = lb_spec(APIServerLoadBalancer::default());
    let c = networking(&env, &o, &spec).await;
    let upstream: LoadBalancer = lbaas::create(
        &env.s,
        LOAD_BALANCER,
        &LoadBalancerCreate {
            name: "k8s-clusterapi-cluster-ns-c1-kubeapi".into(),
            vip_subnet_id: Some(c.rec.network.as_ref().unwrap().subnets[0].id.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let (l, _) = converge(&env, &o, &spec, &c, None).await;
    assert_eq!(l.id, upstream.id, "adopted, not recreated");
    assert!(l.tags.contains(&o.tag()) && l.tags.contains(&"team-a".to_string()));
    assert_eq!(items(&env, "loadbalancers").len(), 1);
}

#[tokio::test]
async fn lost_reply_on_floating_ip_allocation_leaves_one() {
    let spec = lb_spec(APIServerLoadBalancer::default());
    let (env, o, c, l) = converged(&spec).await;
    env.sim
        .control()
        .add_faults(vec![FaultSpec {
            method: Some("POST".into()),
            path_regex: "/floatingips$".into(),
            status: 502,
            count: Some(1),
            after_action: true,
            ..Default::default()
        }])
        .unwrap();
    let ext = c.rec.external.as_ref().unwrap().id.clone();
    let target = fip::FipTarget::api_server(&spec, &ext, &l.vip_port_id, None);
    let first = fip::ensure_floating_ip(&env.s, &o, &target).await;
    assert!(first.is_err(), "the lost reply surfaces as an error");
    let fip = api_fip(&env, &o, &spec, &c, &l, None).await;
    let fips = items(&env, "floatingips");
    assert_eq!(fips.len(), 1, "exactly one floating IP");
    assert_eq!(fips[0]["id"].as_str(), Some(fip.id.as_str()));
    assert!(fip.ours);
    assert!(
        fips[0]["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == o.tag().as_str()),
        "tag written on the rerun"
    );
    // Delete removes it; a user-provided address is never deleted.
    delete_api_fips(&env, &o, &spec).await;
    assert!(items(&env, "floatingips").is_empty());
}

#[tokio::test]
async fn user_floating_ip_is_kept_on_delete() {
    let mut spec = lb_spec(APIServerLoadBalancer::default());
    let (env, o, c, l) = converged(&spec).await;
    // Allocate one address by hand, then name it in the spec.
    let ext = c.rec.external.as_ref().unwrap().id.clone();
    let mine: capo_openstack::network::FloatingIp = capo_openstack::network::create(
        &env.s,
        capo_openstack::network::FLOATING_IP,
        &capo_openstack::network::FloatingIpCreate {
            floating_network_id: ext.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    spec.api_server_floating_ip = Some(mine.floating_ip_address.clone());
    let fip = api_fip(&env, &o, &spec, &c, &l, None).await;
    assert_eq!((fip.id.as_str(), fip.ours), (mine.id.as_str(), false));
    delete_api_fips(&env, &o, &spec).await;
    assert_eq!(
        items(&env, "floatingips").len(),
        1,
        "the user's floating IP stays"
    );
}

#[tokio::test]
async fn ovn_provider_uses_source_ip_port_and_no_acl() {
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let spec = lb_spec(APIServerLoadBalancer {
        provider: Some("ovn".into()),
        allowed_cidrs: vec!["192.0.2.0/24".into()],
        ..Default::default()
    });
    let c = networking(&env, &o, &spec).await;
    let (l, _) = converge(&env, &o, &spec, &c, None).await;
    assert_eq!(l.provider, "ovn");
    assert_eq!(items(&env, "pools")[0]["lb_algorithm"], "SOURCE_IP_PORT");
    assert!(items(&env, "listeners")[0]["allowed_cidrs"].is_null());

    // An unknown provider is not sent (Octavia's default is used).
    let env2 = common::env().await;
    fast_delays(&env2);
    let spec2 = lb_spec(APIServerLoadBalancer {
        provider: Some("f5".into()),
        ..Default::default()
    });
    let c2 = networking(&env2, &o, &spec2).await;
    let (l2, _) = converge(&env2, &o, &spec2, &c2, None).await;
    assert_eq!(l2.provider, "amphora");
}

#[tokio::test]
async fn error_status_is_reported_as_failed() {
    let spec = lb_spec(APIServerLoadBalancer::default());
    let (env, o, c, l) = converged(&spec).await;
    // The simulator never fails a load balancer by itself: fake Octavia's answer once.
    env.sim
        .control()
        .add_faults(vec![FaultSpec {
            method: Some("GET".into()),
            path_regex: format!("/lbaas/loadbalancers/{}$", l.id),
            status: 200,
            body: Some(serde_json::json!({"loadbalancer": {
                "id": l.id, "name": l.name, "provisioning_status": "ERROR",
                "operating_status": "ERROR", "tags": l.tags, "listeners": []}})),
            count: Some(1),
            ..Default::default()
        }])
        .unwrap();
    let out = lb::ensure_api_load_balancer(&env.s, &o, inputs(&spec, &c, Some(&l.id)))
        .await
        .unwrap();
    match out.progress {
        Progress::Stuck(m) => assert!(m.contains("ERROR"), "{m}"),
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[tokio::test]
async fn lost_replies_on_child_creates_leave_one_of_each() {
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let spec = lb_spec(APIServerLoadBalancer::default());
    let c = networking(&env, &o, &spec).await;
    let lost = |path: &str| FaultSpec {
        method: Some("POST".into()),
        path_regex: format!("/lbaas/{path}$"),
        status: 503,
        count: Some(1),
        after_action: true,
        ..Default::default()
    };
    // Octavia refuses the fully populated create once (as a provider that takes no part of the
    // tree would): the load balancer is created alone and its children one by one, each of
    // whose first reply is lost.
    let refused = FaultSpec {
        method: Some("POST".into()),
        path_regex: "/lbaas/loadbalancers$".into(),
        status: 400,
        count: Some(1),
        ..Default::default()
    };
    env.sim
        .control()
        .add_faults(vec![
            refused,
            lost("listeners"),
            lost("pools"),
            lost("healthmonitors"),
        ])
        .unwrap();
    let mut recorded: Option<String> = None;
    let mut errors = 0;
    for _ in 0..300 {
        match lb::ensure_api_load_balancer(&env.s, &o, inputs(&spec, &c, recorded.as_deref())).await
        {
            Ok(out) if out.progress.is_done() => break,
            Ok(out) => recorded = Some(out.id),
            Err(e) => {
                assert!(e.is_retryable(), "{e}");
                errors += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(errors, 3, "each lost reply surfaced once");
    for col in ["loadbalancers", "listeners", "pools", "healthmonitors"] {
        assert_eq!(items(&env, col).len(), 1, "exactly one in {col}");
    }
    assert!(items(&env, "loadbalancers")[0]["provisioning_status"] == "ACTIVE");
}

#[tokio::test]
async fn upstreams_api_floating_ip_is_adopted_and_deleted_with_the_cluster() {
    // Upstream CAPO v0.14 allocated the API floating IP (its description, no capo tag) and put
    // it on the VIP port; capo takes it over instead of allocating another one, and deletes it
    // with the cluster as upstream would have.
    let spec = lb_spec(APIServerLoadBalancer::default());
    let (env, o, c, l) = converged(&spec).await;
    let ext = c.rec.external.as_ref().unwrap().id.clone();
    let theirs: capo_openstack::network::FloatingIp = capo_openstack::network::create(
        &env.s,
        capo_openstack::network::FLOATING_IP,
        &capo_openstack::network::FloatingIpCreate {
            floating_network_id: ext,
            port_id: Some(l.vip_port_id.clone()),
            description: Some(format!(
                "Created by cluster-api-provider-openstack cluster {}-{}",
                o.namespace, o.name
            )),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let fip = api_fip(&env, &o, &spec, &c, &l, None).await;
    assert_eq!(fip.id, theirs.id, "adopted, not allocated again");
    assert!(fip.ours);
    let fips = items(&env, "floatingips");
    assert_eq!(fips.len(), 1);
    assert_eq!(
        fips[0]["description"].as_str(),
        Some(fip::description(&o, fip::Purpose::ApiServer).as_str())
    );
    assert!(
        fips[0]["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == o.tag().as_str())
    );
    delete_api_fips(&env, &o, &spec).await;
    assert!(
        items(&env, "floatingips").is_empty(),
        "deleted with the cluster"
    );
}

/// Upstream's "loadbalancer on a specific network created" and "different LB and cluster
/// networks, set SubnetID on member create": the VIP goes on `apiServerLoadBalancer.network`;
/// a machine whose port is on the cluster network becomes a member naming its address's
/// subnet (Octavia must plug into it), one on the VIP network names none.
#[tokio::test]
async fn vip_on_its_own_network_members_name_their_subnet() {
    use capo_api::v1beta1::NetworkParam;
    use capo_openstack::network::{
        self as net, FixedIp, NETWORK, Network, NetworkCreate, PORT, Port, PortCreate, SUBNET,
        Subnet, SubnetCreate,
    };
    let env = env().await;
    fast_delays(&env);
    let o = owner("uid-1");
    let vip_net: Network = net::create(
        &env.s,
        NETWORK,
        &NetworkCreate {
            name: "vip-net".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let vip_subnet: Subnet = net::create(
        &env.s,
        SUBNET,
        &SubnetCreate {
            name: "vip-subnet".into(),
            network_id: vip_net.id.clone(),
            cidr: "10.77.0.0/24".into(),
            ip_version: 4,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let spec = lb_spec(APIServerLoadBalancer {
        network: Some(NetworkParam {
            id: Some(vip_net.id.clone()),
            filter: None,
        }),
        ..Default::default()
    });
    let c = networking(&env, &o, &spec).await;
    let cluster_net = c.rec.network.clone().unwrap();
    let lb_net = lb::balancer::resolve_lb_network(&env.s, &spec, &cluster_net)
        .await
        .unwrap();
    assert_eq!(lb_net.id, vip_net.id);
    assert_eq!(lb_net.subnets[0].id, vip_subnet.id);
    let mut recorded: Option<String> = None;
    let mut l = None;
    for _ in 0..200 {
        let inp = LbInputs {
            lb_network: &lb_net,
            recorded_id: recorded.as_deref(),
            ..inputs(&spec, &c, None)
        };
        let out = lb::ensure_api_load_balancer(&env.s, &o, inp).await.unwrap();
        recorded = Some(out.id.clone());
        if out.progress.is_done() {
            l = Some(out);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let l = l.expect("load balancer converged");
    assert!(
        l.vip_address.starts_with("10.77.0."),
        "VIP {}",
        l.vip_address
    );
    let lbs = items(&env, "loadbalancers");
    assert_eq!(lbs[0]["vip_network_id"].as_str(), Some(vip_net.id.as_str()));

    let machine_port = |name: &str, network: &str, subnet: &str| PortCreate {
        name: name.into(),
        network_id: network.into(),
        fixed_ips: vec![FixedIp {
            subnet_id: Some(subnet.into()),
            ip_address: None,
        }],
        ..Default::default()
    };
    let cluster_subnet = cluster_net.subnets[0].id.clone();
    let on_cluster: Port = net::create(
        &env.s,
        PORT,
        &machine_port("cp-0-0", &cluster_net.id, &cluster_subnet),
    )
    .await
    .unwrap();
    let on_vip: Port = net::create(
        &env.s,
        PORT,
        &machine_port("cp-1-0", &vip_net.id, &vip_subnet.id),
    )
    .await
    .unwrap();
    let ports = [6443];
    for (machine, port) in [("cp-0", &on_cluster), ("cp-1", &on_vip)] {
        let t = MemberTarget {
            lb_id: &l.id,
            ports: &ports,
            machine,
        };
        let mut n = 0;
        while !lb::ensure_port_member(&env.s, t, &port.id)
            .await
            .unwrap()
            .is_done()
        {
            n += 1;
            assert!(n < 100);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let name = "k8s-clusterapi-cluster-ns-c1-kubeapi-6443";
    let cp0 = &named(&env, "members", &format!("{name}-cp-0"))[0];
    assert_eq!(
        cp0["address"],
        on_cluster.fixed_ips[0].ip_address.clone().unwrap()
    );
    assert_eq!(cp0["subnet_id"].as_str(), Some(cluster_subnet.as_str()));
    let cp1 = &named(&env, "members", &format!("{name}-cp-1"))[0];
    assert!(cp1["subnet_id"].is_null(), "{cp1}");
}

/// Upstream's "should report error when monitor update fails": Octavia refusing the monitor
/// update is an error, and nothing else is written.
#[tokio::test]
async fn refused_monitor_update_is_an_error() {
    let mut spec = lb_spec(APIServerLoadBalancer::default());
    let (env, o, c, l) = converged(&spec).await;
    if let Some(lbs) = spec.api_server_load_balancer.as_mut() {
        lbs.monitor = Some(APIServerLoadBalancerMonitor {
            delay: Some(15),
            timeout: Some(8),
            max_retries: Some(6),
            max_retries_down: Some(4),
        });
    }
    env.sim
        .control()
        .add_faults(vec![FaultSpec {
            method: Some("PUT".into()),
            path_regex: "/lbaas/healthmonitors/".into(),
            status: 403,
            count: Some(1),
            ..Default::default()
        }])
        .unwrap();
    env.sim.control().clear_requests();
    let err = lb::ensure_api_load_balancer(&env.s, &o, inputs(&spec, &c, Some(&l.id)))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("healthmonitor"), "{err}");
    assert!(env.sim.control().faults().is_empty(), "the fault fired");
    let hm = &items(&env, "healthmonitors")[0];
    assert_eq!(hm["delay"].as_i64(), Some(10), "unchanged");
    // Once Octavia accepts it, the update goes through.
    converge(&env, &o, &spec, &c, Some(l.id.clone())).await;
    assert_eq!(items(&env, "healthmonitors")[0]["delay"].as_i64(), Some(15));
}

/// Upstream's "API server VIP is API Server Fixed IP": with `spec.apiServerFixedIP` (the VIP the
/// cluster controller then passes), the load balancer is created with that address as its VIP.
#[tokio::test]
async fn api_server_fixed_ip_is_the_vip() {
    let spec = OpenStackClusterSpec {
        api_server_fixed_ip: Some("10.6.0.77".into()),
        ..lb_spec(APIServerLoadBalancer::default())
    };
    let (env, _, _, l) = converged(&spec).await;
    assert_eq!(l.vip_address, "10.6.0.77");
    let lbs = items(&env, "loadbalancers");
    assert_eq!(lbs.len(), 1);
    assert_eq!(lbs[0]["vip_address"], "10.6.0.77");
    let vip_port = items(&env, "ports")
        .into_iter()
        .find(|p| p["id"].as_str() == Some(l.vip_port_id.as_str()))
        .unwrap();
    assert_eq!(vip_port["fixed_ips"][0]["ip_address"], "10.6.0.77");
}

/// Call `ensure_member` until it is done.
async fn member_until_done(env: &Env, t: MemberTarget<'_>, address: &str) {
    for _ in 0..100 {
        if lb::ensure_member(&env.s, t, address)
            .await
            .unwrap()
            .is_done()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("member never converged");
}

/// Upstream's "LB member with wrong address, re-create": a member whose machine address changed
/// is deleted and created again with the new address, one per port.
#[tokio::test]
async fn member_with_a_changed_address_is_recreated() {
    let spec = lb_spec(APIServerLoadBalancer {
        additional_ports: vec![8443],
        ..Default::default()
    });
    let (env, _, _, l) = converged(&spec).await;
    let ports = [6443, 8443];
    let t = MemberTarget {
        lb_id: &l.id,
        ports: &ports,
        machine: "cp-0",
    };
    member_until_done(&env, t, "10.6.0.10").await;
    let names = ports.map(|p| format!("{}-{p}-cp-0", l.name));
    let before: Vec<String> = names
        .iter()
        .map(|n| {
            named(&env, "members", n)[0]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    env.sim.control().clear_requests();

    member_until_done(&env, t, "10.6.0.11").await;
    let w = writes(&env);
    assert_eq!(
        w.iter().filter(|l| l.starts_with("DELETE ")).count(),
        2,
        "{w:?}"
    );
    assert_eq!(
        w.iter().filter(|l| l.starts_with("POST ")).count(),
        2,
        "{w:?}"
    );
    for (n, old) in names.iter().zip(&before) {
        let got = named(&env, "members", n);
        assert_eq!(got.len(), 1, "{n}: {got:?}");
        assert_eq!(got[0]["address"], "10.6.0.11");
        assert_ne!(got[0]["id"].as_str(), Some(old.as_str()), "{n} re-created");
    }
    assert_eq!(items(&env, "members").len(), 2);
    // Converged: nothing more to do.
    env.sim.control().clear_requests();
    member_until_done(&env, t, "10.6.0.11").await;
    assert!(writes(&env).is_empty(), "{:?}", writes(&env));
}

/// Upstream's "loadbalancer with specified flavor created": an enabled Octavia flavor named in
/// `apiServerLoadBalancer.flavor` is found by name and the load balancer is created with its
/// ID; a disabled or unknown one is left out (Octavia's default flavor, with a warning).
#[tokio::test]
async fn octavia_flavor_found_by_name_is_used() {
    let seed = capo_sim::Seed::default();
    let flavor_id = |name: &str| {
        seed.lb_flavors
            .iter()
            .find(|f| f.name == name)
            .map(capo_sim::seed::SeedLbFlavor::id)
            .unwrap()
    };
    for (name, want) in [
        (
            "amphora-single",
            serde_json::json!(flavor_id("amphora-single")),
        ),
        ("amphora-ha", serde_json::Value::Null),
        ("no-such-flavor", serde_json::Value::Null),
    ] {
        let spec = lb_spec(APIServerLoadBalancer {
            flavor: Some(name.into()),
            ..Default::default()
        });
        let (env, _, _, _) = converged(&spec).await;
        let lbs = items(&env, "loadbalancers");
        assert_eq!(lbs.len(), 1);
        assert_eq!(lbs[0]["flavor_id"], want, "flavor {name}");
    }
}

//! Managed network, subnet, router and security groups against capo-sim: create, steady
//! reconcile (golden traces), adoption, refusal, delete, faults.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use capo_cloud::Error;
use capo_cloud::networking;
use capo_openstack::network::{self as net, NETWORK, Network, NetworkCreate};
use common::*;

#[tokio::test]
async fn create_steady_delete_with_golden_traces() {
    let env = env().await;
    let o = owner("uid-1");
    let spec = managed_spec();
    let before = ids(&env);

    let rec = reconcile_fresh(&env, &o, &spec).await.unwrap();
    let create = trace(&env);
    let create_writes = writes(&env).len();
    assert!(rec.router.is_some() && rec.external.is_some());
    assert_eq!(rec.network.as_ref().unwrap().subnets.len(), 1);
    env.sim.control().clear_requests();

    let again = reconcile(&env, &o, &spec, &rec, false).await.unwrap();
    assert_eq!(again, rec, "a steady reconcile reports the same IDs");
    let steady = steady_trace(&env, "steady reconcile");

    // Status lost (clusterctl move): found by name + tag, still no writes.
    let rebuilt = reconcile_fresh(&env, &o, &spec).await.unwrap();
    assert_eq!(rebuilt, rec);
    let rebuild = steady_trace(&env, "rebuild");

    delete(&env, &o, &spec, &rec).await.unwrap();
    let del = trace(&env);
    assert_eq!(
        ids(&env),
        before,
        "delete leaves exactly the seeded resources"
    );
    env.sim.control().clear_requests();
    delete(&env, &o, &spec, &rec).await.unwrap();
    assert!(writes(&env).is_empty(), "deleting again is a no-op");

    println!(
        "requests: create {} ({create_writes} writes), steady {}, rebuild from names {}, delete {}",
        create.len(),
        steady.len(),
        rebuild.len(),
        del.len()
    );
    golden("create", &create);
    golden("steady", &steady);
    golden("delete", &del);
}

#[tokio::test]
async fn adopts_untagged_upstream_network() {
    let env = env().await;
    let o = owner("uid-1");
    let name = o.cluster_resource_name();
    let upstream: Network = net::create(
        &env.s,
        NETWORK,
        &NetworkCreate {
            name: name.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let rec = networking::ensure_cluster_network(&env.s, &o, &managed_spec(), None)
        .await
        .unwrap();
    assert_eq!(rec.id, upstream.id, "adopted, not recreated");
    assert!(rec.tags.contains(&o.tag()) && rec.tags.contains(&"team-a".to_string()));
    let named = items(&env, "networks")
        .iter()
        .filter(|n| n["name"] == name.as_str())
        .count();
    assert_eq!(named, 1);
}

#[tokio::test]
async fn refuses_network_of_another_cluster() {
    let env = env().await;
    let other = owner("uid-other");
    let theirs = networking::ensure_cluster_network(&env.s, &other, &managed_spec(), None)
        .await
        .unwrap();
    env.sim.control().clear_requests();
    let err = networking::ensure_cluster_network(&env.s, &owner("uid-1"), &managed_spec(), None)
        .await
        .unwrap_err();
    match &err {
        Error::ForeignResource { id, owner_tag, .. } => {
            assert_eq!(id, &theirs.id);
            assert_eq!(owner_tag, "capo-cluster-uid=uid-other");
        }
        e => panic!("unexpected {e}"),
    }
    assert!(err.to_string().contains(&theirs.name));
    assert!(
        writes(&env).is_empty(),
        "nothing written: {:?}",
        writes(&env)
    );
    // Deleting our (absent) network leaves theirs alone.
    networking::delete_network(&env.s, &owner("uid-1"), &managed_spec(), None)
        .await
        .unwrap();
    assert_eq!(
        items(&env, "networks")
            .iter()
            .filter(|n| n["id"] == theirs.id.as_str())
            .count(),
        1
    );
}

#[tokio::test]
async fn dns_servers_updated_in_place() {
    let env = env().await;
    let o = owner("uid-1");
    let mut spec = managed_spec();
    let first = networking::ensure_cluster_network(&env.s, &o, &spec, None)
        .await
        .unwrap();
    spec.managed_subnets[0].dns_nameservers = vec!["1.1.1.1".into(), "9.9.9.9".into()];
    env.sim.control().clear_requests();
    let second = networking::ensure_cluster_network(&env.s, &o, &spec, Some(&first))
        .await
        .unwrap();
    assert_eq!(second.subnets[0].id, first.subnets[0].id);
    assert_eq!(
        writes(&env),
        vec!["PUT /network/v2.0/subnets/{id}".to_string()]
    );
    let sn = &items(&env, "subnets")
        .into_iter()
        .find(|s| s["id"] == first.subnets[0].id.as_str())
        .unwrap();
    assert_eq!(
        sn["dns_nameservers"],
        serde_json::json!(["1.1.1.1", "9.9.9.9"])
    );
    // The order counts (resolvers are tried in order); none, then some again: one PUT each.
    for servers in [vec!["9.9.9.9", "1.1.1.1"], vec![], vec!["8.8.8.8"]] {
        spec.managed_subnets[0].dns_nameservers = servers.iter().map(|s| s.to_string()).collect();
        env.sim.control().clear_requests();
        networking::ensure_cluster_network(&env.s, &o, &spec, Some(&first))
            .await
            .unwrap();
        assert_eq!(
            writes(&env),
            vec!["PUT /network/v2.0/subnets/{id}".to_string()]
        );
        let sn = &items(&env, "subnets")
            .into_iter()
            .find(|s| s["id"] == first.subnets[0].id.as_str())
            .unwrap();
        assert_eq!(sn["dns_nameservers"], serde_json::json!(servers));
    }
}

#[tokio::test]
async fn injected_faults_are_retryable_and_rerun_converges() {
    let o = owner("uid-1");
    let spec = managed_spec();
    let clean_env = common::env().await;
    reconcile_fresh(&clean_env, &o, &spec).await.unwrap();
    let clean_rules = items(&clean_env, "security_group_rules").len();
    let fault = |method: &str, re: &str, status: u16, after_action: bool| capo_sim::FaultSpec {
        method: Some(method.into()),
        path_regex: re.into(),
        status,
        body: None,
        count: Some(1),
        rate: None,
        after_action,
        headers: Default::default(),
    };
    let steps = [
        // A lost reply: the network exists but we never saw its ID.
        fault("POST", "/networks$", 503, true),
        fault("POST", "/subnets$", 409, false),
        fault("PUT", "/networks/[^/]+/tags$", 503, false),
        fault("PUT", "/add_router_interface$", 503, false),
        fault("POST", "/security-groups$", 503, true),
        fault("POST", "/security-group-rules$", 503, false),
        fault("GET", "/security-groups$", 429, false),
    ];
    for f in steps {
        let env = env().await;
        // Idempotent requests are retried inside the session: make the fault outlast them.
        let mut f = f;
        if f.method.as_deref() != Some("POST") {
            f.count = Some(20);
        }
        env.sim.control().add_faults(vec![f.clone()]).unwrap();
        let err = reconcile_fresh(&env, &o, &spec).await.unwrap_err();
        assert!(
            err.is_retryable(),
            "{} on {}: {err} not retryable",
            f.status,
            f.path_regex
        );
        env.sim.control().clear_faults();
        let rec = reconcile_fresh(&env, &o, &spec).await.unwrap();
        env.sim.control().clear_requests();
        assert_eq!(reconcile(&env, &o, &spec, &rec, false).await.unwrap(), rec);
        assert!(
            writes(&env).is_empty(),
            "after {}: {:?}",
            f.path_regex,
            writes(&env)
        );
        let name = o.cluster_resource_name();
        for col in ["networks", "subnets", "routers"] {
            let n = items(&env, col)
                .iter()
                .filter(|r| r["name"] == name.as_str())
                .count();
            assert_eq!(n, 1, "exactly one {col} after {}", f.path_regex);
        }
        assert_eq!(
            items(&env, "security_groups").len(),
            3,
            "default + 2 managed"
        );
        assert_eq!(items(&env, "security_group_rules").len(), clean_rules);
    }
}

#[tokio::test]
async fn delete_sweeps_stray_ports_and_retries_groups_in_use() {
    use capo_openstack::network::{PORT, Port, PortCreate};
    let env = env().await;
    let o = owner("uid-1");
    let spec = managed_spec();
    let before = ids(&env);
    let rec = reconcile_fresh(&env, &o, &spec).await.unwrap();
    let net_id = rec.network.as_ref().unwrap().id.clone();
    let cp = rec.groups.control_plane.clone().unwrap().id;
    let worker = rec.groups.worker.clone().unwrap().id;
    // A port leaked by a failed server create, on the cluster network.
    let leaked = PortCreate {
        name: "leaked".into(),
        network_id: net_id,
        security_groups: Some(vec![cp]),
        ..Default::default()
    };
    let _: Port = net::create(&env.s, PORT, &leaked).await.unwrap();
    // A port elsewhere still using the worker group: the group delete must wait for it.
    let other: Network = net::create(
        &env.s,
        NETWORK,
        &NetworkCreate {
            name: "other".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let blocking = PortCreate {
        name: "blocking".into(),
        network_id: other.id.clone(),
        security_groups: Some(vec![worker]),
        ..Default::default()
    };
    let blocking: Port = net::create(&env.s, PORT, &blocking).await.unwrap();
    let err = delete(&env, &o, &spec, &rec).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains("in use"), "{err}");
    net::delete(&env.s, PORT, &blocking.id).await.unwrap();
    net::delete(&env.s, NETWORK, &other.id).await.unwrap();
    delete(&env, &o, &spec, &rec).await.unwrap();
    assert_eq!(ids(&env), before);
}

#[tokio::test]
async fn security_groups_of_another_cluster_are_refused_and_kept() {
    let env = env().await;
    let spec = managed_spec();
    let theirs = reconcile_fresh(&env, &owner("uid-other"), &spec).await;
    let theirs = theirs.unwrap();
    // Same namespace/name in another management cluster: its network blocks ours first.
    let err = reconcile_fresh(&env, &owner("uid-1"), &spec)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ForeignResource { .. }), "{err}");
    let err = networking::ensure_security_groups(
        &env.s,
        &owner("uid-1"),
        &spec,
        None,
        &Default::default(),
        false,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::ForeignResource {
                kind: "security group",
                ..
            }
        ),
        "{err}"
    );
    // Our delete leaves all of theirs in place.
    let before = ids(&env);
    delete(&env, &owner("uid-1"), &spec, &Recorded::default())
        .await
        .unwrap();
    assert_eq!(ids(&env), before);
    assert!(theirs.groups.control_plane.is_some());
}

#[tokio::test]
async fn cluster_with_upstream_naming_is_adopted_without_recreation() {
    use capo_openstack::network::{ROUTER, SECURITY_GROUP, SUBNET};
    let env = env().await;
    let spec = managed_spec();
    // Build the cluster, then strip every tag: what upstream CAPO leaves behind.
    let upstream = reconcile_fresh(&env, &owner("upstream"), &spec)
        .await
        .unwrap();
    let net_rec = upstream.network.clone().unwrap();
    let strip = [
        (NETWORK, net_rec.id.clone()),
        (SUBNET, net_rec.subnets[0].id.clone()),
        (ROUTER, upstream.router.clone().unwrap().id),
        (
            SECURITY_GROUP,
            upstream.groups.control_plane.clone().unwrap().id,
        ),
        (SECURITY_GROUP, upstream.groups.worker.clone().unwrap().id),
    ];
    for (r, id) in &strip {
        net::replace_tags(&env.s, *r, id, &[]).await.unwrap();
    }
    let before = ids(&env);
    env.sim.control().clear_requests();
    let o = owner("uid-1");
    let adopted = reconcile_fresh(&env, &o, &spec).await.unwrap();
    assert_eq!(adopted.network.as_ref().unwrap().id, net_rec.id);
    assert_eq!(
        adopted.router.as_ref().unwrap().id,
        upstream.router.as_ref().unwrap().id
    );
    assert_eq!(adopted.groups, upstream.groups);
    assert_eq!(ids(&env), before, "nothing created or deleted");
    let w = writes(&env);
    assert_eq!(
        w.len(),
        strip.len(),
        "one tag write per adopted resource: {w:?}"
    );
    assert!(
        w.iter()
            .all(|l| l.starts_with("PUT ") && l.ends_with("/tags")),
        "{w:?}"
    );
    // Now ours: a steady reconcile writes nothing, and delete removes it all.
    env.sim.control().clear_requests();
    reconcile(&env, &o, &spec, &adopted, false).await.unwrap();
    assert!(writes(&env).is_empty());
    delete(&env, &o, &spec, &adopted).await.unwrap();
    assert!(items(&env, "routers").is_empty());
    assert!(
        items(&env, "networks")
            .iter()
            .all(|n| n["id"] != net_rec.id.as_str())
    );
    assert_eq!(
        items(&env, "security_groups").len(),
        1,
        "only the default group is left"
    );
}

#[tokio::test]
async fn managed_network_and_subnet_carry_the_spec_options() {
    use capo_api::v1beta1::AllocationPool;
    let env = env().await;
    let o = owner("uid-1");
    let name = o.cluster_resource_name();
    let by_id = |col: &str, id: &str| {
        items(&env, col)
            .into_iter()
            .find(|x| x["id"] == id)
            .unwrap()
    };
    // No option: Neutron's defaults, an IPv4 subnet named like the network.
    let plain = networking::ensure_cluster_network(&env.s, &o, &managed_spec(), None)
        .await
        .unwrap();
    let n = by_id("networks", &plain.id);
    assert_eq!(n["name"], name.as_str());
    assert_eq!(n["port_security_enabled"], true, "{n}");
    let sn = by_id("subnets", &plain.subnets[0].id);
    assert_eq!(
        (&sn["name"], &sn["ip_version"], &sn["cidr"]),
        (&name.as_str().into(), &4.into(), &"10.6.0.0/24".into())
    );
    assert_eq!(
        sn["description"],
        "Created by capo for OpenStackCluster ns/c1"
    );
    assert_eq!(sn["dns_nameservers"], serde_json::json!(["8.8.8.8"]));
    assert_eq!(
        (
            plain.subnets[0].name.as_str(),
            plain.subnets[0].cidr.as_str()
        ),
        (name.as_str(), "10.6.0.0/24")
    );
    networking::delete_network(&env.s, &o, &managed_spec(), Some(&plain))
        .await
        .unwrap();

    // MTU, port security off and allocation pools reach the network and the subnet.
    let mut spec = managed_spec();
    spec.network_mtu = Some(1400);
    spec.disable_port_security = Some(true);
    spec.managed_subnets[0].allocation_pools = vec![AllocationPool {
        start: "10.6.0.10".into(),
        end: "10.6.0.20".into(),
    }];
    let got = networking::ensure_cluster_network(&env.s, &o, &spec, None)
        .await
        .unwrap();
    let n = by_id("networks", &got.id);
    assert_eq!(
        (&n["mtu"], &n["port_security_enabled"]),
        (&1400.into(), &false.into())
    );
    let sn = by_id("subnets", &got.subnets[0].id);
    assert_eq!(
        sn["allocation_pools"],
        serde_json::json!([{"start": "10.6.0.10", "end": "10.6.0.20"}])
    );
    networking::delete_network(&env.s, &o, &spec, Some(&got))
        .await
        .unwrap();

    // An IPv6 CIDR makes an IPv6 subnet, found again (no write) on the next reconcile.
    let mut v6 = managed_spec();
    v6.managed_subnets[0].cidr = "fd12:3456:789a::/48".into();
    v6.managed_subnets[0].dns_nameservers.clear();
    let got6 = networking::ensure_cluster_network(&env.s, &o, &v6, None)
        .await
        .unwrap();
    let sn = by_id("subnets", &got6.subnets[0].id);
    assert_eq!(
        (&sn["ip_version"], &sn["cidr"]),
        (&6.into(), &"fd12:3456:789a::/48".into())
    );
    env.sim.control().clear_requests();
    for recorded in [Some(&got6), None] {
        let again = networking::ensure_cluster_network(&env.s, &o, &v6, recorded)
            .await
            .unwrap();
        assert_eq!(again, got6);
    }
    assert!(writes(&env).is_empty(), "{:?}", writes(&env));
    assert_eq!(got6.subnets[0].cidr, "fd12:3456:789a::/48");
}

#[tokio::test]
async fn unmanaged_security_groups_are_neither_made_nor_looked_up() {
    let env = env().await;
    let mut spec = managed_spec();
    spec.managed_security_groups = None;
    let got = networking::ensure_security_groups(
        &env.s,
        &owner("uid-1"),
        &spec,
        Some("10.6.0.0/24"),
        &Default::default(),
        false,
    )
    .await
    .unwrap();
    assert!(got.is_none());
    assert!(trace(&env).is_empty(), "{:?}", trace(&env));
}

#[tokio::test]
async fn delete_with_a_lost_status_finds_router_and_network_by_name() {
    let env = env().await;
    let o = owner("uid-1");
    let spec = managed_spec();
    let before = ids(&env);
    reconcile_fresh(&env, &o, &spec).await.unwrap();
    env.sim.control().clear_requests();
    // Nothing recorded (status lost): the router is found by name, its interface removed,
    // then router, network and groups deleted.
    delete(&env, &o, &spec, &Recorded::default()).await.unwrap();
    let w = writes(&env);
    for call in [
        "PUT /network/v2.0/routers/{id}/remove_router_interface",
        "DELETE /network/v2.0/routers/{id}",
        "DELETE /network/v2.0/networks/{id}",
    ] {
        assert!(w.iter().any(|l| l == call), "{call} missing from {w:?}");
    }
    assert_eq!(ids(&env), before);
    // Nothing there and nothing recorded: success, no write.
    env.sim.control().clear_requests();
    delete(&env, &o, &spec, &Recorded::default()).await.unwrap();
    assert!(writes(&env).is_empty(), "{:?}", writes(&env));
}

#[tokio::test]
async fn a_requested_floating_ip_is_allocated_with_its_address_found_again_and_kept() {
    use capo_cloud::networking::floating_ip::{self as fip, FipTarget, Purpose};
    let env = env().await;
    let o = owner("uid-1");
    let ext = networking::ensure_external_network(&env.s, &managed_spec())
        .await
        .unwrap()
        .unwrap();
    let target = FipTarget {
        purpose: Purpose::ApiServer,
        requested: Some("172.24.4.77"),
        external_network_id: &ext.id,
        port_id: "",
        recorded_ip: None,
        named_ip: None,
    };
    // Not allocated yet: allocated with that address (and, being the user's, not tagged).
    env.sim.control().clear_requests();
    let first = fip::ensure_floating_ip(&env.s, &o, &target).await.unwrap();
    assert_eq!((first.ip.as_str(), first.ours), ("172.24.4.77", false));
    assert_eq!(
        writes(&env),
        vec!["POST /network/v2.0/floatingips".to_string()]
    );
    // Already allocated: found by its address, nothing written.
    env.sim.control().clear_requests();
    let again = fip::ensure_floating_ip(&env.s, &o, &target).await.unwrap();
    assert_eq!(again.id, first.id);
    assert!(writes(&env).is_empty(), "{:?}", writes(&env));
    // The user's address: never deleted with the cluster.
    fip::delete_floating_ips(&env.s, &o, Purpose::ApiServer, target.requested)
        .await
        .unwrap();
    assert_eq!(items(&env, "floatingips").len(), 1);
}

//! OpenStackServer services against capo-sim: ports, trunks, volumes, servers, lost replies,
//! NoValidHost, deletion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use capo_api::v1beta1::{
    AdditionalBlockDevice, AddressPair, BindingProfile, BlockDeviceStorage, BlockDeviceVolume,
    ImageFilter, ImageParam, ResolvedFixedIP, ResolvedPortSpec, RootVolume,
};
use capo_cloud::instance::{self, Recorded, ServerOwner, ServerRequest, plan_volumes, port_name};
use capo_cloud::{Error, Progress};
use capo_openstack::compute::{Server, UserData};
use capo_openstack::network::{
    self as net, NETWORK, Network, NetworkCreate, SUBNET, Subnet, SubnetCreate,
};
use capo_sim::{Delays, FaultSpec};
use common::*;

async fn network(env: &Env) -> (Network, Subnet) {
    let n: Network = net::create(
        &env.s,
        NETWORK,
        &NetworkCreate {
            name: "cluster-net".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let body = SubnetCreate {
        name: "cluster-subnet".into(),
        network_id: n.id.clone(),
        cidr: "10.8.0.0/24".into(),
        ip_version: 4,
        ..Default::default()
    };
    let sn = net::create(&env.s, SUBNET, &body).await.unwrap();
    (n, sn)
}

async fn fast_env() -> Env {
    let env = env().await;
    env.sim.control().set_delays(Delays {
        server_build_ms: 30,
        volume_create_ms: 30,
        ..Delays::default()
    });
    env
}

fn server_owner(name: &str) -> ServerOwner {
    ServerOwner {
        uid: format!("uid-{name}"),
        name: name.into(),
        spec_tags: vec!["machine-tag".into(), "cluster-tag".into()],
    }
}

fn port_spec(o: &ServerOwner, n: &Network, sn: &Subnet, idx: usize) -> ResolvedPortSpec {
    ResolvedPortSpec {
        name: port_name(&o.name, None, idx),
        network_id: n.id.clone(),
        fixed_ips: vec![ResolvedFixedIP {
            subnet: Some(sn.id.clone()),
            ip_address: None,
        }],
        description: "Created by capo".into(),
        ..Default::default()
    }
}

/// The seeded Kubernetes image, resolved by a Glance name filter as a machine spec would ask.
async fn seeded_image(env: &Env) -> String {
    let param = ImageParam {
        filter: Some(ImageFilter {
            name: Some("ubuntu-2404-kube-v1.34".into()),
            tags: vec![],
        }),
        ..Default::default()
    };
    instance::resolve_image(&env.s, &param).await.unwrap()
}

/// Image and flavor IDs as the controller records them in `status.resolved` (once).
async fn resolve(env: &Env) -> (String, String) {
    let image = seeded_image(env).await;
    let flavor = instance::resolve_flavor(&env.s, Some("m1.small"), None)
        .await
        .unwrap();
    (image, flavor.id)
}

/// One reconcile as the controller would do it after resolving: ports, then the server.
async fn worker(
    env: &Env,
    o: &ServerOwner,
    ports: &[ResolvedPortSpec],
    rec: &mut Recorded,
    (image, flavor): &(String, String),
) -> capo_cloud::Result<Progress<Server>> {
    let s = &env.s;
    let before = rec.port_ids.clone();
    let ensured = instance::ensure_ports(s, o, ports, &before, |i, p| {
        if rec.port_ids.len() <= i {
            rec.port_ids.push(p.id.clone());
        }
    })
    .await?;
    let req = ServerRequest {
        flavor_id: flavor.clone(),
        image_id: Some(image.clone()),
        port_ids: ensured.into_iter().map(|p| p.id).collect(),
        user_data: Some(UserData::new("#cloud-config\nsecret: s3cr3t\n")),
        metadata: BTreeMap::from([("role".into(), "worker".into())]),
        ..Default::default()
    };
    let (server, progress) =
        instance::ensure_server(s, o, &req, rec.instance_id.as_deref()).await?;
    rec.instance_id = Some(server.id.clone());
    Ok(progress.map(|()| server))
}

/// Requeue until ready (bounded), like the controller's backoff.
async fn until_active(
    env: &Env,
    o: &ServerOwner,
    ports: &[ResolvedPortSpec],
    rec: &mut Recorded,
    resolved: &(String, String),
) -> Server {
    for _ in 0..50 {
        match worker(env, o, ports, rec, resolved).await {
            Ok(Progress::Done(v)) => return v,
            Ok(Progress::Waiting(_) | Progress::Stuck(_)) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) if e.is_retryable() && !e.is_slow_retry() => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    panic!("server never became ACTIVE")
}

async fn delete_all(env: &Env, o: &ServerOwner, rec: &Recorded, ports: &[String], vols: &[String]) {
    for _ in 0..50 {
        match instance::delete_server_resources(&env.s, o, rec, ports, vols).await {
            Ok(Progress::Done(())) => return,
            Ok(Progress::Waiting(_) | Progress::Stuck(_)) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("delete failed: {e}"),
        }
    }
    panic!("delete never finished")
}

fn count(env: &Env, col: &str) -> usize {
    items(env, col).len()
}

/// Only the test's network and subnet remain.
fn nothing_left(env: &Env) {
    for col in ["servers", "ports", "trunks", "volumes"] {
        assert_eq!(count(env, col), 0, "{col} left: {:?}", items(env, col));
    }
}

#[tokio::test]
async fn worker_on_one_port_becomes_active_and_deletes_cleanly() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let resolved = resolve(&env).await;
    let o = server_owner("w-1");
    let ports = vec![port_spec(&o, &n, &sn, 0)];
    env.sim.control().clear_requests();
    let mut rec = Recorded::default();
    let server = until_active(&env, &o, &ports, &mut rec, &resolved).await;
    let t = trace(&env);
    let w = writes(&env);
    println!(
        "worker create: {} requests, {} writes: {t:?}",
        t.len(),
        w.len()
    );
    println!("counters: {:#?}", env.sim.control().counters());
    assert_eq!(server.metadata["capo-server-uid"], "uid-w-1");
    assert!(server.tags.contains(&"machine-tag".to_string()));
    let p = &items(&env, "ports")[0];
    assert_eq!(p["name"], "w-1-0");
    assert!(
        p["tags"]
            .as_array()
            .unwrap()
            .contains(&"capo-server-uid=uid-w-1".into())
    );
    // Steady state: nothing written.
    env.sim.control().clear_requests();
    until_active(&env, &o, &ports, &mut rec, &resolved).await;
    println!("worker steady: {:?}", trace(&env));
    assert!(writes(&env).is_empty(), "{:?}", writes(&env));
    env.sim.control().clear_requests();
    delete_all(&env, &o, &rec, &["w-1-0".into()], &[]).await;
    println!("worker delete: {:?}", trace(&env));
    nothing_left(&env);
    // Delete again with a lost status: nothing to do, still success.
    delete_all(&env, &o, &Recorded::default(), &["w-1-0".into()], &[]).await;
}

#[tokio::test]
async fn boot_from_volume_with_volume_and_local_devices() {
    let env = fast_env().await;
    let o = server_owner("bfv");
    let (rec, _, names) = boot_from_volume(&env, &o, Some(("scratch", 1))).await;
    assert_eq!(names, ["bfv-root", "bfv-etcd"]);
    let server = &items(&env, "servers")[0];
    assert_eq!(server["status"], "ACTIVE");
    for v in items(&env, "volumes") {
        assert_eq!(v["status"], "in-use", "{v}");
        assert_eq!(v["metadata"]["capo-server-uid"], "uid-bfv");
    }
    assert_eq!(count(&env, "volumes"), 2, "no volume made by Nova");
    // Lost status: delete finds the volumes by name.
    let lost = Recorded {
        instance_id: rec.instance_id.clone(),
        ..Default::default()
    };
    delete_all(&env, &o, &lost, &["bfv-0".into()], &names).await;
    nothing_left(&env);
}

#[tokio::test]
async fn two_ports_trunk_and_allowed_address_pairs() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let resolved = resolve(&env).await;
    let o = server_owner("tr");
    let mut p0 = port_spec(&o, &n, &sn, 0);
    p0.trunk = Some(true);
    let mut p1 = port_spec(&o, &n, &sn, 1);
    p1.name = port_name(&o.name, Some("vip"), 1);
    p1.allowed_address_pairs = vec![AddressPair {
        ip_address: "10.8.0.200".into(),
        mac_address: None,
    }];
    p1.tags = vec!["extra".into()];
    let ports = vec![p0, p1];
    // The trunk create's reply is lost once: the rerun finds the trunk on the port.
    env.sim
        .control()
        .add_faults(vec![lost_reply("/trunks$")])
        .unwrap();
    let mut rec = Recorded::default();
    let server = until_active(&env, &o, &ports, &mut rec, &resolved).await;
    assert!(env.sim.control().faults().is_empty(), "the fault fired");
    assert_eq!(rec.port_ids.len(), 2);
    let trunks = items(&env, "trunks");
    assert_eq!(trunks.len(), 1);
    assert_eq!(trunks[0]["name"], "tr-0");
    assert_eq!(trunks[0]["port_id"], rec.port_ids[0].as_str());
    // Described like its port, tagged like it (spec tags and the server's ownership tag).
    assert_eq!(trunks[0]["description"], "Created by capo");
    let trunk_tags = trunks[0]["tags"].as_array().unwrap();
    for t in ["machine-tag", "cluster-tag", "capo-server-uid=uid-tr"] {
        assert!(trunk_tags.contains(&t.into()), "{trunk_tags:?}");
    }
    let vip = items(&env, "ports")
        .into_iter()
        .find(|p| p["name"] == "tr-vip")
        .unwrap();
    assert_eq!(vip["allowed_address_pairs"][0]["ip_address"], "10.8.0.200");
    assert!(vip["tags"].as_array().unwrap().contains(&"extra".into()));
    assert_eq!(server.addresses.values().flatten().count(), 2);
    // Port and trunk already there with their tags: a rerun writes nothing.
    env.sim.control().clear_requests();
    until_active(&env, &o, &ports, &mut rec, &resolved).await;
    assert!(writes(&env).is_empty(), "{:?}", writes(&env));
    delete_all(&env, &o, &rec, &[], &[]).await;
    nothing_left(&env);
}

/// A port asking for a trusted VF is made with the port's own `trusted` attribute on a Neutron
/// with `port-trusted-vif` (capo-sim has it, as the real Neutron of the tests has): the
/// extension list is read once per session, only for such ports, and Neutron mirrors the
/// attribute into `binding:profile` for Nova.
#[tokio::test]
async fn a_trusted_vf_port_uses_the_ports_trusted_attribute() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let o = server_owner("tv");
    let plain = port_spec(&o, &n, &sn, 0);
    let mut trusted = port_spec(&o, &n, &sn, 1);
    trusted.profile = Some(BindingProfile {
        ovs_hw_offload: Some(true),
        trusted_vf: Some(true),
    });
    let mut second = port_spec(&o, &n, &sn, 2);
    second.profile = trusted.profile.clone();
    env.sim.control().clear_requests();
    for spec in [&plain, &trusted, &second] {
        instance::ensure_port(&env.s, &o, spec, None).await.unwrap();
    }
    let listed = trace(&env)
        .iter()
        .filter(|l| l.ends_with("/extensions"))
        .count();
    assert_eq!(listed, 1, "{:?}", trace(&env));
    let ports = items(&env, "ports");
    let port = |name: &str| ports.iter().find(|p| p["name"] == name).unwrap().clone();
    assert_eq!(port("tv-0")["trusted"], serde_json::Value::Null);
    assert_eq!(port("tv-0")["binding:profile"], serde_json::json!({}));
    for name in ["tv-1", "tv-2"] {
        assert_eq!(port(name)["trusted"], true);
        assert_eq!(
            port(name)["binding:profile"],
            serde_json::json!({"capabilities": ["switchdev"], "trusted": true})
        );
    }
}

/// Upstream's "create port with tags and trunk when standard-attr-tag is not supported": on a
/// Neutron without tags the port is made but its tag write is refused; capo says which
/// extension is missing and goes no further (no trunk: upstream makes both untagged, but
/// capo's ownership is the tag), and a rerun finds the port by name instead of making another.
#[tokio::test]
async fn a_neutron_without_tags_names_the_extension_and_makes_the_port_once() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    env.sim.control().set_without_neutron_tags(true);
    let o = server_owner("nt");
    let mut spec = port_spec(&o, &n, &sn, 0);
    spec.trunk = Some(true);
    for _ in 0..2 {
        let err = instance::ensure_port(&env.s, &o, &spec, None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                &err,
                Error::OpenStack {
                    source: capo_openstack::Error::ExtensionMissing { extension, .. },
                    ..
                } if extension == "standard-attr-tag"
            ),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("no standard-attr-tag extension"),
            "{err}"
        );
    }
    let named = items(&env, "ports")
        .into_iter()
        .filter(|p| p["name"] == "nt-0")
        .count();
    assert_eq!(named, 1);
    assert_eq!(count(&env, "trunks"), 0);
}

/// A POST that is executed but whose reply is replaced by a 502 (built from JSON so the test
/// does not depend on every field of the simulator's rule type).
/// Two volumes under the server's root-volume name, as a create whose reply was lost and that
/// Cinder committed after the rerun created again leaves them: one is kept, the other deleted,
/// and the server's delete removes every volume of that name.
#[tokio::test]
async fn duplicate_volumes_from_a_lost_reply_keep_one_and_leak_none() {
    let env = fast_env().await;
    let o = server_owner("dup");
    let root = RootVolume {
        size_gib: 4,
        ..Default::default()
    };
    let plan = plan_volumes(&o.name, Some(&root), None, &[], None);
    for metadata in [o.metadata(), BTreeMap::new()] {
        let create = capo_openstack::blockstorage::VolumeCreate {
            name: plan[0].name.clone(),
            size: 4,
            description: None,
            volume_type: None,
            availability_zone: None,
            image_ref: None,
            metadata,
        };
        capo_openstack::blockstorage::create_volume(&env.s, &create)
            .await
            .unwrap();
    }
    assert_eq!(count(&env, "volumes"), 2);
    let mut kept = None;
    for _ in 0..50 {
        match instance::ensure_volume(&env.s, &o, &plan[0], None)
            .await
            .unwrap()
        {
            (v, Progress::Done(())) => {
                kept = Some(v);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let kept = kept.expect("one volume kept");
    let left: Vec<_> = items(&env, "volumes")
        .into_iter()
        .filter(|v| v["status"] != "deleting")
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["id"], kept.id.as_str(), "the tagged volume is kept");
    delete_all(&env, &o, &Recorded::default(), &[], &[plan[0].name.clone()]).await;
    assert_eq!(count(&env, "volumes"), 0);
}

fn lost_reply(path: &str) -> FaultSpec {
    serde_json::from_value(serde_json::json!({
        "method": "POST",
        "path_regex": path,
        "status": 502,
        "count": 1,
        "after_action": true,
    }))
    .unwrap()
}

#[tokio::test]
async fn lost_replies_on_post_create_exactly_one_of_each() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let resolved = resolve(&env).await;
    let o = server_owner("lost");
    let ports = vec![port_spec(&o, &n, &sn, 0)];
    env.sim
        .control()
        .add_faults(vec![
            lost_reply("/ports$"),
            lost_reply("/servers$"),
            lost_reply("/volumes$"),
        ])
        .unwrap();
    let plan = plan_volumes(
        &o.name,
        Some(&RootVolume {
            size_gib: 4,
            ..Default::default()
        }),
        None,
        &[],
        None,
    );
    // The volume: first call loses the reply, the rerun adopts it by name.
    let mut vol = None;
    for _ in 0..50 {
        match instance::ensure_volume(&env.s, &o, &plan[0], None).await {
            Ok((v, Progress::Done(()))) => {
                vol = Some(v);
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => assert!(e.is_retryable(), "{e}"),
        }
    }
    assert!(vol.is_some());
    // Status lost every time (nothing recorded): ports and server found by name + ownership.
    let mut errors = 0;
    for _ in 0..50 {
        let mut rec = Recorded::default();
        match worker(&env, &o, &ports, &mut rec, &resolved).await {
            Ok(Progress::Done(_)) => break,
            Ok(Progress::Waiting(_) | Progress::Stuck(_)) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => {
                assert!(e.is_retryable(), "{e}");
                errors += 1;
            }
        }
    }
    assert_eq!(errors, 2, "one lost reply each for the port and the server");
    assert!(env.sim.control().faults().is_empty(), "every fault fired");
    assert_eq!(count(&env, "ports"), 1);
    assert_eq!(count(&env, "servers"), 1);
    assert_eq!(count(&env, "volumes"), 1);
}

#[tokio::test]
async fn no_valid_host_reports_fault_then_recovers() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let resolved = resolve(&env).await;
    let o = server_owner("nvh");
    let ports = vec![port_spec(&o, &n, &sn, 0)];
    env.sim.control().fail_builds("^nvh$", 1).unwrap();
    let mut rec = Recorded::default();
    let err = loop {
        match worker(&env, &o, &ports, &mut rec, &resolved).await {
            Ok(Progress::Waiting(_) | Progress::Stuck(_)) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Ok(Progress::Done(_)) => panic!("build should fail"),
            Err(e) => break e,
        }
    };
    let Error::InstanceFailed { id, fault, .. } = &err else {
        panic!("{err}")
    };
    assert!(fault.contains("No valid host"), "{fault}");
    assert!(err.is_retryable() && err.is_slow_retry());
    assert!(!err.to_string().contains("s3cr3t"));
    // The caller deletes the ERROR server (only the server) and forgets it, then retries.
    capo_openstack::compute::delete_server(&env.s, id)
        .await
        .unwrap();
    let port_before = rec.port_ids.clone();
    rec.instance_id = None;
    until_active(&env, &o, &ports, &mut rec, &resolved).await;
    assert_eq!(rec.port_ids, port_before, "the port is reused");
    assert_eq!(count(&env, "ports"), 1);
    assert_eq!(count(&env, "servers"), 1);
    // Deleted behind our back: reported, not silently re-created.
    let gone = rec.instance_id.clone().unwrap();
    capo_openstack::compute::delete_server(&env.s, &gone)
        .await
        .unwrap();
    let err = worker(&env, &o, &ports, &mut rec, &resolved)
        .await
        .unwrap_err();
    // Nova no longer knows the ID: no state (the controller reports InstanceNotFound).
    assert!(
        matches!(err, Error::ServerDeleted { state: None, .. }),
        "{err:?}"
    );
    assert_eq!(count(&env, "servers"), 0);
}

#[tokio::test]
async fn foreign_and_duplicate_servers_are_refused() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let resolved = resolve(&env).await;
    let o = server_owner("dup");
    let ports = vec![port_spec(&o, &n, &sn, 0)];
    let mut rec = Recorded::default();
    until_active(&env, &o, &ports, &mut rec, &resolved).await;
    // Another OpenStackServer with the same name (another management cluster).
    let other = ServerOwner {
        uid: "someone-else".into(),
        ..o.clone()
    };
    let err = worker(
        &env,
        &other,
        &[port_spec(&other, &n, &sn, 0)],
        &mut Recorded::default(),
        &resolved,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::ForeignResource { .. }), "{err}");
    // Its delete leaves our resources alone.
    delete_all(&env, &other, &Recorded::default(), &["dup-0".into()], &[]).await;
    assert_eq!(count(&env, "servers"), 1);
    assert_eq!(count(&env, "ports"), 1);
}

/// Boot `o` from a root volume with a data volume `etcd` on one port, and the given local
/// (ephemeral) device if any; (recorded IDs, port names, volume names).
async fn boot_from_volume(
    env: &Env,
    o: &ServerOwner,
    local: Option<(&str, i32)>,
) -> (Recorded, Vec<String>, Vec<String>) {
    boot_from_volume_typed(env, o, local, None).await
}

/// [`boot_from_volume`] with the Cinder type of the `etcd` volume.
async fn boot_from_volume_typed(
    env: &Env,
    o: &ServerOwner,
    local: Option<(&str, i32)>,
    etcd_type: Option<&str>,
) -> (Recorded, Vec<String>, Vec<String>) {
    let s = &env.s;
    let (n, sn) = network(env).await;
    let ports = [port_spec(o, &n, &sn, 0)];
    let image = seeded_image(env).await;
    let mut devices = vec![AdditionalBlockDevice {
        name: "etcd".into(),
        size_gib: 2,
        storage: BlockDeviceStorage {
            r#type: "Volume".into(),
            volume: Some(BlockDeviceVolume {
                r#type: etcd_type.map(str::to_owned),
                ..Default::default()
            }),
        },
    }];
    devices.extend(local.map(|(name, size_gib)| AdditionalBlockDevice {
        name: name.into(),
        size_gib,
        storage: BlockDeviceStorage {
            r#type: "Local".into(),
            volume: None,
        },
    }));
    let root = RootVolume {
        size_gib: 10,
        ..Default::default()
    };
    let plan = plan_volumes(&o.name, Some(&root), Some(&image), &devices, None);
    let mut recorded = BTreeMap::new();
    let mut vols = Vec::new();
    for _ in 0..50 {
        let out = instance::ensure_volumes(s, o, &plan, &recorded.clone(), |d, id| {
            recorded.insert(d.to_owned(), id.to_owned());
        })
        .await
        .unwrap();
        if let Progress::Done(v) = out {
            vols = v;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(vols.len(), 2);
    let port = instance::ensure_port(s, o, &ports[0], None).await.unwrap();
    let flavor = instance::resolve_flavor(s, None, Some("2")).await.unwrap();
    let req = ServerRequest {
        flavor_id: flavor.id,
        image_id: Some(image),
        port_ids: vec![port.id.clone()],
        volumes: vols.clone(),
        local_devices: local
            .map(|(name, size_gib)| (name.to_owned(), u32::try_from(size_gib).unwrap()))
            .into_iter()
            .collect(),
        ..Default::default()
    };
    let mut rec = Recorded {
        port_ids: vec![port.id],
        volume_ids: vols.iter().map(|v| v.id.clone()).collect(),
        ..Default::default()
    };
    for _ in 0..50 {
        let (server, progress) = instance::ensure_server(s, o, &req, rec.instance_id.as_deref())
            .await
            .unwrap();
        rec.instance_id = Some(server.id);
        if progress.is_done() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let names = plan.iter().map(|v| v.name.clone()).collect();
    (rec, vec![ports[0].name.clone()], names)
}

/// Upstream's "Volume that is multiattach": a server whose additional volume is of a
/// multiattach type is created (Nova refuses such a volume below microversion 2.60, which a
/// create without it shows), and the volume is attached.
#[tokio::test]
async fn a_multiattach_volume_is_attached_at_create() {
    let env = fast_env().await;
    let o = server_owner("ma");
    // Nova below 2.60 refuses a multiattach volume: the simulator does too.
    let vol = capo_openstack::blockstorage::create_volume(
        &env.s,
        &capo_openstack::blockstorage::VolumeCreate {
            name: "probe".into(),
            size: 1,
            volume_type: Some("multiattach".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let flavor = instance::resolve_flavor(&env.s, None, Some("2"))
        .await
        .unwrap();
    for _ in 0..50 {
        let v = capo_openstack::blockstorage::get_volume(&env.s, &vol.id)
            .await
            .unwrap();
        if v.status == "available" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let old = capo_openstack::compute::create_server(
        &env.s,
        &capo_openstack::compute::ServerCreate {
            name: "probe".into(),
            flavor_id: flavor.id,
            block_devices: vec![capo_openstack::compute::BlockDevice {
                source_type: "volume".into(),
                destination_type: "volume".into(),
                uuid: Some(vol.id.clone()),
                boot_index: 0,
                delete_on_termination: false,
                volume_size: None,
                tag: None,
            }],
            multiattach: false,
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(old.to_string().contains("2.60"), "{old}");
    capo_openstack::blockstorage::delete_volume(&env.s, &vol.id)
        .await
        .unwrap();

    let (_, _, names) = boot_from_volume_typed(&env, &o, None, Some("multiattach")).await;
    assert_eq!(names, ["ma-root", "ma-etcd"]);
    let server = &items(&env, "servers")[0];
    assert_eq!(server["status"], "ACTIVE");
    let etcd = named_volume(&env, "ma-etcd");
    assert_eq!(etcd["multiattach"], true, "{etcd}");
    assert_eq!(etcd["status"], "in-use", "{etcd}");
    assert_eq!(etcd["attachments"][0]["server_id"], server["id"], "{etcd}");
}

fn named_volume(env: &Env, name: &str) -> serde_json::Value {
    items(env, "volumes")
        .into_iter()
        .find(|v| v["name"] == name)
        .unwrap()
}

/// DELETEs of servers the simulator answered.
fn server_deletes(env: &Env) -> u64 {
    env.sim
        .control()
        .counters()
        .get("compute DELETE /compute/v2.1/servers/{id}")
        .copied()
        .unwrap_or(0)
}

/// Nova's `delete_on_termination` of each volume attached to `server` (2.85).
async fn delete_on_termination(env: &Env, server: &str) -> BTreeMap<String, bool> {
    capo_openstack::compute::list_volume_attachments_dot(&env.s, server)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.volume_id, a.delete_on_termination == Some(true)))
        .collect()
}

#[tokio::test]
async fn soft_deleted_server_counts_as_deleted_and_nova_takes_its_volumes() {
    let env = fast_env().await;
    env.sim.control().set_server_reclaim_ms(3_600_000);
    let o = server_owner("sd");
    let (rec, ports, vols) = boot_from_volume(&env, &o, None).await;
    let id = rec.instance_id.clone().unwrap();
    env.sim.control().clear_requests();
    delete_all(&env, &o, &rec, &ports, &vols).await;
    println!("soft delete: {:?}", trace(&env));
    // Done while Nova keeps the server: its port deleted, its volumes (the root one cannot be
    // detached) attached still and marked for Nova to delete with it.
    let servers = items(&env, "servers");
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0]["status"], "SOFT_DELETED");
    assert_eq!(count(&env, "ports"), 0, "{:?}", items(&env, "ports"));
    let volumes = items(&env, "volumes");
    assert_eq!(volumes.len(), 2);
    assert!(
        volumes.iter().all(|v| v["status"] == "in-use"),
        "{volumes:?}"
    );
    let marked = delete_on_termination(&env, &id).await;
    assert_eq!(marked.len(), 2);
    assert!(marked.values().all(|m| *m), "{marked:?}");
    assert_eq!(server_deletes(&env), 1);
    // Later passes (a requeue, a lost status) find nothing to do: no second DELETE, which
    // would restart Nova's reclaim clock, and nothing written.
    env.sim.control().clear_requests();
    delete_all(&env, &o, &rec, &ports, &vols).await;
    delete_all(&env, &o, &Recorded::default(), &ports, &vols).await;
    assert!(writes(&env).is_empty(), "{:?}", writes(&env));
    // Nova's reclaim takes the server and its volumes.
    assert_eq!(env.sim.control().reclaim_servers(), 1);
    nothing_left(&env);
}

#[tokio::test]
async fn a_server_restored_during_its_deletion_is_deleted_again() {
    let env = fast_env().await;
    env.sim.control().set_server_reclaim_ms(3_600_000);
    let o = server_owner("rs");
    let (rec, ports, vols) = boot_from_volume(&env, &o, None).await;
    let id = rec.instance_id.clone().unwrap();
    delete_all(&env, &o, &rec, &ports, &vols).await;
    // Restored behind capo's back before its controller let go (a requeued pass follows).
    let restore = capo_openstack::Request::post(
        capo_openstack::Service::Compute,
        format!("servers/{id}/action"),
        "server_action",
        serde_json::json!({"restore": null}),
    );
    env.s.send(&restore).await.unwrap();
    assert_eq!(items(&env, "servers")[0]["status"], "ACTIVE");
    env.sim.control().clear_requests();
    delete_all(&env, &o, &rec, &ports, &vols).await;
    assert_eq!(server_deletes(&env), 1, "deleted again");
    assert_eq!(items(&env, "servers")[0]["status"], "SOFT_DELETED");
    assert_eq!(env.sim.control().reclaim_servers(), 1);
    nothing_left(&env);
}

#[tokio::test]
async fn without_soft_delete_volumes_are_deleted_by_capo() {
    let env = fast_env().await;
    let o = server_owner("hd");
    let (rec, ports, vols) = boot_from_volume(&env, &o, None).await;
    delete_all(&env, &o, &rec, &ports, &vols).await;
    nothing_left(&env);
    assert!(
        !trace(&env)
            .iter()
            .any(|l| l.starts_with("PUT ") && l.contains("os-volume_attachments")),
        "no delete_on_termination update when Nova deleted the server"
    );
}

#[tokio::test]
async fn a_server_soft_deleted_behind_capos_back_is_not_found_and_not_recreated() {
    let env = fast_env().await;
    env.sim.control().set_server_reclaim_ms(3_600_000);
    let (n, sn) = network(&env).await;
    let resolved = resolve(&env).await;
    let o = server_owner("gone");
    let ports = vec![port_spec(&o, &n, &sn, 0)];
    let mut rec = Recorded::default();
    let server = until_active(&env, &o, &ports, &mut rec, &resolved).await;
    instance::delete_server(&env.s, &server.id).await.unwrap();
    assert_eq!(items(&env, "servers")[0]["status"], "SOFT_DELETED");
    assert!(
        instance::get_server(&env.s, &server.id)
            .await
            .unwrap()
            .is_none()
    );
    // The recorded server is gone, Nova still shows it SOFT_DELETED: ServerDeleted with that
    // state (the controller reports InstanceDeleted), never a second server under the name.
    match worker(&env, &o, &ports, &mut rec, &resolved).await {
        Err(Error::ServerDeleted { state: Some(s), .. }) if s == "SOFT_DELETED" => {}
        other => panic!("expected ServerDeleted, got {other:?}"),
    }
    assert_eq!(count(&env, "servers"), 1);
}

fn fault(method: &str, path_regex: String, status: u16, after_action: bool) -> FaultSpec {
    FaultSpec {
        method: Some(method.into()),
        path_regex,
        status,
        count: Some(1),
        after_action,
        ..Default::default()
    }
}

/// Upstream's DeleteInstance cases "Delete API returns error", "Delete API returns not found"
/// and "GetServer returns error": a refused DELETE or a failed look after it is an error
/// (nothing else is deleted, the rerun finishes); a DELETE answered 404 counts as done.
#[tokio::test]
async fn delete_errors_stop_and_a_not_found_delete_is_done() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let resolved = resolve(&env).await;
    for name in ["de", "ge"] {
        let o = server_owner(name);
        let ports = vec![port_spec(&o, &n, &sn, 0)];
        let mut rec = Recorded::default();
        let server = until_active(&env, &o, &ports, &mut rec, &resolved).await;
        let at = format!("/servers/{}$", server.id);
        let port_names = [format!("{name}-0")];
        if name == "de" {
            // DELETE refused: an error, the server and its port stay.
            env.sim
                .control()
                .add_faults(vec![fault("DELETE", at.clone(), 403, false)])
                .unwrap();
            let del = instance::delete_server_resources(&env.s, &o, &rec, &port_names, &[]);
            let err = del.await.unwrap_err();
            assert!(!err.is_retryable(), "{err}");
            assert_eq!((count(&env, "servers"), count(&env, "ports")), (1, 1));
            // DELETE carried out but answered 404: done at once, the port goes too.
            env.sim
                .control()
                .add_faults(vec![fault("DELETE", at, 404, true)])
                .unwrap();
            let del = instance::delete_server_resources(&env.s, &o, &rec, &port_names, &[]);
            assert_eq!(del.await.unwrap(), Progress::Done(()));
        } else {
            // The look after the DELETE fails: an error (the server was found by name, the
            // status having lost its ID); the rerun finds it gone and finishes.
            env.sim
                .control()
                .add_faults(vec![fault("GET", at, 403, false)])
                .unwrap();
            let lost = Recorded {
                port_ids: rec.port_ids.clone(),
                ..Default::default()
            };
            let del = instance::delete_server_resources(&env.s, &o, &lost, &port_names, &[]);
            assert!(del.await.is_err());
            assert!(env.sim.control().faults().is_empty(), "the fault fired");
            delete_all(&env, &o, &lost, &port_names, &[]).await;
        }
        assert!(env.sim.control().faults().is_empty(), "every fault fired");
        nothing_left(&env);
    }
}

/// Upstream's "Server not found after delete" and "Server in DELETED state": a server Nova no
/// longer shows, or shows `DELETED` (or `SOFT_DELETED`), is gone; every other state is a live
/// server.
#[tokio::test]
async fn a_server_shown_deleted_or_not_found_is_gone() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let resolved = resolve(&env).await;
    let o = server_owner("dd");
    let ports = vec![port_spec(&o, &n, &sn, 0)];
    let mut rec = Recorded::default();
    let server = until_active(&env, &o, &ports, &mut rec, &resolved).await;
    let mut shown = items(&env, "servers")[0].clone();
    shown["status"] = "DELETED".into();
    env.sim
        .control()
        .add_faults(vec![FaultSpec {
            body: Some(serde_json::json!({ "server": shown })),
            ..fault("GET", format!("/servers/{}$", server.id), 200, false)
        }])
        .unwrap();
    assert!(
        instance::get_server(&env.s, &server.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(env.sim.control().faults().is_empty(), "the fault fired");
    for status in ["DELETED", "SOFT_DELETED"] {
        assert!(instance::is_gone(status), "{status}");
    }
    for status in ["ACTIVE", "BUILD", "ERROR", "SHUTOFF", "REBUILD"] {
        assert!(!instance::is_gone(status), "{status}");
    }
    delete_all(&env, &o, &rec, &["dd-0".into()], &[]).await;
    assert!(
        instance::get_server(&env.s, &server.id)
            .await
            .unwrap()
            .is_none(),
        "not found after the delete"
    );
    nothing_left(&env);
}

/// Upstream's "Unsupported Nova microversion": a Nova older than the tagging microversion
/// (2.53) is an error naming it, and no server is created.
#[tokio::test]
async fn a_nova_without_the_tagging_microversion_gets_no_server() {
    let env = fast_env().await;
    let (n, sn) = network(&env).await;
    let image = seeded_image(&env).await;
    // The first Nova request with a microversion discovers it: the version document of a
    // Nova capped at 2.38.
    let doc = serde_json::json!({"version": {"id": "v2.1", "status": "CURRENT",
        "version": "2.38", "min_version": "2.1"}});
    env.sim
        .control()
        .add_faults(vec![FaultSpec {
            body: Some(doc),
            ..fault("GET", "/compute/v2\\.1/?$".into(), 200, false)
        }])
        .unwrap();
    let o = server_owner("old");
    let ports = vec![port_spec(&o, &n, &sn, 0)];
    let mut rec = Recorded::default();
    let err = worker(&env, &o, &ports, &mut rec, &(image, "2".into()))
        .await
        .unwrap_err();
    assert!(env.sim.control().faults().is_empty(), "the fault fired");
    assert!(err.to_string().contains("microversion"), "{err}");
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(count(&env, "servers"), 0);
}

/// Upstream's image, flavor and server group lookups (getImageID, GetFlavorID,
/// GetServerGroupID, ResolveServerSpec): an ID is taken, a filter must match exactly one
/// (none and several are errors naming the selector), a failed list is an error.
#[tokio::test]
async fn image_flavor_and_server_group_lookups() {
    use capo_api::v1beta1::{ServerGroupFilter, ServerGroupParam};
    use capo_openstack::request::{Request, Service};
    let env = fast_env().await;
    let s = &env.s;
    let get = |path: &str| fault("GET", path.into(), 403, false);
    let add = |f: FaultSpec| env.sim.control().add_faults(vec![f]).unwrap();

    // Images: by ID, by name, by tags; none, several, a failed list.
    let seeded = seeded_image(&env).await;
    let by_id = ImageParam {
        id: Some(seeded.clone()),
        ..Default::default()
    };
    assert_eq!(instance::resolve_image(s, &by_id).await.unwrap(), seeded);
    for tags in [vec!["capo-test"], vec![]] {
        let body = serde_json::json!({"name": "twin", "tags": tags,
            "disk_format": "qcow2", "container_format": "bare"});
        let req = Request::post(Service::Image, "images", "image_create", body);
        s.send(&req).await.unwrap();
    }
    let filter = |name: Option<&str>, tags: &[&str]| ImageParam {
        filter: Some(ImageFilter {
            name: name.map(str::to_owned),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        }),
        ..Default::default()
    };
    let tagged = instance::find_image(s, &filter(None, &["capo-test"]))
        .await
        .unwrap();
    assert_eq!(
        (tagged.name.as_deref(), tagged.tags.clone()),
        (Some("twin"), vec!["capo-test".to_owned()])
    );
    let err = instance::resolve_image(s, &filter(Some("twin"), &[]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Ambiguous { count: 2, .. }), "{err}");
    let err = instance::resolve_image(s, &filter(Some("no-such-image"), &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::NotFound { kind: "image", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("no-such-image"), "{err}");
    add(get("/images$"));
    let err = instance::resolve_image(s, &filter(Some("twin"), &[]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::OpenStack { .. }), "{err}");

    // Flavors: by ID, by name; none, a failed list.
    let flavor = instance::resolve_flavor(s, None, Some("2")).await.unwrap();
    assert_eq!(flavor.name, "m1.small");
    let flavor = instance::resolve_flavor(s, Some("m1.small"), None)
        .await
        .unwrap();
    assert_eq!(flavor.id, "2");
    let err = instance::resolve_flavor(s, Some("nonexistent-flavor"), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::NotFound { kind: "flavor", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("nonexistent-flavor"), "{err}");
    add(get("/flavors/detail$"));
    let err = instance::resolve_flavor(s, Some("m1.small"), None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::OpenStack { .. }), "{err}");

    // Server groups: by ID, by name; empty, none, several, a failed list.
    let mut ids = Vec::new();
    for name in ["solo", "pair", "pair"] {
        let body =
            serde_json::json!({"server_group": {"name": name, "policies": ["anti-affinity"]}});
        let req = Request::post(
            Service::Compute,
            "os-server-groups",
            "server_group_create",
            body,
        );
        let group: serde_json::Value = s.fetch(&req, "server_group").await.unwrap();
        ids.push(group["id"].as_str().unwrap().to_owned());
    }
    let by_name = |name: &str| ServerGroupParam {
        id: None,
        filter: Some(ServerGroupFilter {
            name: Some(name.into()),
        }),
    };
    let group = instance::resolve_server_group(s, &by_name("solo")).await;
    assert_eq!(group.unwrap(), ids[0]);
    let by_id = ServerGroupParam {
        id: Some(ids[0].clone()),
        filter: None,
    };
    assert_eq!(
        instance::resolve_server_group(s, &by_id).await.unwrap(),
        ids[0]
    );
    let empty = ServerGroupParam {
        id: None,
        filter: None,
    };
    let err = instance::resolve_server_group(s, &empty).await.unwrap_err();
    assert!(matches!(err, Error::InvalidSpec(_)), "{err}");
    let err = instance::resolve_server_group(s, &by_name("pair"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Ambiguous { count: 2, .. }), "{err}");
    let err = instance::resolve_server_group(s, &by_name("none"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                kind: "server group",
                ..
            }
        ),
        "{err}"
    );
    add(get("/os-server-groups$"));
    let err = instance::resolve_server_group(s, &by_name("solo"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::OpenStack { .. }), "{err}");
    assert!(env.sim.control().faults().is_empty(), "every fault fired");
}

#[tokio::test]
async fn port_references_by_id_need_no_lookup_and_filters_must_match_one() {
    use capo_api::v1beta1::{NetworkParam, NeutronFilter, SubnetFilter, SubnetParam};
    let env = env().await;
    let (n, sn) = network(&env).await;
    let by_name = |name: &str| NetworkParam {
        id: None,
        filter: Some(NeutronFilter {
            name: Some(name.into()),
            ..Default::default()
        }),
    };
    // An ID is taken as given: no request.
    env.sim.control().clear_requests();
    let by_id = NetworkParam {
        id: Some(n.id.clone()),
        filter: None,
    };
    assert_eq!(
        instance::resolve_network(&env.s, &by_id).await.unwrap(),
        n.id
    );
    assert!(trace(&env).is_empty(), "{:?}", trace(&env));
    // A filter: the one network it matches.
    let found = instance::resolve_network(&env.s, &by_name("cluster-net")).await;
    assert_eq!(found.unwrap(), n.id);
    // A subnet filter is looked up on the port's network only.
    let subnet = SubnetParam {
        id: None,
        filter: Some(SubnetFilter {
            name: Some("cluster-subnet".into()),
            ..Default::default()
        }),
    };
    let found = instance::resolve_subnet(&env.s, &subnet, &n.id).await;
    assert_eq!(found.unwrap(), sn.id);
    // A port without a network: its subnet, by ID or by a filter matching one, gives it.
    let by_subnet_id = SubnetParam {
        id: Some(sn.id.clone()),
        filter: None,
    };
    for p in [&by_subnet_id, &subnet] {
        let got = instance::subnet_and_network(&env.s, p).await.unwrap();
        assert_eq!(got, Some((sn.id.clone(), n.id.clone())));
    }
    let other: Network = net::create(
        &env.s,
        NETWORK,
        &NetworkCreate {
            name: "cluster-net".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let err = instance::resolve_subnet(&env.s, &subnet, &other.id)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    // A subnet filter matching subnets of two networks tells no network; one matching none
    // is an error.
    let body = SubnetCreate {
        name: "cluster-subnet".into(),
        network_id: other.id.clone(),
        cidr: "10.9.0.0/24".into(),
        ip_version: 4,
        ..Default::default()
    };
    let _: Subnet = net::create(&env.s, SUBNET, &body).await.unwrap();
    let both = instance::subnet_and_network(&env.s, &subnet).await;
    assert_eq!(both.unwrap(), None);
    let nowhere = SubnetParam {
        id: None,
        filter: Some(SubnetFilter {
            name: Some("no-such-subnet".into()),
            ..Default::default()
        }),
    };
    let err = instance::subnet_and_network(&env.s, &nowhere)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    // No match, or two: an error naming the selector, nothing guessed.
    let err = instance::resolve_network(&env.s, &by_name("no-such-net"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let err = instance::resolve_network(&env.s, &by_name("cluster-net"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Ambiguous { count: 2, .. }), "{err}");
    // Security groups resolve the same way.
    let sg = instance::resolve_security_group(&env.s, &by_name("default")).await;
    assert!(!sg.unwrap().is_empty());
}

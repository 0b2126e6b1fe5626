//! Nova and Cinder over HTTP: microversions, server state machine, ports and addresses, faults,
//! keypairs, server groups, volume attachments, interfaces, boot from volume, quotas.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use capo_sim::{Delays, SimConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn image_id(c: &common::Client) -> String {
    let (_, v) = c.get("/image/v2/images?name=ubuntu-2404-kube-v1.34").await;
    v["images"][0]["id"].as_str().unwrap().to_string()
}

async fn boot(c: &common::Client, name: &str, port: &str) -> (StatusCode, Value) {
    let image = image_id(c).await;
    c.post("/compute/v2.1/servers", json!({"server": {"name": name, "imageRef": image, "flavorRef": "2", "networks": [{"port": port}], "tags": ["capo"], "metadata": {"k": "v"}}})).await
}

#[tokio::test]
async fn microversion_negotiation() {
    let sim = common::sim().await;
    let mut c = common::capo(&sim).await;
    let r = c
        .http
        .get(format!("{}/compute/v2.1/flavors/2", c.base))
        .header("x-auth-token", &c.token)
        .header("openstack-api-version", "compute 2.61")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["openstack-api-version"], "compute 2.61");
    let v: Value = r.json().await.unwrap();
    assert!(v["flavor"].get("extra_specs").is_some());
    c.headers = vec![("x-openstack-nova-api-version".into(), "2.1".into())];
    let (_, v) = c.get("/compute/v2.1/flavors/2").await;
    assert!(v["flavor"].get("extra_specs").is_none());
    c.headers = vec![("openstack-api-version".into(), "compute 2.200".into())];
    assert_eq!(
        c.get("/compute/v2.1/flavors").await.0,
        StatusCode::NOT_ACCEPTABLE
    );
}

#[tokio::test]
async fn admins_create_and_delete_flavors() {
    let sim = common::sim().await;
    let member = common::capo(&sim).await;
    let admin = common::login(&sim, "admin", "admin-password", "admin").await;
    let body = json!({"flavor": {"name": "m1.eph", "vcpus": 2, "ram": 3072, "disk": 0,
                                 "OS-FLV-EXT-DATA:ephemeral": 15}});
    let (st, v) = member.post("/compute/v2.1/flavors", body.clone()).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
    let (st, v) = admin.post("/compute/v2.1/flavors", body.clone()).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let id = v["flavor"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["flavor"]["OS-FLV-EXT-DATA:ephemeral"], 15);
    let (st, _) = admin.post("/compute/v2.1/flavors", body).await;
    assert_eq!(st, StatusCode::CONFLICT, "names are unique");
    let bad = json!({"flavor": {"name": "m1.bad", "vcpus": 0, "ram": 512}});
    assert_eq!(
        admin.post("/compute/v2.1/flavors", bad).await.0,
        StatusCode::BAD_REQUEST
    );
    let (_, v) = member.get("/compute/v2.1/flavors/detail").await;
    let listed = v["flavors"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|f| f["id"] == json!(id) && f["ram"] == 3072)
    );
    let path = format!("/compute/v2.1/flavors/{id}");
    assert_eq!(member.delete(&path).await.0, StatusCode::FORBIDDEN);
    assert_eq!(admin.delete(&path).await.0, StatusCode::ACCEPTED);
    assert_eq!(member.get(&path).await.0, StatusCode::NOT_FOUND);
    assert_eq!(admin.delete(&path).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn server_builds_to_active_with_addresses_and_cleans_up() {
    let sim = common::start(SimConfig {
        delays: Delays {
            server_build_ms: 150,
            ..common::instant()
        },
        ..Default::default()
    })
    .await
    .unwrap();
    let mut c = common::capo(&sim).await;
    c.headers = vec![("openstack-api-version".into(), "compute 2.96".into())];
    let (net, _) = c.net_with_subnet("n", "10.0.0.0/24").await;
    let (_, p) = c
        .post("/network/v2.0/ports", json!({"port": {"network_id": net}}))
        .await;
    let port = p["port"]["id"].as_str().unwrap().to_string();
    let (st, s) = boot(&c, "srv-1", &port).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{s}");
    let id = s["server"]["id"].as_str().unwrap().to_string();
    assert!(s["server"]["adminPass"].is_string());
    let (_, v) = c.get(&format!("/compute/v2.1/servers/{id}")).await;
    assert_eq!(v["server"]["status"], "BUILD");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (_, v) = c.get(&format!("/compute/v2.1/servers/{id}")).await;
    let srv = &v["server"];
    assert_eq!(srv["status"], "ACTIVE");
    assert_eq!(srv["flavor"]["original_name"], "m1.small");
    assert_eq!(srv["addresses"]["n"][0]["addr"], "10.0.0.2");
    assert_eq!(srv["tags"], json!(["capo"]));
    let (_, pp) = c.get(&format!("/network/v2.0/ports/{port}")).await;
    assert_eq!(pp["port"]["device_id"], id.as_str());
    assert_eq!(pp["port"]["status"], "ACTIVE");
    let (_, l) = c
        .get("/compute/v2.1/servers/detail?name=%5Esrv-&tags=capo")
        .await;
    assert_eq!(l["servers"].as_array().unwrap().len(), 1);
    let (_, l) = c.get("/compute/v2.1/servers/detail?not-tags=capo").await;
    assert!(l["servers"].as_array().unwrap().is_empty());
    assert_eq!(
        c.delete(&format!("/compute/v2.1/servers/{id}")).await.0,
        StatusCode::NO_CONTENT
    );
    let (st, e) = c.get(&format!("/compute/v2.1/servers/{id}")).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(e["itemNotFound"]["code"], 404);
    let (_, pp) = c.get(&format!("/network/v2.0/ports/{port}")).await;
    assert_eq!(pp["port"]["device_id"], "");
}

#[tokio::test]
async fn invalid_requests_and_injected_no_valid_host() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (net, _) = c.net_with_subnet("n", "10.0.0.0/24").await;
    let image = image_id(&c).await;
    let mk = |extra: Value| {
        let mut s =
            json!({"name": "x", "imageRef": image, "flavorRef": "2", "networks": [{"uuid": net}]});
        for (k, v) in extra.as_object().unwrap() {
            s[k] = v.clone();
        }
        json!({"server": s})
    };
    for bad in [
        json!({"flavorRef": "999"}),
        json!({"imageRef": "nope"}),
        json!({"key_name": "nope"}),
        json!({"availability_zone": "mars"}),
    ] {
        let (st, e) = c.post("/compute/v2.1/servers", mk(bad.clone())).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(e["badRequest"]["code"], 400);
    }
    sim.control().fail_builds("^doomed$", 1).unwrap();
    let (_, s) = c
        .post("/compute/v2.1/servers", mk(json!({"name": "doomed"})))
        .await;
    let id = s["server"]["id"].as_str().unwrap();
    let (_, v) = c.get(&format!("/compute/v2.1/servers/{id}")).await;
    assert_eq!(v["server"]["status"], "ERROR");
    assert!(
        v["server"]["fault"]["message"]
            .as_str()
            .unwrap()
            .starts_with("No valid host")
    );
}

#[tokio::test]
async fn quota_exceeded_is_403() {
    let sim = common::with_quota("instances", 1).await;
    let c = common::capo(&sim).await;
    let (net, _) = c.net_with_subnet("n", "10.0.0.0/24").await;
    let image = image_id(&c).await;
    let body = json!({"server": {"name": "a", "imageRef": image, "flavorRef": "1", "networks": [{"uuid": net}]}});
    assert_eq!(
        c.post("/compute/v2.1/servers", body.clone()).await.0,
        StatusCode::ACCEPTED
    );
    let (st, e) = c.post("/compute/v2.1/servers", body).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    assert!(
        e["forbidden"]["message"]
            .as_str()
            .unwrap()
            .contains("Quota exceeded for instances")
    );
}

#[tokio::test]
async fn keypairs_groups_and_azs() {
    let sim = common::sim().await;
    let mut c = common::capo(&sim).await;
    c.headers = vec![("openstack-api-version".into(), "compute 2.10".into())];
    let pk =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBn1OmBZ5mF3y2qbH4lqZP0oTx7bkS0a2fYn5v5K3xZl test";
    let (st, k) = c
        .post(
            "/compute/v2.1/os-keypairs",
            json!({"keypair": {"name": "k1", "public_key": pk}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    assert_eq!(k["keypair"]["type"], "ssh");
    let (st, k) = c
        .post(
            "/compute/v2.1/os-keypairs",
            json!({"keypair": {"name": "k2"}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    assert!(k["keypair"]["private_key"].is_string());
    let (_, l) = c.get("/compute/v2.1/os-keypairs").await;
    assert_eq!(l["keypairs"][0]["keypair"]["name"], "k1");
    assert_eq!(
        c.post(
            "/compute/v2.1/os-keypairs",
            json!({"keypair": {"name": "k1", "public_key": pk}})
        )
        .await
        .0,
        StatusCode::CONFLICT
    );
    assert_eq!(
        c.delete("/compute/v2.1/os-keypairs/k1").await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        c.get("/compute/v2.1/os-keypairs/k1").await.0,
        StatusCode::NOT_FOUND
    );
    let (_, g) = c
        .post(
            "/compute/v2.1/os-server-groups",
            json!({"server_group": {"name": "g", "policies": ["anti-affinity"]}}),
        )
        .await;
    assert_eq!(g["server_group"]["policies"], json!(["anti-affinity"]));
    let (_, z) = c.get("/compute/v2.1/os-availability-zone").await;
    assert_eq!(z["availabilityZoneInfo"][0]["zoneName"], "nova");
}

#[tokio::test]
async fn volumes_attach_detach_and_boot_from_volume() {
    let sim = common::sim().await;
    let mut c = common::capo(&sim).await;
    c.headers = vec![("openstack-api-version".into(), "compute 2.79".into())];
    let (net, _) = c.net_with_subnet("n", "10.0.0.0/24").await;
    let image = image_id(&c).await;
    let vp = format!("/volume/v3/{}", c.project);
    let (st, v) = c
        .post(
            &format!("{vp}/volumes"),
            json!({"volume": {"size": 10, "name": "data"}}),
        )
        .await;
    assert_eq!(st, StatusCode::ACCEPTED);
    assert_eq!(v["volume"]["status"], "creating");
    let vol = v["volume"]["id"].as_str().unwrap().to_string();
    let (_, v) = c.get(&format!("{vp}/volumes/{vol}")).await;
    assert_eq!(v["volume"]["status"], "available");
    let bdm = json!([{"boot_index": 0, "uuid": image, "source_type": "image", "destination_type": "volume", "volume_size": 20, "delete_on_termination": true}]);
    let (st, s) = c.post("/compute/v2.1/servers", json!({"server": {"name": "bfv", "flavorRef": "2", "networks": [{"uuid": net}], "block_device_mapping_v2": bdm}})).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{s}");
    let srv = s["server"]["id"].as_str().unwrap().to_string();
    let (st, a) = c
        .post(
            &format!("/compute/v2.1/servers/{srv}/os-volume_attachments"),
            json!({"volumeAttachment": {"volumeId": vol}}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{a}");
    assert_eq!(a["volumeAttachment"]["device"], "/dev/vdb");
    let (_, v) = c.get(&format!("{vp}/volumes/{vol}")).await;
    assert_eq!(v["volume"]["status"], "in-use");
    assert_eq!(
        c.delete(&format!("{vp}/volumes/{vol}")).await.0,
        StatusCode::BAD_REQUEST
    );
    let (_, s) = c.get(&format!("/compute/v2.1/servers/{srv}")).await;
    assert_eq!(s["server"]["image"], "");
    assert_eq!(
        s["server"]["os-extended-volumes:volumes_attached"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let (_, i) = c
        .get(&format!("/compute/v2.1/servers/{srv}/os-interface"))
        .await;
    assert_eq!(i["interfaceAttachments"].as_array().unwrap().len(), 1);
    assert_eq!(
        c.delete(&format!(
            "/compute/v2.1/servers/{srv}/os-volume_attachments/{vol}"
        ))
        .await
        .0,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        c.delete(&format!("/compute/v2.1/servers/{srv}")).await.0,
        StatusCode::NO_CONTENT
    );
    let (_, l) = c.get(&format!("{vp}/volumes/detail")).await;
    assert_eq!(
        l["volumes"].as_array().unwrap().len(),
        1,
        "boot volume deleted on termination"
    );
    assert_eq!(
        c.delete(&format!("{vp}/volumes/{vol}")).await.0,
        StatusCode::ACCEPTED
    );
    let (st, e) = c.get(&format!("{vp}/volumes/{vol}")).await;
    assert_eq!(
        (st, e["itemNotFound"]["code"].as_i64()),
        (StatusCode::NOT_FOUND, Some(404))
    );
}

#[tokio::test]
async fn scheduler_hint_group_membership() {
    let sim = common::sim().await;
    let mut c = common::capo(&sim).await;
    c.headers = vec![("openstack-api-version".into(), "compute 2.64".into())];
    let (net, _) = c.net_with_subnet("n", "10.0.0.0/24").await;
    let image = image_id(&c).await;
    let (_, g) = c
        .post(
            "/compute/v2.1/os-server-groups",
            json!({"server_group": {"name": "g", "policy": "anti-affinity"}}),
        )
        .await;
    let group = g["server_group"]["id"].as_str().unwrap().to_string();
    for key in ["os:scheduler_hints", "OS-SCH-HNT:scheduler_hints"] {
        let body = json!({"server": {"name": key, "imageRef": image, "flavorRef": "1", "networks": [{"uuid": net}], "config_drive": true}, key: {"group": group}});
        assert_eq!(
            c.post("/compute/v2.1/servers", body).await.0,
            StatusCode::ACCEPTED
        );
    }
    let (_, g) = c
        .get(&format!("/compute/v2.1/os-server-groups/{group}"))
        .await;
    assert_eq!(g["server_group"]["members"].as_array().unwrap().len(), 2);
    assert_eq!(g["server_group"]["policy"], "anti-affinity");
}

#[tokio::test]
async fn affinity_shares_host_and_console_output() {
    let sim = common::sim().await;
    let mut c = common::capo(&sim).await;
    c.headers = vec![("openstack-api-version".into(), "compute 2.64".into())];
    let (net, _) = c.net_with_subnet("n", "10.0.0.0/24").await;
    let image = image_id(&c).await;
    let mut host_ids = vec![];
    for policy in ["affinity", "anti-affinity"] {
        let (_, g) = c
            .post(
                "/compute/v2.1/os-server-groups",
                json!({"server_group": {"name": policy, "policy": policy}}),
            )
            .await;
        let group = g["server_group"]["id"].as_str().unwrap().to_string();
        let mut ids = vec![];
        for i in 0..2 {
            let body = json!({"server": {"name": format!("{policy}-{i}"), "imageRef": image, "flavorRef": "1", "networks": [{"uuid": net}]}, "os:scheduler_hints": {"group": group}});
            let (_, s) = c.post("/compute/v2.1/servers", body).await;
            let (_, s) = c
                .get(&format!(
                    "/compute/v2.1/servers/{}",
                    s["server"]["id"].as_str().unwrap()
                ))
                .await;
            ids.push(s["server"]["hostId"].as_str().unwrap().to_string());
        }
        host_ids.push(ids);
    }
    assert_eq!(host_ids[0][0], host_ids[0][1]);
    assert_ne!(host_ids[1][0], host_ids[1][1]);
    let (_, l) = c.get("/compute/v2.1/servers").await;
    let id = l["servers"][0]["id"].as_str().unwrap();
    let (st, out) = c
        .post(
            &format!("/compute/v2.1/servers/{id}/action"),
            json!({"os-getConsoleOutput": {"length": 10}}),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    assert!(out["output"].is_string());
}

/// A simulator whose Nova soft-deletes (`reclaim_instance_interval`), with instant builds.
async fn soft_delete_sim(reclaim_ms: u64) -> capo_sim::Sim {
    common::start(SimConfig {
        seed: capo_sim::Seed {
            server_reclaim_ms: reclaim_ms,
            ..Default::default()
        },
        delays: common::instant(),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// A server on a port of its own with a data volume attached (not delete_on_termination):
/// (server, port, volume).
async fn server_with_port_and_volume(c: &common::Client, name: &str) -> (String, String, String) {
    let (net, _) = c.net_with_subnet(&format!("{name}-n"), "10.0.0.0/24").await;
    let (_, p) = c
        .post("/network/v2.0/ports", json!({"port": {"network_id": net}}))
        .await;
    let port = p["port"]["id"].as_str().unwrap().to_string();
    let vp = format!("/volume/v3/{}", c.project);
    let (_, v) = c
        .post(
            &format!("{vp}/volumes"),
            json!({"volume": {"size": 1, "name": format!("{name}-data")}}),
        )
        .await;
    let vol = v["volume"]["id"].as_str().unwrap().to_string();
    c.get(&format!("{vp}/volumes/{vol}")).await;
    let (st, s) = boot(c, name, &port).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{s}");
    let srv = s["server"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        c.get(&format!("/compute/v2.1/servers/{srv}")).await.1["server"]["status"],
        "ACTIVE"
    );
    let (st, a) = c
        .post(
            &format!("/compute/v2.1/servers/{srv}/os-volume_attachments"),
            json!({"volumeAttachment": {"volumeId": vol}}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{a}");
    (srv, port, vol)
}

#[tokio::test]
async fn soft_delete_keeps_the_server_until_reclaimed() {
    let sim = soft_delete_sim(3_600_000).await;
    let mut c = common::capo(&sim).await;
    c.headers = vec![("openstack-api-version".into(), "compute 2.85".into())];
    let (srv, port, vol) = server_with_port_and_volume(&c, "sd").await;
    let vp = format!("/volume/v3/{}", c.project);
    let path = format!("/compute/v2.1/servers/{srv}");
    assert_eq!(c.delete(&path).await.0, StatusCode::NO_CONTENT);
    // Shown by ID, left out of lists (an admin asking for status=SOFT_DELETED sees it).
    let (st, s) = c.get(&path).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(s["server"]["status"], "SOFT_DELETED");
    assert_eq!(s["server"]["OS-EXT-STS:vm_state"], "soft-delete");
    assert!(
        s["server"].get("_reclaim_at").is_none(),
        "internal fields stay internal"
    );
    for q in ["", "?status=SOFT_DELETED"] {
        let (_, l) = c.get(&format!("/compute/v2.1/servers/detail{q}")).await;
        assert!(l["servers"].as_array().unwrap().is_empty(), "{q}: {l}");
    }
    let admin = common::login(&sim, "admin", "admin-password", "admin").await;
    let (_, l) = admin
        .get("/compute/v2.1/servers/detail?all_tenants=1&status=SOFT_DELETED")
        .await;
    assert_eq!(l["servers"].as_array().unwrap().len(), 1, "{l}");
    // Its port stays bound and its volume attached; it no longer counts against the quota.
    let (_, p) = c.get(&format!("/network/v2.0/ports/{port}")).await;
    assert_eq!(p["port"]["device_id"], srv.as_str());
    // Neutron's default policy: a member deletes no port bound to a server (admins may), but
    // may clear its device_id/device_owner and then delete it.
    let port_path = format!("/network/v2.0/ports/{port}");
    let (st, e) = c.delete(&port_path).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{e}");
    assert_eq!(e["NeutronError"]["type"], "PolicyNotAuthorized", "{e}");
    let release = json!({"port": {"device_id": "", "device_owner": ""}});
    assert_eq!(c.put(&port_path, release).await.0, StatusCode::OK);
    assert_eq!(c.delete(&port_path).await.0, StatusCode::NO_CONTENT);
    let (_, v) = c.get(&format!("{vp}/volumes/{vol}")).await;
    assert_eq!(v["volume"]["status"], "in-use");
    let (_, lim) = c.get("/compute/v2.1/limits").await;
    assert_eq!(lim["limits"]["absolute"]["totalInstancesUsed"], 0);
    // Nova's 2.85 update: the volume goes with the server when it is reclaimed.
    let att = format!("{path}/os-volume_attachments/{vol}");
    let body = json!({"volumeAttachment": {"volumeId": vol, "delete_on_termination": true}});
    c.headers = vec![("openstack-api-version".into(), "compute 2.84".into())];
    assert_eq!(
        c.put(&att, body.clone()).await.0,
        StatusCode::FORBIDDEN,
        "a swap below 2.85"
    );
    c.headers = vec![("openstack-api-version".into(), "compute 2.85".into())];
    assert_eq!(c.put(&att, body.clone()).await.0, StatusCode::ACCEPTED);
    let (_, a) = c.get(&att).await;
    assert_eq!(a["volumeAttachment"]["delete_on_termination"], true);
    // restore, then delete again; forceDelete needs nothing more.
    let (st, _) = c
        .post(&format!("{path}/action"), json!({"restore": null}))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED);
    assert_eq!(c.get(&path).await.1["server"]["status"], "ACTIVE");
    let (st, _) = c
        .post(&format!("{path}/action"), json!({"restore": null}))
        .await;
    assert_eq!(
        st,
        StatusCode::CONFLICT,
        "only a soft-deleted server is restored"
    );
    assert_eq!(c.delete(&path).await.0, StatusCode::NO_CONTENT);
    assert_eq!(sim.control().reclaim_servers(), 1);
    assert_eq!(c.get(&path).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        c.get(&format!("{vp}/volumes/{vol}")).await.0,
        StatusCode::NOT_FOUND,
        "delete_on_termination: reclaimed with the server"
    );
    assert_eq!(sim.control().reclaim_servers(), 0);
}

#[tokio::test]
async fn soft_deleted_servers_are_reclaimed_after_the_interval() {
    let sim = soft_delete_sim(300).await;
    let c = common::capo(&sim).await;
    let (srv, port, vol) = server_with_port_and_volume(&c, "sdi").await;
    let path = format!("/compute/v2.1/servers/{srv}");
    assert_eq!(c.delete(&path).await.0, StatusCode::NO_CONTENT);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // Deleted again: Nova resets deleted_at, the reclaim starts over.
    assert_eq!(c.delete(&path).await.0, StatusCode::NO_CONTENT);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(c.get(&path).await.1["server"]["status"], "SOFT_DELETED");
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    assert_eq!(c.get(&path).await.0, StatusCode::NOT_FOUND);
    let (_, p) = c.get(&format!("/network/v2.0/ports/{port}")).await;
    assert_eq!(p["port"]["device_id"], "");
    let (_, v) = c
        .get(&format!("/volume/v3/{}/volumes/{vol}", c.project))
        .await;
    assert_eq!(
        v["volume"]["status"], "available",
        "detached, kept (no delete_on_termination)"
    );
    // A server that never ran is deleted at once, as Nova does (no soft delete before launch).
    sim.control().fail_builds("^never$", 1).unwrap();
    let (st, s) = boot(&c, "never", &port).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{s}");
    let id = s["server"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        c.get(&format!("/compute/v2.1/servers/{id}")).await.1["server"]["status"],
        "ERROR"
    );
    assert_eq!(
        c.delete(&format!("/compute/v2.1/servers/{id}")).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        c.get(&format!("/compute/v2.1/servers/{id}")).await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn without_a_reclaim_interval_servers_are_deleted_at_once() {
    let sim = common::sim().await;
    let c = common::capo(&sim).await;
    let (srv, _, _) = server_with_port_and_volume(&c, "hd").await;
    let path = format!("/compute/v2.1/servers/{srv}");
    assert_eq!(c.delete(&path).await.0, StatusCode::NO_CONTENT);
    assert_eq!(c.get(&path).await.0, StatusCode::NOT_FOUND);
    let (st, _) = c
        .post(&format!("{path}/action"), json!({"restore": null}))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

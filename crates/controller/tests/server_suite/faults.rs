//! Faults around a machine's server: lost replies on creates, NoValidHost, a server deleted
//! behind the controllers' back, and controllers killed at arbitrary points.
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::{Harness, poll};
use crate::machines::*;
use capo_controller::conditions;
use capo_sim::{Delays, FaultSpec};
use serde_json::{Value, json};

fn lost_reply(path: &str) -> FaultSpec {
    serde_json::from_value(serde_json::json!({
        "method": "POST",
        "path_regex": path,
        "status": 500,
        "count": 1,
        "after_action": true,
    }))
    .unwrap()
}

/// Servers, ports and volumes whose name starts with `prefix`.
async fn counts(h: &Harness, prefix: &str) -> [usize; 3] {
    let items = h.items().await;
    ["servers", "ports", "volumes"].map(|col| {
        items
            .get(col)
            .into_iter()
            .flatten()
            .filter(|i| i["name"].as_str().unwrap_or_default().starts_with(prefix))
            .count()
    })
}

fn posts(h: &Harness, suffix: &str) -> usize {
    h.sim()
        .control()
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with(suffix))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_replies_on_creates_yield_exactly_one_of_each() {
    let (h, _c) = ready_cluster("lost", CLUSTER_FIP).await;
    h.sim()
        .control()
        .add_faults(vec![
            lost_reply("/ports$"),
            lost_reply("/volumes$"),
            lost_reply("/servers$"),
        ])
        .unwrap();
    create_machine(&h, "c1", "w-0", false, BOOT_FROM_VOLUME).await;
    let m = wait_machine_ready(&h, "w-0").await;
    assert!(h.sim().control().faults().is_empty(), "every fault fired");
    assert_eq!(
        counts(&h, "w-0").await,
        [1, 1, 1],
        "one server, port and volume"
    );
    let st = m.status.unwrap();
    assert_eq!(
        st.instance_id.as_deref(),
        sim_items(&h, "servers")[0]["id"].as_str()
    );
    delete_machine(&h, "w-0").await;
    wait_machine_gone(&h, "w-0", 60).await;
    assert_eq!(counts(&h, "w-0").await, [0, 0, 0]);
}

/// A port create whose reply was lost while Neutron was still making the port: the next
/// attempt (here, controllers started again, as after a kill) found nothing by name and made
/// its own, then the first port is committed. Played by building the server slowly and adding
/// an untagged, unattached port of the same name and network once the controllers' own port
/// and server exist (what the real services do now and then in
/// `controllers_killed_at_any_point_converge_to_one_of_each`). The restarted controllers look
/// for such strays once, when the server is first ACTIVE, and delete it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_replies_committed_late_leave_no_stray_port() {
    let (h, c) = ready_cluster("late", CLUSTER_FIP).await;
    let ctl = h.sim().control();
    ctl.set_delays(Delays {
        server_build_ms: 5000,
        ..ctl.delays()
    });
    create_machine(&h, "c1", "w-late", false, MACHINE).await;
    let port: Value = poll(
        30,
        || async {
            let port = sim_items(&h, "ports")
                .into_iter()
                .find(|p| p["name"] == "w-late-0");
            (counts(&h, "w-late").await == [1, 1, 0])
                .then_some(port)
                .flatten()
        },
        || async { "timed out waiting for the machine's port and server".to_owned() },
    )
    .await;
    drop(c);
    let stray: Value = capo_openstack::network::create(
        &session(&h).await,
        capo_openstack::network::PORT,
        &json!({"name": "w-late-0", "network_id": port["network_id"]}),
    )
    .await
    .unwrap();
    let _c = start(&h);
    let m = wait_machine_ready(&h, "w-late").await;
    let ports = items(&h, "ports").await;
    let ours: Vec<&Value> = ports.iter().filter(|p| p["name"] == "w-late-0").collect();
    assert_eq!(ours.len(), 1, "the stray is deleted: {ours:?}");
    assert_eq!(ours[0]["id"], port["id"], "the server's port is kept");
    assert_ne!(ours[0]["id"], stray["id"]);
    assert_eq!(
        m.status.unwrap().instance_id.as_deref(),
        ours[0]["device_id"].as_str()
    );
    delete_machine(&h, "w-late").await;
    wait_machine_gone(&h, "w-late", 60).await;
    assert_eq!(counts(&h, "w-late").await, [0, 0, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_valid_host_is_reported_then_retried_until_ready() {
    let (h, _c) = ready_cluster("nvh", CLUSTER_FIP).await;
    h.sim().control().fail_builds("^w-nvh$", 1).unwrap();
    create_machine(&h, "c1", "w-nvh", false, MACHINE).await;
    let seen_fault = AtomicBool::new(false);
    let m = wait_machine(&h, "w-nvh", 60, "ready after NoValidHost", |m| {
        let st = m.status.clone().unwrap_or_default();
        if let Some(c) = conditions::get(&st.conditions, "InstanceReady")
            && c.reason.as_deref() == Some("InstanceStateError")
            && c.message
                .as_deref()
                .unwrap_or_default()
                .contains("No valid host")
        {
            let ready = conditions::get(&st.conditions, "Ready").unwrap();
            assert_eq!(ready.status, "False");
            seen_fault.store(true, Ordering::SeqCst);
        }
        st.ready == Some(true)
    })
    .await;
    assert!(
        seen_fault.load(Ordering::SeqCst),
        "Nova's fault was reported in InstanceReady"
    );
    assert_eq!(posts(&h, "/servers"), 2, "one failed build, one retry");
    assert_eq!(
        counts(&h, "w-nvh").await,
        [1, 1, 0],
        "the failed server is gone, the port reused"
    );
    assert!(m.status.unwrap().failure_reason.is_none());
    delete_machine(&h, "w-nvh").await;
    wait_machine_gone(&h, "w-nvh", 60).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_deleted_behind_our_back_is_reported_as_instance_deleted() {
    let mut h = Harness::new("oob").await;
    // The out-of-band deletion is noticed at the next periodic reconcile.
    h.options.sync_period = Duration::from_secs(1);
    let _c = start(&h);
    h.create_cluster("c1", CLUSTER_FIP).await;
    h.wait_ready("c1").await;
    create_machine(&h, "c1", "w-oob", false, MACHINE).await;
    let m = wait_machine_ready(&h, "w-oob").await;
    let id = m.status.unwrap().instance_id.unwrap();
    let s = session(&h).await;
    capo_openstack::compute::delete_server(&s, &id)
        .await
        .unwrap();
    // Stored in v1beta2, which has no failureReason/failureMessage: the Ready condition
    // carries the terminal reason (Cluster API's v1beta2 contract).
    let m = wait_machine(&h, "w-oob", 30, "InstanceDeleted", |m| {
        m.status.as_ref().is_some_and(|s| {
            conditions::get(&s.conditions, "Ready")
                .is_some_and(|c| c.reason.as_deref() == Some("InstanceDeleted"))
        })
    })
    .await;
    let st = m.status.unwrap();
    assert_eq!(st.ready, Some(false));
    let ready = conditions::get(&st.conditions, "Ready").unwrap();
    assert_eq!(ready.status, "False", "{ready:?}");
    assert!(
        ready.message.as_deref().unwrap_or_default().contains(&id),
        "{ready:?}"
    );
    let inst = conditions::get(&st.conditions, "InstanceReady").unwrap();
    assert_eq!(inst.reason.as_deref(), Some("InstanceDeleted"));
    // The OpenStackServer says what Nova says: it no longer knows the ID (upstream's
    // InstanceNotFound; InstanceDeleted is for a server Nova still shows deleted).
    let oss = servers(&h).get("w-oob").await.unwrap().status.unwrap();
    let inst = conditions::get(&oss.conditions, "InstanceReady").unwrap();
    assert_eq!(inst.reason, "InstanceNotFound", "{inst:?}");
    assert_eq!(
        counts(&h, "w-oob").await[0],
        0,
        "never re-created behind the user's back"
    );
    delete_machine(&h, "w-oob").await;
    wait_machine_gone(&h, "w-oob", 60).await;
    assert_eq!(counts(&h, "w-oob").await, [0, 0, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_killed_at_any_point_converge_to_one_of_each() {
    let h = Harness::new("kill").await;
    {
        let _c = start(&h);
        h.create_cluster("c1", CLUSTER_FIP).await;
        h.wait_ready("c1").await;
    }
    create_machine(&h, "c1", "w-k", false, BOOT_FROM_VOLUME).await;
    // Kill the controllers after varying delays while the machine is being made.
    for i in 0..12u64 {
        let c = start(&h);
        tokio::time::sleep(Duration::from_millis(40 + 37 * (i % 5))).await;
        drop(c);
    }
    let c = start(&h);
    wait_machine_ready(&h, "w-k").await;
    drop(c);
    assert_eq!(counts(&h, "w-k").await, [1, 1, 1]);
    delete_machine(&h, "w-k").await;
    for _ in 0..6 {
        let c = start(&h);
        tokio::time::sleep(Duration::from_millis(60)).await;
        drop(c);
    }
    let _c = start(&h);
    wait_machine_gone(&h, "w-k", 60).await;
    assert_eq!(counts(&h, "w-k").await, [0, 0, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_makes_the_machine_not_ready_until_it_runs_again() {
    let mut h = Harness::new("stop").await;
    // The stop is noticed at the next periodic reconcile.
    h.options.sync_period = Duration::from_secs(1);
    let _c = start(&h);
    h.create_cluster("c1", CLUSTER_FIP).await;
    h.wait_ready("c1").await;
    create_machine(&h, "c1", "w-s", false, MACHINE).await;
    let m = wait_machine_ready(&h, "w-s").await;
    let id = m.status.unwrap().instance_id.unwrap();
    let s = session(&h).await;
    let action = |body: serde_json::Value| {
        capo_openstack::request::Request::post(
            capo_openstack::request::Service::Compute,
            format!("servers/{id}/action"),
            "server_action",
            body,
        )
    };
    s.send(&action(serde_json::json!({"os-stop": null})))
        .await
        .unwrap();
    let m = wait_machine(&h, "w-s", 30, "not ready while SHUTOFF", |m| {
        m.status.as_ref().and_then(|s| s.ready) == Some(false)
    })
    .await;
    let st = m.status.unwrap();
    assert_eq!(st.instance_state.as_deref(), Some("SHUTOFF"));
    assert!(
        st.failure_reason.is_none(),
        "a stopped server is not a failure"
    );
    let ready = conditions::get(&st.conditions, "Ready").unwrap();
    assert_eq!(ready.status, "False");
    assert!(
        ready
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("SHUTOFF"),
        "{ready:?}"
    );
    s.send(&action(serde_json::json!({"os-start": null})))
        .await
        .unwrap();
    let m = wait_machine_ready(&h, "w-s").await;
    assert_eq!(
        m.status.unwrap().instance_id.as_deref(),
        Some(id.as_str()),
        "same server"
    );
    assert_eq!(counts(&h, "w-s").await, [1, 1, 0]);
    delete_machine(&h, "w-s").await;
    wait_machine_gone(&h, "w-s", 60).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_exceeded_on_create_is_reported_and_retried() {
    let (h, _c) = ready_cluster("quota", CLUSTER_FIP).await;
    let quota: FaultSpec = serde_json::from_value(serde_json::json!({
        "method": "POST",
        "path_regex": "/servers$",
        "status": 403,
        "count": 2,
        "body": {"forbidden": {"code": 403, "message": "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances"}},
    }))
    .unwrap();
    h.sim().control().add_faults(vec![quota]).unwrap();
    create_machine(&h, "c1", "w-q", false, MACHINE).await;
    let seen = AtomicBool::new(false);
    wait_machine(&h, "w-q", 60, "ready after quota errors", |m| {
        let st = m.status.clone().unwrap_or_default();
        if conditions::get(&st.conditions, "InstanceReady")
            .and_then(|c| c.message.as_deref())
            .is_some_and(|msg| msg.contains("Quota exceeded for instances"))
        {
            seen.store(true, Ordering::SeqCst);
        }
        st.ready == Some(true)
    })
    .await;
    assert!(
        seen.load(Ordering::SeqCst),
        "the cloud's quota message was reported"
    );
    assert!(h.sim().control().faults().is_empty());
    assert_eq!(counts(&h, "w-q").await, [1, 1, 0]);
}

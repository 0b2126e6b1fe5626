//! What an operator gets wrong against a real cloud, reported with the cloud's (or capo's)
//! message in a condition, the same on capo-sim and the real services; nothing is created for
//! it and nothing is left behind. Portable: runs with `CAPO_CLOUD=real` too.
use crate::common::Harness;
use crate::machines::*;
use capo_api::v1beta1::{OpenStackCluster, OpenStackMachine};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams};

/// `type: message` of every False condition.
fn false_conditions(conds: &[capo_api::v1beta1::Condition]) -> Vec<String> {
    conds
        .iter()
        .filter(|c| c.status == "False")
        .map(|c| format!("{}: {}", c.r#type, c.message.clone().unwrap_or_default()))
        .collect()
}

fn machine_says(m: &OpenStackMachine, needle: &str) -> bool {
    m.status.as_ref().is_some_and(|s| {
        false_conditions(&s.conditions)
            .iter()
            .any(|c| c.contains(needle))
    })
}

fn cluster_says(o: &OpenStackCluster, needle: &str) -> bool {
    o.status.as_ref().is_some_and(|s| {
        false_conditions(&s.conditions)
            .iter()
            .any(|c| c.contains(needle))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_flavor_and_image_are_named_and_nothing_is_created() {
    let (h, _c) = ready_cluster("badspec", CLUSTER_FIP).await;
    let no_flavor = MACHINE.replace("m1.small", "m1.no-such-flavor");
    let no_image = MACHINE.replace("ubuntu-2404-kube-v1.34", "no-such-image");
    create_machine(&h, "c1", "w-flavor", false, &no_flavor).await;
    create_machine(&h, "c1", "w-image", false, &no_image).await;
    let m = wait_machine(&h, "w-flavor", 60, "flavor named in a condition", |m| {
        machine_says(m, "m1.no-such-flavor")
    })
    .await;
    println!(
        "unknown flavor: {:?}",
        false_conditions(&m.status.unwrap().conditions)
    );
    let m = wait_machine(&h, "w-image", 60, "image named in a condition", |m| {
        machine_says(m, "no-such-image")
    })
    .await;
    println!(
        "unknown image: {:?}",
        false_conditions(&m.status.unwrap().conditions)
    );
    assert!(
        items(&h, "servers").await.is_empty(),
        "no server for a bad spec"
    );
    remove_machines(&h, &["w-flavor", "w-image"]).await;
    h.delete_cluster_leaving_nothing("c1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_gives_keystones_answer_and_a_fixed_secret_converges() {
    let h = Harness::new("badcreds").await;
    let _c = start(&h);
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), &h.ns);
    let good = h.cloud.clouds_yaml();
    let bad = good
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("password:") {
                let indent = &l[..l.len() - l.trim_start().len()];
                format!("{indent}password: not-the-password")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let set = |yaml: String| serde_json::json!({"stringData": {"clouds.yaml": yaml}});
    secrets
        .patch(
            "cloud-config",
            &PatchParams::default(),
            &Patch::Merge(set(bad)),
        )
        .await
        .unwrap();
    h.create_cluster("c1", CLUSTER_FIP).await;
    let o = h
        .wait_cluster("c1", 60, "authentication failure in a condition", |o| {
            cluster_says(o, "401")
        })
        .await;
    let said = false_conditions(&o.status.unwrap().conditions);
    println!("wrong password: {said:?}");
    assert!(
        !said.iter().any(|c| c.contains("not-the-password")),
        "the password reached the status: {said:?}"
    );
    assert!(
        h.inventory().await.is_empty(),
        "nothing created without a token"
    );
    secrets
        .patch(
            "cloud-config",
            &PatchParams::default(),
            &Patch::Merge(set(good)),
        )
        .await
        .unwrap();
    h.wait_cluster("c1", 120, "ready once the Secret is fixed", |o| {
        o.status.as_ref().is_some_and(|s| s.ready)
    })
    .await;
    h.delete_cluster_leaving_nothing("c1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_floating_ip_quota_is_reported_then_converges_when_raised() {
    let h = Harness::new("quota").await;
    let _c = start(&h);
    h.set_neutron_quota("floatingip", 0).await;
    h.create_cluster("c1", CLUSTER_FIP).await;
    let o = h
        .wait_cluster("c1", 60, "quota named in a condition", |o| {
            cluster_says(o, "Quota exceeded")
        })
        .await;
    println!(
        "quota: {:?}",
        false_conditions(&o.status.unwrap().conditions)
    );
    assert_eq!(h.inventory().await.get("floatingips"), None);
    h.set_neutron_quota("floatingip", 10).await;
    let o = h.wait_ready("c1").await;
    assert!(o.spec.control_plane_endpoint.is_some());
    assert_eq!(
        h.inventory().await.get("floatingips"),
        Some(&1),
        "exactly one"
    );
    h.delete_cluster_leaving_nothing("c1").await;
}

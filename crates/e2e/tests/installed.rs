//! The installed tier's scenario (docs/install.md): capo installed by `clusterctl init` on a
//! real management cluster, in a Pod from the release's image, creates clusterctl's default
//! flavor with the real Cluster API providers (also installed by clusterctl), scales it and
//! deletes it, leaving the cloud empty. Run by `hack/installed.sh`, never by plain
//! `cargo test` (it needs that cluster).

use std::time::{Duration, Instant};

use capo_e2e::cluster::{self, capi, wait_cluster_condition, wait_machines_running};
use capo_e2e::installed::{Installed, security_gaps};
use kube::api::{Patch, PatchParams};
use serde_json::json;

const UP: Duration = Duration::from_secs(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_flavor_through_the_installed_providers() {
    let t = Installed::start()
        .await
        .unwrap_or_else(|e| panic!("starting the installed tier: {e}"));
    let fail = |msg: &str| -> ! {
        panic!(
            "{msg}\n--- workload emulator (last 30 lines) ---\n{}",
            t.emulator_tail(30)
        )
    };

    // The manager as clusterctl installed it: running, ready (its readiness probe answered
    // through the kubelet), never restarted, with the promised security settings.
    let pods = t.capo_pods().await.unwrap_or_else(|e| fail(&e));
    assert!(!pods.is_empty(), "capo has no pod in capo-system");
    for pod in &pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let gaps = security_gaps(pod);
        assert!(gaps.is_empty(), "pod {name}: {gaps:?}");
        let status = pod.status.clone().unwrap_or_default();
        let statuses = status.container_statuses.unwrap_or_default();
        assert!(
            statuses.iter().all(|c| c.ready && c.restart_count == 0),
            "pod {name} is not ready or restarted: {statuses:?}"
        );
    }
    println!(
        "installed: capo's pods {} ready, none restarted, security context as promised",
        pods.len()
    );

    let ns = t.namespace("installed").await.unwrap_or_else(|e| fail(&e));

    // Bad input is refused at admission by capo's own webhook (the rule is not in the CRD's
    // schema), reached through its Service with cert-manager's certificate, naming the field.
    let bad = r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata: {name: bad}
spec:
  template:
    spec:
      flavor: m1.small
      image: {filter: {name: ubuntu-2404-kube-v1.34}}
      providerID: openstack:///bad
"#;
    match capo_testkit::apply_yaml(&t.client, &ns, bad, false).await {
        Ok(Err(rejected)) => {
            let text = format!("{rejected:?}");
            assert!(
                text.contains("providerID") && text.contains("cannot be set in a template"),
                "not capo's webhook refusal naming the field: {text}"
            );
            println!("installed: bad OpenStackMachineTemplate refused at admission: {text}");
        }
        Ok(Ok(_)) => fail("an OpenStackMachineTemplate with a providerID was accepted"),
        Err(e) => fail(&format!("applying the bad template: {e}")),
    }

    let name = "installed";
    let manifest = t.generate(name, &ns, 1, 1).unwrap_or_else(|e| fail(&e));
    let t0 = Instant::now();
    match capo_testkit::apply_yaml(&t.client, &ns, &manifest, false).await {
        Ok(Ok(_)) => {}
        Ok(Err(rejected)) => fail(&format!("the default flavor was rejected: {rejected:?}")),
        Err(e) => fail(&format!("applying the default flavor: {e}")),
    }
    wait_machines_running(&t.client, &ns, name, 2, UP)
        .await
        .unwrap_or_else(|e| fail(&e));
    wait_cluster_condition(&t.client, &ns, name, "Available", UP)
        .await
        .unwrap_or_else(|e| fail(&e));
    let (os_all, os_writes) = t.cloud.requests();
    println!(
        "installed figures: apply to Cluster Available: {:.1} s, OpenStack {os_all} requests ({os_writes} writes)",
        t0.elapsed().as_secs_f64()
    );

    // Scale the workers out through the MachineDeployment, as an operator would.
    let t1 = Instant::now();
    capi(&t.client, &ns, "MachineDeployment")
        .patch(
            &format!("{name}-md-0"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap_or_else(|e| fail(&format!("scaling the MachineDeployment: {e}")));
    wait_machines_running(&t.client, &ns, name, 3, UP)
        .await
        .unwrap_or_else(|e| fail(&e));
    let servers = t.cloud.resources().get("servers").map_or(0, Vec::len);
    assert_eq!(servers, 3, "3 Machines but {servers} servers in the cloud");
    println!(
        "installed figures: scaled to 2 workers in {:.1} s",
        t1.elapsed().as_secs_f64()
    );

    let t2 = Instant::now();
    cluster::delete_cluster(&t.client, &ns, name, UP)
        .await
        .unwrap_or_else(|e| fail(&e));
    let left = t.cloud.leftovers();
    assert!(left.is_empty(), "deleting {name} leaked: {left:#?}");
    println!(
        "installed figures: deleted, cloud empty, in {:.1} s",
        t2.elapsed().as_secs_f64()
    );
}

//! The real Cluster API managers run against the test environment: a `v1beta1` Cluster is
//! stored and read back as `v1beta2` (conversion through the core manager), KCP's admission
//! webhook refuses an invalid KubeadmControlPlane, and dropping the handle stops the managers.
//!
//! Needs `$CAPO_CAPI_BUILD_DIR` (`hack/capi.sh build`) and, because the managers bind their
//! webhook servers on all interfaces, a private network namespace (see `capo_testkit::capi`):
//!
//! ```text
//! unshare -n sh -c 'ip link set lo up && CAPO_CAPI_BUILD_DIR=... cargo test -p capo-testkit --test capi'
//! ```

use std::time::{Duration, Instant};

use capo_testkit::capi::{BUILD_DIR_VAR, CapiDir, ClusterApi, ClusterApiOptions, Provider};
use capo_testkit::{TestEnv, TestEnvOptions, apply_yaml};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn cluster_api(version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.x-k8s.io", version, "Cluster"),
        "clusters",
    )
}

const CLUSTER_V1BETA1: &str = "
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: converted
spec:
  paused: true
  clusterNetwork:
    pods:
      cidrBlocks: [192.168.0.0/16]
  controlPlaneRef:
    apiVersion: controlplane.cluster.x-k8s.io/v1beta1
    kind: KubeadmControlPlane
    name: converted-cp
";

/// Two replicas with stacked etcd: valid for the schema, refused by KCP's webhook.
const EVEN_KCP: &str = "
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlane
metadata:
  name: even
spec:
  replicas: 2
  version: v1.34.0
  machineTemplate:
    spec:
      infrastructureRef:
        apiGroup: infrastructure.cluster.x-k8s.io
        kind: OpenStackMachineTemplate
        name: even
  kubeadmConfigSpec:
    format: cloud-config
";

#[tokio::test]
async fn managers_convert_and_admit() -> TestResult {
    let Some(dir) = CapiDir::from_env()? else {
        eprintln!(
            "SKIPPED: ${BUILD_DIR_VAR} is unset; run `hack/capi.sh build` and export the directory it prints last"
        );
        return Ok(());
    };
    if !capo_testkit::capi::loopback_only_network() {
        eprintln!(
            "SKIPPED: the Cluster API managers listen on every interface; hack/e2e.sh runs this test in a loopback-only network namespace"
        );
        return Ok(());
    }

    let t0 = Instant::now();
    let env = TestEnv::start_with(TestEnvOptions::default().cluster_api(dir.clone())).await?;
    let env_started = t0.elapsed();
    let _env_logs = env.logs_on_failure();
    assert_eq!(env.cluster_api_dir(), Some(&dir));

    // The build's CRDs replaced the test-env directory's: v1beta1 and v1beta2 served, converted
    // by the core manager's webhook.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let crd = crds.get("clusters.cluster.x-k8s.io").await?;
    let served: Vec<_> = crd.spec.versions.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(served, ["v1beta1", "v1beta2"]);
    let conversion = crd
        .spec
        .conversion
        .ok_or("no conversion on the Cluster CRD")?;
    assert_eq!(conversion.strategy, "Webhook");

    let t1 = Instant::now();
    let capi = ClusterApi::start(&env, &dir, ClusterApiOptions::default()).await?;
    let managers_ready = t1.elapsed();
    eprintln!(
        "timings: env started in {:.1} s, managers ready {:.1} s later",
        env_started.as_secs_f64(),
        managers_ready.as_secs_f64()
    );
    assert_eq!(capi.version(), dir.version()?);
    assert!(capi.clusterctl().is_file());

    // A second start on the same environment is refused while this one runs.
    let second = ClusterApi::start(&env, &dir, ClusterApiOptions::default()).await;
    assert!(
        second
            .as_ref()
            .err()
            .is_some_and(|e| e.to_string().contains("already runs")),
        "{second:?}"
    );
    drop(second);

    {
        let _capi_logs = capi.logs_on_failure();
        let client = env.client();
        let ns = env.new_namespace("capi").await?;

        // Conversion: stored from v1beta1, read as v1beta2 (the reference changes shape).
        apply_yaml(&client, &ns, CLUSTER_V1BETA1, false)
            .await?
            .map_err(|r| format!("v1beta1 Cluster refused: {}", r.message))?;
        let v1beta2: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &ns, &cluster_api("v1beta2"));
        let cluster = v1beta2.get("converted").await?;
        let types = cluster.types.clone().ok_or("no type meta")?;
        assert_eq!(types.api_version, "cluster.x-k8s.io/v1beta2");
        let reference = &cluster.data["spec"]["controlPlaneRef"];
        assert_eq!(reference["apiGroup"], "controlplane.cluster.x-k8s.io");
        assert_eq!(reference["kind"], "KubeadmControlPlane");
        assert_eq!(reference["name"], "converted-cp");
        assert!(reference.get("apiVersion").is_none(), "{reference}");
        assert_eq!(
            cluster.data["spec"]["clusterNetwork"]["pods"]["cidrBlocks"][0],
            "192.168.0.0/16"
        );
        // ... and back as v1beta1: a reference with an apiVersion again (Cluster API fills in
        // the version the KubeadmControlPlane CRD's contract labels name, v1beta2).
        let v1beta1: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &ns, &cluster_api("v1beta1"));
        let back = v1beta1.get("converted").await?;
        let api_version = back.data["spec"]["controlPlaneRef"]["apiVersion"]
            .as_str()
            .unwrap_or_default();
        assert!(
            api_version.starts_with("controlplane.cluster.x-k8s.io/"),
            "{api_version}"
        );

        // Admission: KCP's validating webhook refuses an even replica count with stacked etcd.
        let verdict = apply_yaml(&client, &ns, EVEN_KCP, false).await?;
        let rejected = verdict
            .err()
            .ok_or("a KubeadmControlPlane with 2 replicas and stacked etcd was accepted")?;
        eprintln!("KCP refused as expected: {}", rejected.message);
        assert!(
            rejected
                .message
                .contains("validation.kubeadmcontrolplane.controlplane.cluster.x-k8s.io"),
            "{}",
            rejected.message
        );
        assert!(
            rejected.message.contains("cannot be an even number"),
            "{}",
            rejected.message
        );

        v1beta2
            .delete("converted", &DeleteParams::default())
            .await?;
        assert!(capi.exited().is_empty(), "{:?}", capi.exited());
    }

    // Dropping the handle stops the managers: their health ports close.
    let health: Vec<u16> = Provider::ALL
        .iter()
        .filter_map(|p| capi.health_port(*p))
        .collect();
    assert_eq!(health.len(), 3);
    drop(capi);
    for port in health {
        let open = std::net::TcpStream::connect_timeout(
            &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(1),
        )
        .is_ok();
        assert!(!open, "a manager still listens on 127.0.0.1:{port}");
    }
    Ok(())
}

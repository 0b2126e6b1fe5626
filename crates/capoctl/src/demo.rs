//! `capoctl demo`: capo end to end on one machine, no cloud needed.
//!
//! Starts capo-sim (an OpenStack API simulator), a real kube-apiserver + etcd with capo's,
//! Cluster API's and ORC's CRDs, and capo-controller-manager; applies a sample cluster (three
//! control-plane and two worker machines, Octavia API load balancer, BA/ACP extension on);
//! prints each resource as the controllers create it; prints the Ready cluster, its endpoint
//! and its Ansible inventory; then deletes the cluster, checks that the cloud is empty again and
//! stops everything (or keeps running with `--keep` until Ctrl-C).
//!
//! Cluster API's own controllers are not started: the demo does the two things of theirs capo
//! depends on (owner references to the Cluster and to each Machine). See docs/demo.md.

mod progress;
mod sample;
mod world;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use serde_json::Value;

use crate::error::{Error, Result};
use progress::Printer;
use world::World;

/// Namespace of the sample cluster.
pub const NAMESPACE: &str = "capo-demo";

/// `capoctl demo` options.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Keep everything running after the cluster is Ready, until Ctrl-C.
    pub keep: bool,
    /// Give up (non-zero exit) when the cluster and machines are not Ready by then.
    pub timeout: Duration,
    /// Name of the sample cluster.
    pub cluster: String,
    /// Manager log verbosity (its log goes to a file).
    pub verbosity: u8,
}

/// Run the demo to its end.
pub fn run(opts: &DemoOptions) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Demo(format!("starting the async runtime: {e}")))?;
    rt.block_on(run_async(opts))
}

async fn run_async(opts: &DemoOptions) -> Result<()> {
    // Listen for Ctrl-C (and SIGTERM) from the start: a signal that arrives before a listener
    // exists would be lost, and `--keep` would then wait forever.
    let mut stop = Stop::listen()?;
    let mut p = Printer::new();
    p.line("starting capo-sim, kube-apiserver + etcd and capo-controller-manager");
    let (world, mut manager) = World::start(opts.verbosity, |t| p.line(t)).await?;
    let outcome = tokio::select! {
        r = scenario(&world, &mut p, opts) => r,
        r = &mut manager => Err(Error::Demo(format!("the manager stopped unexpectedly: {}", match r {
            Ok(Ok(())) => "without an error".to_owned(),
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        }))),
        () = stop.recv() => Err(Error::Demo("interrupted".into())),
    };
    if let Err(e) = &outcome {
        eprintln!(
            "capoctl demo: {e}\n--- last lines of the manager log ---\n{}",
            world.log_tail(25)
        );
        let _ = world.stop(manager).await;
        return outcome;
    }
    if opts.keep {
        keep_running(&world, &p, &mut stop).await;
        p.line("signal received: stopping");
    } else {
        teardown(&world, &mut p, opts).await?;
    }
    world.stop(manager).await?;
    p.line("stopped capo-controller-manager, kube-apiserver, etcd and capo-sim");
    Ok(())
}

/// SIGINT (Ctrl-C) and SIGTERM, listened to for the whole run.
struct Stop {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Stop {
    fn listen() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        let err = |e: std::io::Error| Error::Demo(format!("installing signal handlers: {e}"));
        Ok(Self {
            int: signal(SignalKind::interrupt()).map_err(err)?,
            term: signal(SignalKind::terminate()).map_err(err)?,
        })
    }

    /// The next SIGINT or SIGTERM (cancel-safe: a signal is not lost when a select drops this).
    async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

fn dynamic(client: &Client, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(client.clone(), NAMESPACE, &ar)
}

fn clusters(c: &Client) -> Api<DynamicObject> {
    dynamic(
        c,
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "OpenStackCluster",
    )
}

fn machines(c: &Client) -> Api<DynamicObject> {
    dynamic(
        c,
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "OpenStackMachine",
    )
}

fn capi(c: &Client, kind: &str) -> Api<DynamicObject> {
    dynamic(c, "cluster.x-k8s.io", "v1beta2", kind)
}

fn kube_err(what: &str) -> impl FnOnce(kube::Error) -> Error + '_ {
    move |e| Error::Demo(format!("{what}: {e}"))
}

async fn apply(client: &Client, yaml: &str) -> Result<Vec<DynamicObject>> {
    capo_testkit::apply_yaml(client, NAMESPACE, yaml, false)
        .await
        .map_err(|e| Error::Demo(format!("applying the sample: {e}")))?
        .map_err(|r| Error::Demo(format!("the API server rejected the sample: {r:?}")))
}

/// Apply the sample: namespace, Secrets, Cluster + Machines, then the OpenStack objects owned
/// by them (what Cluster API would set).
async fn apply_sample(world: &World, p: &Printer, cluster: &str) -> Result<()> {
    let client = world.env.client();
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}}))
            .map_err(|e| Error::Demo(e.to_string()))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .map_err(kube_err("creating the namespace"))?;
    for secret in sample::secrets(cluster, &world.sim.clouds_yaml()) {
        apply(&client, &secret.to_string()).await?;
    }
    let capi = apply(&client, &sample::capi_objects(cluster)).await?;
    let uid = |kind: &str, name: &str| -> Result<String> {
        capi.iter()
            .find(|o| {
                o.types.as_ref().is_some_and(|t| t.kind == kind)
                    && o.metadata.name.as_deref() == Some(name)
            })
            .and_then(|o| o.metadata.uid.clone())
            .ok_or_else(|| Error::Demo(format!("{kind} {name} has no UID")))
    };
    apply(
        &client,
        &sample::openstack_cluster(cluster, &uid("Cluster", cluster)?),
    )
    .await?;
    let all = sample::machines(cluster);
    for m in &all {
        apply(
            &client,
            &sample::openstack_machine(cluster, m, &uid("Machine", &m.name)?),
        )
        .await?;
    }
    p.line(format!(
        "applied Cluster + OpenStackCluster {cluster} (Octavia API load balancer, BA/ACP extension), \
         {} control-plane and {} worker Machines + OpenStackMachines, identity and bootstrap Secrets (namespace {NAMESPACE})",
        all.iter().filter(|m| m.control_plane).count(),
        all.iter().filter(|m| !m.control_plane).count(),
    ));
    Ok(())
}

async fn scenario(world: &World, p: &mut Printer, opts: &DemoOptions) -> Result<()> {
    apply_sample(world, p, &opts.cluster).await?;
    let client = world.env.client();
    let deadline = Instant::now() + opts.timeout;
    let osc = wait_ready(&client, p, &opts.cluster, deadline).await?;
    print_requests(world, p, "to Ready").await;
    print_summary(&client, p, &opts.cluster, &osc).await
}

/// Poll the OpenStackCluster and OpenStackMachines, printing progress, until all are Ready.
async fn wait_ready(
    client: &Client,
    p: &mut Printer,
    cluster: &str,
    deadline: Instant,
) -> Result<Value> {
    loop {
        let osc = clusters(client)
            .get_opt(cluster)
            .await
            .map_err(kube_err("reading the OpenStackCluster"))?;
        let osc = serde_json::to_value(osc).unwrap_or_default();
        p.facts(progress::cluster_facts(&osc));
        let osms = machines(client)
            .list(&Default::default())
            .await
            .map_err(kube_err("listing OpenStackMachines"))?;
        let osms: Vec<Value> = osms
            .items
            .iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .collect();
        for m in &osms {
            p.facts(progress::machine_facts(m));
        }
        let machines_ready =
            osms.len() == sample::machines(cluster).len() && osms.iter().all(progress::is_ready);
        if progress::is_ready(&osc) && machines_ready {
            p.line(format!(
                "cluster {cluster}: OpenStackCluster and all {} machines Ready",
                osms.len()
            ));
            return Ok(osc);
        }
        if Instant::now() > deadline {
            let mut why = vec![format!(
                "OpenStackCluster {cluster}: {}",
                progress::pending_reasons(&osc)
            )];
            for m in osms.iter().filter(|m| !progress::is_ready(m)) {
                let name = m["metadata"]["name"].as_str().unwrap_or("?");
                why.push(format!(
                    "OpenStackMachine {name}: {}",
                    progress::pending_reasons(m)
                ));
            }
            return Err(Error::Demo(format!(
                "timed out waiting for the cluster to become Ready:\n  {}",
                why.join("\n  ")
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// How many OpenStack and Kubernetes API requests the run made so far.
async fn print_requests(world: &World, p: &Printer, when: &str) {
    let (os, writes, kube) = world.request_counts().await;
    let kube = kube.map_or_else(|| "?".to_owned(), |k| k.to_string());
    p.line(format!(
        "requests {when}: {os} OpenStack ({writes} writes), {kube} Kubernetes API by the manager"
    ));
}

/// The Ready cluster, its endpoint, the machines and the Ansible inventory (when published).
async fn print_summary(client: &Client, p: &Printer, cluster: &str, osc: &Value) -> Result<()> {
    let ep = &osc["spec"]["controlPlaneEndpoint"];
    p.raw(format!(
        "\n=== cluster {cluster} is Ready ===\ncontrol-plane endpoint: https://{}:{}",
        ep["host"].as_str().unwrap_or("?"),
        ep["port"].as_i64().unwrap_or(6443)
    ));
    let list = machines(client)
        .list(&Default::default())
        .await
        .map_err(kube_err("listing OpenStackMachines"))?;
    for m in &list.items {
        let v = serde_json::to_value(m).unwrap_or_default();
        let addrs = progress::ip_addresses(&v);
        p.raw(format!(
            "  {:<28} {:<8} {}",
            m.metadata.name.as_deref().unwrap_or("?"),
            v["status"]["instanceState"].as_str().unwrap_or("-"),
            addrs.join(", ")
        ));
    }
    print_inventory(client, p, cluster).await
}

/// Print `inventory.yaml` of the Secret `<cluster>-ansible`, waiting briefly for it.
async fn print_inventory(client: &Client, p: &Printer, cluster: &str) -> Result<()> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let name = format!("{cluster}-ansible");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let secret = secrets
            .get_opt(&name)
            .await
            .map_err(kube_err("reading the Ansible Secret"))?;
        let inventory = secret
            .as_ref()
            .and_then(|s| s.data.as_ref())
            .and_then(|d| d.get("inventory.yaml"))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned());
        if let Some(inv) = inventory {
            p.raw(format!(
                "\n=== Ansible inventory (Secret {NAMESPACE}/{name}, key inventory.yaml) ===\n{}",
                inv.trim_end()
            ));
            return Ok(());
        }
        if Instant::now() > deadline {
            p.raw(format!(
                "\nAnsible inventory: not available yet — this build does not publish the Secret {NAMESPACE}/{name}."
            ));
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `--keep`: say how to look around, wait for Ctrl-C.
async fn keep_running(world: &World, p: &Printer, stop: &mut Stop) {
    let kubectl = std::env::var(capo_testkit::paths::ENV_DIR_VAR)
        .map(|d| format!("{d}/bin/kubectl"))
        .unwrap_or_else(|_| "kubectl".to_owned());
    p.raw(format!(
        "\nEverything keeps running until Ctrl-C:\n  export KUBECONFIG={}\n  {kubectl} -n {NAMESPACE} get openstackclusters,openstackmachines,openstackservers\n  curl {}\n  capo-sim: {} (clouds.yaml in the Secret {NAMESPACE}/<cluster>-cloud-config)\n  manager log: {}",
        world.env.kubeconfig_path().display(),
        world.metrics_url,
        world.sim.base_url(),
        world.log.display(),
    ));
    stop.recv().await;
}

/// Delete the machines, then the cluster; wait until the controllers removed everything from
/// the cloud, and check that nothing is left.
async fn teardown(world: &World, p: &mut Printer, opts: &DemoOptions) -> Result<()> {
    let client = world.env.client();
    p.line("deleting the machines, then the cluster");
    // Cluster API deletes a Machine's infrastructure object with it, and the cluster's once all
    // machines are gone; the demo does the same deletes in the same order.
    let names: Vec<String> = sample::machines(&opts.cluster)
        .into_iter()
        .map(|m| m.name)
        .collect();
    for api in [capi(&client, "Machine"), machines(&client)] {
        delete_all(&api, &names).await?;
    }
    wait_gone(&machines(&client), &names, opts.timeout).await?;
    p.line(format!(
        "all {} OpenStackMachines deleted (servers and ports removed)",
        names.len()
    ));
    let cluster = std::slice::from_ref(&opts.cluster);
    delete_all(&capi(&client, "Cluster"), cluster).await?;
    delete_all(&clusters(&client), cluster).await?;
    wait_gone(&clusters(&client), cluster, opts.timeout).await?;
    p.line(format!(
        "OpenStackCluster {} deleted (load balancer, router, network, security groups removed)",
        opts.cluster
    ));
    print_requests(world, p, "in total").await;
    let left = cloud_leftovers(world);
    if left.is_empty() {
        p.line("cloud check: no resource left in the project");
        Ok(())
    } else {
        Err(Error::Demo(format!(
            "resources left in the cloud after deletion: {left:?}"
        )))
    }
}

async fn delete_all(api: &Api<DynamicObject>, names: &[String]) -> Result<()> {
    for n in names {
        match api.delete(n, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(ae)) if ae.code == 404 => {}
            Err(e) => return Err(Error::Demo(format!("deleting {n}: {e}"))),
        }
    }
    Ok(())
}

async fn wait_gone(api: &Api<DynamicObject>, names: &[String], timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    for n in names {
        while api
            .get_opt(n)
            .await
            .map_err(kube_err("reading an object"))?
            .is_some()
        {
            if Instant::now() > deadline {
                return Err(Error::Demo(format!(
                    "timed out waiting for the deletion of {n}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    Ok(())
}

/// Non-empty resource collections of the demo project (Neutron's `default` security group
/// and its rules, which every project has, excluded).
fn cloud_leftovers(world: &World) -> Vec<(String, usize)> {
    let control = world.sim.control();
    let Some(project) = control.project_id("capo") else {
        return Vec::new();
    };
    let state = control.state(Some(&project));
    let default_ids: Vec<&str> = state["security_groups"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|g| g["name"] == "default")
                .filter_map(|g| g["id"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let Some(map) = state.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(k, v)| {
            let n = v
                .as_array()?
                .iter()
                .filter(|i| match k.as_str() {
                    "security_groups" => i["name"] != "default",
                    "security_group_rules" => !i["security_group_id"]
                        .as_str()
                        .is_some_and(|id| default_ids.contains(&id)),
                    _ => true,
                })
                .count();
            (n > 0).then(|| (k.clone(), n))
        })
        .collect()
}

//! One cluster's cycles: a namespace and a capo-sim of its own, faults on that sim, and after
//! every step the check that the sim holds exactly what the objects describe.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::Settings;
use super::faults::{Injector, Tally};
use super::invariants::{self, Findings};
use crate::cloud::Cloud;
use crate::cluster::{self, capi, infra};
use crate::management::Management;

/// The template every cycle generates its cluster from (API load balancer, managed network).
const TEMPLATE: &str = "cluster-template.yaml";

/// What one cluster's cycles found.
#[derive(Debug, Default)]
pub struct LaneReport {
    /// The lane's name.
    pub name: String,
    /// Cycles completed (created, scaled, deleted, checked).
    pub cycles: u32,
    /// Faults that fired on its cloud, by kind (from the request log).
    pub faults: Tally,
    /// Latency spikes on its cloud.
    pub spikes: u64,
    /// Leaked resources found.
    pub leaks: Vec<String>,
    /// Duplicated resources found.
    pub duplicates: Vec<String>,
    /// Steps that did not settle and deletions that did not finish in time.
    pub failures: Vec<String>,
}

struct Lane<'a> {
    management: &'a Management,
    client: Client,
    ns: String,
    cloud: Cloud,
    report: LaneReport,
}

/// Runs `settings.cycles` cycles for cluster lane `index`; stops early at the first finding
/// (the cloud then no longer starts empty); no cycle starts after `deadline`.
pub async fn run(
    management: &'static Management,
    index: u32,
    settings: &Settings,
    deadline: Option<Instant>,
) -> LaneReport {
    let name = format!("soak{index}");
    let mut report = LaneReport {
        name: name.clone(),
        ..LaneReport::default()
    };
    let (ns, cloud) = match (management.new_namespace(&name).await, Cloud::start().await) {
        (Ok(ns), Ok(cloud)) => (ns, cloud),
        (Err(e), _) | (_, Err(e)) => {
            report.failures.push(format!("setting up: {e}"));
            return report;
        }
    };
    let mut lane = Lane {
        management,
        client: management.client(),
        ns,
        cloud,
        report,
    };
    let control = lane.cloud.sim.control().clone();
    let seed = settings.seed.wrapping_add(u64::from(index) + 1);
    let injector = Injector::start(control.clone(), settings.fault_interval, seed);
    for cycle in 0..settings.cycles {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let t0 = Instant::now();
        let cluster = format!("{name}-c{cycle}");
        let ok = lane.cycle(&cluster, settings).await;
        // The cluster is gone (or the lane stops): no request of capo's reaches this cloud
        // any more, so the log holds every fault that fired during the cycle.
        let fired = Tally::from_log(&control.requests());
        control.clear_requests();
        lane.report.faults.add(&fired);
        if !ok {
            break;
        }
        lane.report.cycles += 1;
        eprintln!(
            "soak: {cluster} cycle done in {:.0} s (faults {fired})",
            t0.elapsed().as_secs_f64()
        );
    }
    lane.report.spikes = injector.spikes();
    injector.stop(&control).await;
    lane.report
}

impl Lane<'_> {
    /// Create, scale the workers 1 → 2 → 1, delete; false when something was found or did not
    /// finish (recorded in the report).
    async fn cycle(&mut self, cluster: &str, settings: &Settings) -> bool {
        if let Err(e) = self.create(cluster, settings.step_timeout).await {
            self.report.failures.push(format!("{cluster} create: {e}"));
            return false;
        }
        for (step, workers) in [("create", 1), ("scale up", 2), ("scale down", 1)] {
            if step != "create"
                && let Err(e) = self.scale_workers(cluster, workers).await
            {
                self.report.failures.push(format!("{cluster} {step}: {e}"));
                return false;
            }
            if !self.settle(cluster, step, 1 + workers, settings).await {
                return false;
            }
        }
        let t0 = Instant::now();
        if let Err(e) =
            cluster::delete_cluster(&self.client, &self.ns, cluster, settings.delete_timeout).await
        {
            self.report
                .failures
                .push(format!("{cluster} delete did not finish: {e}"));
            return false;
        }
        let left = self.cloud.leftovers();
        if !left.is_empty() {
            self.report
                .leaks
                .push(format!("{cluster} after delete: {left:?}"));
            return false;
        }
        eprintln!(
            "soak: {cluster} deleted in {:.1} s, cloud empty",
            t0.elapsed().as_secs_f64()
        );
        true
    }

    /// Generates the cluster with clusterctl and applies it; retried while capo's admission
    /// webhooks are unreachable (the manager is down between a kill and its restart).
    async fn create(&self, cluster: &str, timeout: Duration) -> Result<(), String> {
        let manifest = cluster::generate(
            &self.management.clusterctl(),
            &crate::scenario::Scenario::template(TEMPLATE),
            cluster,
            &self.ns,
            1,
            1,
            &cluster::template_env(&self.cloud),
        )?;
        cluster::poll(&format!("applying {cluster}"), timeout, || async {
            match capo_testkit::apply_yaml(&self.client, &self.ns, &manifest, false).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(rejected)) => Err(format!("rejected: {rejected:?}")),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
    }

    async fn scale_workers(&self, cluster: &str, replicas: u32) -> Result<(), String> {
        capi(&self.client, &self.ns, "MachineDeployment")
            .patch(
                &format!("{cluster}-md-0"),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Waits for `machines` Machines Running, then for the cloud to hold exactly what the
    /// objects describe. A leak or duplicate still there when the step times out is recorded
    /// as such; one capo cleans up within the step's time is convergence, not a finding.
    async fn settle(
        &mut self,
        cluster: &str,
        step: &str,
        machines: u32,
        settings: &Settings,
    ) -> bool {
        let t0 = Instant::now();
        if let Err(e) = cluster::wait_machines_running(
            &self.client,
            &self.ns,
            cluster,
            machines as usize,
            settings.step_timeout,
        )
        .await
        {
            let f = self.check().await;
            self.report
                .failures
                .push(format!("{cluster} {step}: {e}\n  cloud: {f:?}"));
            self.record(cluster, step, &f);
            return false;
        }
        let mut last = Findings::default();
        while t0.elapsed() < settings.step_timeout {
            last = self.check().await;
            if last.exact() {
                eprintln!(
                    "soak: {cluster} {step}: {machines} Machines Running, cloud exact ({:.1} s)",
                    t0.elapsed().as_secs_f64()
                );
                return true;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        self.report.failures.push(format!(
            "{cluster} {step}: the cloud did not settle in {:.0} s: {last:?}",
            settings.step_timeout.as_secs_f64()
        ));
        self.record(cluster, step, &last);
        false
    }

    fn record(&mut self, cluster: &str, step: &str, f: &Findings) {
        for l in &f.leaks {
            self.report.leaks.push(format!("{cluster} {step}: {l}"));
        }
        for d in &f.duplicates {
            self.report
                .duplicates
                .push(format!("{cluster} {step}: {d}"));
        }
    }

    /// The cloud against the cluster's OpenStackMachines.
    async fn check(&self) -> Findings {
        let machines: BTreeSet<String> = infra(&self.client, &self.ns, "OpenStackMachine")
            .list(&ListParams::default())
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .filter_map(|o| o.metadata.name)
                    .collect()
            })
            .unwrap_or_default();
        invariants::check(&without_default_group(self.cloud.resources()), &machines)
    }
}

/// The project's resources without its default security group and that group's rules.
fn without_default_group(
    mut resources: BTreeMap<String, Vec<Value>>,
) -> BTreeMap<String, Vec<Value>> {
    let default = capo_testkit::project::default_group_ids(&resources);
    for (collection, items) in resources.iter_mut() {
        items.retain(|i| !capo_testkit::project::is_default_group(collection, i, &default));
    }
    resources
}

//! One scenario: a namespace and a capo-sim of its own on the shared [`World`], the figures the
//! tier reports, and the final check that deleting the Cluster leaves the cloud empty.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::Client;

use crate::cloud::Cloud;
use crate::cluster;
use crate::world::World;

/// A scenario in progress.
pub struct Scenario {
    /// The shared management cluster and controllers.
    pub world: &'static World,
    /// A client for this test's runtime.
    pub client: Client,
    /// The scenario's namespace.
    pub ns: String,
    /// The scenario's cloud.
    pub cloud: Cloud,
    /// Its name (for the figures).
    pub name: String,
    started: Instant,
    kube_at_start: u64,
    kube_by_resource_at_start: std::collections::BTreeMap<String, u64>,
    conversions_at_start: crate::management::Conversions,
}

/// Figures of one phase of a scenario.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    /// Wall time of the phase.
    pub wall: Duration,
    /// OpenStack requests (all, writes) made by capo during the phase.
    pub openstack: (usize, usize),
    /// Kubernetes API requests made by capo's manager during the phase.
    pub kube: u64,
}

impl Scenario {
    /// Starts the world if needed, then the scenario's namespace and cloud.
    pub async fn start(name: &str) -> Scenario {
        let world = tokio::task::block_in_place(World::get);
        let client = world.client();
        let ns = world
            .new_namespace(name)
            .await
            .unwrap_or_else(|e| panic!("namespace for {name}: {e}"));
        let cloud = Cloud::start()
            .await
            .unwrap_or_else(|e| panic!("cloud for {name}: {e}"));
        let kube_at_start = world.kube_requests().await;
        let kube_by_resource_at_start = world.kube_requests_by_resource().await;
        let conversions_at_start = world.conversions().await;
        Scenario {
            world,
            client,
            ns,
            cloud,
            name: name.to_owned(),
            started: Instant::now(),
            kube_at_start,
            kube_by_resource_at_start,
            conversions_at_start,
        }
    }

    /// `templates/<file>` of the repository.
    pub fn template(file: &str) -> PathBuf {
        capo_testkit::paths::repo_root()
            .join("templates")
            .join(file)
    }

    /// `clusterctl generate cluster` from `templates/<file>` for this scenario's cloud, then a
    /// server-side apply of the output, unchanged.
    pub async fn create_cluster(
        &self,
        cluster: &str,
        file: &str,
        control_planes: u32,
        workers: u32,
    ) {
        let manifest = cluster::generate(
            &self.world.clusterctl(),
            &Self::template(file),
            cluster,
            &self.ns,
            control_planes,
            workers,
            &cluster::template_env(&self.cloud),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        match capo_testkit::apply_yaml(&self.client, &self.ns, &manifest, false).await {
            Ok(Ok(_)) => {}
            Ok(Err(rejected)) => panic!("{file} was rejected: {rejected:?}"),
            Err(e) => panic!("applying {file}: {e}"),
        }
    }

    /// Server-side apply of `yaml` in the scenario's namespace, as `kubectl apply` would.
    pub async fn apply(&self, yaml: &str) {
        match capo_testkit::apply_yaml(&self.client, &self.ns, yaml, false).await {
            Ok(Ok(_)) => {}
            Ok(Err(rejected)) => self.fail(&format!("rejected: {rejected:?}")),
            Err(e) => self.fail(&format!("applying: {e}")),
        }
    }

    /// Figures since the scenario started.
    pub async fn figures(&self) -> Figures {
        Figures {
            wall: self.started.elapsed(),
            openstack: self.cloud.requests(),
            kube: self.world.kube_requests().await - self.kube_at_start,
        }
    }

    /// Prints one line of figures for `phase` (what docs/testing.md and the notes quote).
    pub async fn report(&self, phase: &str) -> Figures {
        let f = self.figures().await;
        println!(
            "e2e figures: {} / {phase}: {:.1} s, OpenStack {} requests ({} writes), Kubernetes API {} requests by capo",
            self.name,
            f.wall.as_secs_f64(),
            f.openstack.0,
            f.openstack.1,
            f.kube
        );
        let mut by_resource: Vec<(u64, String)> = self
            .world
            .kube_requests_by_resource()
            .await
            .into_iter()
            .filter_map(|(k, n)| {
                let n = n - self.kube_by_resource_at_start.get(&k).copied().unwrap_or(0);
                (n > 0).then_some((n, k))
            })
            .collect();
        by_resource.sort_by(|a, b| b.cmp(a));
        let top: Vec<String> = by_resource
            .iter()
            .take(12)
            .map(|(n, k)| format!("{k} {n}"))
            .collect();
        println!(
            "e2e figures: {} / {phase}: Kubernetes API by capo, most first: {}",
            self.name,
            top.join(", ")
        );
        let c = self.world.conversions().await - self.conversions_at_start;
        println!(
            "e2e figures: {} / {phase}: capo's conversion webhook: {} reviews, {} objects, {:.3} s converting",
            self.name, c.reviews, c.objects, c.seconds
        );
        f
    }

    /// Deletes the Cluster through Cluster API and checks the cloud holds nothing but the
    /// project's default security group (and the scenario's key pair).
    pub async fn delete_and_check_empty(&self, cluster: &str) {
        cluster::delete_cluster(&self.client, &self.ns, cluster, Duration::from_secs(180))
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", self.world.log_tails(30)));
        let left = self.cloud.leftovers();
        assert!(left.is_empty(), "deleting {cluster} leaked: {left:#?}");
        self.report("deleted, cloud empty").await;
    }

    /// Panics with `msg` and the tails of every log.
    pub fn fail(&self, msg: &str) -> ! {
        panic!("{msg}\n{}", self.world.log_tails(40))
    }
}

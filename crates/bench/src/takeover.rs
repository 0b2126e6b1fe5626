//! `--takeover`: the upgrade docs/migrating-from-upstream.md describes, played for real.
//! Upstream CAPO v0.14.7 creates the clusters on capo-sim with its own CRDs (objects stored in
//! `v1beta1`) and stops; capo's CRDs replace upstream's (`v1beta2` stored) and capo's manager
//! starts. It must migrate every stored object to `v1beta2` and trim the CRDs'
//! `status.storedVersions`, keep every machine ready, create and delete nothing in the cloud,
//! and then delete the clusters it took over without leaving anything behind.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use capo_testkit::{TestEnv, TestEnvOptions};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;

use crate::cloud::Cloud;
use crate::cluster_api::{ClusterPlay, NAMESPACE, Objects, cluster_name, machine_names, osm_ready};
use crate::manager::{Kind, Manager};
use crate::observer::{Infra, Observer};
use crate::run::{MANAGER_USER, guard, work_dir};
use crate::settings::Settings;

const GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// The kinds whose storage version changes.
const MIGRATED: [&str; 4] = [
    "openstackclusters",
    "openstackclustertemplates",
    "openstackmachines",
    "openstackmachinetemplates",
];

/// Runs the takeover and returns its report.
pub async fn run(s: &Settings) -> Result<String> {
    let options = TestEnvOptions::default()
        .user(MANAGER_USER)
        .infrastructure_crds(Kind::Upstream.crds(s).context("upstream's CRDs")?);
    let env = TestEnv::start_with(options)
        .await
        .context("starting kube-apiserver")?;
    let dir = work_dir("takeover")?;
    let result = takeover(s, &env, &dir).await;
    if s.keep || result.is_err() {
        eprintln!("capo-bench: takeover files kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

async fn takeover(s: &Settings, env: &TestEnv, dir: &std::path::Path) -> Result<String> {
    let cloud = Cloud::start(s).await?;
    let kubeconfig = dir.join("manager.kubeconfig");
    env.write_kubeconfig_as(MANAGER_USER, &kubeconfig)?;
    let client = env.client();
    let objects = Objects::new(&client);
    let (observer, watches) = Observer::start(&objects);
    let timeout = Duration::from_secs(s.timeout_s);
    let plays = ClusterPlay::all(&objects, &observer, &cloud, s);
    let machines: Vec<String> = (0..s.cluster_count())
        .flat_map(|i| machine_names(i, s.machines))
        .collect();

    // Upstream builds everything.
    let t0 = Instant::now();
    let upstream_dir = dir.join("upstream");
    std::fs::create_dir_all(&upstream_dir)?;
    let mut upstream = Manager::start(Kind::Upstream, s, &kubeconfig, &upstream_dir)?;
    guard(&mut upstream, async {
        futures::future::try_join_all(plays.iter().map(ClusterPlay::create)).await?;
        for name in &machines {
            observer.wait_ready(Infra::Machine, name, timeout).await?;
        }
        Ok(())
    })
    .await
    .context("upstream creating the clusters")?;
    let upstream_up = t0.elapsed();
    upstream.stop().await?;
    for name in &machines {
        let stored = stored_version(env, "openstackmachines", name).await?;
        if stored != "v1beta1" {
            bail!("upstream stored OpenStackMachine {name} in {stored}");
        }
    }
    let before = cloud.inventory();
    let requests_before = cloud.counters();

    // capo replaces it in place.
    env.install_our_crds()
        .await
        .context("installing capo's CRDs")?;
    let t1 = Instant::now();
    let capo_dir = dir.join("capo");
    std::fs::create_dir_all(&capo_dir)?;
    let mut capo = Manager::start(Kind::Capo, s, &kubeconfig, &capo_dir)?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    guard(&mut capo, async {
        loop {
            if migrated(&crds).await? {
                return Ok(());
            }
            if t1.elapsed() > timeout {
                bail!(
                    "storage versions not migrated after {} s",
                    timeout.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await
    .context("capo migrating the storage version")?;
    let migrated_after = t1.elapsed();
    // The controllers' first pass over everything, then a quiet while.
    guard(&mut capo, async {
        tokio::time::sleep(Duration::from_secs(s.steady_s.max(5))).await;
        Ok(())
    })
    .await?;
    let mut not_ready = Vec::new();
    for name in &machines {
        if !stored_version(env, "openstackmachines", name)
            .await?
            .eq("v1beta2")
        {
            bail!("OpenStackMachine {name} is not stored in v1beta2 after the migration");
        }
        let osm = objects.osm.get(name).await?;
        if !osm_ready(&osm) {
            not_ready.push(name.clone());
        }
    }
    for i in 0..s.cluster_count() {
        let name = cluster_name(i);
        if !stored_version(env, "openstackclusters", &name)
            .await?
            .eq("v1beta2")
        {
            bail!("OpenStackCluster {name} is not stored in v1beta2 after the migration");
        }
    }
    if !not_ready.is_empty() {
        bail!("machines no longer ready after the takeover: {not_ready:?}");
    }
    let after = cloud.inventory();
    if after != before {
        bail!("the takeover changed the cloud:\n  before: {before:?}\n  after:  {after:?}");
    }
    let during = difference(&cloud.counters(), &requests_before);
    let reads: u64 = during
        .iter()
        .filter(|(route, _)| route.contains(" GET "))
        .map(|(_, n)| n)
        .sum();
    let written: Vec<(&String, &u64)> = during
        .iter()
        .filter(|(route, _)| !route.contains(" GET ") && !route.contains(" HEAD "))
        .collect();
    let write_count: u64 = written.iter().map(|(_, n)| **n).sum();
    let writes: Vec<String> = written
        .iter()
        .map(|(route, n)| format!("{n} {route}"))
        .collect();
    let servers_read = during
        .iter()
        .filter(|(route, _)| route.starts_with("compute GET ") && route.contains("/servers"))
        .map(|(_, n)| n)
        .sum::<u64>();
    if servers_read == 0 {
        bail!("capo never looked at a server: it did not take the machines over");
    }

    // capo deletes what upstream built.
    let t2 = Instant::now();
    guard(&mut capo, async {
        futures::future::try_join_all(plays.iter().map(ClusterPlay::delete)).await?;
        Ok(())
    })
    .await
    .context("capo deleting the clusters upstream built")?;
    let deleted_after = t2.elapsed();
    capo.stop().await?;
    for w in watches {
        w.abort();
    }
    cloud
        .check_empty()
        .context("capo left resources behind after deleting what it took over")?;

    let resources: usize = before.values().map(Vec::len).sum();
    Ok(format!(
        "takeover: upstream CAPO v0.14.7 built {} cluster(s), {} machines ready after {:.1} s ({resources} OpenStack resources, objects stored in v1beta1)\n\
         takeover: capo's CRDs applied, capo's manager started: {} CRDs' storage migrated to v1beta2 after {:.1} s, every OpenStackCluster and OpenStackMachine stored in v1beta2 (read from etcd)\n\
         takeover: after {} s more, every machine still ready; the cloud unchanged (same {resources} resources); capo's OpenStack requests meanwhile: {reads} reads ({servers_read} of servers), {} other requests{}\n\
         takeover: capo deleted everything upstream built in {:.1} s; capo-sim empty (no leak)",
        s.cluster_count(),
        machines.len(),
        upstream_up.as_secs_f64(),
        MIGRATED.len(),
        migrated_after.as_secs_f64(),
        s.steady_s.max(5),
        write_count,
        if writes.is_empty() {
            String::new()
        } else {
            format!(" ({})", writes.join(", "))
        },
        deleted_after.as_secs_f64(),
    ))
}

/// Whether every CRD of [`MIGRATED`] stores only `v1beta2`.
async fn migrated(crds: &Api<CustomResourceDefinition>) -> Result<bool> {
    for plural in MIGRATED {
        let crd = crds.get(&format!("{plural}.{GROUP}")).await?;
        let stored = crd
            .status
            .and_then(|s| s.stored_versions)
            .unwrap_or_default();
        if stored != ["v1beta2"] {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The version etcd holds `name` of `plural` in.
async fn stored_version(env: &TestEnv, plural: &str, name: &str) -> Result<String> {
    let object = env
        .stored_object(GROUP, plural, Some(NAMESPACE), name)
        .await?
        .with_context(|| format!("{plural} {name} is not in etcd"))?;
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    Ok(api_version
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned())
}

/// `now - before`, per route, without the routes that did not move.
fn difference(
    now: &BTreeMap<String, u64>,
    before: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    now.iter()
        .map(|(route, n)| {
            let was = before.get(route).copied().unwrap_or(0);
            (route.clone(), n.saturating_sub(was))
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

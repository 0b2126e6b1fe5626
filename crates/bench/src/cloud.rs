//! The run's capo-sim, in-process: seed (no quotas, an application credential per cluster in
//! credentials mode), latencies, delays, request counters and the leak check.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context as _, Result, bail};
use capo_sim::seed::SeedAppCred;
use capo_sim::{Seed, Sim, SimConfig};
use serde_json::Value;

use crate::settings::Settings;

/// The project every cluster lives in.
const PROJECT: &str = "capo";
/// The seeded user owning the project (and the application credentials).
const USER: &str = "capo-user";
/// The cloud name in each cluster's clouds.yaml.
pub const CLOUD_NAME: &str = "capo-bench";

/// A running simulator and what the clusters need to use it.
pub struct Cloud {
    sim: Sim,
    project_id: String,
    /// Application credentials (id, secret) by cluster index, in credentials mode.
    app_creds: Vec<(String, String)>,
    region: String,
    /// The seeded password of [`USER`].
    password: String,
}

/// OpenStack request counts, from the simulator's per-route counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    /// Every request.
    pub total: u64,
    /// Requests other than GET and HEAD.
    pub writes: u64,
    /// Keystone token requests (POST /v3/auth/tokens).
    pub tokens: u64,
}

impl std::ops::Sub for Requests {
    type Output = Requests;
    fn sub(self, earlier: Requests) -> Requests {
        Requests {
            total: self.total.saturating_sub(earlier.total),
            writes: self.writes.saturating_sub(earlier.writes),
            tokens: self.tokens.saturating_sub(earlier.tokens),
        }
    }
}

impl Cloud {
    /// Starts a fresh simulator on 127.0.0.1 with the settings' latencies and delays.
    pub async fn start(settings: &Settings) -> Result<Self> {
        let mut seed = Seed::default();
        // Quotas are not what is measured: 100 clusters x 10 machines must fit.
        for limit in seed.quotas.values_mut() {
            *limit = -1;
        }
        let mut app_creds = Vec::new();
        if settings.credentials.is_some() {
            for i in 0..settings.cluster_count() {
                let id = format!("benchappcred{i:04}");
                let secret: String = (0..24)
                    .map(|_| format!("{:02x}", rand::random::<u8>()))
                    .collect();
                seed.app_credentials.push(SeedAppCred {
                    id: Some(id.clone()),
                    name: format!("bench-{i}"),
                    secret: secret.clone(),
                    user: USER.into(),
                    project: PROJECT.into(),
                });
                app_creds.push((id, secret));
            }
        }
        let region = seed.region.clone();
        let password = seed
            .users
            .iter()
            .find(|u| u.name == USER)
            .map(|u| u.password.clone())
            .with_context(|| format!("capo-sim's seed has no user {USER}"))?;
        let config = SimConfig {
            seed,
            delays: settings.delays(),
            ..SimConfig::default()
        };
        let sim = Sim::start(config).await.context("starting capo-sim")?;
        let latency: HashMap<String, u64> = settings
            .latencies()
            .into_iter()
            .map(|(svc, ms)| (svc.to_owned(), ms))
            .collect();
        sim.control().set_latency(latency);
        let project_id = sim
            .control()
            .project_id(PROJECT)
            .with_context(|| format!("capo-sim has no project {PROJECT}"))?;
        Ok(Self {
            sim,
            project_id,
            app_creds,
            region,
            password,
        })
    }

    /// The simulator's TCP port (to find the manager's connections to it).
    pub fn port(&self) -> Result<u16> {
        let url = self.sim.base_url();
        url.rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .with_context(|| format!("no port in {url}"))
    }

    /// The clouds.yaml of cluster `index` (cloud [`CLOUD_NAME`]): its own application credential
    /// in credentials mode, else the project user's password.
    pub fn clouds_yaml(&self, index: usize) -> String {
        let auth_url = self.sim.auth_url();
        let region = &self.region;
        let password = &self.password;
        let tail = format!(
            "    region_name: {region}\n    interface: public\n    identity_api_version: 3\n"
        );
        match self.app_creds.get(index) {
            Some((id, secret)) => format!(
                "clouds:\n  {CLOUD_NAME}:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {auth_url}\n      application_credential_id: {id}\n      application_credential_secret: {secret}\n{tail}"
            ),
            None => format!(
                "clouds:\n  {CLOUD_NAME}:\n    auth:\n      auth_url: {auth_url}\n      username: {USER}\n      password: {password}\n      project_name: {PROJECT}\n      user_domain_name: Default\n      project_domain_name: Default\n{tail}"
            ),
        }
    }

    /// capo-sim's request counters so far, by `service METHOD /route`.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        self.sim.control().counters()
    }

    /// The requests served so far. Only the manager talks to the simulator's OpenStack APIs
    /// (the benchmark reads through the in-process control handle), so they are all its own.
    pub fn requests(&self) -> Requests {
        let counters = self.counters();
        let mut r = Requests::default();
        for (key, n) in counters {
            // Keys are `service METHOD /route`.
            let mut parts = key.splitn(3, ' ');
            let service = parts.next().unwrap_or_default();
            let method = parts.next().unwrap_or_default();
            let route = parts.next().unwrap_or_default();
            r.total += n;
            if method != "GET" && method != "HEAD" {
                r.writes += n;
            }
            if service == "identity" && method == "POST" && route.ends_with("/auth/tokens") {
                r.tokens += n;
            }
        }
        r
    }

    /// The project's resources: IDs by collection, sorted.
    pub fn inventory(&self) -> BTreeMap<String, Vec<String>> {
        let state = self.sim.control().state(Some(&self.project_id));
        let Value::Object(collections) = state else {
            return BTreeMap::new();
        };
        collections
            .into_iter()
            .filter_map(|(collection, items)| {
                let mut ids: Vec<String> = items
                    .as_array()?
                    .iter()
                    .filter_map(|i| i.get("id").and_then(Value::as_str).map(str::to_owned))
                    .collect();
                ids.sort();
                (!ids.is_empty()).then_some((collection, ids))
            })
            .collect()
    }

    /// Fails with what is left when the project holds anything but its default security group.
    pub fn check_empty(&self) -> Result<()> {
        let state = self.sim.control().state(Some(&self.project_id));
        let Value::Object(collections) = &state else {
            bail!("capo-sim's state is not an object");
        };
        let default_groups: Vec<&Value> = collections
            .get("security_groups")
            .and_then(Value::as_array)
            .map(|groups| {
                groups
                    .iter()
                    .filter(|g| g["name"] == "default")
                    .map(|g| &g["id"])
                    .collect()
            })
            .unwrap_or_default();
        let mut left = BTreeMap::new();
        for (collection, items) in collections {
            let Some(items) = items.as_array() else {
                continue;
            };
            let kept: Vec<String> = items
                .iter()
                .filter(|i| match collection.as_str() {
                    "security_groups" => i["name"] != "default",
                    "security_group_rules" => !default_groups.contains(&&i["security_group_id"]),
                    _ => true,
                })
                .map(|i| {
                    i.get("name")
                        .and_then(Value::as_str)
                        .filter(|n| !n.is_empty())
                        .or_else(|| i.get("id").and_then(Value::as_str))
                        .unwrap_or("?")
                        .to_owned()
                })
                .collect();
            if !kept.is_empty() {
                left.insert(collection.clone(), kept);
            }
        }
        if !left.is_empty() {
            bail!("capo-sim still holds the project's resources after delete: {left:?}");
        }
        Ok(())
    }
}

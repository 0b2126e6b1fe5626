//! capo-sim: an OpenStack API simulator (Keystone, Nova, Neutron, Octavia, Glance, Cinder) that the
//! official OpenStack clients accept. One port, devstack-style path prefixes, a control API under
//! `/_sim/`, in-memory state with optional persistence. See the crate README for the wire contract.

pub mod compute;
pub mod control;
pub mod error;
pub mod filter;
pub mod http;
pub mod identity;
pub mod image;
pub mod loadbalancer;
pub mod microversion;
pub mod network;
pub mod seed;
mod server;
pub mod volume;
pub mod world;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use control::{Control, FaultSpec, LogEntry};
pub use error::{Error, Result};
pub use seed::Seed;
pub use world::Delays;

/// How to start the simulator.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Address to bind (default `127.0.0.1:0`, a random port).
    pub listen: SocketAddr,
    /// Seed data.
    pub seed: Seed,
    /// State-transition delays.
    pub delays: Delays,
    /// Serve HTTPS with a CA generated at start.
    pub tls: bool,
    /// Token lifetime in seconds.
    pub token_ttl_s: i64,
    /// Load state from this file at start (if it exists) and save it at shutdown.
    pub state_file: Option<PathBuf>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            seed: Seed::default(),
            delays: Delays::default(),
            tls: false,
            token_ttl_s: 3600,
            state_file: None,
        }
    }
}

/// A running simulator.
pub struct Sim {
    base_url: String,
    control: Control,
    ca_pem: Option<String>,
    state_file: Option<PathBuf>,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// The cloud names written to clouds.yaml.
pub mod clouds {
    /// Password auth as the first non-admin user in its first project.
    pub const DEFAULT: &str = "capo-sim";
    /// Application credential auth (the first seeded application credential).
    pub const APPCRED: &str = "capo-sim-appcred";
    /// Password auth as the second non-admin user (another project, for isolation tests).
    pub const OTHER: &str = "capo-sim-other";
    /// Password auth as the first admin user.
    pub const ADMIN: &str = "capo-sim-admin";
}

impl Sim {
    /// Bind, build the world (from `state_file` when it exists, else the seed) and start serving.
    pub async fn start(cfg: SimConfig) -> Result<Sim> {
        let listener = tokio::net::TcpListener::bind(cfg.listen).await?;
        let addr = listener.local_addr()?;
        let (acceptor, ca_pem) = if cfg.tls {
            let ca = capo_tls::Ca::new("capo-sim CA")?;
            let leaf = ca.issue("capo-sim", capo_tls::LOOPBACK)?;
            // HTTP/1.1 only, as the real services' API endpoints offer.
            (Some(leaf.acceptor(capo_tls::ALPN_HTTP1)?), Some(ca.pem()))
        } else {
            (None, None)
        };
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        let base_url = format!("{scheme}://{addr}");
        let world = match cfg.state_file.as_deref().filter(|p| p.exists()) {
            Some(p) => {
                let text = std::fs::read_to_string(p)?;
                serde_json::from_str(&text).map_err(|e| Error::Parse(e.to_string()))?
            }
            None => seed::build_world(&cfg.seed, cfg.delays.clone(), cfg.token_ttl_s),
        };
        let shared = Arc::new(http::Shared {
            world: parking_lot::Mutex::new(world),
            rt: Default::default(),
            base_url: base_url.clone(),
        });
        let control = Control {
            shared: shared.clone(),
            initial_delays: cfg.delays.clone(),
        };
        let app = server::app(shared, control.clone());
        let (stop, mut rx) = tokio::sync::watch::channel(false);
        let stopped = async move { rx.changed().await };
        // No drain: tests stop simulators while their clients still pool idle connections.
        let options = capo_tls::ServeOptions::new("capo-sim");
        let task = tokio::spawn(capo_tls::serve(listener, acceptor, app, stopped, options));
        Ok(Sim {
            base_url,
            control,
            ca_pem,
            state_file: cfg.state_file,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT` (or https).
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Keystone v3 URL.
    pub fn auth_url(&self) -> String {
        format!("{}/identity/v3", self.base_url)
    }

    /// Typed control operations.
    pub fn control(&self) -> &Control {
        &self.control
    }

    /// PEM of the generated CA when serving HTTPS.
    pub fn ca_pem(&self) -> Option<String> {
        self.ca_pem.clone()
    }

    /// clouds.yaml text (clouds `capo-sim`, `capo-sim-appcred`, `capo-sim-other`, `capo-sim-admin`).
    pub fn clouds_yaml(&self) -> String {
        self.clouds_yaml_with(None)
    }

    fn clouds_yaml_with(&self, cacert: Option<&Path>) -> String {
        let w = self.control.shared.world.lock();
        let auth_url = self.auth_url();
        let region = w.seed.region.clone();
        let project_name = |id: &str| {
            w.identity
                .projects
                .iter()
                .find(|p| p.id == id)
                .map(|p| p.name.clone())
                .unwrap_or_default()
        };
        let users: Vec<_> = w.identity.users.iter().filter(|u| !u.admin).collect();
        let admins: Vec<_> = w.identity.users.iter().filter(|u| u.admin).collect();
        let extra = match cacert {
            Some(p) => format!("    cacert: {}\n", p.display()),
            None => String::new(),
        };
        let mut out = String::from("clouds:\n");
        let mut password_cloud = |name: &str, u: Option<&&world::User>| {
            let Some(u) = u else { return };
            let project = u
                .projects
                .first()
                .map(|p| project_name(p))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {name}:\n    auth:\n      auth_url: {auth_url}\n      username: {}\n      password: {}\n      project_name: {project}\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: {region}\n    interface: public\n    identity_api_version: 3\n{extra}",
                u.name, u.password
            ));
        };
        password_cloud(clouds::DEFAULT, users.first());
        password_cloud(clouds::OTHER, users.get(1));
        password_cloud(clouds::ADMIN, admins.first());
        if let Some(a) = w.identity.app_creds.first() {
            out.push_str(&format!(
                "  {}:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {auth_url}\n      application_credential_id: {}\n      application_credential_secret: {}\n    region_name: {region}\n    interface: public\n    identity_api_version: 3\n{extra}",
                clouds::APPCRED, a.id, a.secret
            ));
        }
        out
    }

    /// Write `clouds.yaml` (and `ca.pem` when serving HTTPS, referenced as `cacert`) into `dir`.
    /// Returns the clouds.yaml path.
    pub fn write_clouds_yaml(&self, dir: &Path) -> Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let ca = match &self.ca_pem {
            Some(pem) => {
                let p = dir.join("ca.pem");
                std::fs::write(&p, pem)?;
                Some(p)
            }
            None => None,
        };
        let path = dir.join("clouds.yaml");
        std::fs::write(&path, self.clouds_yaml_with(ca.as_deref()))?;
        Ok(path)
    }

    /// Stop serving; saves state when a state file was configured.
    pub async fn shutdown(mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        if let Some(path) = &self.state_file {
            let text = serde_json::to_string(&self.control.snapshot())
                .map_err(|e| Error::Parse(e.to_string()))?;
            std::fs::write(path, text)?;
        }
        Ok(())
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
    }
}

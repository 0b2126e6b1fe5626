//! The single in-memory world: every simulated resource, identity data, tokens, IP allocations and
//! pending state transitions. It lives behind one mutex (see `http::AppState`), which keeps the
//! simulator simple and free of lock-ordering bugs; handlers never hold it across an await.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::seed::Seed;

/// One stored resource: its owning project ("" for cloud-wide objects) and its wire body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rec {
    /// Owning project id.
    pub project: String,
    /// The resource as the API returns it (derived fields are filled in when rendered).
    pub body: Value,
}

/// State-transition delays in milliseconds, applied lazily from timestamps.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Delays {
    /// Nova server BUILD -> ACTIVE.
    pub server_build_ms: u64,
    /// Cinder volume creating -> available.
    pub volume_create_ms: u64,
    /// Octavia load balancer PENDING_CREATE -> ACTIVE.
    pub lb_provision_ms: u64,
    /// Octavia PENDING_UPDATE -> ACTIVE after a child object changes.
    pub lb_update_ms: u64,
    /// Octavia PENDING_DELETE -> gone.
    pub lb_delete_ms: u64,
}

impl Default for Delays {
    fn default() -> Self {
        Delays {
            server_build_ms: 500,
            volume_create_ms: 300,
            lb_provision_ms: 500,
            lb_update_ms: 200,
            lb_delete_ms: 200,
        }
    }
}

/// A transition due at a point in time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pending {
    /// When it becomes due.
    pub at: DateTime<Utc>,
    /// What happens.
    pub kind: PendingKind,
}

/// The kinds of lazily applied transitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PendingKind {
    /// A server leaves BUILD.
    ServerBuild(String),
    /// A volume leaves `creating`.
    VolumeCreate(String),
    /// A load balancer (and the child that triggered it, if any) becomes ACTIVE.
    LbActive {
        /// Load balancer id.
        lb: String,
    },
    /// A load balancer in PENDING_DELETE disappears with its children.
    LbDelete(String),
    /// A SOFT_DELETED server is reclaimed (if it still is, and its interval has passed).
    ServerReclaim(String),
}

/// A Keystone domain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Domain {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
}

/// A Keystone project.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Project {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Domain id.
    pub domain_id: String,
}

/// A Keystone user with its role assignments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct User {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Domain id.
    pub domain_id: String,
    /// Password (never logged).
    pub password: String,
    /// Project ids the user has a role on.
    pub projects: Vec<String>,
    /// Whether the user has the admin role (sees every project's resources).
    pub admin: bool,
}

/// A Keystone application credential.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppCred {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Secret (never logged).
    pub secret: String,
    /// Owning user.
    pub user_id: String,
    /// Project it is scoped to.
    pub project_id: String,
    /// Description.
    pub description: String,
    /// Whether tokens from it may manage application credentials and trusts (Keystone's
    /// `unrestricted`, default false).
    #[serde(default)]
    pub unrestricted: bool,
}

/// An issued token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Token {
    /// User id.
    pub user_id: String,
    /// Scoped project, if any.
    pub project_id: Option<String>,
    /// Auth methods used.
    pub methods: Vec<String>,
    /// Issue time.
    pub issued_at: DateTime<Utc>,
    /// Expiry.
    pub expires_at: DateTime<Utc>,
    /// Application credential used, if any.
    pub app_cred: Option<String>,
    /// Audit id.
    pub audit_id: String,
}

/// Keystone data.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Identity {
    /// Domains.
    pub domains: Vec<Domain>,
    /// Projects.
    pub projects: Vec<Project>,
    /// Users.
    pub users: Vec<User>,
    /// Application credentials.
    pub app_creds: Vec<AppCred>,
}

/// The whole simulated cloud.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct World {
    /// Resource collections keyed by name (`networks`, `servers`, ...), in creation order.
    pub cols: BTreeMap<String, IndexMap<String, Rec>>,
    /// Allocated addresses per subnet id.
    pub ipam: HashMap<String, BTreeSet<u128>>,
    /// Keystone data.
    pub identity: Identity,
    /// Issued tokens by token id.
    pub tokens: HashMap<String, Token>,
    /// Quota limits per project: service-specific keys (`instances`, `network`, ...) to limit.
    pub quotas: HashMap<String, BTreeMap<String, i64>>,
    /// Each project's default security group id (created on the project's first Neutron request).
    pub default_sg: BTreeMap<String, String>,
    /// Transitions not yet applied.
    pub pending: Vec<Pending>,
    /// Transition delays.
    pub delays: Delays,
    /// The seed this world was built from (reset rebuilds from it).
    pub seed: Seed,
    /// Token lifetime in seconds.
    pub token_ttl_s: i64,
    /// Servers whose name matches one of these fail to build with NoValidHost (regex, remaining count).
    pub build_failures: Vec<(String, u32)>,
}

/// Render a timestamp the way Nova and Neutron do (`2024-01-01T00:00:00Z`).
pub fn ts(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Current time as a wire timestamp.
pub fn now_str() -> String {
    ts(Utc::now())
}

/// A new random resource id.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A stable id derived from a kind and name, so seeded objects keep their ids across restarts.
pub fn stable_id(kind: &str, name: &str) -> String {
    uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_OID,
        format!("capo-sim:{kind}:{name}").as_bytes(),
    )
    .to_string()
}

impl World {
    /// The collection with this name, created empty on first use.
    pub fn col(&mut self, name: &str) -> &mut IndexMap<String, Rec> {
        self.cols.entry(name.to_string()).or_default()
    }

    /// A stored resource.
    pub fn get(&self, col: &str, id: &str) -> Option<&Rec> {
        self.cols.get(col).and_then(|c| c.get(id))
    }

    /// A stored resource, mutable.
    pub fn get_mut(&mut self, col: &str, id: &str) -> Option<&mut Rec> {
        self.cols.get_mut(col).and_then(|c| c.get_mut(id))
    }

    /// Insert (or replace) a resource.
    pub fn insert(&mut self, col: &str, id: &str, project: &str, body: Value) {
        self.col(col).insert(
            id.to_string(),
            Rec {
                project: project.to_string(),
                body,
            },
        );
    }

    /// Remove a resource, keeping the order of the others.
    pub fn remove(&mut self, col: &str, id: &str) -> Option<Rec> {
        self.cols.get_mut(col).and_then(|c| c.shift_remove(id))
    }

    /// Iterate a collection.
    pub fn iter(&self, col: &str) -> impl Iterator<Item = (&String, &Rec)> {
        self.cols.get(col).into_iter().flat_map(|c| c.iter())
    }

    /// Number of resources of a collection owned by a project.
    pub fn count_owned(&self, col: &str, project: &str) -> i64 {
        self.iter(col).filter(|(_, r)| r.project == project).count() as i64
    }

    /// The quota limit for a key in a project (-1 = unlimited).
    pub fn quota(&self, project: &str, key: &str) -> i64 {
        self.quotas
            .get(project)
            .and_then(|q| q.get(key))
            .copied()
            .or_else(|| self.seed.quotas.get(key).copied())
            .unwrap_or(-1)
    }

    /// Schedule a transition `delay_ms` from now.
    pub fn schedule(&mut self, delay_ms: u64, kind: PendingKind) {
        let at = Utc::now() + chrono::Duration::milliseconds(delay_ms as i64);
        self.pending.push(Pending { at, kind });
    }

    /// Apply every transition that is due. Called before each request touches the world, so state
    /// machines advance from timestamps without background tasks.
    pub fn advance(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let now = Utc::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| p.at <= now);
        self.pending = later;
        for p in due {
            match p.kind {
                PendingKind::ServerBuild(id) => crate::compute::servers::finish_build(self, &id),
                PendingKind::VolumeCreate(id) => crate::volume::finish_create(self, &id),
                PendingKind::LbActive { lb } => crate::loadbalancer::finish_pending(self, &lb),
                PendingKind::LbDelete(id) => crate::loadbalancer::finish_delete(self, &id),
                PendingKind::ServerReclaim(id) => crate::compute::servers::reclaim_due(self, &id),
            }
        }
    }

    /// Every resource owned by a project, grouped by collection (for "nothing left behind" checks).
    pub fn dump(&self, project: Option<&str>) -> Value {
        let mut out = serde_json::Map::new();
        for (name, col) in &self.cols {
            let items: Vec<Value> = col
                .values()
                .filter(|r| project.is_none_or(|p| r.project == p))
                .map(|r| r.body.clone())
                .collect();
            if !items.is_empty() {
                out.insert(name.clone(), Value::Array(items));
            }
        }
        json!(out)
    }

    /// Find a project by id or name.
    pub fn project(&self, id_or_name: &str) -> Option<&Project> {
        self.identity
            .projects
            .iter()
            .find(|p| p.id == id_or_name || p.name == id_or_name)
    }

    /// Name of a network (for Nova's `addresses` keys).
    pub fn network_name(&self, id: &str) -> String {
        self.get("networks", id)
            .and_then(|r| r.body["name"].as_str())
            .unwrap_or_default()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_ids_are_stable() {
        assert_eq!(stable_id("project", "capo"), stable_id("project", "capo"));
        assert_ne!(stable_id("project", "capo"), stable_id("project", "other"));
    }

    #[test]
    fn remove_keeps_order() {
        let mut w = World::default();
        for i in 0..3 {
            w.insert("x", &i.to_string(), "p", json!({"id": i}));
        }
        w.remove("x", "1");
        let ids: Vec<_> = w.iter("x").map(|(k, _)| k.clone()).collect();
        assert_eq!(ids, vec!["0", "2"]);
    }
}

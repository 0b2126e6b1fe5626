//! The seed: identity (domains, projects, users, application credentials), flavors, images, external
//! networks, availability zones, volume types and default quotas. Replaceable from YAML or JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::http::Ctx;
use crate::world::{AppCred, Domain, Project, User, World, stable_id};

/// A seeded project.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedProject {
    /// Id (default: derived from the name).
    #[serde(default)]
    pub id: Option<String>,
    /// Name.
    pub name: String,
}

/// A seeded user.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedUser {
    /// Id (default: derived from the name).
    #[serde(default)]
    pub id: Option<String>,
    /// Name.
    pub name: String,
    /// Password.
    pub password: String,
    /// Names of the projects the user is a member of.
    pub projects: Vec<String>,
    /// Admin role (sees every project).
    #[serde(default)]
    pub admin: bool,
}

/// A seeded application credential.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedAppCred {
    /// Id (default: derived from the name).
    #[serde(default)]
    pub id: Option<String>,
    /// Name.
    pub name: String,
    /// Secret.
    pub secret: String,
    /// Owning user name.
    pub user: String,
    /// Project name.
    pub project: String,
}

/// A seeded flavor.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedFlavor {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// vCPUs.
    pub vcpus: i64,
    /// RAM in MiB.
    pub ram: i64,
    /// Root disk in GiB.
    pub disk: i64,
    /// Ephemeral disk in GiB.
    #[serde(default)]
    pub ephemeral: i64,
    /// Extra specs.
    #[serde(default)]
    pub extra_specs: BTreeMap<String, String>,
}

/// A seeded (public) image.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedImage {
    /// Id (default: derived from the name).
    #[serde(default)]
    pub id: Option<String>,
    /// Name.
    pub name: String,
    /// Extra properties such as `os_type`.
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Minimum disk in GiB.
    #[serde(default)]
    pub min_disk: i64,
    /// Size in bytes.
    #[serde(default)]
    pub size: i64,
}

/// A seeded external network with one IPv4 subnet.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedExtNet {
    /// Network name.
    pub name: String,
    /// Subnet CIDR.
    pub cidr: String,
    /// MTU.
    #[serde(default = "default_mtu")]
    pub mtu: i64,
}

fn default_mtu() -> i64 {
    1500
}

/// A seeded Cinder volume type.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedVolumeType {
    /// Name.
    pub name: String,
    /// Whether volumes of this type can be multi-attached.
    #[serde(default)]
    pub multiattach: bool,
}

/// A seeded Octavia flavor (its flavor profile is not modelled).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedLbFlavor {
    /// Id (default: stable from the name).
    #[serde(default)]
    pub id: Option<String>,
    /// Name.
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Whether load balancers may be created with it.
    #[serde(default = "default_true")]
    pub enabled: bool,
}

fn default_true() -> bool {
    true
}

impl SeedLbFlavor {
    /// The flavor's ID.
    pub fn id(&self) -> String {
        self.id
            .clone()
            .unwrap_or_else(|| crate::world::stable_id("lb-flavor", &self.name))
    }
}

/// The whole seed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Seed {
    /// Region name used in the catalog.
    pub region: String,
    /// Projects (in domain `Default`).
    pub projects: Vec<SeedProject>,
    /// Users (in domain `Default`).
    pub users: Vec<SeedUser>,
    /// Application credentials.
    pub app_credentials: Vec<SeedAppCred>,
    /// Flavors.
    pub flavors: Vec<SeedFlavor>,
    /// Public images.
    pub images: Vec<SeedImage>,
    /// External networks (owned by the first project, `router:external`).
    pub external_networks: Vec<SeedExtNet>,
    /// Compute availability zones.
    pub availability_zones: Vec<String>,
    /// Volume availability zones.
    pub volume_availability_zones: Vec<String>,
    /// Volume types; the first is the default.
    pub volume_types: Vec<SeedVolumeType>,
    /// Octavia flavors (`GET /v2/lbaas/flavors`; a load balancer may name an enabled one).
    pub lb_flavors: Vec<SeedLbFlavor>,
    /// Default quota limits for every project (Nova, Neutron and Cinder keys; -1 = unlimited).
    pub quotas: BTreeMap<String, i64>,
    /// Nova's `reclaim_instance_interval`, in milliseconds: 0 (the default, as Nova's) deletes a
    /// server at once; above 0 a deleted server that ran becomes `SOFT_DELETED` (shown by ID, left
    /// out of lists but an admin's `status=SOFT_DELETED`, ports still bound, volumes still
    /// attached, outside the quota) and is reclaimed that long after, or earlier by
    /// `POST /_sim/reclaim` ([`crate::Control::reclaim_servers`]) or Nova's `forceDelete` action.
    pub server_reclaim_ms: u64,
    /// A second region whose catalog entries have their internal endpoints at the simulator and
    /// their public ones at a closed port ([`crate::identity::CLOSED_ENDPOINT`]): a client in that
    /// region works only when it uses internal endpoints. `None` (the default): one region.
    pub internal_only_region: Option<String>,
    /// Neutron without `standard-attr-tag` (nor `tag-creation`): not listed, its tags routes
    /// answer 404 as for any unknown path, and a port create with `tags` is refused.
    #[serde(default)]
    pub without_neutron_tags: bool,
}

fn s(v: &str) -> String {
    v.to_string()
}

impl Default for Seed {
    fn default() -> Self {
        let flavor = |id: &str, name: &str, vcpus, ram, disk| SeedFlavor {
            id: s(id),
            name: s(name),
            vcpus,
            ram,
            disk,
            ephemeral: 0,
            extra_specs: BTreeMap::new(),
        };
        let image = |name: &str, distro: &str, ver: &str| SeedImage {
            id: None,
            name: s(name),
            properties: [
                ("os_type", "linux"),
                ("os_distro", distro),
                ("os_version", ver),
                ("hw_disk_bus", "virtio"),
            ]
            .into_iter()
            .map(|(k, v)| (s(k), s(v)))
            .collect(),
            tags: vec![],
            min_disk: 0,
            size: 2_361_393_152,
        };
        let quotas = [
            ("instances", 50),
            ("cores", 200),
            ("ram", 512_000),
            ("key_pairs", 100),
            ("server_groups", 20),
            ("server_group_members", 20),
            ("network", 100),
            ("subnet", 100),
            ("port", 500),
            ("router", 20),
            ("floatingip", 50),
            ("security_group", 50),
            ("security_group_rule", 500),
            ("trunk", -1),
            ("volumes", 50),
            ("gigabytes", 5000),
            ("snapshots", 50),
            ("loadbalancer", -1),
        ];
        Seed {
            region: s("RegionOne"),
            projects: vec![
                SeedProject {
                    id: None,
                    name: s("admin"),
                },
                SeedProject {
                    id: None,
                    name: s("capo"),
                },
                SeedProject {
                    id: None,
                    name: s("capo-other"),
                },
            ],
            users: vec![
                SeedUser {
                    id: None,
                    name: s("admin"),
                    password: s("admin-password"),
                    projects: vec![s("admin")],
                    admin: true,
                },
                SeedUser {
                    id: None,
                    name: s("capo-user"),
                    password: s("capo-password"),
                    projects: vec![s("capo")],
                    admin: false,
                },
                SeedUser {
                    id: None,
                    name: s("capo-other-user"),
                    password: s("capo-other-password"),
                    projects: vec![s("capo-other")],
                    admin: false,
                },
            ],
            app_credentials: vec![SeedAppCred {
                id: None,
                name: s("capo-appcred"),
                secret: s("capo-appcred-secret"),
                user: s("capo-user"),
                project: s("capo"),
            }],
            flavors: vec![
                flavor("1", "m1.tiny", 1, 512, 1),
                flavor("2", "m1.small", 1, 2048, 20),
                flavor("3", "m1.medium", 2, 4096, 40),
                flavor("4", "m1.large", 4, 8192, 80),
                flavor("5", "m1.xlarge", 8, 16384, 160),
            ],
            images: vec![
                image("ubuntu-2404-kube-v1.34", "ubuntu", "24.04"),
                image("ubuntu-2204-kube-v1.33", "ubuntu", "22.04"),
                image("flatcar-stable-kube-v1.34", "flatcar", "stable"),
            ],
            external_networks: vec![SeedExtNet {
                name: s("public"),
                cidr: s("172.24.4.0/24"),
                mtu: 1500,
            }],
            availability_zones: vec![s("nova"), s("az2")],
            volume_availability_zones: vec![s("nova")],
            volume_types: vec![
                SeedVolumeType {
                    name: s("lvmdriver-1"),
                    multiattach: false,
                },
                SeedVolumeType {
                    name: s("multiattach"),
                    multiattach: true,
                },
            ],
            lb_flavors: vec![
                SeedLbFlavor {
                    id: None,
                    name: s("amphora-single"),
                    description: s("One amphora"),
                    enabled: true,
                },
                SeedLbFlavor {
                    id: None,
                    name: s("amphora-ha"),
                    description: s("Active/standby amphorae (disabled)"),
                    enabled: false,
                },
            ],
            quotas: quotas.into_iter().map(|(k, v)| (s(k), v)).collect(),
            server_reclaim_ms: 0,
            internal_only_region: None,
            without_neutron_tags: false,
        }
    }
}

impl Seed {
    /// Parse a seed from YAML (JSON is valid YAML).
    pub fn from_yaml(text: &str) -> crate::Result<Seed> {
        yaml_serde::from_str(text).map_err(|e| crate::Error::Parse(e.to_string()))
    }
}

/// Build a fresh world from a seed.
pub fn build_world(seed: &Seed, delays: crate::world::Delays, token_ttl_s: i64) -> World {
    let mut w = World {
        seed: seed.clone(),
        delays,
        token_ttl_s,
        ..World::default()
    };
    w.identity.domains.push(Domain {
        id: s("default"),
        name: s("Default"),
    });
    for p in &seed.projects {
        let id =
            p.id.clone()
                .unwrap_or_else(|| stable_id("project", &p.name).replace('-', ""));
        w.identity.projects.push(Project {
            id,
            name: p.name.clone(),
            domain_id: s("default"),
        });
    }
    let pid = |w: &World, name: &str| w.project(name).map(|p| p.id.clone()).unwrap_or_default();
    for u in &seed.users {
        let id =
            u.id.clone()
                .unwrap_or_else(|| stable_id("user", &u.name).replace('-', ""));
        let projects = u.projects.iter().map(|n| pid(&w, n)).collect();
        let user = User {
            id,
            name: u.name.clone(),
            domain_id: s("default"),
            password: u.password.clone(),
            projects,
            admin: u.admin,
        };
        w.identity.users.push(user);
    }
    for a in &seed.app_credentials {
        let user_id = w
            .identity
            .users
            .iter()
            .find(|u| u.name == a.user)
            .map(|u| u.id.clone())
            .unwrap_or_default();
        let id =
            a.id.clone()
                .unwrap_or_else(|| stable_id("appcred", &a.name).replace('-', ""));
        let project_id = pid(&w, &a.project);
        w.identity.app_creds.push(AppCred {
            id,
            name: a.name.clone(),
            secret: a.secret.clone(),
            user_id,
            project_id,
            description: String::new(),
            unrestricted: false,
        });
    }
    for f in &seed.flavors {
        w.insert(
            "flavors",
            &f.id,
            "",
            crate::compute::flavors::flavor_body(f),
        );
    }
    let owner = w
        .identity
        .projects
        .first()
        .map(|p| p.id.clone())
        .unwrap_or_default();
    for i in &seed.images {
        let id = i.id.clone().unwrap_or_else(|| stable_id("image", &i.name));
        w.insert(
            "images",
            &id,
            &owner,
            crate::image::seed_image_body(&id, &owner, i),
        );
    }
    seed_external_networks(&mut w, seed, &owner);
    w
}

fn seed_external_networks(w: &mut World, seed: &Seed, owner: &str) {
    let ctx = Ctx::system(owner);
    for n in &seed.external_networks {
        let mut net = Map::new();
        net.insert(s("name"), json!(n.name));
        net.insert(s("router:external"), json!(true));
        net.insert(s("mtu"), json!(n.mtu));
        net.insert(s("id"), json!(stable_id("network", &n.name)));
        let Ok(net) = crate::network::networks::create_network(w, &ctx, Value::Object(net)) else {
            continue;
        };
        let sub = json!({
            "name": format!("{}-subnet", n.name), "network_id": net["id"], "cidr": n.cidr,
            "ip_version": 4, "id": stable_id("subnet", &n.name), "enable_dhcp": false,
        });
        // A seed with an invalid CIDR simply has an external network without a subnet.
        let _ = crate::network::subnets::create_subnet(w, &ctx, sub);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_seed_round_trips_yaml() {
        let seed = Seed::default();
        let text = yaml_serde::to_string(&seed).unwrap_or_default();
        assert_eq!(Seed::from_yaml(&text).ok(), Some(seed));
    }

    #[test]
    fn partial_yaml_uses_defaults() {
        let seed = Seed::from_yaml("availability_zones: [a, b, c]\n").unwrap_or_default();
        assert_eq!(seed.availability_zones.len(), 3);
        assert_eq!(seed.flavors.len(), Seed::default().flavors.len());
    }
}

//! Shared by the template tests: the template list, the variable values used to render them,
//! and the variable tables of `docs/flavors.md`.

#![allow(dead_code)] // each test binary uses a different part

pub mod envsubst;
pub mod infra;

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;

/// Every file in `templates/`, with the flavor name clusterctl knows it by.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("cluster-template.yaml", "default"),
    ("cluster-template-without-lb.yaml", "without-lb"),
    ("cluster-template-capi-v1beta1.yaml", "capi-v1beta1"),
    ("cluster-template-flatcar.yaml", "flatcar"),
    ("cluster-template-flatcar-sysext.yaml", "flatcar-sysext"),
    ("cluster-template-topology.yaml", "topology"),
    ("clusterclass-capo-default.yaml", "topology (ClusterClass)"),
    ("cluster-template-ansible.yaml", "ansible"),
];

/// Placeholders the flatcar templates leave for the node (`$${...}` in the template): they are
/// filled in on the machine from coreos-metadata, not by clusterctl.
pub const NODE_PLACEHOLDERS: &[&str] = &[
    "${COREOS_OPENSTACK_HOSTNAME}",
    "${COREOS_OPENSTACK_HOSTNAME%.*}",
    "${COREOS_OPENSTACK_INSTANCE_UUID}",
];

/// The repository root.
pub fn repo_root() -> PathBuf {
    capo_testkit::paths::repo_root()
}

/// The text of `templates/<file>`.
pub fn template(file: &str) -> String {
    let path = repo_root().join("templates").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The documents of a YAML text (a template, rendered or not) as JSON values.
pub fn documents(yaml: &str) -> Vec<serde_json::Value> {
    capo_testkit::parse_objects(yaml)
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|o| serde_json::to_value(o).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// The files of `tests/data/v1beta1/`: the infrastructure documents (and the ClusterClass) of
/// each template as it was before the templates moved to v1beta2, by file name.
pub fn previous_v1beta1() -> BTreeMap<String, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/v1beta1");
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok())
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(entry.path())
                .unwrap_or_else(|e| panic!("reading {name}: {e}"));
            (name, text)
        })
        .collect()
}

/// The text of `docs/flavors.md`.
pub fn flavors_doc() -> String {
    let path = repo_root().join("docs/flavors.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// Values for every variable a template requires, as `capoctl env` and a user would set them.
/// Optional variables are left unset, so the templates' defaults are what gets tested.
pub fn required_values(cluster: &str) -> BTreeMap<String, String> {
    let clouds = "clouds:\n  openstack:\n    auth:\n      auth_url: https://keystone.example:5000/v3\n      username: demo\n      password: not-a-real-password\n      project_name: demo\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: RegionOne\n";
    let pairs = [
        ("CLUSTER_NAME", cluster.to_owned()),
        ("KUBERNETES_VERSION", "v1.34.3".to_owned()),
        ("CONTROL_PLANE_MACHINE_COUNT", "3".to_owned()),
        ("WORKER_MACHINE_COUNT", "2".to_owned()),
        ("OPENSTACK_CLOUD", "openstack".to_owned()),
        ("OPENSTACK_CLOUD_YAML_B64", b64(clouds)),
        ("OPENSTACK_CLOUD_CACERT_B64", b64("\n")),
        (
            "OPENSTACK_CONTROL_PLANE_MACHINE_FLAVOR",
            "m1.medium".to_owned(),
        ),
        ("OPENSTACK_NODE_MACHINE_FLAVOR", "m1.small".to_owned()),
        (
            "OPENSTACK_IMAGE_NAME",
            "ubuntu-2404-kube-v1.34.3".to_owned(),
        ),
        (
            "OPENSTACK_FLATCAR_IMAGE_NAME",
            "flatcar-stable-kube-v1.34.3".to_owned(),
        ),
        ("FLATCAR_IMAGE_NAME", "flatcar_production".to_owned()),
        ("OPENSTACK_SSH_KEY_NAME", "demo-key".to_owned()),
        (
            "OPENSTACK_EXTERNAL_NETWORK_ID",
            "5f2a4b8e-9c3d-4e1f-8a7b-6c5d4e3f2a1b".to_owned(),
        ),
        ("OPENSTACK_DNS_NAMESERVERS", "192.0.2.53".to_owned()),
        ("OPENSTACK_FAILURE_DOMAIN", "nova".to_owned()),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Renders `templates/<file>` with `vars` and checks that nothing but node placeholders is left.
pub fn render(file: &str, vars: &BTreeMap<String, String>) -> String {
    let text = template(file);
    let rendered = envsubst::render(&text, vars).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut rest = rendered.as_str();
    while let Some(pos) = rest.find("${") {
        let end = rest[pos..].find('}').map_or(rest.len(), |e| pos + e + 1);
        let left = &rest[pos..end];
        assert!(
            NODE_PLACEHOLDERS.contains(&left),
            "{file}: {left} is left unresolved after rendering"
        );
        rest = &rest[end..];
    }
    rendered
}

/// One row of a variable table in `docs/flavors.md`: name → default (`None`: required).
pub type DocVariables = BTreeMap<String, Option<String>>;

/// The variable table documented for `file`: the first table after the heading that names the
/// file in backticks, up to the next heading. Rows are ``| `NAME` | required |`` or
/// ``| `NAME` | `default` |``.
pub fn documented_variables(doc: &str, file: &str) -> Result<DocVariables, String> {
    let marker = format!("`{file}`");
    let mut lines = doc
        .lines()
        .skip_while(|l| !(l.starts_with('#') && l.contains(&marker)));
    if lines.next().is_none() {
        return Err(format!("no heading naming {marker} in docs/flavors.md"));
    }
    let mut vars = DocVariables::new();
    for line in lines.take_while(|l| !l.starts_with('#')) {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let (Some(name), Some(default)) = (cells.first(), cells.get(1)) else {
            continue;
        };
        let Some(name) = name.strip_prefix('`').and_then(|n| n.strip_suffix('`')) else {
            continue;
        };
        let default = match *default {
            "required" => None,
            d => Some(
                d.strip_prefix('`')
                    .and_then(|d| d.strip_suffix('`'))
                    .ok_or_else(|| format!("{file}: {name}: default {d:?} is not `quoted`"))?
                    .to_owned(),
            ),
        };
        if vars.insert(name.to_owned(), default).is_some() {
            return Err(format!("{file}: {name} is documented twice"));
        }
    }
    Ok(vars)
}

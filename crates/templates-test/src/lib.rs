//! Test-only crate for the clusterctl cluster templates in `templates/`.
//!
//! The tests (`tests/`) render every template with clusterctl's variable substitution, refuse
//! unresolved variables, check that each template's variables match the tables in
//! `docs/flavors.md`, run capo's admission validation on the infrastructure objects and
//! server-side dry-run every object against a real kube-apiserver with the Cluster API, ORC and
//! capo CRDs installed.

/// The directory of the templates and of the documentation, relative to the repository root.
pub const TEMPLATE_DIR: &str = "templates";

//! Load a clouds.yaml and select one cloud, reading fields the way upstream's scripts do with
//! `yq e .clouds.<cloud>.<field>`: a field's text is the scalar as written (`~` stays `~`), and a
//! field counts as unset when that text is empty or `null`, exactly as the scripts test it.
//!
//! Why not `capo_openstack::credentials::CloudsYaml`: it is a typed serde model of the keys a
//! controller needs. These commands must copy the whole entry (unknown keys, quoting styles and
//! comments included), and print scalars as source text (`password: 0x1F` is the text `0x1F`,
//! not 31), neither of which a typed model keeps.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::yaml::{self, Document, Node, Scalar};

/// One cloud entry of a clouds.yaml file.
#[derive(Debug)]
pub struct Cloud {
    /// The cloud's name (the key under `clouds:`).
    pub name: String,
    /// The entry's key.
    pub key: Scalar,
    /// The entry's node.
    pub entry: Node,
    /// The file it came from, for messages.
    pub path: PathBuf,
    /// The parsed file, whose text the entry is cut from.
    pub doc: Document,
}

/// Read `path` and select the entry `name`.
pub fn load(path: &Path, name: &str) -> Result<Cloud> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    select(&text, path, name)
}

/// Parse clouds.yaml `text` (read from `path`) and select the entry `name`.
pub fn select(text: &str, path: &Path, name: &str) -> Result<Cloud> {
    let field = |field: &str, problem| Error::Field {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem,
    };
    let doc = yaml::parse(text).map_err(|e| Error::Syntax {
        path: path.to_path_buf(),
        reason: e.reason,
        line: e.line,
        column: e.column,
    })?;
    let root =
        (doc.root.as_ref()).ok_or_else(|| field("clouds", "is missing (the file is empty)"))?;
    if !matches!(root, Node::Map { .. }) {
        return Err(field("top level", "is not a mapping"));
    }
    let clouds = root
        .get("clouds")
        .ok_or_else(|| field("clouds", "is missing"))?;
    let Node::Map { entries, .. } = clouds else {
        return Err(field("clouds", "is not a mapping"));
    };
    let (key, entry) = clouds.entry(name).ok_or_else(|| Error::UnknownCloud {
        path: path.to_path_buf(),
        name: name.to_string(),
        available: entries
            .iter()
            .filter_map(|(k, _)| k.as_scalar().map(|s| s.value.clone()))
            .collect(),
    })?;
    if !matches!(entry, Node::Map { .. }) {
        return Err(field(&format!("clouds.{name}"), "is not a mapping"));
    }
    Ok(Cloud {
        name: name.to_string(),
        key: key.clone(),
        entry: entry.clone(),
        path: path.to_path_buf(),
        doc,
    })
}

impl Cloud {
    /// The text yq prints for `.clouds.<name>.<path>` inside `$(...)`, or `None` when the scripts
    /// would treat it as unset (missing, empty or `null`).
    pub fn field(&self, path: &[&str]) -> Option<String> {
        let text = self.raw_field(path);
        (!text.is_empty() && text != "null").then_some(text)
    }

    /// The printed text, unset cases included (missing prints `null`, like yq).
    pub fn raw_field(&self, path: &[&str]) -> String {
        let mut node = Some((&self.key, &self.entry));
        for key in path {
            node = node.and_then(|(_, n)| n.entry(key));
        }
        let text = match node {
            None => "null".to_string(),
            Some((_, Node::Scalar(s))) => s.value.clone(),
            Some((key, value)) => yaml::cut::cut(&self.doc, key, value, 0, None, None),
        };
        // Command substitution drops trailing newlines.
        text.trim_end_matches('\n').to_string()
    }

    /// A dotted name for messages, e.g. `clouds.openstack.auth.auth_url`.
    pub fn field_name(&self, path: &[&str]) -> String {
        format!("clouds.{}.{}", self.name, path.join("."))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;

    const DOC: &str = "clouds:\n  a:\n    auth:\n      password: s3cret\n      user_domain_name: ''\n    region_name: ~\n  b: {auth: {}}\n";

    fn cloud(name: &str) -> Result<Cloud> {
        select(DOC, Path::new("clouds.yaml"), name)
    }

    #[test]
    fn fields_follow_the_scripts_unset_rules() {
        let c = cloud("a").unwrap();
        assert_eq!(c.field(&["auth", "password"]).as_deref(), Some("s3cret"));
        assert_eq!(c.field(&["auth", "user_domain_name"]), None);
        assert_eq!(c.field(&["region_name"]).as_deref(), Some("~"));
        assert_eq!(c.raw_field(&["auth", "auth_url"]), "null");
    }

    #[test]
    fn unknown_cloud_lists_names() {
        let msg = cloud("zzz").unwrap_err().to_string();
        assert!(
            msg.contains("\"zzz\"") && msg.contains("available: a, b"),
            "{msg}"
        );
    }

    #[test]
    fn malformed_yaml_names_file_and_position_not_content() {
        let err = select(
            "clouds:\n  a:\n    auth: {password: \"s3cret",
            Path::new("c.yaml"),
            "a",
        );
        let msg = err.unwrap_err().to_string();
        assert!(msg.starts_with("c.yaml: malformed YAML at line"), "{msg}");
        assert!(!msg.contains("s3cret"));
    }

    #[test]
    fn wrong_shapes_name_the_field() {
        let msg = select("clouds: [1]\n", Path::new("c.yaml"), "a")
            .unwrap_err()
            .to_string();
        assert_eq!(msg, "c.yaml: clouds is not a mapping");
    }
}

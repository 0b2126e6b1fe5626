//! The crate's single error type. Messages name files and fields, never values: a clouds.yaml
//! holds passwords and application credential secrets.

use std::path::PathBuf;

/// Everything capoctl can fail at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error (its message has no file content).
        source: std::io::Error,
    },
    /// The clouds.yaml is not valid YAML.
    #[error("{}: malformed YAML at line {line}, column {column}: {reason}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Why (never quotes the content).
        reason: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// A field has the wrong shape (for example `clouds` is not a mapping).
    #[error("{}: {field} {problem}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// Dotted field path, e.g. `clouds.openstack.auth`.
        field: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// The requested cloud is not in the file.
    #[error("{}: no cloud named {name:?} under clouds (available: {})", path.display(), list(available))]
    UnknownCloud {
        /// The file.
        path: PathBuf,
        /// The requested name.
        name: String,
        /// Names that exist.
        available: Vec<String>,
    },
    /// A command-line argument is missing, malformed or meaningless with the others.
    #[error("{arg} {problem}")]
    Argument {
        /// The flag, e.g. `--namespace`.
        arg: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// `capoctl inventory` failed (kubeconfig, missing Secret, writing files).
    #[error("inventory: {0}")]
    Inventory(String),
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

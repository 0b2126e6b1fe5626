//! Test data files and the report of a check run over many documents.
// Each test binary includes this module and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The `.yaml` files directly in `dir`, sorted by name (panics naming `dir` if it is missing).
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// Run `check` on every labelled document, print `<what>: passed/total documents` and fail
/// listing every document that failed.
pub fn check_each<T>(what: &str, docs: &[(String, T)], check: impl Fn(&T) -> Result<(), String>) {
    let failures: Vec<String> = docs
        .iter()
        .filter_map(|(label, doc)| check(doc).err().map(|e| format!("{label}: {e}")))
        .collect();
    println!(
        "{what}: {}/{} documents",
        docs.len() - failures.len(),
        docs.len()
    );
    assert!(
        failures.is_empty(),
        "{what} failures:\n{}",
        failures.join("\n")
    );
}

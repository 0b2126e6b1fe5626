//! Counts one user's Kubernetes API requests per phase from kube-apiserver's audit log.

use std::collections::HashSet;
use std::io::BufRead as _;
use std::path::Path;

use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use serde::Deserialize;

/// Requests of one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KubeRequests {
    /// Every request (a watch counts once, when it starts).
    pub total: u64,
    /// create, update, patch, delete and deletecollection.
    pub writes: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(rename = "auditID")]
    audit_id: String,
    verb: String,
    user: User,
    request_received_timestamp: DateTime<Utc>,
}

#[derive(Deserialize)]
struct User {
    #[serde(default)]
    username: String,
}

/// The requests of `user` received in each half-open window `[from, to)` of `phases`.
pub fn count(
    log: &Path,
    user: &str,
    phases: &[(DateTime<Utc>, DateTime<Utc>)],
) -> Result<Vec<KubeRequests>> {
    let file = std::fs::File::open(log).with_context(|| format!("opening {}", log.display()))?;
    let mut seen = HashSet::new();
    let mut counts = vec![KubeRequests::default(); phases.len()];
    for line in std::io::BufReader::new(file).lines() {
        let line = line.with_context(|| format!("reading {}", log.display()))?;
        // Other users' events are skipped before parsing the whole line.
        if !line.contains(user) {
            continue;
        }
        let event: Event = serde_json::from_str(&line).context("parsing an audit event")?;
        // A watch has two events (response started, complete); count the request once.
        if event.user.username != user || !seen.insert(event.audit_id) {
            continue;
        }
        let at = event.request_received_timestamp;
        if let Some(i) = phases.iter().position(|(from, to)| *from <= at && at < *to) {
            counts[i].total += 1;
            if matches!(
                event.verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            ) {
                counts[i].writes += 1;
            }
        }
    }
    Ok(counts)
}

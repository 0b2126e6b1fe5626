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
    /// Watches started: after the first lists, each is a watch the server ended (its timeout)
    /// being started again, not a read of data.
    pub watches: u64,
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
            if event.verb == "watch" {
                counts[i].watches += 1;
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;

    fn event(id: &str, user: &str, verb: &str, stage: &str, at: &str) -> String {
        format!(
            r#"{{"kind":"Event","auditID":"{id}","stage":"{stage}","verb":"{verb}","user":{{"username":"{user}"}},"requestReceivedTimestamp":"{at}"}}"#
        )
    }

    #[test]
    fn counts_each_request_of_the_user_once_in_its_phase() {
        let dir = std::env::temp_dir().join(format!("capo-bench-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("audit.log");
        let lines = [
            event(
                "a",
                "m",
                "watch",
                "ResponseStarted",
                "2026-01-01T00:00:01.000000Z",
            ),
            event(
                "a",
                "m",
                "watch",
                "ResponseComplete",
                "2026-01-01T00:00:01.000000Z",
            ),
            event(
                "b",
                "m",
                "create",
                "ResponseComplete",
                "2026-01-01T00:00:02.000000Z",
            ),
            event(
                "c",
                "admin",
                "create",
                "ResponseComplete",
                "2026-01-01T00:00:02.000000Z",
            ),
            event(
                "d",
                "m",
                "patch",
                "ResponseComplete",
                "2026-01-01T00:00:12.000000Z",
            ),
            event(
                "e",
                "m",
                "get",
                "ResponseComplete",
                "2026-01-01T00:00:30.000000Z",
            ),
        ];
        std::fs::write(&log, lines.join("\n")).unwrap();
        let t = |s: u32| {
            DateTime::parse_from_rfc3339(&format!("2026-01-01T00:00:{s:02}Z"))
                .unwrap()
                .to_utc()
        };
        let counts = count(&log, "m", &[(t(0), t(10)), (t(10), t(20))]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            counts[0],
            KubeRequests {
                total: 2,
                writes: 1,
                watches: 1
            }
        );
        assert_eq!(
            counts[1],
            KubeRequests {
                total: 1,
                writes: 1,
                watches: 0
            }
        );
    }
}

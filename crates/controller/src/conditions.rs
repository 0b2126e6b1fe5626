//! Cluster API v1beta1-style conditions: set one, keeping `lastTransitionTime` when the
//! status does not change (so a steady reconcile writes nothing), and messages bounded.

use capo_api::constants::condition_severities;
use capo_api::v1beta1::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Condition messages are capped (the CRD allows 10240 characters; keep room).
const MAX_MESSAGE: usize = 4096;

/// A condition's desired state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Status True.
    True,
    /// Status False with reason, severity and message.
    False {
        /// CamelCase reason.
        reason: String,
        /// `Error`, `Warning` or `Info`.
        severity: &'static str,
        /// Human-readable message (the cloud's own text where there is one).
        message: String,
    },
}

impl State {
    /// False, severity Error.
    pub fn error(reason: &str, message: impl Into<String>) -> Self {
        State::False {
            reason: reason.to_owned(),
            severity: condition_severities::ERROR,
            message: message.into(),
        }
    }

    /// False, severity Info (waiting, progressing).
    pub fn info(reason: &str, message: impl Into<String>) -> Self {
        State::False {
            reason: reason.to_owned(),
            severity: condition_severities::INFO,
            message: message.into(),
        }
    }

    /// False, severity Warning.
    pub fn warning(reason: &str, message: impl Into<String>) -> Self {
        State::False {
            reason: reason.to_owned(),
            severity: condition_severities::WARNING,
            message: message.into(),
        }
    }

    /// False with severity Info: something under way, not something that stops the object.
    pub fn is_progress(&self) -> bool {
        matches!(self, State::False { severity, .. } if *severity == condition_severities::INFO)
    }
}

fn truncate(s: String) -> String {
    if s.len() <= MAX_MESSAGE {
        return s;
    }
    let mut end = MAX_MESSAGE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Set condition `type_` in `conditions`, sorted by type with Ready first (Cluster API's
/// order), keeping the transition time when the status is unchanged.
pub fn set(conditions: &mut Vec<Condition>, type_: &str, state: State) {
    let (status, reason, severity, message) = match state {
        State::True => ("True", None, None, None),
        State::False {
            reason,
            severity,
            message,
        } => (
            "False",
            Some(reason),
            Some(severity.to_owned()),
            Some(truncate(message)).filter(|m| !m.is_empty()),
        ),
    };
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    match conditions.iter_mut().find(|c| c.r#type == type_) {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = now;
            }
            c.status = status.to_owned();
            c.reason = reason;
            c.severity = severity;
            c.message = message;
        }
        None => conditions.push(Condition {
            last_transition_time: now,
            message,
            reason,
            severity,
            status: status.to_owned(),
            r#type: type_.to_owned(),
        }),
    }
    conditions.sort_by(|a, b| {
        (a.r#type != "Ready", a.r#type.as_str()).cmp(&(b.r#type != "Ready", b.r#type.as_str()))
    });
}

/// Remove condition `type_`.
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) {
    conditions.retain(|c| c.r#type != type_);
}

/// Whether condition `type_` is True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.r#type == type_ && c.status == "True")
}

/// The condition `type_`.
pub fn get<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.r#type == type_)
}

/// Compare two condition lists ignoring transition times (to skip no-op status writes).
pub fn same(a: &[Condition], b: &[Condition]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.r#type == y.r#type
                && x.status == y.status
                && x.reason == y.reason
                && x.severity == y.severity
                && x.message == y.message
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_transition_time_and_orders_ready_first() {
        let mut c = Vec::new();
        set(&mut c, "NetworkReady", State::True);
        set(
            &mut c,
            "Ready",
            State::info("Waiting", "waiting for network"),
        );
        assert_eq!(c[0].r#type, "Ready");
        let t = c[1].last_transition_time.clone();
        set(&mut c, "NetworkReady", State::True);
        assert_eq!(c[1].last_transition_time, t);
        assert_eq!(c[0].severity.as_deref(), Some("Info"));
        set(&mut c, "Ready", State::True);
        assert!(is_true(&c, "Ready"));
        assert_eq!(c[0].reason, None);
    }

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let mut c = Vec::new();
        set(&mut c, "Ready", State::error("X", "é".repeat(5000)));
        let m = c[0].message.as_deref().unwrap_or_default();
        assert!(m.len() <= MAX_MESSAGE + 3);
        assert!(m.ends_with('…'));
    }
}

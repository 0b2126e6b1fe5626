//! Conditions: set one, keeping `lastTransitionTime` when the status does not change (so a
//! steady reconcile writes nothing), ordered with Ready first, messages bounded.
//!
//! One concept, two stored forms ([`Entry`]): Cluster API v1beta1's condition (with `severity`),
//! which the v1beta1 kinds carry, and the standard `metav1.Condition`, which the v1alpha1 kinds
//! (OpenStackServer, OpenStackFloatingIPPool) carry since upstream main. Every controller writes
//! a [`State`] the same way; the form decides how it is stored:
//!
//! - a standard condition always has a reason that is valid for its schema (True:
//!   [`NO_REASON`], the stand-in the conversion of v1beta1 conditions uses) and a message (empty
//!   when there is none), and records the object's `metadata.generation`;
//! - it has no severity: capo gives each reason it writes one severity, and reading a
//!   standard condition back recovers it from the reason ([`severity_of`]).
//!
//! Standard conditions stored by upstream v0.14 or capo 0.1 (v1beta1-style, read leniently)
//! may lack a reason; [`Entry::normalize`] gives them the stand-in before anything is written,
//! so a status write never carries a condition the schema refuses.

use capo_api::constants::{condition_reasons, condition_severities};
use capo_api::conversion::NO_REASON;
use capo_api::v1beta1;
use capo_api::v1beta2;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Condition messages are capped (the v1beta1 CRDs allow 10240 characters; keep room).
const MAX_MESSAGE: usize = 4096;

/// Reason of an InstanceReady whose server exists but is neither ACTIVE nor building
/// (SHUTOFF, SUSPENDED, ...): a warning, told apart from the progress of
/// [`INSTANCE_NOT_READY`] by its reason, since standard conditions have no severity.
pub const INSTANCE_NOT_ACTIVE: &str = "InstanceNotActive";

/// Reason of InstanceReady while the server is being made (progress).
pub const INSTANCE_NOT_READY: &str = "InstanceNotReady";

/// Reason of a failure to use the identityRef (any kind).
pub const INVALID_CREDENTIALS: &str = "InvalidCredentials";

/// A condition's desired state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Status True.
    True,
    /// Status True with an informational reason and message: done, in a way the operator
    /// should know about (no severity: it is not a problem).
    TrueNoted {
        /// CamelCase reason.
        reason: String,
        /// Human-readable message.
        message: String,
    },
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

    /// True, with a reason and message the operator should read.
    pub fn noted(reason: &str, message: impl Into<String>) -> Self {
        State::TrueNoted {
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// False with severity Info: something under way, not something that stops the object.
    pub fn is_progress(&self) -> bool {
        matches!(self, State::False { severity, .. } if *severity == condition_severities::INFO)
    }
}

/// The severity a False standard condition stands for, from its reason.
///
/// Standard conditions carry no severity, so every reason capo writes on one has a single
/// severity: the failures of [`crate::lifecycle::failure_reason`] and the server's fatal states
/// are errors, a stopped server and a full pool warnings, anything else (waits, deletion,
/// progress) Info. A reason written with another severity must be listed here.
pub fn severity_of(reason: &str) -> &'static str {
    use condition_reasons as r;
    match reason {
        r::INVALID_MACHINE_SPEC
        | r::INSTANCE_CREATE_FAILED
        | r::INSTANCE_NOT_FOUND
        | r::INSTANCE_STATE_ERROR
        | r::INSTANCE_DELETED
        | r::DEPENDENCY_FAILED
        | r::LOAD_BALANCER_MEMBER_ERROR
        | r::FLOATING_IP_ERROR
        | r::OPENSTACK_ERROR
        | r::UNABLE_TO_FIND_NETWORK
        | r::OPENSTACK_AUTHENTICATION_FAILED
        | INVALID_CREDENTIALS => condition_severities::ERROR,
        INSTANCE_NOT_ACTIVE | r::MAX_IPS_REACHED => condition_severities::WARNING,
        _ => condition_severities::INFO,
    }
}

/// One stored condition, in either form capo writes (see the module documentation).
pub trait Entry: Clone + PartialEq {
    /// A new condition of `type_`, not yet written (status empty), made at `now`.
    fn blank(type_: &str, now: Time) -> Self;
    /// The condition type.
    fn type_(&self) -> &str;
    /// `True`, `False` or `Unknown`.
    fn status(&self) -> &str;
    /// The reason; None when there is none (or only the stand-in for none).
    fn reason(&self) -> Option<&str>;
    /// The message; None when there is none (or it is empty).
    fn message(&self) -> Option<&str>;
    /// The severity of a condition that is not True: stored (v1beta1) or recovered from the
    /// reason (standard).
    fn severity(&self) -> Option<&str>;
    /// When the status last changed.
    fn last_transition_time_mut(&mut self) -> &mut Time;
    /// Store `status`, `reason`, `severity` and `message` (already capped), observed at
    /// `generation`.
    fn store(&mut self, written: Written, generation: Option<i64>);
    /// Make a condition read from a stored object writable again (see the module
    /// documentation); nothing for the v1beta1 form.
    fn normalize(&mut self) {}
}

/// What [`set`] stores: the [`State`] with its message capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// `True` or `False`.
    pub status: &'static str,
    /// Reason; None for a plain True.
    pub reason: Option<String>,
    /// Severity; None for True.
    pub severity: Option<&'static str>,
    /// Message; None when there is none.
    pub message: Option<String>,
}

impl Entry for v1beta1::Condition {
    fn blank(type_: &str, now: Time) -> Self {
        v1beta1::Condition {
            last_transition_time: now,
            message: None,
            reason: None,
            severity: None,
            status: String::new(),
            r#type: type_.to_owned(),
        }
    }
    fn type_(&self) -> &str {
        &self.r#type
    }
    fn status(&self) -> &str {
        &self.status
    }
    fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
    fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }
    fn severity(&self) -> Option<&str> {
        self.severity.as_deref()
    }
    fn last_transition_time_mut(&mut self) -> &mut Time {
        &mut self.last_transition_time
    }
    fn store(&mut self, w: Written, _generation: Option<i64>) {
        self.status = w.status.to_owned();
        self.reason = w.reason;
        self.severity = w.severity.map(str::to_owned);
        self.message = w.message;
    }
}

impl Entry for v1beta2::Condition {
    fn blank(type_: &str, now: Time) -> Self {
        v1beta2::Condition {
            last_transition_time: now,
            message: String::new(),
            observed_generation: None,
            reason: NO_REASON.to_owned(),
            status: String::new(),
            type_: type_.to_owned(),
        }
    }
    fn type_(&self) -> &str {
        &self.type_
    }
    fn status(&self) -> &str {
        &self.status
    }
    fn reason(&self) -> Option<&str> {
        Some(self.reason.as_str()).filter(|r| !r.is_empty() && *r != NO_REASON)
    }
    fn message(&self) -> Option<&str> {
        Some(self.message.as_str()).filter(|m| !m.is_empty())
    }
    fn severity(&self) -> Option<&str> {
        (self.status != "True").then(|| severity_of(&self.reason))
    }
    fn last_transition_time_mut(&mut self) -> &mut Time {
        &mut self.last_transition_time
    }
    fn store(&mut self, w: Written, generation: Option<i64>) {
        self.status = w.status.to_owned();
        self.reason = w
            .reason
            .filter(|r| valid_reason(r))
            .unwrap_or_else(|| NO_REASON.to_owned());
        self.message = w.message.unwrap_or_default();
        self.observed_generation = generation;
    }
    fn normalize(&mut self) {
        if !valid_reason(&self.reason) {
            self.reason = NO_REASON.to_owned();
        }
    }
}

/// Whether `reason` matches the standard condition's pattern
/// `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$` (and its 1024-character bound).
pub fn valid_reason(reason: &str) -> bool {
    let bytes = reason.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':');
    reason.len() <= 1024
        && first.is_ascii_alphabetic()
        && (last.is_ascii_alphanumeric() || *last == b'_')
        && bytes.iter().all(inner)
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
/// order), keeping the transition time when the status is unchanged. `generation` is the
/// object's `metadata.generation`, recorded by standard conditions.
pub fn set<C: Entry>(conditions: &mut Vec<C>, type_: &str, state: State, generation: Option<i64>) {
    let written = match state {
        State::True => Written {
            status: "True",
            reason: None,
            severity: None,
            message: None,
        },
        State::TrueNoted { reason, message } => Written {
            status: "True",
            reason: Some(reason),
            severity: None,
            message: Some(truncate(message)).filter(|m| !m.is_empty()),
        },
        State::False {
            reason,
            severity,
            message,
        } => Written {
            status: "False",
            reason: Some(reason),
            severity: Some(severity),
            message: Some(truncate(message)).filter(|m| !m.is_empty()),
        },
    };
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let i = match conditions.iter().position(|c| c.type_() == type_) {
        Some(i) => i,
        None => {
            conditions.push(C::blank(type_, now.clone()));
            conditions.len() - 1
        }
    };
    let c = &mut conditions[i];
    if c.status() != written.status {
        *c.last_transition_time_mut() = now;
    }
    c.store(written, generation);
    conditions
        .sort_by(|a, b| (a.type_() != "Ready", a.type_()).cmp(&(b.type_() != "Ready", b.type_())));
}

/// [`Entry::normalize`] every condition of a list read from a stored object.
pub fn normalize<C: Entry>(conditions: &mut [C]) {
    conditions.iter_mut().for_each(Entry::normalize);
}

/// Remove condition `type_`.
pub fn remove<C: Entry>(conditions: &mut Vec<C>, type_: &str) {
    conditions.retain(|c| c.type_() != type_);
}

/// Whether condition `type_` is True.
pub fn is_true<C: Entry>(conditions: &[C], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_() == type_ && c.status() == "True")
}

/// The condition `type_`.
pub fn get<'a, C: Entry>(conditions: &'a [C], type_: &str) -> Option<&'a C> {
    conditions.iter().find(|c| c.type_() == type_)
}

/// Compare two condition lists ignoring transition times (to skip no-op status writes).
pub fn same<C: Entry>(a: &[C], b: &[C]) -> bool {
    let key = |c: &C| {
        let mut c = c.clone();
        *c.last_transition_time_mut() = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        c
    };
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| key(x) == key(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_transition_time_and_orders_ready_first() {
        let mut c: Vec<v1beta1::Condition> = Vec::new();
        set(&mut c, "NetworkReady", State::True, Some(1));
        set(
            &mut c,
            "Ready",
            State::info("Waiting", "waiting for network"),
            Some(1),
        );
        assert_eq!(c[0].r#type, "Ready");
        let t = c[1].last_transition_time.clone();
        set(&mut c, "NetworkReady", State::True, Some(1));
        assert_eq!(c[1].last_transition_time, t);
        assert_eq!(c[0].severity.as_deref(), Some("Info"));
        set(&mut c, "Ready", State::True, Some(1));
        assert!(is_true(&c, "Ready"));
        assert_eq!(c[0].reason, None);
    }

    #[test]
    fn a_noted_true_keeps_its_reason_and_message_without_severity() {
        let mut old: Vec<v1beta1::Condition> = Vec::new();
        let mut new: Vec<v1beta2::Condition> = Vec::new();
        let noted = State::noted("AppCredentialShared", "the identity's own credential");
        set(&mut old, "ExtensionsReady", noted.clone(), Some(2));
        set(&mut new, "ExtensionsReady", noted, Some(2));
        assert!(is_true(&old, "ExtensionsReady") && is_true(&new, "ExtensionsReady"));
        assert_eq!(old[0].reason.as_deref(), Some("AppCredentialShared"));
        assert_eq!(old[0].severity, None);
        assert_eq!(new[0].reason, "AppCredentialShared");
        assert_eq!(new[0].message, "the identity's own credential");
        // A plain True afterwards clears the note.
        set(&mut old, "ExtensionsReady", State::True, Some(2));
        assert_eq!(
            (old[0].reason.as_deref(), old[0].message.as_deref()),
            (None, None)
        );
    }

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let mut c: Vec<v1beta1::Condition> = Vec::new();
        set(&mut c, "Ready", State::error("X", "é".repeat(5000)), None);
        let m = c[0].message.as_deref().unwrap_or_default();
        assert!(m.len() <= MAX_MESSAGE + 3);
        assert!(m.ends_with('…'));
    }

    /// What the standard condition schema requires of every condition capo writes.
    fn assert_valid(c: &v1beta2::Condition, generation: i64) {
        assert!(valid_reason(&c.reason), "reason {:?}", c.reason);
        assert!(c.message.len() <= 32768);
        assert!(["True", "False", "Unknown"].contains(&c.status.as_str()));
        assert_eq!(c.observed_generation, Some(generation));
        // `message` and `reason` are always serialized (required by the schema).
        let json = serde_json::to_value(c).unwrap_or_default();
        assert!(
            json["message"].is_string() && json["reason"].is_string(),
            "{json}"
        );
    }

    #[test]
    fn standard_conditions_written_are_valid_for_their_schema() {
        let mut c: Vec<v1beta2::Condition> = Vec::new();
        set(&mut c, "InstanceReady", State::True, Some(3));
        set(&mut c, "Ready", State::info("Waiting", ""), Some(3));
        set(
            &mut c,
            "Paused",
            State::error("not a reason!", "x"),
            Some(3),
        );
        for cond in &c {
            assert_valid(cond, 3);
        }
        assert_eq!(c[0].type_, "Ready");
        assert_eq!(
            get(&c, "InstanceReady").map(|c| c.reason.as_str()),
            Some(NO_REASON)
        );
        assert_eq!(get(&c, "InstanceReady").and_then(Entry::reason), None);
        assert_eq!(
            get(&c, "Paused").map(|c| c.reason.as_str()),
            Some(NO_REASON)
        );
        // Same status: the transition time stays, the generation follows the object.
        let t = c[0].last_transition_time.clone();
        set(&mut c, "Ready", State::info("Waiting", "again"), Some(4));
        assert_eq!(c[0].last_transition_time, t);
        assert_valid(&c[0], 4);
        assert_eq!(c[0].message, "again");
    }

    #[test]
    fn stored_v1beta1_style_conditions_read_and_are_made_writable() {
        let stored: Vec<v1beta2::Condition> = serde_json::from_value(serde_json::json!([
            {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-02T03:04:05Z"},
            {"type": "InstanceReady", "status": "False", "severity": "Error",
             "reason": "InstanceStateError", "message": "NoValidHost",
             "lastTransitionTime": "2024-01-02T03:04:05Z"}
        ]))
        .unwrap_or_else(|e| panic!("v1beta1-style conditions must read: {e}"));
        assert_eq!(stored[0].reason, "");
        let mut conditions = stored.clone();
        normalize(&mut conditions);
        assert_eq!(conditions[0].reason, NO_REASON);
        assert_eq!(conditions[1], stored[1]);
        // The severity decisions survive the lost field.
        assert_eq!(conditions[1].severity(), Some("Error"));
        assert_eq!(conditions[0].severity(), None);
    }

    #[test]
    fn severities_come_back_from_the_reasons() {
        for state in [
            State::error(condition_reasons::INSTANCE_STATE_ERROR, "m"),
            State::error(condition_reasons::INSTANCE_DELETED, "m"),
            State::error(condition_reasons::INSTANCE_CREATE_FAILED, "m"),
            State::error(condition_reasons::INVALID_MACHINE_SPEC, "m"),
            State::error(condition_reasons::OPENSTACK_ERROR, "m"),
            State::error(condition_reasons::UNABLE_TO_FIND_NETWORK, "m"),
            State::error(INVALID_CREDENTIALS, "m"),
            State::error(condition_reasons::OPENSTACK_AUTHENTICATION_FAILED, "m"),
            State::warning(INSTANCE_NOT_ACTIVE, "m"),
            State::warning(condition_reasons::MAX_IPS_REACHED, "m"),
            State::info(INSTANCE_NOT_READY, "m"),
            State::info("WaitingForIPAddress", "m"),
            State::info("Deleting", "m"),
        ] {
            let mut c: Vec<v1beta2::Condition> = Vec::new();
            set(&mut c, "InstanceReady", state.clone(), Some(1));
            let State::False { severity, .. } = state else {
                continue;
            };
            assert_eq!(c[0].severity(), Some(severity), "{}", c[0].reason);
        }
    }

    #[test]
    fn reason_pattern() {
        for ok in ["A", "InstanceReady", "A_b,c:d9", "a_"] {
            assert!(valid_reason(ok), "{ok}");
        }
        for bad in ["", "9A", "A:", "A b", "A-b", "Ä"] {
            assert!(!valid_reason(bad), "{bad}");
        }
    }
}

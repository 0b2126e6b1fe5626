//! Pure admission validation for every kind.
//!
//! The admission webhooks call these functions; they never do IO, so every rule is unit-tested
//! here case by case. Each error names the JSON field path (`spec.ports[0].securityGroups`) and
//! the reason, in the format the Kubernetes API server uses for its own field errors, so users see
//! the same kind of message whether the CRD schema, a CEL rule or the webhook refused them.
//!
//! The rules are upstream CAPO v0.14.7's webhook rules plus a few that upstream leaves to the
//! cloud to fail on later (a resource stuck half-created is worse than a refused manifest):
//! exactly-one-of on every `*Param`, UUID format of IDs, Neutron tag rules, mutually exclusive
//! remote fields on security-group rules in all three rule lists, the reserved `root` block
//! device name, security groups on ports without port security, and the immutability rules of
//! updates. Values echoed in messages are never secrets: none of the validated specs hold any.

mod cluster;
mod common;
mod errors;
mod extensions;
mod immutability;
mod machine;
mod server;

#[cfg(test)]
mod tests;

pub use common::Cidr;
pub use errors::{FieldError, FieldErrorKind, FieldPath, ValidationErrors};

/// Admission validation of one kind: what the validating webhook calls on create and update.
pub trait Validate {
    /// Validates a new object.
    fn validate_create(&self) -> Result<(), ValidationErrors>;

    /// Validates an update of `old` into `self`, including the create-time rules.
    fn validate_update(&self, old: &Self, context: &UpdateContext) -> Result<(), ValidationErrors>;
}

/// Facts about an update request that change what is allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateContext {
    /// The request is a dry run made by the Cluster API topology controller
    /// (annotation `topology.cluster.x-k8s.io/dry-run`): template immutability is not enforced,
    /// exactly as upstream, because ClusterClass rebases compare templates with dry runs.
    pub topology_dry_run: bool,
}

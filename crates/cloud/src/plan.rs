//! Pure planning: decisions computed from the spec and observed state, without IO.

pub mod cidr;
pub mod endpoint;
pub mod failure_domains;
pub mod rule_diff;
pub mod security_groups;

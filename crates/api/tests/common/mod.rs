//! Helpers shared by the integration tests of this crate.

pub mod files;
pub mod json_values;
pub mod schema_diff;

//! The error every conversion function returns.

use std::fmt;

/// Why an object was not converted: the field at fault and what is wrong with it.
///
/// A conversion either succeeds losslessly or fails with this error; it never changes a value
/// to make it fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversionError {
    /// Dotted path of the offending field, such as `spec.flavor` or
    /// `status.conditions[1].type`; empty when the object as a whole is at fault.
    pub path: String,
    /// What prevents the conversion.
    pub reason: String,
}

impl ConversionError {
    /// An error about the field at `path`.
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ConversionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for ConversionError {}

/// Joins a parent path and a child field name (or `[i]` index) into a dotted path.
pub(crate) fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() || parent == "." {
        child.to_owned()
    } else if child.is_empty() || child == "." {
        parent.to_owned()
    } else if child.starts_with('[') {
        format!("{parent}{child}")
    } else {
        format!("{parent}.{child}")
    }
}

/// Converts a decoding error into a conversion error under `parent`.
pub(crate) fn from_decode(parent: &str, error: crate::decode::DecodeError) -> ConversionError {
    ConversionError::new(join(parent, &error.path), error.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_like_field_accessors() {
        assert_eq!(join("spec", "flavor"), "spec.flavor");
        assert_eq!(join("spec.ports", "[0]"), "spec.ports[0]");
        assert_eq!(join("", "spec"), "spec");
        assert_eq!(join("spec", "."), "spec");
    }

    #[test]
    fn display_names_the_field_first() {
        let e = ConversionError::new("spec.flavor", "is empty");
        assert_eq!(e.to_string(), "spec.flavor: is empty");
        assert_eq!(ConversionError::new("", "bad").to_string(), "bad");
    }
}

//! Field errors in the Kubernetes format: `<path>: <kind>: <detail>`.

use std::fmt;

/// A JSON field path such as `spec.ports[0].network.id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    /// A path starting at a top-level field, e.g. `spec`.
    pub fn new(root: &str) -> Self {
        Self(root.to_owned())
    }

    /// The path of a named child field.
    pub fn child(&self, name: &str) -> Self {
        Self(format!("{}.{name}", self.0))
    }

    /// The path of a list element.
    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with a field, mirroring the API server's field error types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A value is required and missing.
    Required,
    /// The value is malformed or out of range; carries the offending value.
    Invalid(String),
    /// The field may not be set, or not to this value, in this context.
    Forbidden,
    /// The value may not change after creation.
    Immutable,
    /// The value repeats another element of the same list.
    Duplicate(String),
}

/// One rejected field: where, what kind of problem, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// JSON path of the offending field.
    pub path: FieldPath,
    /// The kind of problem.
    pub kind: FieldErrorKind,
    /// Why the value is rejected, in words a user can act on.
    pub detail: String,
}

impl FieldError {
    /// A missing required value.
    pub fn required(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self {
            path: path.clone(),
            kind: FieldErrorKind::Required,
            detail: detail.into(),
        }
    }

    /// A malformed value.
    pub fn invalid(path: &FieldPath, value: impl fmt::Display, detail: impl Into<String>) -> Self {
        let kind = FieldErrorKind::Invalid(value.to_string());
        Self {
            path: path.clone(),
            kind,
            detail: detail.into(),
        }
    }

    /// A value not allowed here.
    pub fn forbidden(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self {
            path: path.clone(),
            kind: FieldErrorKind::Forbidden,
            detail: detail.into(),
        }
    }

    /// A value that may not change.
    pub fn immutable(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self {
            path: path.clone(),
            kind: FieldErrorKind::Immutable,
            detail: detail.into(),
        }
    }

    /// A repeated list element.
    pub fn duplicate(path: &FieldPath, value: impl fmt::Display) -> Self {
        let kind = FieldErrorKind::Duplicate(value.to_string());
        Self {
            path: path.clone(),
            kind,
            detail: String::new(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FieldErrorKind::Required => write!(f, "{}: Required value", self.path)?,
            FieldErrorKind::Invalid(value) => write!(f, "{}: Invalid value: {value:?}", self.path)?,
            FieldErrorKind::Forbidden => write!(f, "{}: Forbidden", self.path)?,
            FieldErrorKind::Immutable => {
                write!(f, "{}: Invalid value: field is immutable", self.path)?
            }
            FieldErrorKind::Duplicate(value) => {
                write!(f, "{}: Duplicate value: {value:?}", self.path)?
            }
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Every field error of one object; never empty when returned as an `Err`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidationErrors(pub Vec<FieldError>);

impl ValidationErrors {
    /// Turns collected errors into a result: `Ok` when there are none.
    pub fn into_result(errors: Vec<FieldError>) -> Result<(), ValidationErrors> {
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ValidationErrors(errors))
        }
    }

    /// The errors, in the order found.
    pub fn errors(&self) -> &[FieldError] {
        &self.0
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        if lines.len() == 1 {
            f.write_str(&lines[0])
        } else {
            write!(f, "[{}]", lines.join(", "))
        }
    }
}

impl std::error::Error for ValidationErrors {}

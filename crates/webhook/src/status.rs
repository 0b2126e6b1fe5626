//! Denials in the API server's own format, so `kubectl` shows a webhook's refusal exactly like
//! a schema or CEL error: `<Kind>.<group> "<name>" is invalid: <path>: <problem>`.

use capo_api::validation::{FieldError, FieldErrorKind, ValidationErrors};

use crate::review::{Status, StatusCause, StatusDetails};

/// HTTP 422, what the API server answers for invalid objects.
const UNPROCESSABLE: u16 = 422;
/// HTTP 400, for reviews this webhook cannot judge (undecodable object, wrong kind).
const BAD_REQUEST: u16 = 400;

/// Which object a denial is about.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Subject<'a> {
    /// API group of the kind.
    pub group: &'a str,
    /// The kind.
    pub kind: &'a str,
    /// The object's name.
    pub name: &'a str,
}

/// The Kubernetes cause type of a field error (`k8s.io/apimachinery` field.ErrorType).
fn cause_type(kind: &FieldErrorKind) -> &'static str {
    match kind {
        FieldErrorKind::Required => "FieldValueRequired",
        // The API server reports immutable fields as Invalid ("field is immutable").
        FieldErrorKind::Invalid(_) | FieldErrorKind::Immutable => "FieldValueInvalid",
        FieldErrorKind::Forbidden => "FieldValueForbidden",
        FieldErrorKind::Duplicate(_) => "FieldValueDuplicate",
    }
}

fn cause(error: &FieldError) -> StatusCause {
    let text = error.to_string();
    let prefix = format!("{}: ", error.path);
    let body = text.strip_prefix(&prefix).unwrap_or(&text).to_owned();
    StatusCause {
        reason: cause_type(&error.kind).to_owned(),
        message: body,
        field: error.path.to_string(),
    }
}

/// A 422 `Invalid` status with one cause per field error.
pub(crate) fn invalid(subject: Subject<'_>, errors: &ValidationErrors) -> Status {
    Status {
        status: "Failure".to_owned(),
        message: format!(
            "{}.{} {:?} is invalid: {errors}",
            subject.kind, subject.group, subject.name
        ),
        reason: "Invalid".to_owned(),
        details: Some(StatusDetails {
            name: subject.name.to_owned(),
            group: subject.group.to_owned(),
            kind: subject.kind.to_owned(),
            causes: errors.errors().iter().map(cause).collect(),
        }),
        code: UNPROCESSABLE,
    }
}

/// A 400 `BadRequest` status for a review the webhook cannot judge.
pub(crate) fn bad_request(message: String) -> Status {
    Status {
        status: "Failure".to_owned(),
        message,
        reason: "BadRequest".to_owned(),
        details: None,
        code: BAD_REQUEST,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capo_api::validation::FieldPath;

    #[test]
    fn invalid_status_matches_the_api_server_format() {
        let path = FieldPath::new("spec").child("securityGroups").index(0);
        let errors = ValidationErrors(vec![
            FieldError::invalid(&path.child("id"), "sg", "must be a UUID"),
            FieldError::immutable(&FieldPath::new("spec").child("flavor"), "cannot change"),
        ]);
        let subject = Subject {
            group: "infrastructure.cluster.x-k8s.io",
            kind: "OpenStackMachine",
            name: "m-0",
        };
        let status = invalid(subject, &errors);
        assert_eq!(
            status.message,
            "OpenStackMachine.infrastructure.cluster.x-k8s.io \"m-0\" is invalid: \
             [spec.securityGroups[0].id: Invalid value: \"sg\": must be a UUID, \
             spec.flavor: Invalid value: field is immutable: cannot change]"
        );
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        let causes = status.details.map(|d| d.causes).unwrap_or_default();
        assert_eq!(
            causes,
            vec![
                StatusCause {
                    reason: "FieldValueInvalid".into(),
                    message: "Invalid value: \"sg\": must be a UUID".into(),
                    field: "spec.securityGroups[0].id".into(),
                },
                StatusCause {
                    reason: "FieldValueInvalid".into(),
                    message: "Invalid value: field is immutable: cannot change".into(),
                    field: "spec.flavor".into(),
                },
            ]
        );
    }
}

//! The flavor of a server: v1beta1's strings `flavor` (a name) and `flavorID` against
//! v1beta2's structured `flavor` (`id` or `filter.name`, exactly one).
//!
//! v1beta1 lets both strings be set; the ID then wins, as it does upstream, and the name
//! travels in the conversion-data annotation. Neither set (an object admission would refuse,
//! but one that may already be stored, or a partial object) converts to an empty v1beta2
//! flavor and back, as upstream converts it: a conversion refused would make the object
//! unreadable in the other version, and admission, not conversion, says what is missing. Other
//! v1beta2 values that are not exactly one of `id` or `filter.name` have no v1beta1 meaning:
//! they are refused.

use crate::conversion::error::{ConversionError, join};
use crate::v1beta2::{FlavorFilter, FlavorParam};

/// v1beta1 `flavor` and `flavorID` of a machine spec as a v1beta2 flavor.
pub(crate) fn to_v1beta2(name: Option<&String>, id: Option<&String>) -> FlavorParam {
    match (name, id) {
        (_, Some(id)) => FlavorParam {
            filter: None,
            id: Some(id.clone()),
        },
        (Some(name), None) => FlavorParam {
            filter: Some(FlavorFilter {
                name: Some(name.clone()),
            }),
            id: None,
        },
        (None, None) => FlavorParam::default(),
    }
}

/// A v1beta2 flavor as v1beta1 (`flavor`, `flavorID`).
pub(crate) fn to_v1beta1(
    flavor: &FlavorParam,
    path: &str,
) -> Result<(Option<String>, Option<String>), ConversionError> {
    let path = join(path, "flavor");
    match (&flavor.id, &flavor.filter) {
        (Some(id), None) => Ok((None, Some(id.clone()))),
        (None, Some(FlavorFilter { name: Some(name) })) => Ok((Some(name.clone()), None)),
        (None, Some(FlavorFilter { name: None })) => Err(ConversionError::new(
            join(&path, "filter"),
            "names no flavor; v1beta1 can only select a flavor by name or ID",
        )),
        (Some(_), Some(_)) => Err(ConversionError::new(
            path,
            "sets both id and filter; exactly one is allowed",
        )),
        (None, None) => Ok((None, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_wins_over_name() {
        let (name, id) = (String::from("m1.small"), String::from("42"));
        let f = to_v1beta2(Some(&name), Some(&id));
        assert_eq!((f.id.as_deref(), f.filter), (Some("42"), None));
        let f = to_v1beta2(Some(&name), None);
        assert_eq!(to_v1beta1(&f, "spec").ok(), Some((Some(name), None)));
    }

    #[test]
    fn unrepresentable_flavors_are_refused_with_their_path() {
        let err =
            |r: Result<(Option<String>, Option<String>), ConversionError>| r.err().map(|e| e.path);
        let empty_filter = FlavorParam {
            filter: Some(FlavorFilter { name: None }),
            id: None,
        };
        assert_eq!(
            err(to_v1beta1(&empty_filter, "spec")),
            Some("spec.flavor.filter".to_owned())
        );
        let both = FlavorParam {
            filter: Some(FlavorFilter {
                name: Some("n".into()),
            }),
            id: Some("1".into()),
        };
        assert_eq!(
            err(to_v1beta1(&both, "spec")),
            Some("spec.flavor".to_owned())
        );
    }

    #[test]
    fn no_flavor_converts_to_an_empty_flavor_and_back() {
        assert_eq!(to_v1beta2(None, None), FlavorParam::default());
        assert_eq!(
            to_v1beta1(&FlavorParam::default(), "spec").ok(),
            Some((None, None))
        );
    }
}

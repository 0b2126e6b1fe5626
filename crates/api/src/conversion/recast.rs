//! Moving values between types whose JSON is the same in both versions.
//!
//! Many sub-types were re-declared for v1beta2 only to tighten their schema (a `minLength`,
//! a list type); their fields and JSON are unchanged. Rather than copying them field by field,
//! [`recast`] goes through JSON and checks that nothing was lost on the way, so a field added
//! to one version later fails loudly instead of vanishing.

use crate::conversion::error::{ConversionError, from_decode, join};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `value` as a `U`, which must serialize to exactly the same JSON.
pub(crate) fn recast<T: Serialize, U: Serialize + DeserializeOwned>(
    value: &T,
    path: &str,
) -> Result<U, ConversionError> {
    let json = encode(value, path)?;
    let out: U = crate::decode::from_value(json.clone()).map_err(|e| from_decode(path, e))?;
    let again = encode(&out, path)?;
    if again == json {
        Ok(out)
    } else {
        Err(ConversionError::new(
            path,
            "has a field the other version does not know",
        ))
    }
}

/// Each item of `items` recast, with the item's index in error paths.
pub(crate) fn recast_all<T: Serialize, U: Serialize + DeserializeOwned>(
    items: &[T],
    path: &str,
) -> Result<Vec<U>, ConversionError> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| recast(item, &join(path, &format!("[{i}]"))))
        .collect()
}

/// `value` as JSON.
pub(crate) fn encode<T: Serialize>(
    value: &T,
    path: &str,
) -> Result<serde_json::Value, ConversionError> {
    serde_json::to_value(value)
        .map_err(|e| ConversionError::new(path, format!("cannot be encoded: {e}")))
}

/// A boolean whose meaning the new version inverts (`disableX` against `enableX`); absent
/// stays absent.
pub(crate) fn negate(value: Option<bool>) -> Option<bool> {
    value.map(|v| !v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1beta1;
    use crate::v1beta2;

    #[test]
    fn same_json_types_recast() {
        let a = v1beta1::ServerMetadata {
            key: "k".into(),
            value: "v".into(),
        };
        let b: v1beta2::ServerMetadata =
            recast(&a, "spec.serverMetadata[0]").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((b.key.as_str(), b.value.as_str()), ("k", "v"));
    }

    #[test]
    fn lost_fields_are_errors() {
        let a = v1beta1::ResolvedPortSpec {
            disable_port_security: Some(true),
            ..Default::default()
        };
        let err = recast::<_, v1beta2::ResolvedPortSpec>(&a, "status.resolved.ports[0]").err();
        assert_eq!(
            err.map(|e| e.path),
            Some("status.resolved.ports[0]".to_owned())
        );
    }

    #[test]
    fn negation_keeps_absence() {
        assert_eq!(negate(None), None);
        assert_eq!(negate(Some(true)), Some(false));
    }
}

//! Small schemars transforms used by the API types' derive attributes.

use schemars::Schema;

/// Removes the `format` schemars derives for Rust integers (`int32`, ...).
///
/// Upstream declares most integers without a format (Go `int`); an extra format would make our
/// schema stricter than upstream's and fail the compatibility comparison.
pub fn drop_format(schema: &mut Schema) {
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("format");
    }
}

//! The conversion of one object in either direction, with its conversion data.
//!
//! 1. The annotation is taken off the source object. If it holds data of the target version
//!    (written when the object came from there), it is consumed: the plain conversion's result
//!    gets that data back where it still fits (see [`restore`](crate::conversion::restore)).
//! 2. The result is converted back plainly; whatever that loses of the source becomes the new
//!    conversion data, written on the result. An annotation that was there but not ours to
//!    consume stays on the result, or, if ours must take its place (or it would be mistaken
//!    for ours on the way back), rides inside ours and comes back with it.
//! 3. Finally the result is converted back for real; unless that gives the source exactly (less
//!    the data consumed in step 1, of which stale parts may have been dropped), the conversion
//!    is refused, naming the first field that would be lost.

use crate::conversion::annotation::{self, Payload};
use crate::conversion::error::{ConversionError, from_decode};
use crate::conversion::json_path::{Seg, diff_paths, display};
use crate::conversion::recast::encode;
use crate::conversion::versions::{V1BETA1, V1BETA2};
use crate::conversion::{carry, restore};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The two versions of one kind and the plain conversions between them.
pub(crate) trait Pair {
    /// The kind, as in `kind:`.
    const KIND: &'static str;
    /// The kind's v1beta1 type.
    type Old: Serialize + DeserializeOwned;
    /// The kind's v1beta2 type.
    type New: Serialize + DeserializeOwned;
    /// v1beta1 to v1beta2, without conversion data.
    fn up(old: &Self::Old) -> Result<Self::New, ConversionError>;
    /// v1beta2 to v1beta1, without conversion data.
    fn down(new: &Self::New) -> Result<Self::Old, ConversionError>;
}

/// Which way an object is converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// v1beta1 to v1beta2.
    Up,
    /// v1beta2 to v1beta1.
    Down,
}

impl Direction {
    fn reverse(self) -> Self {
        match self {
            Self::Up => Self::Down,
            Self::Down => Self::Up,
        }
    }

    fn source(self) -> &'static str {
        match self {
            Self::Up => V1BETA1,
            Self::Down => V1BETA2,
        }
    }

    fn target(self) -> &'static str {
        match self {
            Self::Up => V1BETA2,
            Self::Down => V1BETA1,
        }
    }
}

/// Converts a typed object with its conversion data. (Typed objects are not depth-checked:
/// decoding one from JSON text already bounds its depth.)
pub(crate) fn typed<P: Pair, S: Serialize, T: DeserializeOwned>(
    direction: Direction,
    object: &S,
) -> Result<T, ConversionError> {
    let json = encode(object, "")?;
    decode(convert::<P>(direction, json)?)
}

/// Converts a JSON object of the source version of `direction`: it is read into the typed
/// struct first (which drops unknown fields and fills in v1beta1's defaulted fields), then
/// converted with its conversion data.
pub(crate) fn convert<P: Pair>(
    direction: Direction,
    object: Value,
) -> Result<Value, ConversionError> {
    let mut source = match direction {
        Direction::Up => encode(&decode::<P::Old>(object)?, "")?,
        Direction::Down => encode(&decode::<P::New>(object)?, "")?,
    };
    annotation::drop_empty_annotations(&mut source);
    convert_normalized::<P>(direction, &source, true)
}

/// A v1beta2 object, as read from storage, in its v1beta1 form for a reader in this process
/// (capo's controllers; nothing is served). Without conversion data there is nothing to
/// restore, so the plain conversion gives what [`convert`] would, less the annotation a
/// reader drops and the check that the result converts back: what v1beta1 cannot express
/// reads as v1beta1's default, which means the same, and the reader writes back only status,
/// converted up again in full. With conversion data (an object a v1beta1 client wrote),
/// the full conversion restores it (`failureReason`, condition severities, ...).
pub(crate) fn read_down<P: Pair>(object: P::New) -> Result<P::Old, ConversionError>
where
    P::New: kube::Resource,
{
    let annotated = (kube::Resource::meta(&object).annotations.as_ref())
        .is_some_and(|a| a.contains_key(annotation::CONVERSION_DATA_ANNOTATION));
    if annotated {
        typed::<P, _, _>(Direction::Down, &object)
    } else {
        P::down(&object)
    }
}

fn decode<T: DeserializeOwned>(object: Value) -> Result<T, ConversionError> {
    crate::decode::from_value(object).map_err(|e| from_decode("", e))
}

/// The plain conversion, without conversion data.
fn plain<P: Pair>(direction: Direction, object: &Value) -> Result<Value, ConversionError> {
    match direction {
        Direction::Up => encode(&P::up(&decode(object.clone())?)?, ""),
        Direction::Down => encode(&P::down(&decode(object.clone())?)?, ""),
    }
}

fn convert_normalized<P: Pair>(
    direction: Direction,
    source: &Value,
    verify: bool,
) -> Result<Value, ConversionError> {
    let mut stripped = source.clone();
    let existing = annotation::take(&mut stripped);
    let ours = existing
        .as_deref()
        .and_then(|a| annotation::parse_for(a, direction.target(), P::KIND));
    let back = |v: &Value| plain::<P>(direction.reverse(), v);

    let mut result = plain::<P>(direction, &stripped)?;
    // An annotation that is not ours stays as it is; one we consume may hand back an older
    // annotation it displaced, which is then treated the same way.
    let foreign = match &ours {
        Some(payload) => {
            restore::restore(
                direction.target(),
                &mut result,
                &payload.data,
                &stripped,
                &back,
            )?;
            payload.displaced.clone()
        }
        None => existing.clone(),
    };

    let mut payload = Payload {
        data: carry::collect(direction.source(), &stripped, &back(&result)?),
        displaced: None,
    };
    if let Some(old) = foreign {
        if payload.data.is_empty() && !annotation::has_origin(&old, direction.source()) {
            annotation::put(&mut result, old);
        } else {
            payload.displaced = Some(old);
        }
    }
    if !payload.is_empty() {
        annotation::put(&mut result, payload.render(direction.source(), P::KIND));
    }

    if verify {
        // Converting back must give the source again. When this conversion consumed data
        // (possibly dropping stale parts of it), the annotation is left out of the comparison:
        // the conversion back writes what it carries anew.
        let mut again = convert_normalized::<P>(direction.reverse(), &result, false)?;
        let expected = if ours.is_some() {
            annotation::take(&mut again);
            &stripped
        } else {
            source
        };
        let mut lost = Vec::new();
        diff_paths(&mut Vec::new(), Some(expected), Some(&again), &mut lost);
        if let Some(first) = lost.first() {
            return Err(lossy(first, direction));
        }
    }
    Ok(result)
}

fn lossy(path: &[Seg], direction: Direction) -> ConversionError {
    ConversionError::new(
        display(path),
        format!(
            "cannot be represented in {} and restored unchanged",
            direction.target().rsplit('/').next().unwrap_or_default()
        ),
    )
}

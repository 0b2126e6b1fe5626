//! OpenStackMachine between v1beta1 and v1beta2.

use crate::conversion::engine::{self, Direction, Pair};
use crate::conversion::error::ConversionError;
use crate::conversion::{machine_spec, machine_status};
use crate::{v1beta1, v1beta2};

/// The two versions of OpenStackMachine.
pub(crate) struct Machine;

impl Pair for Machine {
    const KIND: &'static str = "OpenStackMachine";
    type Old = v1beta1::OpenStackMachine;
    type New = v1beta2::OpenStackMachine;

    fn up(old: &Self::Old) -> Result<Self::New, ConversionError> {
        Ok(v1beta2::OpenStackMachine {
            metadata: old.metadata.clone(),
            spec: machine_spec::to_v1beta2(&old.spec, "spec")?,
            status: old
                .status
                .as_ref()
                .map(|s| machine_status::to_v1beta2(s, old.metadata.generation))
                .transpose()?,
        })
    }

    fn down(new: &Self::New) -> Result<Self::Old, ConversionError> {
        Ok(v1beta1::OpenStackMachine {
            metadata: new.metadata.clone(),
            spec: machine_spec::to_v1beta1(&new.spec, "spec")?,
            status: new
                .status
                .as_ref()
                .map(machine_status::to_v1beta1)
                .transpose()?,
        })
    }
}

/// Converts a v1beta1 OpenStackMachine to v1beta2, with its conversion data.
pub fn machine_to_v1beta2(
    machine: &v1beta1::OpenStackMachine,
) -> Result<v1beta2::OpenStackMachine, ConversionError> {
    engine::typed::<Machine, _, _>(Direction::Up, machine)
}

/// Converts a v1beta2 OpenStackMachine to v1beta1, with its conversion data.
pub fn machine_to_v1beta1(
    machine: &v1beta2::OpenStackMachine,
) -> Result<v1beta1::OpenStackMachine, ConversionError> {
    engine::typed::<Machine, _, _>(Direction::Down, machine)
}

//! OpenStackMachineTemplate between v1beta1 and v1beta2.

use crate::conversion::engine::{self, Direction, Pair};
use crate::conversion::error::ConversionError;
use crate::conversion::{machine_spec, machine_status};
use crate::{v1beta1, v1beta2};

/// The two versions of OpenStackMachineTemplate.
pub(crate) struct MachineTemplate;

impl Pair for MachineTemplate {
    const KIND: &'static str = "OpenStackMachineTemplate";
    type Old = v1beta1::OpenStackMachineTemplate;
    type New = v1beta2::OpenStackMachineTemplate;

    fn up(old: &Self::Old) -> Result<Self::New, ConversionError> {
        Ok(v1beta2::OpenStackMachineTemplate {
            metadata: old.metadata.clone(),
            spec: v1beta2::OpenStackMachineTemplateSpec {
                template: v1beta2::OpenStackMachineTemplateResource {
                    spec: machine_spec::to_v1beta2(&old.spec.template.spec, "spec.template.spec")?,
                },
            },
            status: old
                .status
                .as_ref()
                .map(|s| machine_status::template_to_v1beta2(s, old.metadata.generation))
                .transpose()?,
        })
    }

    fn down(new: &Self::New) -> Result<Self::Old, ConversionError> {
        Ok(v1beta1::OpenStackMachineTemplate {
            metadata: new.metadata.clone(),
            spec: v1beta1::OpenStackMachineTemplateSpec {
                template: v1beta1::OpenStackMachineTemplateResource {
                    spec: machine_spec::to_v1beta1(&new.spec.template.spec, "spec.template.spec")?,
                },
            },
            status: new
                .status
                .as_ref()
                .map(machine_status::template_to_v1beta1)
                .transpose()?,
        })
    }
}

/// Converts a v1beta1 OpenStackMachineTemplate to v1beta2, with its conversion data.
pub fn machine_template_to_v1beta2(
    template: &v1beta1::OpenStackMachineTemplate,
) -> Result<v1beta2::OpenStackMachineTemplate, ConversionError> {
    engine::typed::<MachineTemplate, _, _>(Direction::Up, template)
}

/// Converts a v1beta2 OpenStackMachineTemplate to v1beta1, with its conversion data.
pub fn machine_template_to_v1beta1(
    template: &v1beta2::OpenStackMachineTemplate,
) -> Result<v1beta1::OpenStackMachineTemplate, ConversionError> {
    engine::typed::<MachineTemplate, _, _>(Direction::Down, template)
}

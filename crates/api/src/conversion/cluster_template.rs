//! OpenStackClusterTemplate between v1beta1 and v1beta2.
//!
//! v1beta2 adds `spec.template.metadata` (labels and annotations for the generated clusters);
//! v1beta1 has no place for it, so it travels in the conversion-data annotation.

use crate::conversion::cluster_spec;
use crate::conversion::engine::{self, Direction, Pair};
use crate::conversion::error::ConversionError;
use crate::{v1beta1, v1beta2};

/// The two versions of OpenStackClusterTemplate.
pub(crate) struct ClusterTemplate;

impl Pair for ClusterTemplate {
    const KIND: &'static str = "OpenStackClusterTemplate";
    type Old = v1beta1::OpenStackClusterTemplate;
    type New = v1beta2::OpenStackClusterTemplate;

    fn up(old: &Self::Old) -> Result<Self::New, ConversionError> {
        Ok(v1beta2::OpenStackClusterTemplate {
            metadata: old.metadata.clone(),
            spec: v1beta2::OpenStackClusterTemplateSpec {
                template: v1beta2::OpenStackClusterTemplateResource {
                    metadata: None,
                    spec: cluster_spec::to_v1beta2(&old.spec.template.spec, "spec.template.spec")?,
                },
            },
        })
    }

    fn down(new: &Self::New) -> Result<Self::Old, ConversionError> {
        Ok(v1beta1::OpenStackClusterTemplate {
            metadata: new.metadata.clone(),
            spec: v1beta1::OpenStackClusterTemplateSpec {
                template: v1beta1::OpenStackClusterTemplateResource {
                    spec: cluster_spec::to_v1beta1(&new.spec.template.spec, "spec.template.spec")?,
                },
            },
        })
    }
}

/// Converts a v1beta1 OpenStackClusterTemplate to v1beta2, with its conversion data.
pub fn cluster_template_to_v1beta2(
    template: &v1beta1::OpenStackClusterTemplate,
) -> Result<v1beta2::OpenStackClusterTemplate, ConversionError> {
    engine::typed::<ClusterTemplate, _, _>(Direction::Up, template)
}

/// Converts a v1beta2 OpenStackClusterTemplate to v1beta1, with its conversion data.
pub fn cluster_template_to_v1beta1(
    template: &v1beta2::OpenStackClusterTemplate,
) -> Result<v1beta1::OpenStackClusterTemplate, ConversionError> {
    engine::typed::<ClusterTemplate, _, _>(Direction::Down, template)
}

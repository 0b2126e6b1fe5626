//! Failure domains from Nova availability zones, as upstream computes them: every available
//! zone is a failure domain; it is offered to the control plane unless
//! `controlPlaneOmitAvailabilityZone` is set, and when `controlPlaneAvailabilityZones` is
//! non-empty exactly the listed zones are offered to it.

use std::collections::BTreeMap;

use capo_api::v1beta1::{FailureDomainSpec, OpenStackClusterSpec};

/// A zone as Nova reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// Zone name.
    pub name: String,
    /// Whether Nova reports it available.
    pub available: bool,
}

/// `status.failureDomains` for the given zones (unavailable zones are skipped, so a zone
/// removed from the cloud disappears from status).
pub fn failure_domains(
    spec: &OpenStackClusterSpec,
    zones: &[Zone],
) -> BTreeMap<String, FailureDomainSpec> {
    let default = spec.control_plane_omit_availability_zone != Some(true);
    zones
        .iter()
        .filter(|z| z.available)
        .map(|z| {
            let control_plane = if spec.control_plane_availability_zones.is_empty() {
                default
            } else {
                spec.control_plane_availability_zones.contains(&z.name)
            };
            let fd = FailureDomainSpec {
                control_plane: Some(control_plane),
                ..Default::default()
            };
            (z.name.clone(), fd)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones() -> Vec<Zone> {
        ["az1", "az2", "down"]
            .into_iter()
            .map(|n| Zone {
                name: n.into(),
                available: n != "down",
            })
            .collect()
    }

    fn cp(m: &BTreeMap<String, FailureDomainSpec>) -> Vec<(&str, bool)> {
        m.iter()
            .map(|(k, v)| (k.as_str(), v.control_plane == Some(true)))
            .collect()
    }

    #[test]
    fn all_available_zones_for_the_control_plane_by_default() {
        let fd = failure_domains(&OpenStackClusterSpec::default(), &zones());
        assert_eq!(cp(&fd), vec![("az1", true), ("az2", true)]);
    }

    #[test]
    fn explicit_list_and_omit() {
        let mut spec = OpenStackClusterSpec {
            control_plane_omit_availability_zone: Some(true),
            ..Default::default()
        };
        assert_eq!(
            cp(&failure_domains(&spec, &zones())),
            vec![("az1", false), ("az2", false)]
        );
        // An explicit list overrides the omit flag, as upstream does.
        spec.control_plane_availability_zones = vec!["az2".into()];
        assert_eq!(
            cp(&failure_domains(&spec, &zones())),
            vec![("az1", false), ("az2", true)]
        );
    }
}

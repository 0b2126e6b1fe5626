//! Steady reconciles of a ready machine cost no OpenStack request: the fingerprint of what the
//! last full reconcile depended on (machine spec without the providerID it wrote itself, the
//! server's status, the Machine's inputs, the cluster's ingress mode) is kept in memory, and an
//! unchanged fingerprint within the verification period means nothing to do. The server itself
//! is probed by the OpenStackServer controller (one GET), whose status change wakes the machine.

use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::OpenStackMachine;

use super::apply::Inputs;
use super::ingress;
use crate::error::Result;
use crate::fingerprint::{Digest, Fingerprint};

/// Fingerprint of a machine's inputs.
pub(super) fn fingerprint(
    osm: &OpenStackMachine,
    oss: Option<&OpenStackServer>,
    inp: &Inputs<'_>,
) -> Result<Digest> {
    let mut spec = osm.spec.clone();
    spec.provider_id = None;
    let mut server = oss.and_then(|o| o.status.clone()).unwrap_or_default();
    server.conditions.clear();
    let mut h = Fingerprint::new();
    h.bytes(osm.metadata.uid.as_deref().unwrap_or_default());
    h.json(&spec)?.json(&server)?.json(&(
        oss.map(|o| o.metadata.deletion_timestamp.is_some()),
        &inp.machine.spec.failure_domain,
        &inp.machine.spec.bootstrap.data_secret_name,
        inp.control_plane,
        format!("{:?}", ingress::mode(inp.osc, inp.control_plane)),
    ))?;
    Ok(h.finish())
}

//! Steady reconciles of a ready machine cost no OpenStack request: the fingerprint of what the
//! last full reconcile depended on is kept in memory, and an unchanged fingerprint within the
//! verification period means nothing to do. The server itself is probed by the
//! OpenStackServer controller (one GET), whose status change wakes the machine.
//!
//! The fingerprint ([`Inputs::fingerprint`]) covers the machine's spec (without the providerID
//! it wrote itself), its OpenStackServer's status and deletion, and the [`Inputs`] value that
//! [`super::apply::apply`] reads: the OpenStackCluster's spec (extensions included) and the
//! parts of its status the machine reconcile reads, the Machine's parts it reads, the cluster
//! name, the control-plane role and the ingress mode. `Inputs` is destructured field by field,
//! so a field added to it does not compile until it is hashed here.

use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::OpenStackMachine;
use serde::Serialize;

use super::apply::Inputs;
use crate::error::Result;
use crate::fingerprint::{Digest, Fingerprint};

/// The parts of the OpenStackCluster's status the machine reconcile reads (the whole status
/// would re-verify every machine at each of the cluster's status writes).
#[derive(Serialize)]
struct ClusterStatusRead<'a> {
    /// The cluster network (the server's default network).
    network_id: Option<&'a str>,
    /// The default security groups of control-plane machines and workers.
    control_plane_security_group_id: Option<&'a str>,
    worker_security_group_id: Option<&'a str>,
    /// The API load balancer (control-plane machines' members).
    api_server_load_balancer_id: Option<&'a str>,
    /// Keepalived VIPs and the ingress load balancer (`status.extensions.loadBalancers`).
    load_balancers: Option<&'a capo_api::extensions::LoadBalancersStatus>,
    /// The cluster's generated key pair.
    key_pair_name: Option<&'a str>,
}

impl Inputs<'_> {
    /// Fingerprint of everything a full reconcile of `osm` (whose server is `oss`) reads besides
    /// the cloud.
    pub(super) fn fingerprint(
        &self,
        osm: &OpenStackMachine,
        oss: Option<&OpenStackServer>,
    ) -> Result<Digest> {
        let Inputs {
            machine,
            osc,
            cluster,
            control_plane,
            ingress,
        } = self;
        let mut spec = osm.spec.clone();
        spec.provider_id = None;
        let mut server = oss.and_then(|o| o.status.clone()).unwrap_or_default();
        server.conditions.clear();
        let status = osc.status.as_ref();
        let ext = status.and_then(|s| s.extensions.as_ref());
        let read = ClusterStatusRead {
            network_id: status
                .and_then(|s| s.network.as_ref())
                .map(|n| n.id.as_str()),
            control_plane_security_group_id: status
                .and_then(|s| s.control_plane_security_group.as_ref())
                .map(|g| g.id.as_str()),
            worker_security_group_id: status
                .and_then(|s| s.worker_security_group.as_ref())
                .map(|g| g.id.as_str()),
            api_server_load_balancer_id: status
                .and_then(|s| s.api_server_load_balancer.as_ref())
                .map(|l| l.id.as_str()),
            load_balancers: ext.and_then(|e| e.load_balancers.as_ref()),
            key_pair_name: ext
                .and_then(|e| e.ssh.as_ref())
                .and_then(|s| s.key_pair_name.as_deref()),
        };
        let mut h = Fingerprint::new();
        h.bytes(osm.metadata.uid.as_deref().unwrap_or_default());
        h.json(&spec)?.json(&server)?;
        h.json(&oss.map(|o| o.metadata.deletion_timestamp.is_some()))?;
        h.json(&osc.spec)?.json(&read)?;
        h.json(&(
            &machine.spec.failure_domain,
            &machine.spec.bootstrap.data_secret_name,
            cluster,
            control_plane,
            ingress,
        ))?;
        Ok(h.finish())
    }
}

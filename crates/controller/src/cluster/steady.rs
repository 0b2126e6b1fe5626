//! Steady reconciles of a converged cluster cost at most two OpenStack requests.
//!
//! After a full reconcile converges, the fingerprint of what it depended on is kept in memory:
//! the spec without the endpoint it wrote itself, the status without conditions, the `capo`
//! annotations, and the [`Inputs`] the reconcile reads besides the OpenStackCluster (the
//! credentials of its identity Secret, the owner Cluster's pod CIDR). A later reconcile with the
//! same fingerprint, within the verification period, only probes the network and the API load
//! balancer ([`capo_cloud::probe`]). `Inputs` is destructured field by field in both
//! fingerprints, so a field added to it does not compile until each says whether it hashes it.

use capo_api::constants::STRICT_RULES_ANNOTATION;
use capo_api::v1beta1::{OpenStackCluster, OpenStackClusterStatus};
use capo_cloud::probe::{ProbeTargets, cluster_drift};
use capo_openstack::Session;

use crate::context::Context;
use crate::error::Result;
use crate::fingerprint::{Digest, Fingerprint};
use crate::memo::{Key, Part};

/// What the cluster reconcile reads besides the OpenStackCluster and the cloud: the one value
/// both [`super::apply::apply`] and the fingerprints read.
pub(super) struct Inputs<'a> {
    /// The credentials its identity Secret holds now
    /// ([`capo_openstack::Credentials::digest`]): an edited identity Secret (a rotated or
    /// replaced credential) brings a full reconcile at the next sync, which republishes the
    /// nodes' application credential Secret from it.
    pub credentials: [u8; 32],
    /// The owner Cluster's first pod CIDR block (Cilium's pod network).
    pub pod_cidr: Option<&'a str>,
}

impl Inputs<'_> {
    /// Fingerprint of a cluster's spec, status and annotations as far as the cloud reconcile is
    /// concerned, and of the inputs.
    pub(super) fn fingerprint(
        &self,
        osc: &OpenStackCluster,
        status: &OpenStackClusterStatus,
    ) -> Result<Digest> {
        let Inputs {
            credentials,
            pod_cidr,
        } = self;
        let mut spec = osc.spec.clone();
        spec.control_plane_endpoint = None;
        let mut status = status.clone();
        status.conditions.clear();
        let mut h = Fingerprint::new();
        h.bytes(osc.metadata.uid.as_deref().unwrap_or_default());
        h.bytes(credentials);
        h.json(&spec)?.json(&status)?;
        let mut ann: Vec<(&String, &String)> = osc
            .metadata
            .annotations
            .iter()
            .flatten()
            .filter(|(k, _)| k.contains("capo"))
            .collect();
        ann.sort();
        h.json(&ann)?.json(pod_cidr)?;
        Ok(h.finish())
    }

    /// Fingerprint of the network layer only (spec, the strict security-group rules
    /// annotation, external network, network, router, security groups, credentials): while the
    /// endpoint step waits for Octavia, requeues skip the network layer that converged moments
    /// ago.
    pub(super) fn network_fingerprint(
        &self,
        osc: &OpenStackCluster,
        status: &OpenStackClusterStatus,
    ) -> Result<Digest> {
        // The pod CIDR is read by the extension's steps only, after the network layer.
        let Inputs {
            credentials,
            pod_cidr: _,
        } = self;
        let mut spec = osc.spec.clone();
        spec.control_plane_endpoint = None;
        let strict = osc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(STRICT_RULES_ANNOTATION));
        let parts = (
            &spec,
            strict,
            &status.external_network,
            &status.network,
            &status.router,
            &status.control_plane_security_group,
            &status.worker_security_group,
            &status.bastion_security_group,
        );
        let mut h = Fingerprint::new();
        h.bytes(osc.metadata.uid.as_deref().unwrap_or_default());
        h.bytes(credentials);
        h.json(&parts)?;
        Ok(h.finish())
    }
}

/// True when the cluster converged with this fingerprint, was verified recently, and the
/// probe (at most once per `probe_interval`) found no drift. On drift the memo is dropped (the caller runs a full reconcile).
pub(super) async fn is_steady(
    ctx: &Context,
    key: &Key,
    fp: &Digest,
    status: &OpenStackClusterStatus,
    s: &Session,
) -> Result<bool> {
    let Some(c) = ctx.memo.fresh(key, Part::Object, fp) else {
        return Ok(false);
    };
    if c.probed_at.elapsed() < ctx.shared.options.probe_interval {
        return Ok(true);
    }
    let targets = ProbeTargets {
        network_id: status.network.as_ref().map(|n| n.id.as_str()),
        load_balancer_id: status
            .api_server_load_balancer
            .as_ref()
            .map(|l| l.id.as_str()),
    };
    match cluster_drift(s, targets).await? {
        None => Ok(true),
        Some(drift) => {
            tracing::info!(%drift, "drift found; full reconcile");
            ctx.memo.forget(key);
            Ok(false)
        }
    }
}

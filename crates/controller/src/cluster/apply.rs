//! The create/update path of an OpenStackCluster.

use capo_api::constants::condition_types::{API_ENDPOINT_READY, READY};
use capo_api::v1beta1::Initialization;
use capo_cloud::Progress;
use capo_openstack::Session;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use super::bastion::reconcile_bastion;
use super::endpoint::{reconcile_endpoint, reconcile_failure_domains};
use super::network::{reconcile_network, reconcile_router, reconcile_security_groups};
use super::scope::Scope;
use super::steady::{Inputs, is_steady};
use crate::capi::Cluster;
use crate::conditions::State;
use crate::error::Result;
use crate::memo::Part;

/// Reconcile an OpenStackCluster that is not being deleted (finalizer already in place).
/// `cluster`: the owner Cluster (its pod CIDR feeds the Cilium pod network).
pub(super) async fn apply(scope: &mut Scope<'_>, cluster: Option<&Cluster>) -> Result<Action> {
    let s = scope.session().await?;
    let inp = Inputs {
        credentials: s.credentials().digest(),
        pod_cidr: cluster.and_then(Cluster::pod_cidr),
    };
    let key = scope.key();
    let fp = inp.fingerprint(scope.obj, &scope.status)?;
    // A Cilium pod network still to make (say the Cluster's pod CIDR came late) is not steady.
    let pending = super::extensions::pod_network::pending(scope);
    if scope.status.ready && !pending && is_steady(scope.ctx, &key, &fp, &scope.status, &s).await? {
        return finish(scope, &s, false, &inp).await;
    }
    let net_fp = inp.network_fingerprint(scope.obj, &scope.status)?;
    if scope.ctx.memo.fresh(&key, Part::Network, &net_fp).is_none() {
        reconcile_network(scope, &s).await?;
        reconcile_router(scope, &s).await?;
        reconcile_security_groups(scope, &s).await?;
        let net_fp = inp.network_fingerprint(scope.obj, &scope.status)?;
        scope
            .ctx
            .memo
            .set_converged(&key, Part::Network, net_fp, true);
    }
    match reconcile_endpoint(scope, &s).await? {
        Progress::Done(()) => {}
        Progress::Waiting(w) => {
            return scope
                .waiting(API_ENDPOINT_READY, "LoadBalancerNotReady", w)
                .await;
        }
        Progress::Stuck(why) => {
            return scope
                .stuck(API_ENDPOINT_READY, "LoadBalancerFailed", why)
                .await;
        }
    }
    reconcile_failure_domains(scope, &s).await?;
    scope.step = super::extensions::EXTENSIONS_READY;
    match super::extensions::reconcile_cloud(scope, &s, inp.pod_cidr).await? {
        Progress::Done(()) => {}
        Progress::Waiting(w) => {
            return scope
                .waiting(super::extensions::EXTENSIONS_READY, "IngressNotReady", w)
                .await;
        }
        // Octavia does not leave ERROR by itself: the cluster is not provisioned until the
        // operator deletes the load balancer (capo then builds a new one).
        Progress::Stuck(why) => {
            let why = format!("{why}; delete it and capo creates a new one");
            return scope
                .stuck(
                    super::extensions::EXTENSIONS_READY,
                    "IngressLoadBalancerFailed",
                    why,
                )
                .await;
        }
    }
    if !scope.status.ready {
        scope
            .event(
                EventType::Normal,
                "Provisioned",
                "Reconcile",
                Some("cluster infrastructure is ready".into()),
            )
            .await;
    }
    scope.status.ready = true;
    scope.status.initialization = Some(Initialization {
        provisioned: Some(true),
    });
    scope.set(READY, State::True);
    scope.flush().await?;
    finish(scope, &s, true, &inp).await
}

/// Bastion (after Ready, as upstream: a cluster does not wait for its bastion), then record
/// convergence.
async fn finish(
    scope: &mut Scope<'_>,
    s: &Session,
    verified: bool,
    inp: &Inputs<'_>,
) -> Result<Action> {
    scope.step = super::bastion::BASTION_READY;
    let bastion = reconcile_bastion(scope, s).await?;
    scope.flush().await?;
    scope.step = super::extensions::EXTENSIONS_READY;
    super::extensions::reconcile_status(scope, s, inp.pod_cidr).await?;
    let key = scope.key();
    if !bastion.is_done() {
        return Ok(Action::requeue(scope.ctx.memo.delay(&key, "Bastion")));
    }
    let fp = inp.fingerprint(scope.obj, &scope.status)?;
    scope
        .ctx
        .memo
        .set_converged(&key, Part::Object, fp, verified);
    Ok(scope.resync_later())
}

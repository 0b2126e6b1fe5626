//! The delete path of an OpenStackCluster: wait for the cluster's machines, then remove the
//! bastion, the API floating IPs this cluster allocated, the load balancer (cascade), the
//! router, every port on the managed network and the network, and the security groups.
//! Every step is idempotent (absent = done), so a restart at any point resumes.

use capo_api::constants::CLUSTER_NAME_LABEL;
use capo_api::constants::condition_types::READY;
use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::OpenStackMachine;
use capo_cloud::loadbalancer::Progress;
use capo_cloud::loadbalancer::{self as lb};
use capo_cloud::networking;
use capo_cloud::networking::floating_ip::{self as fip, Purpose};
use capo_openstack::Session;
use kube::api::ListParams;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use super::Scope;
use super::bastion::{BastionStep, remove_bastion};
use crate::capi::Machine;
use crate::conditions::State;
use crate::error::{KubeContext, Result};

/// Delete everything of the cluster: `None` once done (the lifecycle removes the finalizer),
/// else the requeue while something is still going away.
pub(super) async fn cleanup(scope: &mut Scope<'_>, cluster: &str) -> Result<Option<Action>> {
    if let Some(waiting) = machines_left(scope, cluster).await? {
        return deleting(scope, waiting).await;
    }
    let s = scope.session().await?;
    let servers: Api<OpenStackServer> =
        Api::namespaced(scope.ctx.client.clone(), &scope.owner.namespace);
    let name = capo_api::names::bastion_server_name(&scope.owner.name);
    let bastion = servers
        .get_opt(&name)
        .await
        .kctx(|| format!("get OpenStackServer {name}"))?;
    if remove_bastion(scope, &s, &servers, bastion).await? == BastionStep::Wait {
        return deleting(scope, "waiting for the bastion server to be deleted".into()).await;
    }
    let spec = &scope.obj.spec;
    let requested = spec.bastion.as_ref().and_then(|b| b.floating_ip.as_deref());
    fip::delete_floating_ips(&s, &scope.owner, Purpose::Bastion, requested).await?;
    let requested = spec.api_server_floating_ip.as_deref();
    fip::delete_floating_ips(&s, &scope.owner, Purpose::ApiServer, requested).await?;
    if let Progress::NotReady(why) | Progress::Failed(why) = delete_load_balancer(scope, &s).await?
    {
        return deleting(scope, why).await;
    }
    if let Progress::NotReady(why) | Progress::Failed(why) =
        super::extensions::cleanup(scope, &s).await?
    {
        return deleting(scope, why).await;
    }
    let spec = &scope.obj.spec;
    networking::delete_router(
        &s,
        &scope.owner,
        spec,
        scope.status.network.as_ref(),
        scope.status.router.as_ref(),
    )
    .await?;
    networking::delete_network(&s, &scope.owner, spec, scope.status.network.as_ref()).await?;
    networking::delete_security_groups(&s, &scope.owner).await?;
    scope.ctx.forget_converged(&scope.key());
    scope
        .event(
            EventType::Normal,
            "Deleted",
            "Delete",
            Some("cluster infrastructure deleted".into()),
        )
        .await;
    Ok(None)
}

async fn delete_load_balancer(scope: &Scope<'_>, s: &Session) -> Result<Progress> {
    let recorded = scope
        .status
        .api_server_load_balancer
        .as_ref()
        .map(|l| l.id.as_str())
        .filter(|i| !i.is_empty());
    Ok(lb::delete_api_load_balancer(s, &scope.owner, recorded).await?)
}

/// Machines of the cluster that still exist (Cluster API Machines and our OpenStackMachines).
async fn machines_left(scope: &Scope<'_>, cluster: &str) -> Result<Option<String>> {
    if cluster.is_empty() {
        return Ok(None);
    }
    let lp = ListParams::default().labels(&format!("{CLUSTER_NAME_LABEL}={cluster}"));
    let ns = &scope.owner.namespace;
    let machines = Api::<Machine>::namespaced(scope.ctx.client.clone(), ns)
        .list_metadata(&lp)
        .await
        .kctx(|| format!("list Machines of cluster {cluster}"))?;
    let infra = Api::<OpenStackMachine>::namespaced(scope.ctx.client.clone(), ns)
        .list_metadata(&lp)
        .await
        .kctx(|| format!("list OpenStackMachines of cluster {cluster}"))?;
    let n = machines.items.len();
    let m = infra.items.len();
    if n + m == 0 {
        return Ok(None);
    }
    let names: Vec<String> = infra.items.iter().take(5).map(|o| o.name_any()).collect();
    Ok(Some(format!(
        "waiting for {n} Machines and {m} OpenStackMachines to be deleted ({})",
        names.join(", ")
    )))
}

async fn deleting(scope: &mut Scope<'_>, why: String) -> Result<Option<Action>> {
    scope.set(READY, State::info("Deleting", why));
    scope.flush().await?;
    let delay = scope.ctx.pending_delay(&scope.key(), "Deleting");
    Ok(Some(Action::requeue(delay)))
}

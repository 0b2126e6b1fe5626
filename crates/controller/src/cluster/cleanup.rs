//! The delete path of an OpenStackCluster: wait for the cluster's machines, then remove the
//! bastion, what the workload's cloud-provider-openstack left ([`super::cloud_provider`]), the
//! API floating IPs this cluster allocated, the load balancer (cascade), the router, every
//! port on the managed network and the network, and the security groups.
//! Every step is idempotent (absent = done), so a restart at any point resumes.

use capo_api::constants::CLUSTER_NAME_LABEL;
use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::OpenStackMachine;
use capo_cloud::Progress;
use capo_cloud::loadbalancer::{self as lb};
use capo_cloud::networking;
use capo_cloud::networking::floating_ip::{self as fip, Purpose};
use capo_openstack::Session;
use kube::api::ListParams;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use super::bastion::remove_bastion;
use super::scope::Scope;
use crate::capi::Machine;
use crate::error::{KubeContext, Result};
use crate::stored::Stored;

/// Delete everything of the cluster (Done once nothing is left).
pub(super) async fn cleanup(scope: &mut Scope<'_>, cluster: &str) -> Result<Progress> {
    if let Some(waiting) = machines_left(scope, cluster).await? {
        return Ok(Progress::waiting("machines", "", waiting));
    }
    let s = scope.session().await?;
    let servers: Api<OpenStackServer> =
        Api::namespaced(scope.ctx.shared.client.clone(), &scope.owner.namespace);
    let name = capo_api::names::bastion_server_name(&scope.owner.name);
    // Read live on the way out: what is deleted next depends on the bastion being gone.
    let bastion = servers
        .get_opt(&name)
        .await
        .kctx(|| format!("get OpenStackServer {name}"))?;
    let progress = remove_bastion(scope, &s, &servers, bastion).await?;
    if !progress.is_done() {
        return Ok(progress);
    }
    let progress = super::cloud_provider::sweep(scope, &s, cluster).await?;
    if !progress.is_done() {
        return Ok(progress);
    }
    let spec = &scope.obj.spec;
    let requested = spec.bastion.as_ref().and_then(|b| b.floating_ip.as_deref());
    fip::delete_floating_ips(&s, &scope.owner, Purpose::Bastion, requested).await?;
    let requested = spec.api_server_floating_ip.as_deref();
    fip::delete_floating_ips(&s, &scope.owner, Purpose::ApiServer, requested).await?;
    let progress = delete_load_balancer(scope, &s).await?;
    if !progress.is_done() {
        return Ok(progress);
    }
    let progress = super::extensions::cleanup(scope, &s).await?;
    if !progress.is_done() {
        return Ok(progress);
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
    scope
        .event(
            EventType::Normal,
            "Deleted",
            "Delete",
            Some("cluster infrastructure deleted".into()),
        )
        .await;
    Ok(Progress::Done(()))
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
    let machines = Api::<Machine>::namespaced(scope.ctx.shared.client.clone(), ns)
        .list_metadata(&lp)
        .await
        .kctx(|| format!("list Machines of cluster {cluster}"))?;
    let infra = Api::<Stored<OpenStackMachine>>::namespaced(scope.ctx.shared.client.clone(), ns)
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

//! The BA/ACP extension of an OpenStackCluster (`spec.extensions`): everything Ansible-based
//! bootstrap and control-plane providers need from the infrastructure. With no
//! `spec.extensions`, none of this runs and the cluster behaves exactly as upstream's.
//!
//! - [`vips`]: keepalived VIPs without Octavia: a reserved Neutron port per VIP (control plane,
//!   ingress) holding the address, the floating IP on that port (so scaling and rolling
//!   upgrades never move it), and the control-plane endpoint pointing at it.
//! - [`ssh`]: an ed25519 key pair generated once per cluster into the `kubernetes.io/ssh-auth`
//!   Secret `<cluster>-ssh`, its public key imported as a Nova key pair for machines that name
//!   none.
//! - [`app_credential`]: a Keystone application credential per cluster, in the Secret
//!   `<cluster>-app-credential` (`clouds.yaml`) named by `status.extensions.openStack.appCredential`.
//! - [`pod_network`]: with `kubeNetworkPlugin: cilium`, a pod network and subnet (the Cluster's
//!   pod CIDR) on the cluster router and an allow-all security group for the pods.
//! - [`vars`]: `status.extensions`: one field per variable of the contract (project, subnet,
//!   security groups, VIPs, catalog endpoint hosts, region, NTP, management VIP).
//! - [`ansible`]: the Secret `<cluster>-ansible` with `vars.yaml` and `inventory.yaml`, rendered
//!   deterministically from status and the cluster's OpenStackMachines, written only when its
//!   bytes change; the `ExtensionsReady` condition names what is not resolved yet.

pub(super) mod ansible;
pub(super) mod app_credential;
pub(super) mod ingress_lb;
pub(in crate::cluster) mod pod_network;
pub(super) mod shared;
pub(super) mod ssh;
pub(super) mod vars;
pub(super) mod vips;

use capo_api::extensions::LOAD_BALANCER_MODE_KEEPALIVED;
use capo_cloud::Progress;
use capo_openstack::Session;

use super::scope::Scope;
use crate::error::Result;
use shared::{cluster_name, spec};

/// The condition the extension reports (and the step its reconcile runs under).
pub(super) use shared::EXTENSIONS_READY;

/// Cloud-side steps of a full reconcile (after the endpoint): SSH key pair, application
/// credential, Cilium's pod network, ingress VIP. `Waiting` while the ingress load balancer is
/// being built. `pod_cidr`: the Cluster's first pod CIDR block.
pub(super) async fn reconcile_cloud(
    scope: &mut Scope<'_>,
    s: &Session,
    pod_cidr: Option<&str>,
) -> Result<Progress> {
    if spec(scope.obj).is_none() {
        return Ok(Progress::Done(()));
    }
    ssh::reconcile_ssh(scope, s).await?;
    app_credential::reconcile(scope, s).await?;
    pod_network::reconcile(scope, s, pod_cidr).await?;
    let progress = reconcile_ingress(scope, s).await?;
    scope.flush().await?;
    Ok(progress)
}

/// Ingress VIP: keepalived mode ([`vips`]: port + optional floating IP) or Octavia mode
/// ([`ingress_lb`]); `Progress::Waiting` while Octavia works.
async fn reconcile_ingress(scope: &mut Scope<'_>, s: &Session) -> Result<Progress> {
    let Some(ingress) = spec(scope.obj)
        .and_then(|e| e.load_balancers.as_ref())
        .and_then(|l| l.ingress.clone())
    else {
        return Ok(Progress::Done(()));
    };
    if ingress.mode != LOAD_BALANCER_MODE_KEEPALIVED {
        return ingress_lb::reconcile(scope, s, &ingress).await;
    }
    let v = vips::ensure_port(scope, s, true, ingress.vip_address.as_deref()).await?;
    if ingress.floating_ip == Some(true) {
        let port_id = v.port_id.clone().unwrap_or_default();
        vips::ingress_floating_ip(scope, s, v, &port_id).await?;
    }
    Ok(Progress::Done(()))
}

/// Kubernetes-side steps of every reconcile (also steady ones): status variables, the
/// Ansible Secret, ExtensionsReady.
pub(super) async fn reconcile_status(
    scope: &mut Scope<'_>,
    s: &Session,
    pod_cidr: Option<&str>,
) -> Result<()> {
    if spec(scope.obj).is_none() {
        return Ok(());
    }
    scope.state.index_inventory(
        &scope.owner.namespace,
        &cluster_name(scope.obj),
        &scope.owner.name,
    );
    vars::fill_status(scope, s).await?;
    ansible::reconcile_secret(scope).await?;
    pod_network::report(scope, pod_cidr);
    app_credential::report(scope, s);
    scope.flush().await
}

/// Delete what the extension created (ingress load balancer and floating IP, VIP ports, pod
/// network, key pair, Secrets); `Progress::Waiting` while Octavia deletes the ingress load balancer.
pub(super) async fn cleanup(scope: &mut Scope<'_>, s: &Session) -> Result<Progress> {
    // The ingress floating IP and load balancer first, then the VIP ports.
    vips::delete_ingress_floating_ip(scope, s).await?;
    let progress = ingress_lb::cleanup(scope, s).await?;
    if !progress.is_done() {
        return Ok(progress);
    }
    vips::delete_ports(scope, s).await?;
    pod_network::cleanup(scope, s).await?;
    ssh::cleanup(scope, s).await?;
    app_credential::cleanup(scope, s).await?;
    ansible::cleanup(scope).await?;
    Ok(Progress::Done(()))
}

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
pub(super) mod ssh;
pub(super) mod vars;
pub(super) mod vips;

use capo_api::constants::{CLUSTER_NAME_LABEL, CLUSTERCTL_MOVE_LABEL};
use capo_api::extensions::OpenStackClusterExtensions;
use capo_api::v1beta1::OpenStackCluster;
use capo_cloud::Progress;
use capo_openstack::Session;
use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use super::Scope;
use crate::context::FIELD_MANAGER;
use crate::error::{Error, KubeContext, Result};

/// Condition reporting the extension's variables.
pub const EXTENSIONS_READY: &str = "ExtensionsReady";

/// The extension spec, when the cluster has one.
pub(super) fn spec(osc: &OpenStackCluster) -> Option<&OpenStackClusterExtensions> {
    osc.spec.extensions.as_ref()
}

/// Name of the Cluster API Cluster this OpenStackCluster belongs to, else its own name.
pub(super) fn cluster_name(osc: &OpenStackCluster) -> String {
    osc.cluster_name().unwrap_or_else(|| osc.name_any())
}

/// Labels of the Secrets this extension writes: the cluster's name and clusterctl move.
pub(super) fn secret_labels(osc: &OpenStackCluster) -> BTreeMap<String, String> {
    [
        (CLUSTER_NAME_LABEL.to_owned(), cluster_name(osc)),
        (CLUSTERCTL_MOVE_LABEL.to_owned(), String::new()),
    ]
    .into_iter()
    .collect()
}

/// Server-side apply of the Opaque Secret `name` holding `data`, owned by the
/// OpenStackCluster and labelled like every Secret of the extension. Serialization errors
/// name the type only, never a value.
pub(super) async fn apply_owned_secret(
    scope: &Scope<'_>,
    api: &Api<Secret>,
    name: &str,
    data: BTreeMap<String, ByteString>,
) -> Result<()> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(scope.owner.namespace.clone()),
            labels: Some(secret_labels(scope.obj)),
            owner_references: scope.obj.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(data),
        ..Default::default()
    };
    let mut body = serde_json::to_value(&secret).map_err(|source| Error::Serialize {
        what: "Secret",
        source,
    })?;
    body["apiVersion"] = "v1".into();
    body["kind"] = "Secret".into();
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await
    .kctx(|| format!("apply Secret {name}"))?;
    Ok(())
}

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
    let progress = vips::reconcile_ingress(scope, s).await?;
    scope.flush().await?;
    Ok(progress)
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
    let progress = vips::cleanup(scope, s).await?;
    if !progress.is_done() {
        return Ok(progress);
    }
    pod_network::cleanup(scope, s).await?;
    ssh::cleanup(scope, s).await?;
    app_credential::cleanup(scope, s).await?;
    ansible::cleanup(scope).await?;
    Ok(Progress::Done(()))
}

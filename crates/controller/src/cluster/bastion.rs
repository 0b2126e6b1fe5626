//! The bastion: an OpenStackServer `<cluster>-bastion` owned by the OpenStackCluster, plus its
//! floating IP.
//!
//! The server is recreated only when the operator changes `spec.bastion` (its `spec` or
//! `availabilityZone`): the hash of those fields is kept in an annotation on the
//! OpenStackServer. Derived inputs (network or security-group IDs) moving do not recreate it
//! (upstream recreates on any difference of the derived spec). A bastion created by upstream
//! has no such annotation; it is adopted by writing the hash.

use std::collections::BTreeMap;

use capo_api::constants::CLUSTER_NAME_LABEL;
use capo_api::names::bastion_server_name;
use capo_api::v1alpha1::{OpenStackServer, OpenStackServerStatus};
use capo_api::v1beta1::{Bastion, BastionStatus};
use capo_api::validation::Cidr;
use capo_cloud::Progress;
use capo_cloud::networking::floating_ip::{self as fip, FipTarget, Purpose};
use capo_openstack::Session;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use sha2::{Digest, Sha256};

use super::scope::Scope;
use crate::conditions::State;
use crate::error::{Error, KubeContext, Result};
use crate::server_spec::{Derivation, server_spec, v1beta1_status_parts};

/// Annotation on the bastion OpenStackServer: hash of the operator's bastion spec.
pub const BASTION_HASH_ANNOTATION: &str = "infrastructure.cluster.x-k8s.io/capo-bastion-spec-hash";

/// Condition reporting the bastion (only present when a bastion is configured).
pub const BASTION_READY: &str = "BastionReady";

fn enabled(b: Option<&Bastion>) -> bool {
    b.is_some_and(|b| b.enabled != Some(false) && b.spec.is_some())
}

fn spec_hash(b: &Bastion) -> Result<String> {
    let v = serde_json::to_vec(&(&b.spec, &b.availability_zone)).map_err(|source| {
        Error::Serialize {
            what: "bastion spec",
            source,
        }
    })?;
    Ok(format!("{:x}", Sha256::digest(v)))
}

/// Reconcile the bastion (create, replace on operator change, delete when disabled) and copy
/// its state into `status.bastion`.
pub(super) async fn reconcile_bastion(scope: &mut Scope<'_>, s: &Session) -> Result<Progress> {
    let api: Api<OpenStackServer> =
        Api::namespaced(scope.ctx.shared.client.clone(), &scope.owner.namespace);
    let name = bastion_server_name(&scope.owner.name);
    let existing = scope
        .ctx
        .shared
        .informers
        .openstack_servers
        .get(&scope.owner.namespace, &name)
        .await?;
    let bastion = scope.obj.spec.bastion.clone();
    let Some(b) = bastion.filter(|b| enabled(Some(b))) else {
        return remove_bastion(scope, s, &api, existing).await;
    };
    let hash = spec_hash(&b)?;
    let Some(server) = existing else {
        create_bastion(scope, &api, &name, &b, &hash).await?;
        return Ok(waiting(scope, "Creating", "bastion server requested"));
    };
    if server.metadata.deletion_timestamp.is_some() {
        return Ok(waiting(
            scope,
            "Replacing",
            "previous bastion server is being deleted",
        ));
    }
    match server.annotations().get(BASTION_HASH_ANNOTATION) {
        None => {
            let patch =
                serde_json::json!({"metadata": {"annotations": {BASTION_HASH_ANNOTATION: hash}}});
            crate::status::merge_patch(&api, &name, patch).await?;
        }
        Some(h) if *h != hash => {
            tracing::info!(server = %name, "bastion spec changed; replacing the bastion");
            api.delete(&name, &DeleteParams::background())
                .await
                .kctx(|| format!("delete OpenStackServer {name}"))?;
            return Ok(waiting(scope, "Replacing", "bastion spec changed"));
        }
        Some(_) => {}
    }
    let st = server.status.clone().unwrap_or_default();
    let cluster_cidrs: Vec<String> = (scope.status.network.iter())
        .flat_map(|n| n.subnets.iter().map(|sn| sn.cidr.clone()))
        .collect();
    let mut bs = bastion_status(&name, &server, &st, &cluster_cidrs)?;
    let recorded = scope.status.bastion.clone().unwrap_or_default();
    // The recorded floating IP is kept only while it sits on this same server; a replaced
    // bastion gets it associated with its new port below.
    if recorded.id == bs.id {
        bs.floating_ip = recorded.floating_ip.clone();
    }
    if !st.ready {
        scope.status.bastion = Some(bs);
        let state = st.instance_state.as_deref().unwrap_or("being created");
        return Ok(waiting(
            scope,
            "Waiting",
            &format!("bastion server is {state}"),
        ));
    }
    if bs.floating_ip.is_none() && scope.obj.spec.disable_external_network != Some(true) {
        let fip = bastion_floating_ip(scope, s, &b, &st, recorded.floating_ip.as_deref()).await?;
        bs.floating_ip = Some(fip);
    }
    scope.status.bastion = Some(bs);
    scope.set(BASTION_READY, State::True);
    Ok(Progress::Done(()))
}

/// The bastion server as the cluster's (v1beta1) status records it. Its `ip` is its first
/// fixed address on the cluster network (in one of `cluster_cidrs`, the cluster subnets'), as
/// upstream reads it from that network, IPv4 first; else, with no such address, its first fixed
/// address.
fn bastion_status(
    name: &str,
    server: &OpenStackServer,
    st: &OpenStackServerStatus,
    cluster_cidrs: &[String],
) -> Result<BastionStatus> {
    let (resolved, resources) = v1beta1_status_parts(st)?;
    Ok(BastionStatus {
        floating_ip: None,
        id: st.instance_id.clone(),
        ip: bastion_ip(&st.addresses, cluster_cidrs),
        name: Some(name.to_owned()),
        resolved,
        resources,
        ssh_key_name: Some(server.spec.ssh_key_name.clone()).filter(|k| !k.is_empty()),
        state: st.instance_state.clone(),
    })
}

/// [`bastion_status`]'s `ip`.
fn bastion_ip(
    addresses: &[capo_api::v1beta2::MachineAddress],
    cluster_cidrs: &[String],
) -> Option<String> {
    let cidrs: Vec<Cidr> = cluster_cidrs
        .iter()
        .filter_map(|c| Cidr::parse(c))
        .collect();
    let on_cluster = |a: &&capo_api::v1beta2::MachineAddress| {
        a.address
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| cidrs.iter().any(|c| c.contains(ip)))
    };
    let internal = || addresses.iter().filter(|a| a.r#type == "InternalIP");
    internal()
        .find(on_cluster)
        .or_else(|| internal().next())
        .map(|a| a.address.clone())
}

async fn bastion_floating_ip(
    scope: &mut Scope<'_>,
    s: &Session,
    b: &Bastion,
    st: &OpenStackServerStatus,
    recorded_ip: Option<&str>,
) -> Result<String> {
    let Some(ext) = scope.status.external_network.clone() else {
        return Err(Error::InvalidSpec(
            "the bastion floating IP needs an external network".into(),
        ));
    };
    let Some(port) = st.resources.as_ref().and_then(|r| r.ports.first()) else {
        return Err(Error::InvalidSpec(
            "the bastion server has no port for its floating IP".into(),
        ));
    };
    let target = FipTarget {
        purpose: Purpose::Bastion,
        requested: b.floating_ip.as_deref(),
        external_network_id: &ext.id,
        port_id: &port.id,
        recorded_ip,
        named_ip: None,
    };
    let found = fip::ensure_floating_ip(s, &scope.owner, &target).await?;
    fip::associate_floating_ip(s, &found, &port.id).await?;
    Ok(found.ip)
}

async fn create_bastion(
    scope: &mut Scope<'_>,
    api: &Api<OpenStackServer>,
    name: &str,
    b: &Bastion,
    hash: &str,
) -> Result<()> {
    let Some(machine_spec) = b.spec.as_ref() else {
        return Ok(());
    };
    let ssh_key = scope
        .status
        .extensions
        .as_ref()
        .and_then(|e| e.ssh.as_ref())
        .and_then(|s| s.key_pair_name.clone());
    // With the extension's key, the Ansible providers log in as root through the bastion
    // (`extensions::ssh` writes this user data). Only new bastions get it: a bastion is
    // recreated when the operator changes spec.bastion, never for derived inputs.
    let user_data = ssh_key
        .as_ref()
        .map(|_| capo_api::names::bastion_user_data_secret_name(&scope.owner.name));
    let d = Derivation {
        cluster_identity: Some(&scope.obj.spec.identity_ref),
        cluster_tags: &scope.obj.spec.tags,
        availability_zone: b.availability_zone.as_deref(),
        user_data_secret: user_data.as_deref(),
        cluster_network_id: scope.status.network.as_ref().map(|n| n.id.as_str()),
        default_security_group_id: scope
            .status
            .bastion_security_group
            .as_ref()
            .map(|g| g.id.as_str()),
        cluster_disables_port_security: scope.obj.spec.disable_port_security == Some(true),
        primary_subnet: scope.obj.spec.primary_subnet.as_ref(),
        cluster_subnets: &scope.obj.spec.subnets,
        allowed_address_pairs: &[],
        default_ssh_key_name: ssh_key.as_deref(),
    };
    let spec = server_spec(machine_spec, &d)
        .map_err(|e| Error::InvalidSpec(format!("spec.bastion.{e}")))?;
    let cluster = super::extensions::shared::cluster_name(scope.obj);
    let server = OpenStackServer {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(scope.owner.namespace.clone()),
            labels: Some(BTreeMap::from([(CLUSTER_NAME_LABEL.to_owned(), cluster)])),
            annotations: Some(BTreeMap::from([(
                BASTION_HASH_ANNOTATION.to_owned(),
                hash.to_owned(),
            )])),
            owner_references: scope.obj.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        spec,
        status: None,
    };
    match api.create(&PostParams::default(), &server).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(ae)) if ae.code == 409 => Ok(()),
        Err(e) => Err(Error::kube(format!("create OpenStackServer {name}"), e)),
    }
}

/// Bastion disabled or removed: delete the server, then the floating IP this cluster
/// allocated for it (a requested address is the user's and stays).
pub(super) async fn remove_bastion(
    scope: &mut Scope<'_>,
    s: &Session,
    api: &Api<OpenStackServer>,
    existing: Option<OpenStackServer>,
) -> Result<Progress> {
    if let Some(server) = existing {
        if server.metadata.deletion_timestamp.is_none() {
            match api
                .delete(&server.name_any(), &DeleteParams::background())
                .await
            {
                // Read from the store, which can be one event behind: already gone.
                Err(kube::Error::Api(ae)) if ae.code == 404 => {}
                other => {
                    other.kctx(|| format!("delete OpenStackServer {}", server.name_any()))?;
                }
            }
        }
        return Ok(Progress::waiting(
            "bastion server",
            "",
            "waiting for the bastion server to be deleted",
        ));
    }
    // Only when a bastion existed: a steady cluster without bastion makes no request here.
    if scope.status.bastion.is_some() {
        let requested = scope
            .obj
            .spec
            .bastion
            .as_ref()
            .and_then(|b| b.floating_ip.as_deref());
        fip::delete_floating_ips(s, &scope.owner, Purpose::Bastion, requested).await?;
    }
    scope.status.bastion = None;
    crate::conditions::remove(&mut scope.status.conditions, BASTION_READY);
    Ok(Progress::Done(()))
}

/// The bastion is not ready yet: BastionReady says why.
fn waiting(scope: &mut Scope<'_>, reason: &str, why: &str) -> Progress {
    scope.set(BASTION_READY, State::info(reason, why));
    Progress::waiting("bastion", reason, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use capo_api::v1beta2::MachineAddress;

    fn addr(t: &str, a: &str) -> MachineAddress {
        MachineAddress {
            r#type: t.into(),
            address: a.into(),
        }
    }

    #[test]
    fn bastion_ip_is_its_first_address_on_the_cluster_network() {
        let cluster = ["10.6.0.0/24".to_owned(), "fd00:6::/64".to_owned()];
        // Another network sorts first by name: its address is not the bastion's IP.
        let addresses = [
            addr("InternalIP", "192.168.9.4"),
            addr("InternalIP", "10.6.0.7"),
            addr("InternalIP", "fd00:6::7"),
            addr("ExternalIP", "172.24.4.5"),
        ];
        assert_eq!(
            bastion_ip(&addresses, &cluster).as_deref(),
            Some("10.6.0.7")
        );
        // No cluster subnet known (or no address on it): the first fixed address.
        assert_eq!(bastion_ip(&addresses, &[]).as_deref(), Some("192.168.9.4"));
        assert_eq!(
            bastion_ip(&[addr("ExternalIP", "172.24.4.5")], &cluster),
            None
        );
    }
}

//! The Secret `<cluster>-ansible` (`vars.yaml`, `inventory.yaml`) and the `ExtensionsReady`
//! condition. Rendering is deterministic, so the Secret is written only when a machine comes,
//! goes or changes address, or a variable changes: no update storms on steady reconciles.

use std::collections::BTreeMap;

use capo_ansible::{
    ClusterFacts, INVENTORY_KEY, VARS_KEY, render_inventory, render_vars, unresolved,
};
use capo_api::constants::CLUSTER_NAME_LABEL;
use capo_api::extensions::AnsibleStatus;
use capo_api::names::ansible_secret_name;
use capo_api::v1beta1::OpenStackMachine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::super::scope::Scope;
use super::shared::{EXTENSIONS_READY, apply_owned_secret, cluster_name};
use crate::conditions::State;
use crate::error::{Error, KubeContext, Result};

/// The cluster's OpenStackMachines (by the cluster-name label), sorted by name.
async fn machines(scope: &Scope<'_>) -> Result<Vec<OpenStackMachine>> {
    let cluster = cluster_name(scope.obj);
    let list = scope
        .ctx
        .shared
        .informers
        .openstack_machines
        .list_labelled(&scope.owner.namespace, CLUSTER_NAME_LABEL, &cluster)
        .await?;
    Ok(list.iter().map(|m| m.0.clone()).collect())
}

/// Render and write the Secret when its content changed; set ExtensionsReady.
pub(super) async fn reconcile_secret(scope: &mut Scope<'_>) -> Result<()> {
    let name = ansible_secret_name(&scope.owner.name);
    scope
        .status
        .extensions
        .get_or_insert_with(Default::default)
        .ansible = Some(AnsibleStatus {
        secret_name: Some(name.clone()),
    });
    let machines = machines(scope).await?;
    let mut view = scope.obj.clone();
    view.status = Some(scope.status.clone());
    let facts = ClusterFacts::from_api(&view, &machines);
    let render_err =
        |e: capo_ansible::Error| Error::InvalidSpec(format!("render the Ansible inventory: {e}"));
    let vars = render_vars(&facts).map_err(render_err)?;
    let inventory = render_inventory(&facts).map_err(render_err)?;
    write_secret(scope, &name, vars, inventory).await?;
    let missing: Vec<String> = unresolved(&facts)
        .into_iter()
        .map(|(var, why)| format!("{var}: {why}"))
        .collect();
    let state = if missing.is_empty() {
        State::True
    } else {
        State::info(
            "VariablesUnresolved",
            format!("unresolved: {}", missing.join("; ")),
        )
    };
    scope.set(EXTENSIONS_READY, state);
    Ok(())
}

async fn write_secret(
    scope: &Scope<'_>,
    name: &str,
    vars: String,
    inventory: String,
) -> Result<()> {
    let api: Api<Secret> = Api::namespaced(scope.ctx.shared.client.clone(), &scope.owner.namespace);
    let data = BTreeMap::from([
        (VARS_KEY.to_owned(), ByteString(vars.into_bytes())),
        (INVENTORY_KEY.to_owned(), ByteString(inventory.into_bytes())),
    ]);
    let current = api
        .get_opt(name)
        .await
        .kctx(|| format!("get Secret {name}"))?;
    if current.as_ref().and_then(|c| c.data.as_ref()) == Some(&data) {
        return Ok(());
    }
    apply_owned_secret(scope, &api, name, data).await?;
    tracing::info!(secret = %name, "Ansible inventory and variables updated");
    Ok(())
}

/// Delete the Ansible Secret.
pub(super) async fn cleanup(scope: &mut Scope<'_>) -> Result<()> {
    super::ssh::delete_secret(scope, &ansible_secret_name(&scope.owner.name)).await
}

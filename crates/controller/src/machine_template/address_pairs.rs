//! A template's ports' `allowedAddressPairs` carried to the machines made from it, as
//! upstream's v0.15 line does (the only field of a template that may change): each
//! OpenStackMachine cloned from the template (Cluster API's `cloned-from` annotations) gets
//! the template's pairs on its ports, and records them in upstream's annotation, so a later
//! reconcile, or upstream after a move back, sees them applied. The machine controller then
//! carries them to its OpenStackServer, and the server controller to the Neutron ports.
//!
//! Only Kubernetes is read and written here. A template without ports (machines on the
//! cluster network alone) has nothing to carry; a machine whose ports are not the template's
//! (another count) is left alone; a machine being deleted too.

use capo_api::constants::CLUSTER_NAME_LABEL;
use capo_api::v1beta1::{OpenStackMachine, OpenStackMachineTemplate};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};

use crate::error::{Error, Result};

/// Upstream's record, on a machine, of the template pairs last applied to it (JSON: one list
/// of pairs per port).
pub const APPLIED_ANNOTATION: &str = "infrastructure.cluster.x-k8s.io/osmt-allowed-address-pairs";
/// Cluster API's record of the template an infrastructure machine was cloned from.
const CLONED_FROM_NAME: &str = "cluster.x-k8s.io/cloned-from-name";
/// ... and of its group and kind.
const CLONED_FROM_GROUP_KIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";
/// The group and kind of an OpenStackMachineTemplate as Cluster API writes them.
const TEMPLATE_GROUP_KIND: &str = "OpenStackMachineTemplate.infrastructure.cluster.x-k8s.io";

/// The template's pairs, one list per port, as recorded in [`APPLIED_ANNOTATION`]; None for a
/// template without ports (nothing to carry).
fn desired(osmt: &OpenStackMachineTemplate) -> Result<Option<String>> {
    if osmt.spec.template.spec.ports.is_empty() {
        return Ok(None);
    }
    let pairs: Vec<_> = osmt
        .spec
        .template
        .spec
        .ports
        .iter()
        .map(|p| &p.allowed_address_pairs)
        .collect();
    serde_json::to_string(&pairs)
        .map(Some)
        .map_err(|e| Error::InvalidSpec(format!("spec.template.spec.ports: {e}")))
}

/// Whether `osm` was cloned from template `name`.
fn cloned_from(osm: &OpenStackMachine, name: &str) -> bool {
    let a = osm.annotations();
    a.get(CLONED_FROM_NAME).is_some_and(|n| n == name)
        && a.get(CLONED_FROM_GROUP_KIND)
            .is_some_and(|g| g == TEMPLATE_GROUP_KIND)
}

/// The machine's spec and annotation once the template's pairs are applied, or None when it
/// has them already (or cannot take them).
fn patch_for(
    osm: &OpenStackMachine,
    osmt: &OpenStackMachineTemplate,
    applied: &str,
) -> Option<serde_json::Value> {
    let template_ports = &osmt.spec.template.spec.ports;
    if osm
        .annotations()
        .get(APPLIED_ANNOTATION)
        .is_some_and(|a| a == applied)
        || osm.metadata.deletion_timestamp.is_some()
        || osm.spec.ports.len() != template_ports.len()
    {
        return None;
    }
    let mut ports = osm.spec.ports.clone();
    for (p, t) in ports.iter_mut().zip(template_ports) {
        p.allowed_address_pairs = t.allowed_address_pairs.clone();
    }
    // The resource version makes a concurrent change fail (409) rather than be overwritten.
    Some(serde_json::json!({
        "metadata": {
            "resourceVersion": osm.resource_version(),
            "annotations": {APPLIED_ANNOTATION: applied},
        },
        "spec": {"ports": ports},
    }))
}

/// Carry the template's pairs to the machines of `cluster` cloned from it; returns how many
/// were updated. One list of the cluster's machines, only for a template with ports.
pub async fn carry(
    client: &Client,
    osmt: &OpenStackMachineTemplate,
    cluster: &str,
) -> Result<usize> {
    let Some(applied) = desired(osmt)? else {
        return Ok(0);
    };
    let ns = osmt.namespace().unwrap_or_default();
    let name = osmt.name_any();
    let api: Api<OpenStackMachine> = Api::namespaced(client.clone(), &ns);
    let lp = ListParams::default().labels(&format!("{CLUSTER_NAME_LABEL}={cluster}"));
    let machines = api.list(&lp).await.map_err(|e| {
        Error::kube(
            format!("list the OpenStackMachines of cluster {cluster}"),
            e,
        )
    })?;
    let mut updated = 0;
    for osm in machines.items.iter().filter(|m| cloned_from(m, &name)) {
        let Some(patch) = patch_for(osm, osmt, &applied) else {
            continue;
        };
        let machine = osm.name_any();
        tracing::info!(template = %name, %machine, "carrying the template's allowed address pairs to the machine");
        api.patch(&machine, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| Error::kube(format!("update OpenStackMachine {machine}"), e))?;
        updated += 1;
    }
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(pairs: serde_json::Value) -> OpenStackMachineTemplate {
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackMachineTemplate",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {"template": {"spec": {"flavor": "f", "image": {"id": "i"},
                "ports": [{"allowedAddressPairs": pairs}]}}},
        }))
        .unwrap()
    }

    fn machine(annotations: serde_json::Value, ports: serde_json::Value) -> OpenStackMachine {
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackMachine",
            "metadata": {"name": "m", "namespace": "ns", "resourceVersion": "7",
                "annotations": annotations},
            "spec": {"flavor": "f", "image": {"id": "i"}, "ports": ports},
        }))
        .unwrap()
    }

    /// Upstream's TestReconcileAllowedAddressPairs cases that stop before a port update: the
    /// annotation already says the template's pairs, the machine is not the template's, or its
    /// ports are not the template's; and the one that updates: pairs and annotation written.
    #[test]
    fn a_machine_of_the_template_takes_its_pairs_once() {
        let t = template(json!([{"ipAddress": "10.0.0.9"}]));
        let applied = desired(&t).unwrap().unwrap();
        assert_eq!(applied, r#"[[{"ipAddress":"10.0.0.9"}]]"#);
        // "no ports in template - skip": nothing to carry, no machine listed.
        let mut bare = t.clone();
        bare.spec.template.spec.ports.clear();
        assert_eq!(desired(&bare).unwrap(), None);
        let ours = json!({CLONED_FROM_NAME: "t", CLONED_FROM_GROUP_KIND: TEMPLATE_GROUP_KIND});
        let m = machine(ours.clone(), json!([{"description": "d"}]));
        assert!(cloned_from(&m, "t"));
        let patch = patch_for(&m, &t, &applied).unwrap();
        assert_eq!(
            patch,
            json!({
                "metadata": {"resourceVersion": "7", "annotations": {APPLIED_ANNOTATION: applied}},
                "spec": {"ports": [{"description": "d", "allowedAddressPairs": [{"ipAddress": "10.0.0.9"}]}]},
            })
        );
        let mut done = ours.clone();
        done[APPLIED_ANNOTATION] = json!(applied);
        assert_eq!(patch_for(&machine(done, json!([{}])), &t, &applied), None);
        assert_eq!(
            patch_for(&machine(ours, json!([{}, {}])), &t, &applied),
            None
        );
        let other = json!({CLONED_FROM_NAME: "other", CLONED_FROM_GROUP_KIND: TEMPLATE_GROUP_KIND});
        assert!(!cloned_from(&machine(other, json!([{}])), "t"));
    }
}

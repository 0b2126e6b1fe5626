//! Offline checks of every template: it renders with clusterctl's substitution, leaves no
//! variable unresolved, parses, documents exactly its variables in docs/flavors.md, and its
//! infrastructure objects pass capo's admission validation (v1beta2 ones after the conversion
//! to v1beta1, as the API server converts before calling the v1beta1 webhook); none installs
//! cloud-provider-openstack's components, whose cluster name capoctl prints instead.

mod common;

use std::collections::BTreeSet;

use capo_api::v1beta1::{
    OpenStackCluster, OpenStackClusterTemplate, OpenStackMachine, OpenStackMachineTemplate,
};
use capo_api::validation::Validate;
use common::{TEMPLATES, envsubst, infra, required_values};
use serde::de::DeserializeOwned;

#[test]
fn every_file_in_templates_is_tested() {
    let dir = common::repo_root().join("templates");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    let listed: BTreeSet<String> = TEMPLATES.iter().map(|(f, _)| (*f).to_owned()).collect();
    assert_eq!(on_disk, listed, "templates/ and common::TEMPLATES differ");
}

#[test]
fn variables_match_docs_flavors_md() {
    let doc = common::flavors_doc();
    for (file, _) in TEMPLATES {
        let used =
            envsubst::variables(&common::template(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let documented = common::documented_variables(&doc, file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            used, documented,
            "{file}: variables used (left) and documented in docs/flavors.md (right) differ"
        );
    }
}

#[test]
fn every_template_renders_and_parses() {
    for (file, _) in TEMPLATES {
        let rendered = common::render(file, &required_values("demo"));
        let objects =
            capo_testkit::parse_objects(&rendered).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!objects.is_empty(), "{file}: no objects");
        for object in &objects {
            let name = object.metadata.name.as_deref().unwrap_or_default();
            let kind = object
                .types
                .as_ref()
                .map(|t| t.kind.as_str())
                .unwrap_or_default();
            assert!(!kind.is_empty(), "{file}: an object without kind");
            assert!(
                object.metadata.namespace.is_none(),
                "{file}: {kind} {name} sets a namespace; clusterctl's --target-namespace must decide"
            );
            // Objects of a cluster are named after it, so two clusters in one namespace never
            // collide; the ClusterClass and its templates are shared by design.
            let shared = file.starts_with("clusterclass-");
            assert!(
                shared || name.starts_with("demo"),
                "{file}: {kind} {name} is not named after the cluster"
            );
        }
    }
}

#[test]
fn a_missing_required_variable_is_reported_by_name() {
    for (file, _) in TEMPLATES {
        let mut vars = required_values("demo");
        let needed = envsubst::variables(&common::template(file)).unwrap_or_default();
        let Some((name, _)) = needed.iter().find(|(_, d)| d.is_none()) else {
            continue;
        };
        vars.remove(name);
        let err = envsubst::render(&common::template(file), &vars).err();
        assert_eq!(
            err,
            Some(format!("value for variables [{name}] is not set")),
            "{file}"
        );
    }
}

fn check<T: DeserializeOwned + Validate>(file: &str, kind: &str, value: serde_json::Value) {
    let object: T = capo_api::decode::from_value(value)
        .unwrap_or_else(|e| panic!("{file}: {kind} does not decode: {e}"));
    if let Err(errors) = object.validate_create() {
        panic!("{file}: {kind} fails capo's admission validation: {errors}");
    }
}

#[test]
fn infrastructure_objects_pass_capo_admission_validation() {
    let mut checked = 0;
    let mut converted = 0;
    for (file, _) in TEMPLATES {
        let rendered = common::render(file, &required_values("demo"));
        for mut value in common::documents(&rendered) {
            if !infra::is_infra(&value) {
                continue;
            }
            let (api_version, kind) = infra::type_of(&value);
            let kind = kind.to_owned();
            // The validating webhooks are registered for v1beta1 with matchPolicy Equivalent:
            // the API server defaults a v1beta2 object, converts it to v1beta1 and sends that.
            if api_version == infra::V1BETA2 {
                value = infra::convert(&value, infra::V1BETA1)
                    .unwrap_or_else(|e| panic!("{file}: {e}"));
                converted += 1;
            }
            match kind.as_str() {
                "OpenStackCluster" => check::<OpenStackCluster>(file, &kind, value),
                "OpenStackClusterTemplate" => check::<OpenStackClusterTemplate>(file, &kind, value),
                "OpenStackMachine" => check::<OpenStackMachine>(file, &kind, value),
                "OpenStackMachineTemplate" => check::<OpenStackMachineTemplate>(file, &kind, value),
                _ => panic!("{file}: {kind} is not one of the four kinds"),
            }
            checked += 1;
        }
    }
    // 5 flavors × (cluster + 2 machine templates), the class (cluster template + 2 machine
    // templates), ansible (cluster + 3 machines + 1 machine template); all v1beta2 but the
    // capi-v1beta1 flavor's 3.
    assert_eq!(checked, 5 * 3 + 3 + 5);
    assert_eq!(converted, checked - 3);
}

#[test]
fn ansible_flavor_enables_the_extension() {
    let rendered = common::render("cluster-template-ansible.yaml", &required_values("demo"));
    let objects = capo_testkit::parse_objects(&rendered).unwrap_or_else(|e| panic!("{e}"));
    let of_kind = |kind: &str| {
        objects
            .iter()
            .filter(|o| o.types.as_ref().is_some_and(|t| t.kind == kind))
            .collect::<Vec<_>>()
    };
    let cluster = of_kind("OpenStackCluster");
    let ext = &cluster[0].data["spec"]["extensions"];
    assert_eq!(ext["loadBalancers"]["controlPlane"]["mode"], "Keepalived");
    assert_eq!(ext["loadBalancers"]["ingress"]["mode"], "Keepalived");
    assert_eq!(ext["networking"]["kubeNetworkPlugin"], "calico");
    assert_eq!(ext["ssh"]["generateKeyPair"], true);
    assert_eq!(ext["platform"]["ntp"]["server"], "pool.ntp.org");
    assert_eq!(
        cluster[0].data["spec"]["apiServer"]["managedLoadBalancer"]["enabled"],
        false
    );
    let control_planes = of_kind("Machine");
    assert_eq!(control_planes.len(), 3, "an odd etcd member count");
    for machine in control_planes {
        let labels = machine.metadata.labels.clone().unwrap_or_default();
        assert!(labels.contains_key("cluster.x-k8s.io/control-plane"));
        assert_eq!(
            machine.data["spec"]["bootstrap"]["dataSecretName"],
            "demo-ansible-bootstrap"
        );
    }
    for machine in of_kind("OpenStackMachine") {
        assert_eq!(
            machine.data["spec"]["extensions"]["networkInterfaces"]["keepalived"],
            "eth0"
        );
    }
}

/// docs/flavors.md and docs/capoctl.md say that no template installs cloud-provider-openstack's
/// cloud controller manager or Cinder CSI plugin, which is why none gives them their cluster name
/// and `capoctl cloud-conf --format occm-values|cinder-csi-values|env` does. A template that
/// starts delivering them (or add-ons at all) must pass `${NAMESPACE}-${CLUSTER_NAME}`
/// (`capo_api::names::cloud_provider_cluster_name`, by which capo's cleanup at cluster deletion
/// finds what they created) and update those docs; this test then fails to say so.
#[test]
fn no_template_installs_the_cloud_controller_manager_or_the_csi_plugin() {
    let markers = [
        "cloud-controller-manager",
        "cinder-csi",
        "kind: clusterresourceset",
        "kind: helmchartproxy",
        "kind: daemonset",
        "kind: deployment",
    ];
    for (file, _) in TEMPLATES {
        let text = common::template(file).to_lowercase();
        for marker in markers {
            assert!(
                !text.contains(marker),
                "{file} contains {marker:?}: if it installs the CCM or the Cinder CSI plugin, give \
                 them --cluster-name / --cluster ${{NAMESPACE}}-${{CLUSTER_NAME}} and update \
                 docs/flavors.md and docs/capoctl.md"
            );
        }
    }
}

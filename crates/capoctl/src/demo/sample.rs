//! The demo's sample cluster: a Cluster API Cluster with an OpenStackCluster (managed network,
//! Octavia API load balancer, BA/ACP extension on), three control-plane and two worker Machines
//! with their bootstrap Secrets and OpenStackMachines.
//!
//! Cluster API's controllers are not part of the demo, so the demo does their part that capo
//! relies on: owner references from the Cluster to the OpenStackCluster and from each Machine
//! to its OpenStackMachine (see [`openstack_cluster`] and [`openstack_machine`]).

/// Flavor and image seeded in capo-sim.
const FLAVOR: &str = "m1.medium";
const IMAGE: &str = "ubuntu-2404-kube-v1.34";
const KUBERNETES_VERSION: &str = "v1.34.3";

/// One machine of the sample.
#[derive(Debug, Clone)]
pub struct MachineName {
    /// Object name of the Machine, its OpenStackMachine and (with `-bootstrap`) its Secret.
    pub name: String,
    /// Control-plane machine.
    pub control_plane: bool,
}

/// The machines: `<cluster>-control-plane-{0,1,2}` and `<cluster>-md-0-{0,1}`.
pub fn machines(cluster: &str) -> Vec<MachineName> {
    let cp = (0..3).map(|i| MachineName {
        name: format!("{cluster}-control-plane-{i}"),
        control_plane: true,
    });
    let workers = (0..2).map(|i| MachineName {
        name: format!("{cluster}-md-0-{i}"),
        control_plane: false,
    });
    cp.chain(workers).collect()
}

fn labels(cluster: &str, control_plane: bool) -> String {
    let cp = if control_plane {
        "\n    cluster.x-k8s.io/control-plane: \"\""
    } else {
        ""
    };
    format!("  labels:\n    cluster.x-k8s.io/cluster-name: {cluster}{cp}\n")
}

/// The identity Secret (clouds.yaml of the simulator) and every machine's bootstrap Secret.
pub fn secrets(cluster: &str, clouds_yaml: &str) -> Vec<serde_json::Value> {
    let mut out = vec![serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{cluster}-cloud-config"),
                     "labels": {"clusterctl.cluster.x-k8s.io/move": "true"}},
        "stringData": {"clouds.yaml": clouds_yaml},
    })];
    for m in machines(cluster) {
        out.push(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
            "metadata": {"name": format!("{}-bootstrap", m.name),
                         "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
            // What a bootstrap provider would render; the Ansible providers boot a minimal
            // cloud-config and take over over SSH.
            "stringData": {"value": "#cloud-config\n", "format": "cloud-config"},
        }));
    }
    out
}

/// The Cluster API objects: the Cluster and the Machines.
pub fn capi_objects(cluster: &str) -> String {
    let mut out = format!(
        "apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: {cluster}
spec:
  clusterNetwork:
    pods: {{cidrBlocks: [10.233.64.0/18]}}
    services: {{cidrBlocks: [10.233.0.0/18]}}
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: OpenStackCluster
    name: {cluster}
"
    );
    for m in machines(cluster) {
        out.push_str(&format!(
            "---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: {name}
{labels}spec:
  clusterName: {cluster}
  version: {KUBERNETES_VERSION}
  bootstrap:
    dataSecretName: {name}-bootstrap
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: OpenStackMachine
    name: {name}
",
            name = m.name,
            labels = labels(cluster, m.control_plane),
        ));
    }
    out
}

/// The OpenStackCluster, owned by the Cluster with UID `cluster_uid`.
pub fn openstack_cluster(cluster: &str, cluster_uid: &str) -> String {
    format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackCluster
metadata:
  name: {cluster}
{labels}  ownerReferences:
  - {{apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster, name: {cluster}, uid: {cluster_uid}}}
spec:
  identityRef:
    name: {cluster}-cloud-config
    cloudName: capo-sim
  managedSubnets:
  - cidr: 10.6.0.0/24
    dnsNameservers: [10.0.0.2]
  apiServerLoadBalancer:
    enabled: true
  managedSecurityGroups:
    allowAllInClusterTraffic: true
  extensions:
    networking:
      kubeNetworkPlugin: calico
    networkInterfaces:
      flannel: eth0
    loadBalancers:
      controlPlane:
        mode: Octavia
    platform:
      ntp:
        server: pool.ntp.org
",
        labels = labels(cluster, false),
    )
}

/// The OpenStackMachine `m`, owned by its Machine with UID `machine_uid`.
pub fn openstack_machine(cluster: &str, m: &MachineName, machine_uid: &str) -> String {
    format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachine
metadata:
  name: {name}
{labels}  ownerReferences:
  - {{apiVersion: cluster.x-k8s.io/v1beta2, kind: Machine, name: {name}, uid: {machine_uid}, controller: true}}
spec:
  flavor: {FLAVOR}
  image:
    filter:
      name: {IMAGE}
",
        name = m.name,
        labels = labels(cluster, m.control_plane),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_document_is_yaml_with_a_name() {
        let mut docs: Vec<serde_json::Value> = Vec::new();
        for text in [
            capi_objects("demo"),
            openstack_cluster("demo", "uid-1"),
            openstack_machine("demo", &machines("demo")[0], "uid-2"),
        ] {
            for d in text.split("\n---\n") {
                docs.push(serde_yaml::from_str(d).unwrap());
            }
        }
        docs.extend(secrets("demo", "clouds: {}\n"));
        assert_eq!(docs.len(), 1 + 5 + 1 + 1 + 6);
        for d in &docs {
            assert!(d["metadata"]["name"].as_str().is_some(), "{d}");
        }
        assert_eq!(
            machines("demo").iter().filter(|m| m.control_plane).count(),
            3
        );
    }
}

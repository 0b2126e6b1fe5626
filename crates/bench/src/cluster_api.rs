//! Plays Cluster API by hand, the same way for both managers: the Cluster and its
//! OpenStackCluster; once that is ready, the Cluster's endpoint and provisioned status, then the
//! Machines with their bootstrap data Secrets and OpenStackMachines; on delete, each
//! OpenStackMachine before its Machine and the OpenStackCluster before its Cluster.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

use crate::observer::{Infra, Observer};

/// The namespace of every object.
pub const NAMESPACE: &str = "default";
const CAPI: &str = "cluster.x-k8s.io/v1beta2";
const INFRA: &str = "infrastructure.cluster.x-k8s.io/v1beta1";

/// The APIs of the kinds involved.
#[derive(Clone)]
pub struct Objects {
    /// Cluster API Clusters.
    pub cluster: Api<DynamicObject>,
    /// Cluster API Machines.
    pub machine: Api<DynamicObject>,
    /// OpenStackClusters.
    pub osc: Api<DynamicObject>,
    /// OpenStackMachines.
    pub osm: Api<DynamicObject>,
    /// Secrets.
    pub secret: Api<Secret>,
}

impl Objects {
    /// The APIs in [`NAMESPACE`].
    pub fn new(client: &Client) -> Self {
        let api = |group: &str, version: &str, kind: &str| {
            let gvk = GroupVersionKind::gvk(group, version, kind);
            Api::namespaced_with(client.clone(), NAMESPACE, &ApiResource::from_gvk(&gvk))
        };
        Self {
            cluster: api("cluster.x-k8s.io", "v1beta2", "Cluster"),
            machine: api("cluster.x-k8s.io", "v1beta2", "Machine"),
            osc: api(
                "infrastructure.cluster.x-k8s.io",
                "v1beta1",
                "OpenStackCluster",
            ),
            osm: api(
                "infrastructure.cluster.x-k8s.io",
                "v1beta1",
                "OpenStackMachine",
            ),
            secret: Api::namespaced(client.clone(), NAMESPACE),
        }
    }
}

/// An OpenStackCluster is ready with `status.ready` and an endpoint in its spec.
pub fn osc_ready(o: &DynamicObject) -> bool {
    o.data["status"]["ready"] == true && o.data["spec"]["controlPlaneEndpoint"]["host"].is_string()
}

/// An OpenStackMachine is ready with `status.ready`.
pub fn osm_ready(o: &DynamicObject) -> bool {
    o.data["status"]["ready"] == true
}

/// The name of cluster `index`.
pub fn cluster_name(index: usize) -> String {
    format!("bench-{index}")
}

/// The machine names of cluster `index`, control plane first.
pub fn machine_names(index: usize, machines: usize) -> Vec<String> {
    (0..machines)
        .map(|m| format!("bench-{index}-m{m}"))
        .collect()
}

/// One cluster of the scenario.
pub struct ClusterPlay<'a> {
    /// The APIs.
    pub objects: &'a Objects,
    /// The watches.
    pub observer: &'a Observer,
    /// Its index.
    pub index: usize,
    /// Its clouds.yaml (a secret: never printed).
    pub clouds_yaml: String,
    /// Machines, of which `control_plane` are control plane machines.
    pub machines: usize,
    /// Control plane machines.
    pub control_plane: usize,
    /// Phase timeout.
    pub timeout: Duration,
}

impl<'a> ClusterPlay<'a> {
    /// The scenario's clusters, as `settings` sizes them, on `cloud`.
    pub fn all(
        objects: &'a Objects,
        observer: &'a Observer,
        cloud: &crate::cloud::Cloud,
        settings: &crate::settings::Settings,
    ) -> Vec<Self> {
        (0..settings.cluster_count())
            .map(|index| ClusterPlay {
                objects,
                observer,
                index,
                clouds_yaml: cloud.clouds_yaml(index),
                machines: settings.machines,
                control_plane: settings.control_plane,
                timeout: Duration::from_secs(settings.timeout_s),
            })
            .collect()
    }
}

fn object(value: Value) -> Result<DynamicObject> {
    serde_json::from_value(value).context("building an object")
}

impl ClusterPlay<'_> {
    /// Creates the cluster, waits for its OpenStackCluster, marks the infrastructure
    /// provisioned and creates the machines; returns each machine's name and creation time.
    pub async fn create(&self) -> Result<Vec<(String, Instant)>> {
        let o = self.objects;
        let name = cluster_name(self.index);
        let pp = PostParams::default();
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": format!("{name}-cloud-config"), "namespace": NAMESPACE},
            "stringData": {"clouds.yaml": self.clouds_yaml},
        }))
        .context("building the clouds.yaml Secret")?;
        o.secret
            .create(&pp, &secret)
            .await
            .context("creating a clouds.yaml Secret")?;
        let cluster = o
            .cluster
            .create(&pp, &object(json!({
                "apiVersion": CAPI, "kind": "Cluster",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {
                    "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}, "serviceDomain": "cluster.local"},
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackCluster", "name": name},
                },
            }))?)
            .await
            .with_context(|| format!("creating Cluster {name}"))?;
        let uid = cluster.metadata.uid.clone().unwrap_or_default();
        o.osc
            .create(&pp, &object(json!({
                "apiVersion": INFRA, "kind": "OpenStackCluster",
                "metadata": {
                    "name": name, "namespace": NAMESPACE,
                    "labels": {"cluster.x-k8s.io/cluster-name": name},
                    "ownerReferences": [{"apiVersion": CAPI, "kind": "Cluster", "name": name, "uid": uid}],
                },
                "spec": {
                    "identityRef": {"name": format!("{name}-cloud-config"), "cloudName": crate::cloud::CLOUD_NAME},
                    "externalNetwork": {"filter": {"name": "public"}},
                    "apiServerLoadBalancer": {"enabled": true},
                    "managedSubnets": [{"cidr": "10.6.0.0/24", "dnsNameservers": ["8.8.8.8"]}],
                    "managedSecurityGroups": {},
                },
            }))?)
            .await
            .with_context(|| format!("creating OpenStackCluster {name}"))?;

        self.observer
            .wait_ready(Infra::Cluster, &name, self.timeout)
            .await?;
        // Cluster API's cluster controller: copy the endpoint, mark the infrastructure provisioned.
        let osc = self
            .observer
            .ready_object(Infra::Cluster, &name)
            .with_context(|| format!("OpenStackCluster {name} vanished"))?;
        let endpoint = osc.data["spec"]["controlPlaneEndpoint"].clone();
        let params = PatchParams::default();
        o.cluster
            .patch(
                &name,
                &params,
                &Patch::Merge(json!({"spec": {"controlPlaneEndpoint": endpoint}})),
            )
            .await
            .with_context(|| format!("setting Cluster {name}'s endpoint"))?;
        o.cluster
            .patch_status(
                &name,
                &params,
                &Patch::Merge(
                    json!({"status": {"initialization": {"infrastructureProvisioned": true}}}),
                ),
            )
            .await
            .with_context(|| format!("marking Cluster {name} provisioned"))?;

        let mut created = Vec::new();
        for (m, machine) in machine_names(self.index, self.machines)
            .into_iter()
            .enumerate()
        {
            let control_plane = m < self.control_plane;
            self.create_machine(&name, &machine, control_plane).await?;
            created.push((machine, Instant::now()));
        }
        Ok(created)
    }

    async fn create_machine(&self, cluster: &str, name: &str, control_plane: bool) -> Result<()> {
        let o = self.objects;
        let pp = PostParams::default();
        let mut labels = json!({"cluster.x-k8s.io/cluster-name": cluster});
        if control_plane {
            labels["cluster.x-k8s.io/control-plane"] = json!("");
        }
        // What the kubeadm bootstrap provider would write; the managers only pass it on.
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": format!("{name}-bootstrap"), "namespace": NAMESPACE,
                         "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
            "type": "cluster.x-k8s.io/secret",
            "stringData": {"format": "cloud-config", "value": format!("#cloud-config\nruncmd:\n- echo {name} booted\n")},
        }))
        .context("building a bootstrap Secret")?;
        o.secret
            .create(&pp, &secret)
            .await
            .with_context(|| format!("creating {name}'s bootstrap Secret"))?;
        let machine = o
            .machine
            .create(&pp, &object(json!({
                "apiVersion": CAPI, "kind": "Machine",
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
                "spec": {
                    "clusterName": cluster,
                    "version": "v1.34.3",
                    "bootstrap": {"dataSecretName": format!("{name}-bootstrap")},
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachine", "name": name},
                },
            }))?)
            .await
            .with_context(|| format!("creating Machine {name}"))?;
        let uid = machine.metadata.uid.clone().unwrap_or_default();
        o.osm
            .create(&pp, &object(json!({
                "apiVersion": INFRA, "kind": "OpenStackMachine",
                "metadata": {
                    "name": name, "namespace": NAMESPACE, "labels": labels,
                    "ownerReferences": [{"apiVersion": CAPI, "kind": "Machine", "name": name, "uid": uid}],
                },
                "spec": {"flavor": "m1.small", "image": {"filter": {"name": "ubuntu-2404-kube-v1.34"}}},
            }))?)
            .await
            .with_context(|| format!("creating OpenStackMachine {name}"))?;
        Ok(())
    }

    /// Deletes the machines (each OpenStackMachine, once gone its Machine and bootstrap Secret),
    /// then the OpenStackCluster and, once gone, the Cluster and its clouds.yaml Secret.
    pub async fn delete(&self) -> Result<()> {
        let o = self.objects;
        let name = cluster_name(self.index);
        let dp = DeleteParams::default();
        let machines = machine_names(self.index, self.machines);
        for m in &machines {
            o.osm
                .delete(m, &dp)
                .await
                .with_context(|| format!("deleting OpenStackMachine {m}"))?;
        }
        for m in &machines {
            self.observer
                .wait_gone(Infra::Machine, m, &o.osm, self.timeout)
                .await?;
            o.machine
                .delete(m, &dp)
                .await
                .with_context(|| format!("deleting Machine {m}"))?;
            o.secret
                .delete(&format!("{m}-bootstrap"), &dp)
                .await
                .with_context(|| format!("deleting {m}'s bootstrap Secret"))?;
        }
        o.osc
            .delete(&name, &dp)
            .await
            .with_context(|| format!("deleting OpenStackCluster {name}"))?;
        self.observer
            .wait_gone(Infra::Cluster, &name, &o.osc, self.timeout)
            .await?;
        o.cluster
            .delete(&name, &dp)
            .await
            .with_context(|| format!("deleting Cluster {name}"))?;
        o.secret
            .delete(&format!("{name}-cloud-config"), &dp)
            .await
            .with_context(|| format!("deleting {name}'s clouds.yaml Secret"))?;
        Ok(())
    }
}

//! The cluster name cloud-provider-openstack's components are given, in the form each of their
//! install routes reads it.
//!
//! The OpenStack cloud controller manager takes it as `--cluster-name` and the Cinder CSI
//! plugin as `--cluster` (both default to `kubernetes`); they write it into the names and
//! descriptions of the load balancers they create and into the `cinder.csi.openstack.org/cluster`
//! property of volumes and snapshots. capo's cleanup at cluster deletion finds those leftovers by
//! [`capo_api::names::cloud_provider_cluster_name`], so that is the name printed here. cloud.conf
//! has no option for it: it is a command-line flag, set from Helm values or a container's
//! environment.
//!
//! None of the outputs holds credentials: both charts are pointed at the Secret
//! `cloud-config` (key `cloud.conf`) that `capoctl cloud-conf` and
//! `kubectl create secret generic cloud-config --from-file=cloud.conf` make.

use crate::error::{Error, Result};

/// The Secret (in the charts' release namespace) the values point both charts at.
pub const CLOUD_CONFIG_SECRET: &str = "cloud-config";

/// A cluster of the management cluster, by namespace and name, both checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRef {
    namespace: String,
    cluster: String,
}

impl ClusterRef {
    /// Checks `namespace` (a DNS-1123 label, as Kubernetes requires of namespaces) and `cluster`
    /// (a DNS-1123 subdomain, as Kubernetes requires of object names).
    pub fn new(namespace: &str, cluster: &str) -> Result<Self> {
        if let Some(problem) = label_problem(namespace) {
            return Err(Error::Argument {
                arg: "--namespace",
                problem,
            });
        }
        if let Some(problem) = subdomain_problem(cluster) {
            return Err(Error::Argument {
                arg: "--cluster",
                problem,
            });
        }
        Ok(Self {
            namespace: namespace.to_owned(),
            cluster: cluster.to_owned(),
        })
    }

    /// `<namespace>-<cluster>`, from the function capo's cleanup uses.
    pub fn cloud_provider_name(&self) -> String {
        capo_api::names::cloud_provider_cluster_name(&self.namespace, &self.cluster)
    }
}

/// Why `s` is not a DNS-1123 label, if it is not one.
fn label_problem(s: &str) -> Option<String> {
    if s.len() > 63 {
        return Some(format!("is {} characters long, more than 63", s.len()));
    }
    if s.is_empty() {
        return Some("is empty".to_owned());
    }
    part_problem(s, "lowercase letters, digits and '-'")
}

/// Why `s` is not a DNS-1123 subdomain, if it is not one.
fn subdomain_problem(s: &str) -> Option<String> {
    if s.len() > 253 {
        return Some(format!("is {} characters long, more than 253", s.len()));
    }
    if s.is_empty() {
        return Some("is empty".to_owned());
    }
    if s.split('.').any(str::is_empty) {
        return Some("has an empty part between dots".to_owned());
    }
    let allowed = "lowercase letters, digits, '-' and '.'";
    s.split('.').find_map(|part| part_problem(part, allowed))
}

/// Why the non-empty `s` is not lowercase alphanumerics and `-`, starting and ending
/// alphanumeric.
fn part_problem(s: &str, allowed: &str) -> Option<String> {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if let Some(c) = s.chars().find(|&c| !alnum(c) && c != '-') {
        Some(format!("contains {c:?}: only {allowed} are allowed"))
    } else if !s.starts_with(alnum) || !s.ends_with(alnum) {
        Some(
            "must start and end with a lowercase letter or a digit (each part between dots)"
                .to_owned(),
        )
    } else {
        None
    }
}

/// Helm values for the `openstack-cloud-controller-manager` chart: `cluster.name`, and the
/// existing Secret instead of one the chart would make from its `cloudConfig` values.
pub fn occm_values(cluster: &ClusterRef) -> String {
    format!(
        "# openstack-cloud-controller-manager chart values for cluster {ns}/{name} (capoctl).\n\
         # cluster.name becomes --cluster-name: capo's cleanup at cluster deletion finds the\n\
         # load balancers the CCM created by it.\n\
         cluster:\n  name: \"{cp}\"\n\
         # cloud.conf comes from the existing Secret {secret} (capoctl cloud-conf), not from values.\n\
         secret:\n  enabled: true\n  create: false\n  name: {secret}\n",
        ns = cluster.namespace,
        name = cluster.cluster,
        cp = cluster.cloud_provider_name(),
        secret = CLOUD_CONFIG_SECRET,
    )
}

/// Helm values for the `openstack-cinder-csi` chart: `clusterID`, and the existing Secret
/// instead of the chart's default, a cloud.conf on the node's file system (which capo's
/// templates do not write).
pub fn cinder_csi_values(cluster: &ClusterRef) -> String {
    format!(
        "# openstack-cinder-csi chart values for cluster {ns}/{name} (capoctl).\n\
         # clusterID becomes --cluster, written into the cinder.csi.openstack.org/cluster property\n\
         # of the volumes and snapshots the plugin creates; capo's cleanup at cluster deletion\n\
         # finds them by it.\n\
         clusterID: \"{cp}\"\n\
         # cloud.conf comes from the existing Secret {secret} (capoctl cloud-conf).\n\
         secret:\n  enabled: true\n  create: false\n  name: {secret}\n",
        ns = cluster.namespace,
        name = cluster.cluster,
        cp = cluster.cloud_provider_name(),
        secret = CLOUD_CONFIG_SECRET,
    )
}

/// `CLUSTER_NAME=<name>`: the variable cloud-provider-openstack's own manifests pass to
/// `--cluster-name` and `--cluster`, for `kubectl set env ... -e -`.
pub fn env(cluster: &ClusterRef) -> String {
    format!("CLUSTER_NAME={}\n", cluster.cloud_provider_name())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;

    #[test]
    fn the_name_is_capos_cloud_provider_cluster_name() {
        let c = ClusterRef::new("team-a", "prod.eu-1").unwrap();
        assert_eq!(c.cloud_provider_name(), "team-a-prod.eu-1");
        assert_eq!(
            c.cloud_provider_name(),
            capo_api::names::cloud_provider_cluster_name("team-a", "prod.eu-1")
        );
        assert_eq!(env(&c), "CLUSTER_NAME=team-a-prod.eu-1\n");
    }

    #[test]
    fn values_set_the_name_and_the_existing_secret() {
        let c = ClusterRef::new("ns", "c1").unwrap();
        let occm = occm_values(&c);
        assert!(occm.contains("\ncluster:\n  name: \"ns-c1\"\n"), "{occm}");
        assert!(
            occm.ends_with("\nsecret:\n  enabled: true\n  create: false\n  name: cloud-config\n")
        );
        let csi = cinder_csi_values(&c);
        assert!(csi.contains("\nclusterID: \"ns-c1\"\n"), "{csi}");
        assert!(
            csi.ends_with("\nsecret:\n  enabled: true\n  create: false\n  name: cloud-config\n")
        );
    }

    #[test]
    fn bad_names_are_errors_naming_the_flag_and_the_reason() {
        let err = |ns: &str, c: &str| ClusterRef::new(ns, c).unwrap_err().to_string();
        assert_eq!(err("", "c"), "--namespace is empty");
        assert_eq!(
            err("Team", "c"),
            "--namespace contains 'T': only lowercase letters, digits and '-' are allowed"
        );
        assert_eq!(
            err("a.b", "c"),
            "--namespace contains '.': only lowercase letters, digits and '-' are allowed"
        );
        assert_eq!(
            err(&"a".repeat(64), "c"),
            "--namespace is 64 characters long, more than 63"
        );
        assert_eq!(
            err("ns", "c.-d"),
            "--cluster must start and end with a lowercase letter or a digit (each part between dots)"
        );
        assert_eq!(err("ns", ""), "--cluster is empty");
        assert_eq!(
            err("ns", "a..b"),
            "--cluster has an empty part between dots"
        );
        assert_eq!(
            err("ns", "c_d"),
            "--cluster contains '_': only lowercase letters, digits, '-' and '.' are allowed"
        );
        assert_eq!(
            err("ns", &"a".repeat(254)),
            "--cluster is 254 characters long, more than 253"
        );
    }
}

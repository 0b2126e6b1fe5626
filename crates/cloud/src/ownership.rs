//! Ownership of OpenStack resources by one OpenStackCluster.
//!
//! Every Neutron resource this crate creates carries the tag `capo-cluster-uid=<uid>`
//! ([`OWNER_TAG_PREFIX`] + the OpenStackCluster's Kubernetes UID) besides the spec's tags.
//! The UID, unlike namespace/name, differs between two management clusters that happen to
//! use the same namespace and name in one project (upstream issue 1476), so neither adopts
//! the other's resources. Classification of a resource found by our deterministic name:
//! - [`Ownership::Ours`]: carries our tag.
//! - [`Ownership::Unowned`]: carries no `capo-cluster-uid=` tag at all: created by upstream
//!   CAPO (which tags nothing of the kind), or by us just before a crash that prevented the
//!   tag write. It is adopted: tagged, then treated as ours.
//! - [`Ownership::Foreign`]: carries another cluster's tag: never touched.

/// Prefix of the ownership tag; the full tag is `capo-cluster-uid=<OpenStackCluster UID>`
/// (53 characters for a UUID, within Neutron's tag length limit).
pub const OWNER_TAG_PREFIX: &str = "capo-cluster-uid=";

/// Prefix of the tag that marks a port or trunk as made for one OpenStackServer:
/// `capo-server-uid=<OpenStackServer UID>` (see [`crate::instance`]).
pub const SERVER_OWNER_TAG_PREFIX: &str = "capo-server-uid=";

/// Metadata key carrying the owning OpenStackServer's UID on Nova servers and Cinder volumes
/// (Cinder volumes have no tags; Nova metadata exists at every microversion).
pub const SERVER_OWNER_METADATA_KEY: &str = "capo-server-uid";

/// The OpenStackCluster that owns (or will own) resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Kubernetes UID of the OpenStackCluster.
    pub uid: String,
    /// Namespace of the OpenStackCluster.
    pub namespace: String,
    /// Name of the OpenStackCluster.
    pub name: String,
    /// `spec.tags`, added to every created resource.
    pub spec_tags: Vec<String>,
}

/// How a found resource relates to an [`Owner`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// Tagged for this cluster.
    Ours,
    /// No ownership tag: adoptable.
    Unowned,
    /// Tagged for another cluster; the offending tag.
    Foreign(String),
}

impl Owner {
    /// The ownership tag of this cluster.
    pub fn tag(&self) -> String {
        format!("{OWNER_TAG_PREFIX}{}", self.uid)
    }

    /// Tags a created or adopted resource must carry: spec tags, then the ownership tag.
    pub fn desired_tags(&self) -> Vec<String> {
        let mut tags: Vec<String> = Vec::with_capacity(self.spec_tags.len() + 1);
        for t in self.spec_tags.iter().chain(std::iter::once(&self.tag())) {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        tags
    }

    /// Classify a resource by its tags.
    pub fn classify(&self, tags: &[String]) -> Ownership {
        let ours = self.tag();
        if tags.contains(&ours) {
            return Ownership::Ours;
        }
        match tags.iter().find(|t| t.starts_with(OWNER_TAG_PREFIX)) {
            Some(other) => Ownership::Foreign(other.clone()),
            None => Ownership::Unowned,
        }
    }

    /// The tags to write so that `current` includes every desired tag (None: nothing missing).
    /// Existing tags are kept: users and other tools may tag our resources too.
    pub fn missing_tags(&self, current: &[String]) -> Option<Vec<String>> {
        let desired = self.desired_tags();
        if desired.iter().all(|t| current.contains(t)) {
            return None;
        }
        let mut all = current.to_vec();
        all.extend(desired.into_iter().filter(|t| !current.contains(t)));
        Some(all)
    }

    /// `k8s-clusterapi-cluster-<ns>-<name>`: name of the managed network, subnet and router.
    pub fn cluster_resource_name(&self) -> String {
        capo_api::names::cluster_resource_name(&self.namespace, &self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            uid: "u1".into(),
            namespace: "ns".into(),
            name: "c".into(),
            spec_tags: vec!["team-a".into()],
        }
    }

    #[test]
    fn classification() {
        let o = owner();
        assert_eq!(o.tag(), "capo-cluster-uid=u1");
        assert_eq!(o.classify(&["capo-cluster-uid=u1".into()]), Ownership::Ours);
        assert_eq!(o.classify(&["x".into()]), Ownership::Unowned);
        assert_eq!(
            o.classify(&["capo-cluster-uid=u2".into()]),
            Ownership::Foreign("capo-cluster-uid=u2".into())
        );
    }

    #[test]
    fn tags_are_merged_not_replaced() {
        let o = owner();
        assert_eq!(o.desired_tags(), vec!["team-a", "capo-cluster-uid=u1"]);
        assert_eq!(
            o.missing_tags(&["mine".into()]),
            Some(vec![
                "mine".to_string(),
                "team-a".into(),
                "capo-cluster-uid=u1".into()
            ])
        );
        assert_eq!(o.missing_tags(&o.desired_tags()), None);
    }
}

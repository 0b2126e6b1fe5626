//! The OpenStackServer that owns ports, trunks, volumes and the Nova server.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::ownership::{Ownership, SERVER_OWNER_METADATA_KEY, SERVER_OWNER_TAG_PREFIX};

/// One OpenStackServer: its Kubernetes UID (the ownership marker) and its name (the prefix of
/// every resource name), plus the tags the spec wants on every port and the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOwner {
    /// Kubernetes UID of the OpenStackServer.
    pub uid: String,
    /// Server name (= OpenStackServer name).
    pub name: String,
    /// Spec tags (machine + cluster tags), added to ports, trunks and the server.
    pub spec_tags: Vec<String>,
}

impl ServerOwner {
    /// `capo-server-uid=<uid>`.
    pub fn tag(&self) -> String {
        format!("{SERVER_OWNER_TAG_PREFIX}{}", self.uid)
    }

    /// Classify by Neutron tags.
    pub fn classify_tags(&self, tags: &[String]) -> Ownership {
        let ours = self.tag();
        if tags.contains(&ours) {
            return Ownership::Ours;
        }
        match tags.iter().find(|t| t.starts_with(SERVER_OWNER_TAG_PREFIX)) {
            Some(other) => Ownership::Foreign(other.clone()),
            None => Ownership::Unowned,
        }
    }

    /// Classify by Nova/Cinder metadata.
    pub fn classify_metadata(&self, md: &BTreeMap<String, String>) -> Ownership {
        match md.get(SERVER_OWNER_METADATA_KEY) {
            None => Ownership::Unowned,
            Some(v) if *v == self.uid => Ownership::Ours,
            Some(v) => Ownership::Foreign(format!("{SERVER_OWNER_METADATA_KEY}={v}")),
        }
    }

    /// The metadata entry marking ownership.
    pub fn metadata(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(SERVER_OWNER_METADATA_KEY.to_owned(), self.uid.clone())])
    }

    /// Spec tags + `extra` + the ownership tag, without duplicates.
    pub fn desired_tags(&self, extra: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for t in self
            .spec_tags
            .iter()
            .chain(extra)
            .cloned()
            .chain([self.tag()])
        {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        out
    }
}

/// Splits resources found under one deterministic name into those to consider and duplicates
/// to delete. A create whose reply was lost (controller killed, client timeout) can still be
/// committed by the cloud after the rerun looked and created again, leaving two with the
/// name. Duplicates exist only when more than one is capo's (ours or untagged) and at most one
/// of them is attached: the attached one, else a tagged one, else the lowest ID is kept.
/// Anything else (two attached, another owner's) is left for [`pick`] to report.
pub(crate) fn split_duplicates<T>(
    found: Vec<T>,
    id_of: impl Fn(&T) -> &str,
    attached: impl Fn(&T) -> bool,
    class_of: impl Fn(&T) -> Ownership,
) -> (Vec<T>, Vec<T>) {
    let (mut mine, foreign): (Vec<T>, Vec<T>) = found
        .into_iter()
        .partition(|r| !matches!(class_of(r), Ownership::Foreign(_)));
    if mine.len() < 2 || mine.iter().filter(|r| attached(r)).count() > 1 {
        mine.extend(foreign);
        return (mine, Vec::new());
    }
    mine.sort_by(|a, b| {
        let rank = |r: &T| (!attached(r), class_of(r) != Ownership::Ours);
        rank(a).cmp(&rank(b)).then_with(|| id_of(a).cmp(id_of(b)))
    });
    let extra = mine.split_off(1);
    mine.extend(foreign);
    (mine, extra)
}

/// Pick among resources found by our name: ours, else one unowned (adopted); another owner's
/// → [`Error::ForeignResource`]; more than one candidate → [`Error::Ambiguous`] naming the IDs.
pub(crate) fn pick<T>(
    kind: &'static str,
    name: &str,
    found: Vec<T>,
    id_of: impl Fn(&T) -> &str,
    class_of: impl Fn(&T) -> Ownership,
) -> Result<Option<T>> {
    let (mut ours, mut unowned, mut foreign) = (Vec::new(), Vec::new(), None);
    for f in found {
        match class_of(&f) {
            Ownership::Ours => ours.push(f),
            Ownership::Unowned => unowned.push(f),
            Ownership::Foreign(tag) => foreign = Some((id_of(&f).to_owned(), tag)),
        }
    }
    let pool = if ours.is_empty() { unowned } else { ours };
    match pool.len() {
        0 => match foreign {
            Some((id, owner_tag)) => Err(Error::ForeignResource {
                kind,
                name: name.to_owned(),
                id,
                owner_tag,
            }),
            None => Ok(None),
        },
        1 => Ok(pool.into_iter().next()),
        count => Err(Error::Ambiguous {
            kind,
            selector: format!(
                "name {name:?} (ids {})",
                pool.iter().map(&id_of).collect::<Vec<_>>().join(", ")
            ),
            count,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_and_pick() {
        let o = ServerOwner {
            uid: "u1".into(),
            name: "m1".into(),
            spec_tags: vec!["t".into()],
        };
        assert_eq!(
            o.classify_tags(&["capo-server-uid=u1".into()]),
            Ownership::Ours
        );
        assert_eq!(o.classify_tags(&["t".into()]), Ownership::Unowned);
        assert!(matches!(
            o.classify_tags(&["capo-server-uid=u2".into()]),
            Ownership::Foreign(_)
        ));
        assert_eq!(
            o.desired_tags(&["t".into(), "x".into()]),
            ["t", "x", "capo-server-uid=u1"]
        );
        let both = vec![("a", Ownership::Ours), ("b", Ownership::Ours)];
        let err = pick("server", "m1", both, |x| x.0, |x| x.1.clone()).unwrap_err();
        assert!(err.to_string().contains("a, b"), "{err}");
        let foreign = vec![("a", Ownership::Foreign("capo-server-uid=u2".into()))];
        assert!(matches!(
            pick("port", "m1-0", foreign, |x| x.0, |x| x.1.clone()),
            Err(Error::ForeignResource { .. })
        ));
    }
}

//! Finding resources: by recorded ID, by name + ownership tag (with adoption), or by a
//! user's selector (id or filter, exactly one match).

use capo_api::v1beta1::{NeutronFilter, SubnetFilter};
use capo_openstack::network::{
    self as net, ListFilter, Network, Port, Resource, Router, SecurityGroup, Subnet,
};
use capo_openstack::{Session, TagFilter};
use serde::de::DeserializeOwned;

use crate::error::{Context, Error, Result};
use crate::ownership::{Owner, Ownership};

/// A Neutron resource with an ID, a name and tags.
pub trait Tagged {
    /// OpenStack ID.
    fn id(&self) -> &str;
    /// Name.
    fn name(&self) -> &str;
    /// Tags.
    fn tags(&self) -> &[String];
}

macro_rules! tagged {
    ($($t:ty),*) => {$(
        impl Tagged for $t {
            fn id(&self) -> &str { &self.id }
            fn name(&self) -> &str { &self.name }
            fn tags(&self) -> &[String] { &self.tags }
        }
    )*};
}
tagged!(Network, Subnet, Router, SecurityGroup, Port);

/// GET by ID; a 404 is `None`.
pub async fn get_opt<T: DeserializeOwned>(s: &Session, r: Resource, id: &str) -> Result<Option<T>> {
    net::get(s, r, id)
        .await
        .ctx_opt(|| format!("get {} {id}", r.singular))
}

/// DELETE by ID; a 404 counts as done.
pub async fn delete_opt(s: &Session, r: Resource, id: &str) -> Result<()> {
    net::delete(s, r, id)
        .await
        .ctx_opt(|| format!("delete {} {id}", r.singular))?;
    Ok(())
}

/// Pick our resource among candidates that carry our deterministic name: ours first, then an
/// unowned one (adoption); another cluster's → [`Error::ForeignResource`].
pub fn pick_owned<T: Tagged>(
    owner: &Owner,
    kind: &'static str,
    candidates: Vec<T>,
) -> Result<Option<T>> {
    let mut unowned = Vec::new();
    let mut foreign = None;
    let mut ours = Vec::new();
    for c in candidates {
        match owner.classify(c.tags()) {
            Ownership::Ours => ours.push(c),
            Ownership::Unowned => unowned.push(c),
            Ownership::Foreign(tag) => {
                foreign = Some((c.name().to_owned(), c.id().to_owned(), tag))
            }
        }
    }
    let pool = if ours.is_empty() { unowned } else { ours };
    match pool.len() {
        0 => match foreign {
            Some((name, id, owner_tag)) => Err(Error::ForeignResource {
                kind,
                name,
                id,
                owner_tag,
            }),
            None => Ok(None),
        },
        1 => Ok(pool.into_iter().next()),
        count => Err(Error::Ambiguous {
            kind,
            selector: format!("name {:?}", pool[0].name()),
            count,
        }),
    }
}

/// Find our resource: the recorded ID if it still exists (and is not another cluster's),
/// else a list by `name` plus `extra` filters.
pub async fn find_owned<T: DeserializeOwned + Tagged>(
    s: &Session,
    owner: &Owner,
    r: Resource,
    recorded: Option<&str>,
    filter: ListFilter,
) -> Result<Option<T>> {
    let kind = r.singular;
    if let Some(id) = recorded.filter(|id| !id.is_empty())
        && let Some(found) = get_opt::<T>(s, r, id).await?
    {
        return pick_owned(owner, kind, vec![found]);
    }
    let what = format!("list {kind} {:?}", filter.name);
    let candidates: Vec<T> = net::list(s, r, &filter).await.ctx(|| what)?;
    pick_owned(owner, kind, candidates)
}

/// Where a resource handed to [`ensure_tags`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Created by this reconcile: Neutron takes no tags in a create body, so it has none yet.
    Created,
    /// Found in the cloud: untagged means capo adopts it (logged).
    Found,
}

/// Make sure an owned or adopted resource carries every desired tag (one PUT when not).
pub async fn ensure_tags<T: Tagged>(
    s: &Session,
    owner: &Owner,
    r: Resource,
    res: &T,
    origin: Origin,
) -> Result<Vec<String>> {
    match owner.missing_tags(res.tags()) {
        None => Ok(res.tags().to_vec()),
        Some(tags) => {
            if origin == Origin::Found && owner.classify(res.tags()) == Ownership::Unowned {
                tracing::info!(
                    kind = r.singular,
                    id = res.id(),
                    name = res.name(),
                    "adopting untagged resource"
                );
            }
            net::replace_tags(s, r, res.id(), &tags)
                .await
                .ctx(|| format!("tag {} {}", r.singular, res.id()))?;
            Ok(tags)
        }
    }
}

/// List filter of a user's Neutron filter.
pub fn neutron_filter(f: &NeutronFilter) -> ListFilter {
    ListFilter {
        name: f.name.clone(),
        description: f.description.clone(),
        project_id: f.project_id.clone(),
        tags: TagFilter {
            tags: f.tags.clone(),
            tags_any: f.tags_any.clone(),
            not_tags: f.not_tags.clone(),
            not_tags_any: f.not_tags_any.clone(),
        },
        extra: Vec::new(),
    }
}

/// List filter of a user's subnet filter.
pub fn subnet_filter(f: &SubnetFilter) -> ListFilter {
    let mut l = ListFilter {
        name: f.name.clone(),
        description: f.description.clone(),
        project_id: f.project_id.clone(),
        tags: TagFilter {
            tags: f.tags.clone(),
            tags_any: f.tags_any.clone(),
            not_tags: f.not_tags.clone(),
            not_tags_any: f.not_tags_any.clone(),
        },
        extra: Vec::new(),
    };
    let pairs = [
        ("ip_version", f.ip_version.map(|v| v.to_string())),
        ("gateway_ip", f.gateway_ip.clone()),
        ("cidr", f.cidr.clone()),
        ("ipv6_address_mode", f.ipv6_address_mode.clone()),
        ("ipv6_ra_mode", f.ipv6_ra_mode.clone()),
    ];
    for (k, v) in pairs {
        if let Some(v) = v {
            l = l.with(k, v);
        }
    }
    l
}

/// Resolve a user's selector: `id` → GET (404 → NotFound), else `filter` → exactly one match.
pub async fn resolve_one<T: DeserializeOwned>(
    s: &Session,
    r: Resource,
    id: Option<&str>,
    filter: Option<ListFilter>,
) -> Result<T> {
    let kind = r.singular;
    if let Some(id) = id.filter(|i| !i.is_empty()) {
        return net::get(s, r, id).await.ctx_selected(kind, id);
    }
    let Some(filter) = filter else {
        return Err(Error::InvalidSpec(format!(
            "{kind} selector has neither id nor filter"
        )));
    };
    let selector = format!("{filter:?}");
    let mut found: Vec<T> = net::list(s, r, &filter)
        .await
        .ctx(|| format!("list {kind} {selector}"))?;
    match found.len() {
        0 => Err(Error::NotFound { kind, selector }),
        1 => Ok(found.remove(0)),
        count => Err(Error::Ambiguous {
            kind,
            selector,
            count,
        }),
    }
}

//! Resolution of the server's references to IDs, before anything is created, so the caller
//! can record them in `status.resolved` (and a later image deletion cannot block a delete).

use capo_api::v1beta1::{ImageParam, NetworkParam, ServerGroupParam, SubnetParam};
use capo_openstack::Session;
use capo_openstack::compute::{self, Flavor};
use capo_openstack::image::{self, Image, ImageFilter};
use capo_openstack::network::{
    ListFilter, NETWORK, Network, Resource, SECURITY_GROUP, SUBNET, SecurityGroup, Subnet,
};
use serde::de::DeserializeOwned;

use crate::error::{Context, Error, Result};
use crate::networking::lookup::{Tagged, neutron_filter, resolve_one, subnet_filter};

/// Image ID: `id` is checked with one GET; a filter (name and/or tags) must match exactly one
/// image. An ORC `imageRef` is resolved by the controller (it reads a Kubernetes object).
pub async fn resolve_image(s: &Session, p: &ImageParam) -> Result<String> {
    Ok(find_image(s, p).await?.id)
}

/// The image `p` selects, with its properties (such as `os_type`), in one request: a GET by
/// `id`, else a list by the filter, which must match exactly one image (Glance lists whole
/// images, properties included).
pub async fn find_image(s: &Session, p: &ImageParam) -> Result<Image> {
    if let Some(id) = p.id.as_deref().filter(|i| !i.is_empty()) {
        return image::get_image(s, id).await.ctx_selected("image", id);
    }
    let Some(f) = &p.filter else {
        return Err(Error::InvalidSpec(
            "image has neither id nor filter (imageRef is resolved by the controller)".into(),
        ));
    };
    let filter = ImageFilter {
        name: f.name.clone(),
        tags: f.tags.clone(),
        status: None,
    };
    // Only the parts of the filter the user set, quoted as written.
    let mut parts = Vec::new();
    if let Some(name) = &f.name {
        parts.push(format!("name {name:?}"));
    }
    if !f.tags.is_empty() {
        parts.push(format!("tags {}", f.tags.join(",")));
    }
    let selector = parts.join(", ");
    let mut found = image::list_images(s, &filter)
        .await
        .ctx(|| format!("list images {selector}"))?;
    match found.len() {
        0 => Err(Error::NotFound {
            kind: "image",
            selector,
        }),
        1 => Ok(found.remove(0)),
        count => Err(Error::Ambiguous {
            kind: "image",
            selector,
            count,
        }),
    }
}

/// Flavor by ID (takes precedence, one GET) or by exact name (one list).
pub async fn resolve_flavor(s: &Session, name: Option<&str>, id: Option<&str>) -> Result<Flavor> {
    if let Some(id) = id.filter(|i| !i.is_empty()) {
        return compute::get_flavor(s, id).await.ctx_selected("flavor", id);
    }
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Err(Error::InvalidSpec(
            "neither flavor nor flavorID is set".into(),
        ));
    };
    compute::find_flavor_by_name(s, name)
        .await
        .ctx(|| format!("list flavors for {name:?}"))?
        .ok_or_else(|| Error::NotFound {
            kind: "flavor",
            selector: format!("name {name:?}"),
        })
}

/// Server group ID: `id` checked with one GET, else the filter's name must match exactly one.
pub async fn resolve_server_group(s: &Session, p: &ServerGroupParam) -> Result<String> {
    if let Some(id) = p.id.as_deref().filter(|i| !i.is_empty()) {
        let group = compute::get_server_group(s, id).await;
        return Ok(group.ctx_selected("server group", id)?.id);
    }
    let Some(name) = p.filter.as_ref().and_then(|f| f.name.as_deref()) else {
        return Err(Error::InvalidSpec(
            "server group has neither id nor filter.name".into(),
        ));
    };
    let selector = format!("name {name:?}");
    let mut found: Vec<_> = compute::list_server_groups(s)
        .await
        .ctx(|| "list server groups".to_owned())?
        .into_iter()
        .filter(|g| g.name == name)
        .collect();
    match found.len() {
        0 => Err(Error::NotFound {
            kind: "server group",
            selector,
        }),
        1 => Ok(found.remove(0).id),
        count => Err(Error::Ambiguous {
            kind: "server group",
            selector,
            count,
        }),
    }
}

/// Network ID of a port: an ID is taken as given (the port create reports a wrong one), a
/// filter must match exactly one network.
pub async fn resolve_network(s: &Session, p: &NetworkParam) -> Result<String> {
    let filter = p.filter.as_ref().map(neutron_filter);
    neutron_id::<Network>(s, NETWORK, p.id.as_deref(), filter).await
}

/// Security group ID of a port, with the same rules as [`resolve_network`].
pub async fn resolve_security_group(s: &Session, p: &NetworkParam) -> Result<String> {
    let filter = p.filter.as_ref().map(neutron_filter);
    neutron_id::<SecurityGroup>(s, SECURITY_GROUP, p.id.as_deref(), filter).await
}

/// Subnet ID of a port's fixed IP on `network_id`, with the same rules as [`resolve_network`].
pub async fn resolve_subnet(s: &Session, p: &SubnetParam, network_id: &str) -> Result<String> {
    // A port's subnet must be on the port's network.
    let filter = p
        .filter
        .as_ref()
        .map(|f| subnet_filter(f).with("network_id", network_id));
    neutron_id::<Subnet>(s, SUBNET, p.id.as_deref(), filter).await
}

/// The subnet a fixed IP of a port without a network names, with that subnet's network, when
/// the subnet alone identifies them: an ID is fetched (one GET), a filter must match one subnet
/// (`Ok(None)` when it matches several: the port's network, known from another fixed IP, may
/// tell them apart). No match is an error.
pub async fn subnet_and_network(s: &Session, p: &SubnetParam) -> Result<Option<(String, String)>> {
    let filter = p.filter.as_ref().map(subnet_filter);
    match resolve_one::<Subnet>(s, SUBNET, p.id.as_deref(), filter).await {
        Ok(sn) => Ok(Some((sn.id, sn.network_id))),
        Err(Error::Ambiguous { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

async fn neutron_id<T: DeserializeOwned + Tagged>(
    s: &Session,
    r: Resource,
    id: Option<&str>,
    filter: Option<ListFilter>,
) -> Result<String> {
    if let Some(id) = id.filter(|i| !i.is_empty()) {
        return Ok(id.to_owned());
    }
    Ok(resolve_one::<T>(s, r, None, filter).await?.id().to_owned())
}

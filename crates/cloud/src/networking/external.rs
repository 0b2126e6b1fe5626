//! The external network: explicit (by id or filter, must be `router:external`), auto-detected
//! when the cloud has exactly one, or disabled.

use capo_api::v1beta1::{NetworkParam, NetworkStatus, OpenStackClusterSpec};
use capo_openstack::Session;
use capo_openstack::network::{self as net, ListFilter, NETWORK, Network};

use crate::error::{Context, Error, Result};
use crate::networking::lookup::{neutron_filter, resolve_one};

/// Resolve the external network (never modified). `Ok(None)`: disabled, or auto-detection
/// found none. One request.
pub async fn ensure_external_network(
    s: &Session,
    spec: &OpenStackClusterSpec,
) -> Result<Option<NetworkStatus>> {
    if spec.disable_external_network == Some(true) {
        return Ok(None);
    }
    find_external_network(s, spec.external_network.as_ref(), "externalNetwork").await
}

/// The external network `param` selects (by id or filter; it must be `router:external`), or
/// with no `param` the cloud's only external network (`Ok(None)` when there is none). `field`
/// names the spec field in errors. One request.
pub async fn find_external_network(
    s: &Session,
    param: Option<&NetworkParam>,
    field: &str,
) -> Result<Option<NetworkStatus>> {
    let found: Network = match param {
        Some(p) => {
            let filter = p
                .filter
                .as_ref()
                .map(|f| neutron_filter(f).with("router:external", "true"));
            let n: Network = resolve_one(s, NETWORK, p.id.as_deref(), filter).await?;
            if !n.external {
                return Err(Error::InvalidSpec(format!(
                    "{field} {} ({}) is not an external network",
                    n.name, n.id
                )));
            }
            n
        }
        None => {
            let filter = ListFilter::default().with("router:external", "true");
            let mut all: Vec<Network> = net::list(s, NETWORK, &filter)
                .await
                .ctx(|| "list external networks".to_owned())?;
            match all.len() {
                0 => return Ok(None),
                1 => all.remove(0),
                count => {
                    return Err(Error::Ambiguous {
                        kind: "external network",
                        selector: format!("router:external=true (set spec.{field})"),
                        count,
                    });
                }
            }
        }
    };
    Ok(Some(NetworkStatus {
        name: super::status_name(found.name, &found.id),
        id: found.id,
        tags: found.tags,
    }))
}

//! Nova: failure domains from the cloud's availability zones, and the cluster's SSH key pair.

use std::collections::BTreeMap;

use capo_api::v1beta1::{FailureDomainSpec, OpenStackClusterSpec};
use capo_openstack::Session;
use capo_openstack::compute::list_availability_zones;

use crate::error::{Context, Result};
use crate::plan::failure_domains::{Zone, failure_domains};

/// `status.failureDomains` from Nova's availability zones (one request).
pub async fn ensure_failure_domains(
    s: &Session,
    spec: &OpenStackClusterSpec,
) -> Result<BTreeMap<String, FailureDomainSpec>> {
    let zones: Vec<Zone> = list_availability_zones(s)
        .await
        .ctx(|| "list availability zones".to_owned())?
        .into_iter()
        .map(|z| Zone {
            name: z.name,
            available: z.state.available,
        })
        .collect();
    Ok(failure_domains(spec, &zones))
}

/// Make sure Nova has key pair `name` with `public_key` (one GET when it does; a key pair of
/// that name with another key is an error naming it, never overwritten).
pub async fn ensure_keypair(s: &Session, name: &str, public_key: &str) -> Result<()> {
    match capo_openstack::compute::get_keypair(s, name).await {
        Ok(k) if k.public_key.trim() == public_key.trim() => Ok(()),
        Ok(_) => Err(crate::Error::InvalidSpec(format!(
            "Nova key pair {name:?} exists with another public key; delete it or disable ssh.generateKeyPair"
        ))),
        Err(e) if e.is_not_found() => {
            capo_openstack::compute::create_keypair(s, name, public_key)
                .await
                .ctx(|| format!("import key pair {name}"))?;
            Ok(())
        }
        Err(e) => Err(crate::Error::api(format!("get key pair {name}"), e)),
    }
}

/// Delete Nova key pair `name`; absent is success.
pub async fn delete_keypair(s: &Session, name: &str) -> Result<()> {
    capo_openstack::compute::delete_keypair(s, name)
        .await
        .ctx_opt(|| format!("delete key pair {name}"))?;
    Ok(())
}

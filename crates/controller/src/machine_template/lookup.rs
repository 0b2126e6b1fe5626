//! The flavor and image of a template, read through caches shared by every template of the
//! controller: templates naming the same flavor and image (the usual case: one per machine
//! deployment, all alike) cost one flavor and one image request per cloud project and
//! [`crate::Options::lookup_ttl`], whatever their number.
//!
//! Entries live `lookup_ttl` (5 minutes by default), half the sync period: each periodic
//! reconcile of a template sees the cloud as it was at most that long ago, so a flavor
//! deleted and recreated under the same name with other sizes (Nova flavors cannot be
//! edited) reaches `status.capacity` within a sync period plus the TTL. A spec naming
//! another flavor or image is another key, looked up at once.

use capo_api::v1beta1::{ImageParam, OpenStackMachineSpec};
use capo_cloud::Progress;
use capo_cloud::instance::{find_image, resolve_flavor};
use capo_openstack::Session;
use capo_openstack::compute::Flavor;
use capo_openstack::image::Image;

use crate::error::{Error, Result};
use crate::server::LookupCache;

/// Flavors and images as templates read them.
#[derive(Debug)]
pub struct Lookups {
    flavors: LookupCache<Flavor>,
    images: LookupCache<Image>,
}

impl Lookups {
    /// Caches whose entries live `ttl`.
    pub fn new(ttl: std::time::Duration) -> Self {
        Self {
            flavors: LookupCache::new(ttl),
            images: LookupCache::new(ttl),
        }
    }

    /// The flavor of `spec` (`flavorID`, else `flavor` by name): one request per miss.
    pub async fn flavor(
        &self,
        s: &Session,
        scope: &str,
        spec: &OpenStackMachineSpec,
    ) -> Result<Flavor> {
        let (name, id) = (spec.flavor.as_deref(), spec.flavor_id.as_deref());
        let key = format!("{scope}|flavor|{name:?}|{id:?}");
        Ok(self
            .flavors
            .get_or(key, resolve_flavor(s, name, id))
            .await?)
    }

    /// The image of `spec` with its properties: one request per miss; an ORC `imageRef` is
    /// read from its Image object first (Waiting while it has no ID yet).
    pub async fn image(
        &self,
        s: &Session,
        scope: &str,
        client: &kube::Client,
        namespace: &str,
        spec: &OpenStackMachineSpec,
    ) -> Result<Progress<Image>> {
        let param = match &spec.image.image_ref {
            Some(r) => match crate::server::orc_image_id(client, namespace, &r.name).await? {
                Progress::Done(id) => ImageParam {
                    id: Some(id),
                    ..Default::default()
                },
                Progress::Waiting(w) => return Ok(Progress::Waiting(w)),
                Progress::Stuck(why) => return Ok(Progress::waiting("ORC image", &r.name, why)),
            },
            None => spec.image.clone(),
        };
        let selector = serde_json::to_string(&param).map_err(|source| Error::Serialize {
            what: "image lookup key",
            source,
        })?;
        let key = format!("{scope}|image|{selector}");
        let image = self.images.get_or(key, find_image(s, &param)).await?;
        Ok(Progress::Done(image))
    }
}

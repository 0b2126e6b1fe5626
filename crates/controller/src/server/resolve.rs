//! Resolution of an OpenStackServer's references (image, flavor, server group, and every
//! port's network, subnets and security groups) into `status.resolved`, which is written with
//! the first status write after the resolution. Selectors given by ID are taken as they are (the create that
//! uses them fails with the cloud's message if they are wrong), but for the subnet that tells a
//! port without a network which network it is on; filters are looked up through the shared
//! [`LookupCache`].

use capo_api::conversion::server::V1beta1ServerSpec;
use capo_api::v1alpha1::OpenStackServer;
use capo_api::v1beta1::{
    ImageParam, NetworkParam, PortOpts, ResolvedFixedIP, ResolvedMachineSpec, ResolvedPortSpec,
    SubnetParam,
};
use capo_cloud::instance::{self, port_name};
use capo_openstack::Session;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

use super::cache::LookupCache;
use capo_cloud::Progress;

use crate::error::{Error, KubeContext, Result};

/// What a resolution needs.
pub(super) struct Resolver<'a> {
    pub s: &'a Session,
    pub cache: &'a LookupCache,
    /// Cache scope of the session (see [`LookupCache::scope_of`]).
    pub scope: String,
    pub client: &'a kube::Client,
}

impl Resolver<'_> {
    async fn cached<F>(&self, what: &str, key: String, f: F) -> Result<String>
    where
        F: std::future::Future<Output = capo_cloud::Result<String>>,
    {
        let key = format!("{}|{what}|{key}", self.scope);
        Ok(self.cache.get_or(key, f).await?)
    }

    /// Resolve everything, or say what is awaited (an ORC Image without an ID). Works on the
    /// spec in v1beta1's shapes (`spec`, converted by the caller), which capo-cloud takes.
    pub async fn resolve(
        &self,
        oss: &OpenStackServer,
        spec: &V1beta1ServerSpec,
    ) -> Result<Progress<ResolvedMachineSpec>> {
        let image_id = match self.image(oss, &spec.image).await? {
            Progress::Done(id) => id,
            Progress::Waiting(w) => return Ok(Progress::Waiting(w)),
            Progress::Stuck(why) => return Ok(Progress::waiting("image", "", why)),
        };
        let flavor_key = format!("{:?}|{:?}", spec.flavor, spec.flavor_id);
        let flavor_id = self
            .cached("flavor", flavor_key, async {
                instance::resolve_flavor(self.s, spec.flavor.as_deref(), spec.flavor_id.as_deref())
                    .await
                    .map(|f| f.id)
            })
            .await?;
        let server_group_id = match &spec.server_group {
            None => None,
            Some(p) if p.id.is_none() && p.filter.is_none() => None,
            Some(p) => Some(
                self.cached("server group", json_key(p)?, async {
                    instance::resolve_server_group(self.s, p).await
                })
                .await?,
            ),
        };
        if spec.ports.is_empty() {
            return Err(Error::InvalidSpec(
                "spec.ports: Required value: an OpenStackServer needs at least one port".into(),
            ));
        }
        let mut ports = Vec::with_capacity(spec.ports.len());
        for (i, p) in spec.ports.iter().enumerate() {
            ports.push(self.port(oss, spec, p, i).await?);
        }
        Ok(Progress::Done(ResolvedMachineSpec {
            flavor_id: Some(flavor_id),
            image_id: Some(image_id),
            ports,
            server_group_id,
        }))
    }

    /// Image ID, Waiting while an ORC Image has no ID yet.
    async fn image(&self, oss: &OpenStackServer, p: &ImageParam) -> Result<Progress<String>> {
        if let Some(r) = &p.image_ref {
            let ns = oss.namespace().unwrap_or_default();
            return orc_image_id(self.client, &ns, &r.name).await;
        }
        let id = self
            .cached("image", json_key(p)?, async {
                instance::resolve_image(self.s, p).await
            })
            .await?;
        Ok(Progress::Done(id))
    }

    async fn port(
        &self,
        oss: &OpenStackServer,
        spec: &V1beta1ServerSpec,
        p: &PortOpts,
        i: usize,
    ) -> Result<ResolvedPortSpec> {
        let name = port_name(&oss.name_any(), p.name_suffix.as_deref(), i);
        // Subnets already resolved while looking for the port's network.
        let mut found = vec![None; p.fixed_ips.len()];
        let network_id = match &p.network {
            Some(network) => self.network(network).await?,
            None => self.network_of_subnets(p, i, &mut found).await?,
        };
        let mut fixed_ips = Vec::with_capacity(p.fixed_ips.len());
        for (f, known) in p.fixed_ips.iter().zip(found) {
            let subnet = match (&f.subnet, known) {
                (_, Some(id)) => Some(id),
                (Some(sp), None) => Some(self.subnet(sp, &network_id).await?),
                (None, None) => None,
            };
            fixed_ips.push(ResolvedFixedIP {
                ip_address: f.ip_address.clone(),
                subnet,
            });
        }
        let mut security_groups = Vec::new();
        for g in p.security_groups.iter().chain(&spec.security_groups) {
            let id = self.security_group(g).await?;
            if !security_groups.contains(&id) {
                security_groups.push(id);
            }
        }
        let cluster = oss
            .labels()
            .get(capo_api::constants::CLUSTER_NAME_LABEL)
            .cloned()
            .unwrap_or_default();
        Ok(ResolvedPortSpec {
            admin_state_up: p.admin_state_up,
            allowed_address_pairs: p.allowed_address_pairs.clone(),
            description: p.description.clone().unwrap_or_else(|| {
                format!("Created by cluster-api-provider-openstack cluster {cluster}")
            }),
            disable_port_security: p.disable_port_security,
            fixed_ips,
            host_id: p.host_id.clone(),
            mac_address: p.mac_address.clone(),
            name,
            network_id,
            profile: p.profile.clone(),
            propagate_uplink_status: p.propagate_uplink_status,
            security_groups,
            tags: p.tags.clone(),
            trunk: p.trunk.or(spec.trunk),
            value_specs: p.value_specs.clone(),
            vnic_type: p.vnic_type.clone(),
        })
    }

    /// The network of a port that names none, as upstream: that of the first of its fixed
    /// IPs' subnets that identifies one subnet (an ambiguous subnet filter is passed over, and
    /// resolved on the network found). The subnet found is recorded in `found`.
    async fn network_of_subnets(
        &self,
        p: &PortOpts,
        i: usize,
        found: &mut [Option<String>],
    ) -> Result<String> {
        for (f, slot) in p.fixed_ips.iter().zip(found.iter_mut()) {
            let Some(sp) = &f.subnet else { continue };
            if let Some((subnet, network)) = instance::subnet_and_network(self.s, sp).await? {
                *slot = Some(subnet);
                return Ok(network);
            }
        }
        Err(Error::InvalidSpec(format!(
            "spec.ports[{i}].network: Required value: the port names no network and none of \
             its fixed IPs names a subnet that identifies one"
        )))
    }

    async fn network(&self, p: &NetworkParam) -> Result<String> {
        let lookup = instance::resolve_network(self.s, p);
        self.cached("network", json_key(p)?, lookup).await
    }

    async fn subnet(&self, p: &SubnetParam, network_id: &str) -> Result<String> {
        let key = format!("{network_id}|{}", json_key(p)?);
        let lookup = instance::resolve_subnet(self.s, p, network_id);
        self.cached("subnet", key, lookup).await
    }

    async fn security_group(&self, p: &NetworkParam) -> Result<String> {
        let lookup = instance::resolve_security_group(self.s, p);
        self.cached("security group", json_key(p)?, lookup).await
    }
}

fn json_key(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|source| Error::Serialize {
        what: "lookup key",
        source,
    })
}

/// `status.id` of the ORC `Image` `name` (openstack.k-orc.cloud/v1alpha1) once ORC reports it
/// `Available`, as upstream waits for it ([`orc_image_progress`]); Waiting while it does not
/// exist or is not available yet.
pub(crate) async fn orc_image_id(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Progress<String>> {
    let gvk = GroupVersionKind::gvk("openstack.k-orc.cloud", "v1alpha1", "Image");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "images");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let Some(img) = api
        .get_opt(name)
        .await
        .kctx(|| format!("get ORC Image {ns}/{name}"))?
    else {
        return Ok(Progress::waiting(
            "ORC image",
            name,
            format!("waiting for ORC Image {name} to exist"),
        ));
    };
    Ok(orc_image_progress(
        &img.data,
        img.metadata.generation,
        ns,
        name,
    ))
}

/// Where an ORC Image stands, read as ORC's own helpers read its conditions: its ID once
/// `Available` is True; `Stuck` with ORC's message when its up-to-date `Progressing` condition
/// (observed at the Image's generation) has a terminal reason (`InvalidConfiguration`,
/// `UnrecoverableError`), which only an edit of the Image can change; else Waiting, even when
/// an ID is already there (an image still importing or being replaced is not usable yet).
fn orc_image_progress(
    data: &serde_json::Value,
    generation: Option<i64>,
    ns: &str,
    name: &str,
) -> Progress<String> {
    let status = &data["status"];
    let conditions = status["conditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let condition = |t: &str| conditions.iter().find(|c| c["type"] == t);
    let id = status["id"].as_str().unwrap_or_default();
    if condition("Available").is_some_and(|c| c["status"] == "True") && !id.is_empty() {
        return Progress::Done(id.to_owned());
    }
    let progressing =
        condition("Progressing").filter(|c| c["observedGeneration"].as_i64() == generation);
    if let Some(p) = progressing
        && matches!(
            p["reason"].as_str(),
            Some("InvalidConfiguration" | "UnrecoverableError")
        )
    {
        let message = p["message"].as_str().unwrap_or_default();
        return Progress::Stuck(format!("ORC Image {ns}/{name} failed: {message}"));
    }
    Progress::waiting(
        "ORC image",
        name,
        format!("waiting for ORC Image {name} to be available"),
    )
}

#[cfg(test)]
mod orc_tests {
    use super::*;
    use serde_json::json;

    fn image(conditions: serde_json::Value, id: Option<&str>) -> serde_json::Value {
        json!({"status": {"id": id, "conditions": conditions}})
    }

    #[test]
    fn an_orc_image_is_used_once_available_and_its_terminal_failure_is_reported() {
        let available = json!([{"type": "Available", "status": "True"},
            {"type": "Progressing", "status": "False", "reason": "Success", "observedGeneration": 2}]);
        assert_eq!(
            orc_image_progress(&image(available, Some("img-1")), Some(2), "ns", "node"),
            Progress::Done("img-1".to_owned())
        );
        // An ID but not available yet (still importing): waited for, as upstream.
        let importing = json!([{"type": "Available", "status": "False"},
            {"type": "Progressing", "status": "True", "reason": "Progressing", "observedGeneration": 2}]);
        assert!(matches!(
            orc_image_progress(&image(importing, Some("img-1")), Some(2), "ns", "node"),
            Progress::Waiting(_)
        ));
        // A terminal failure at the Image's generation: reported with ORC's message.
        let failed = json!([{"type": "Available", "status": "False"},
            {"type": "Progressing", "status": "False", "reason": "InvalidConfiguration",
             "message": "image not found in Glance", "observedGeneration": 2}]);
        assert_eq!(
            orc_image_progress(&image(failed.clone(), None), Some(2), "ns", "node"),
            Progress::Stuck("ORC Image ns/node failed: image not found in Glance".to_owned())
        );
        // The same condition from an older generation (the Image was edited since): waited for.
        assert!(matches!(
            orc_image_progress(&image(failed, None), Some(3), "ns", "node"),
            Progress::Waiting(_)
        ));
        // No status at all.
        assert!(matches!(
            orc_image_progress(&json!({}), Some(1), "ns", "node"),
            Progress::Waiting(_)
        ));
    }
}

//! What a node of a template offers, from its flavor, root volume and image (no IO): the
//! values and quantity formats upstream writes, so the cluster autoscaler reads the same
//! numbers from either provider.

use std::collections::BTreeMap;

use capo_api::v1beta1::{NodeInfo, RootVolume};
use capo_openstack::compute::Flavor;
use capo_openstack::image::Image;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Glance property naming the image's operating system (`linux`, `windows`).
pub const OS_TYPE_PROPERTY: &str = "os_type";

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// `status.capacity`: cpu = vCPUs, memory = RAM, ephemeral-storage = the flavor's ephemeral
/// disk, storage = the root volume when it has a size, else the flavor's root disk. Zero
/// values are left out, as upstream does.
pub fn capacity(flavor: &Flavor, root_volume: Option<&RootVolume>) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    let mut put = |key: &str, q: Option<Quantity>| {
        if let Some(q) = q {
            out.insert(key.to_owned(), q);
        }
    };
    put("cpu", decimal_si(u64::from(flavor.vcpus)));
    put("memory", binary_si(flavor.ram.saturating_mul(MIB)));
    put(
        "ephemeral-storage",
        binary_si(flavor.ephemeral.saturating_mul(GIB)),
    );
    let root_gib = root_volume
        .and_then(|v| u64::try_from(v.size_gib).ok())
        .filter(|g| *g > 0)
        .unwrap_or(flavor.disk);
    put("storage", binary_si(root_gib.saturating_mul(GIB)));
    out
}

/// `status.nodeInfo`: the image's `os_type` when it is a string; none otherwise (the
/// autoscaler then assumes its default, linux).
pub fn node_info(image: &Image) -> Option<NodeInfo> {
    image.property(OS_TYPE_PROPERTY).map(|os| NodeInfo {
        operating_system: Some(os.to_owned()),
    })
}

/// A count in Kubernetes' canonical decimal form (`resource.DecimalSI`): `4`, `1500`, `2k`.
/// None for zero.
pub fn decimal_si(n: u64) -> Option<Quantity> {
    canonical(n, 1000, &["", "k", "M", "G", "T", "P", "E"])
}

/// A byte count in Kubernetes' canonical binary form (`resource.BinarySI`): `1536Mi`, `8Gi`,
/// `1Ti`. None for zero.
pub fn binary_si(bytes: u64) -> Option<Quantity> {
    if bytes < 1024 {
        // Kubernetes writes small binary quantities in decimal form.
        return decimal_si(bytes);
    }
    canonical(bytes, 1024, &["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
}

/// `n` divided by the largest power of `base` that divides it, with that power's suffix.
fn canonical(n: u64, base: u64, suffixes: &[&str]) -> Option<Quantity> {
    if n == 0 {
        return None;
    }
    let mut value = n;
    let mut power = 0;
    while value.is_multiple_of(base) && power + 1 < suffixes.len() {
        value /= base;
        power += 1;
    }
    Some(Quantity(format!("{value}{}", suffixes[power])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flavor(vcpus: u32, ram: u64, disk: u64, ephemeral: u64) -> Flavor {
        serde_json::from_value(serde_json::json!({
            "id": "f", "name": "f", "vcpus": vcpus, "ram": ram, "disk": disk,
            "OS-FLV-EXT-DATA:ephemeral": ephemeral,
        }))
        .unwrap()
    }

    fn strings(c: &BTreeMap<String, Quantity>) -> Vec<(String, String)> {
        c.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect()
    }

    #[test]
    fn quantities_are_kubernetes_canonical() {
        let q = |o: Option<Quantity>| o.map(|q| q.0);
        assert_eq!(q(decimal_si(4)), Some("4".into()));
        assert_eq!(q(decimal_si(1500)), Some("1500".into()));
        assert_eq!(q(decimal_si(2000)), Some("2k".into()));
        assert_eq!(q(decimal_si(0)), None);
        assert_eq!(q(binary_si(512 * MIB)), Some("512Mi".into()));
        assert_eq!(q(binary_si(1536 * MIB)), Some("1536Mi".into()));
        assert_eq!(q(binary_si(8192 * MIB)), Some("8Gi".into()));
        assert_eq!(q(binary_si(1024 * GIB)), Some("1Ti".into()));
        assert_eq!(q(binary_si(1000)), Some("1k".into()));
        assert_eq!(q(binary_si(1025)), Some("1025".into()));
    }

    #[test]
    fn capacity_from_flavor_and_root_volume() {
        let f = flavor(4, 8192, 50, 10);
        assert_eq!(
            strings(&capacity(&f, None)),
            vec![
                ("cpu".into(), "4".into()),
                ("ephemeral-storage".into(), "10Gi".into()),
                ("memory".into(), "8Gi".into()),
                ("storage".into(), "50Gi".into()),
            ]
        );
        let rv = RootVolume {
            size_gib: 100,
            ..Default::default()
        };
        assert_eq!(capacity(&f, Some(&rv))["storage"].0, "100Gi");
        // Zero values are left out; a boot-from-volume flavor has no root disk of its own.
        let bfv = flavor(2, 1536, 0, 0);
        assert_eq!(
            strings(&capacity(&bfv, None)),
            vec![
                ("cpu".into(), "2".into()),
                ("memory".into(), "1536Mi".into())
            ]
        );
        assert_eq!(capacity(&bfv, Some(&rv))["storage"].0, "100Gi");
    }

    #[test]
    fn operating_system_from_os_type_only_when_a_string() {
        let img = |props: serde_json::Value| -> Image {
            let mut v = serde_json::json!({"id": "i"});
            v.as_object_mut()
                .unwrap()
                .extend(props.as_object().unwrap().clone());
            serde_json::from_value(v).unwrap()
        };
        let linux = node_info(&img(serde_json::json!({"os_type": "linux"})));
        assert_eq!(linux.unwrap().operating_system.as_deref(), Some("linux"));
        assert_eq!(node_info(&img(serde_json::json!({}))), None);
        assert_eq!(node_info(&img(serde_json::json!({"os_type": 3}))), None);
    }
}

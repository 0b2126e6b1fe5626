//! Endpoint selection from the token's catalog and version-discovery document parsing.

use openstack_sdk_auth_core::types::ServiceEndpoints;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::request::{ApiVersion, Service};

/// Pick the endpoint URL for `service` (interface, region) and make sure it carries the API
/// version segment, ending with `/` so relative paths join under it.
pub(crate) fn endpoint_url(
    catalog: &[ServiceEndpoints],
    service: Service,
    region: Option<&str>,
    interface: &str,
) -> Result<url::Url> {
    let no_endpoint = || Error::NoEndpoint {
        service: service.catalog_types()[0].to_owned(),
        region: region.map(str::to_owned),
        interface: interface.to_owned(),
    };
    let raw = service
        .catalog_types()
        .iter()
        .find_map(|ty| {
            catalog
                .iter()
                .filter(|s| s.service_type == *ty)
                .flat_map(|s| s.endpoints.iter())
                .find(|e| {
                    e.interface == interface
                        && region.is_none_or(|r| e.region.as_deref() == Some(r))
                })
        })
        .ok_or_else(no_endpoint)?;
    let mut url = raw.url.trim_end_matches('/').to_owned();
    if let Some(seg) = service.version_segment()
        && !url.ends_with(&format!("/{seg}"))
    {
        url.push('/');
        url.push_str(seg);
    }
    url.push('/');
    url::Url::parse(&url).map_err(|_| no_endpoint())
}

/// The one region the catalog's endpoints of `interface` are in, when there is exactly one
/// (a cloud with several regions gives no answer: the region must then be configured).
pub(crate) fn single_region(catalog: &[ServiceEndpoints], interface: &str) -> Option<String> {
    let mut regions = catalog
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| e.interface == interface)
        .filter_map(|e| e.region.clone());
    let first = regions.next()?;
    regions.all(|r| r == first).then_some(first)
}

/// The URL whose GET returns the version document: the versioned endpoint for Nova and Cinder, the
/// service root (version segment and, for Cinder, project ID stripped) otherwise.
pub(crate) fn discovery_url(endpoint: &url::Url, service: Service) -> url::Url {
    let mut u = endpoint.clone();
    let segs: Vec<String> = u
        .path_segments()
        .map(|s| s.filter(|p| !p.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default();
    let keep = match service {
        Service::Compute => segs.len(),
        // .../v3/{project_id} → .../v3 ; the versioned root answers with {"version": ...}
        Service::BlockStorage => segs
            .iter()
            .rposition(|s| s.starts_with('v') && ApiVersion::parse(s).is_some())
            .map_or(segs.len(), |i| i + 1),
        // .../v2 → ... (the root lists all versions)
        _ => segs.len().saturating_sub(1),
    };
    // No trailing slash: every service answers `/v2.1` and `/`-less roots, not all routers
    // answer the slashed form.
    let path = format!("/{}", segs[..keep].join("/"));
    u.set_path(&path);
    u
}

/// Min and max (micro)version from a version document: `{"version": {...}}` (Nova, Cinder
/// versioned root) or `{"versions": [...]}` (roots). Ids like `v2.27` count when no explicit
/// microversion is given (Octavia lists one entry per minor version).
pub(crate) fn parse_versions(doc: &Value) -> Option<(ApiVersion, ApiVersion)> {
    let entries: Vec<&Value> = match (doc.get("version"), doc.get("versions")) {
        (Some(v), _) if v.is_object() => vec![v],
        (_, Some(Value::Array(vs))) => vs.iter().collect(),
        (_, Some(Value::Object(o))) => match o.get("values") {
            Some(Value::Array(vs)) => vs.iter().collect(),
            _ => vec![],
        },
        _ => vec![],
    };
    let mut min: Option<ApiVersion> = None;
    let mut max: Option<ApiVersion> = None;
    for e in entries {
        let status = e.get("status").and_then(Value::as_str).unwrap_or("CURRENT");
        if status.eq_ignore_ascii_case("DEPRECATED") {
            continue;
        }
        let s = |k: &str| e.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let hi = s("version").or(s("id")).and_then(ApiVersion::parse);
        let lo = s("min_version").or(s("id")).and_then(ApiVersion::parse);
        if let Some(hi) = hi {
            max = Some(max.map_or(hi, |m| m.max(hi)));
        }
        if let Some(lo) = lo {
            min = Some(min.map_or(lo, |m| m.min(lo)));
        }
    }
    Some((min?, max?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog() -> Vec<ServiceEndpoints> {
        serde_json::from_value(json!([
            {"type": "compute", "name": "nova", "endpoints": [
                {"id": "1", "interface": "public", "region": "R1", "url": "http://h/compute/v2.1"},
                {"id": "2", "interface": "public", "region": "R2", "url": "http://h2/compute/v2.1"}]},
            {"type": "network", "name": "neutron", "endpoints": [
                {"id": "3", "interface": "public", "region": "R1", "url": "http://h/network"}]},
            {"type": "block-storage", "name": "cinder", "endpoints": [
                {"id": "4", "interface": "public", "region": "R1", "url": "http://h/volume/v3/p1"}]},
        ]))
        .unwrap()
    }

    #[test]
    fn a_region_only_when_the_catalog_has_exactly_one() {
        assert_eq!(single_region(&catalog(), "public"), None, "R1 and R2");
        let mut one = catalog();
        one[0].endpoints.truncate(1);
        assert_eq!(single_region(&one, "public").as_deref(), Some("R1"));
        assert_eq!(
            single_region(&one, "internal"),
            None,
            "no endpoint of that interface"
        );
    }

    #[test]
    fn endpoint_selection() {
        let c = catalog();
        let u = endpoint_url(&c, Service::Compute, Some("R2"), "public").unwrap();
        assert_eq!(u.as_str(), "http://h2/compute/v2.1/");
        let u = endpoint_url(&c, Service::Network, Some("R1"), "public").unwrap();
        assert_eq!(u.as_str(), "http://h/network/v2.0/");
        assert!(endpoint_url(&c, Service::Network, Some("R1"), "internal").is_err());
        assert!(endpoint_url(&c, Service::Image, None, "public").is_err());
        let v = endpoint_url(&c, Service::BlockStorage, None, "public").unwrap();
        assert_eq!(
            discovery_url(&v, Service::BlockStorage).as_str(),
            "http://h/volume/v3"
        );
        let l = url::Url::parse("http://h/load-balancer/v2/").unwrap();
        assert_eq!(
            discovery_url(&l, Service::LoadBalancer).as_str(),
            "http://h/load-balancer"
        );
    }

    #[test]
    fn version_documents() {
        let nova = json!({"version": {"id": "v2.1", "status": "CURRENT", "version": "2.96", "min_version": "2.1"}});
        assert_eq!(
            parse_versions(&nova),
            Some((ApiVersion(2, 1), ApiVersion(2, 96)))
        );
        let octavia = json!({"versions": [
            {"id": "v2.0", "status": "SUPPORTED"}, {"id": "v2.27", "status": "CURRENT"}]});
        assert_eq!(
            parse_versions(&octavia),
            Some((ApiVersion(2, 0), ApiVersion(2, 27)))
        );
        let cinder = json!({"versions": [{"id": "v3.0", "status": "CURRENT", "version": "3.70", "min_version": "3.0"}]});
        assert_eq!(
            parse_versions(&cinder),
            Some((ApiVersion(3, 0), ApiVersion(3, 70)))
        );
        assert_eq!(parse_versions(&json!({})), None);
    }
}

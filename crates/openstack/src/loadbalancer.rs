//! Octavia: load balancers, listeners, pools, members, health monitors, providers, flavors,
//! availability zones, and the API version (feature levels: tags ≥2.5, flavors ≥2.6,
//! VIP ACL ≥2.12, AZs ≥2.14).

mod models;

use serde_json::json;

pub use models::*;

use crate::error::Result;
use crate::request::{ApiVersion, Request, Service};
use crate::resource::resource;
pub use crate::resource::{
    ListFilter, Resource, create, create_request, delete_request, get, get_request, list,
    list_request, update, update_request,
};
use crate::session::Session;

const S: Service = Service::LoadBalancer;

resource!(
    LOAD_BALANCER,
    S,
    "lbaas/loadbalancers",
    "loadbalancer",
    "loadbalancers",
    "loadbalancer"
);
resource!(
    LISTENER,
    S,
    "lbaas/listeners",
    "listener",
    "listeners",
    "listener"
);
resource!(POOL, S, "lbaas/pools", "pool", "pools", "pool");
resource!(
    HEALTH_MONITOR,
    S,
    "lbaas/healthmonitors",
    "healthmonitor",
    "healthmonitors",
    "healthmonitor"
);

/// Octavia version that supports tags.
pub const TAGS_VERSION: ApiVersion = ApiVersion(2, 5);
/// Octavia version that supports LB flavors.
pub const FLAVORS_VERSION: ApiVersion = ApiVersion(2, 6);
/// Octavia version that supports listener `allowed_cidrs`.
pub const VIP_ACL_VERSION: ApiVersion = ApiVersion(2, 12);
/// Octavia version that supports LB availability zones.
pub const AZ_VERSION: ApiVersion = ApiVersion(2, 14);

/// The Octavia API version (discovered once per session).
pub async fn api_version(s: &Session) -> Result<ApiVersion> {
    Ok(s.versions(S).await?.max)
}

/// DELETE /lbaas/loadbalancers/{id}?cascade=true (deletes listeners, pools, members, monitors).
pub fn delete_load_balancer_request(id: &str, cascade: bool) -> Request {
    let r = delete_request(LOAD_BALANCER, id);
    if cascade {
        r.with_query("cascade", "true")
    } else {
        r
    }
}
/// Delete a load balancer.
pub async fn delete_load_balancer(s: &Session, id: &str, cascade: bool) -> Result<()> {
    s.send(&delete_load_balancer_request(id, cascade))
        .await
        .map(drop)
}
/// Delete a listener, pool or monitor.
pub async fn delete(s: &Session, r: Resource, id: &str) -> Result<()> {
    crate::resource::delete(s, r, id).await
}

/// POST /lbaas/pools/{pool}/members.
pub fn create_member_request(pool_id: &str, member: &MemberCreate) -> Request {
    Request::post(
        S,
        format!("lbaas/pools/{pool_id}/members"),
        "member_create",
        json!({"member": member}),
    )
}
/// GET /lbaas/pools/{pool}/members.
pub fn list_members_request(pool_id: &str) -> Request {
    Request::get(S, format!("lbaas/pools/{pool_id}/members"), "member_list")
}
/// DELETE /lbaas/pools/{pool}/members/{id}.
pub fn delete_member_request(pool_id: &str, member_id: &str) -> Request {
    Request::delete(
        S,
        format!("lbaas/pools/{pool_id}/members/{member_id}"),
        "member_delete",
    )
}
/// Add a member.
pub async fn create_member(s: &Session, pool_id: &str, member: &MemberCreate) -> Result<Member> {
    s.fetch(&create_member_request(pool_id, member), "member")
        .await
}
/// List a pool's members.
pub async fn list_members(s: &Session, pool_id: &str) -> Result<Vec<Member>> {
    s.list(&list_members_request(pool_id), "members").await
}
/// Remove a member.
pub async fn delete_member(s: &Session, pool_id: &str, member_id: &str) -> Result<()> {
    s.send(&delete_member_request(pool_id, member_id))
        .await
        .map(drop)
}

/// GET /lbaas/providers.
pub fn list_providers_request() -> Request {
    Request::get(S, "lbaas/providers", "provider_list")
}
/// List providers (amphora, ovn, ...).
pub async fn list_providers(s: &Session) -> Result<Vec<Provider>> {
    s.fetch(&list_providers_request(), "providers").await
}
/// GET /lbaas/flavors.
pub fn list_flavors_request() -> Request {
    Request::get(S, "lbaas/flavors", "lb_flavor_list")
}
/// List LB flavors.
pub async fn list_flavors(s: &Session) -> Result<Vec<LbFlavor>> {
    s.list(&list_flavors_request(), "flavors").await
}
/// GET /lbaas/availabilityzones.
pub fn list_availability_zones_request() -> Request {
    Request::get(S, "lbaas/availabilityzones", "lb_availability_zone_list")
}
/// List LB availability zones.
pub async fn list_availability_zones(s: &Session) -> Result<Vec<LbAvailabilityZone>> {
    s.list(&list_availability_zones_request(), "availability_zones")
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn shapes() {
        let lb = create_request(
            LOAD_BALANCER,
            &LoadBalancerCreate {
                name: "k8s-kubeapi".into(),
                vip_subnet_id: Some("s".into()),
                tags: vec!["t".into()],
                ..Default::default()
            },
        );
        assert_eq!(
            (lb.path.as_str(), lb.label),
            ("lbaas/loadbalancers", "loadbalancer_create")
        );
        assert_eq!(
            lb.body.unwrap(),
            json!({"loadbalancer": {"name": "k8s-kubeapi", "vip_subnet_id": "s", "tags": ["t"]}})
        );
        let d = delete_load_balancer_request("x", true);
        assert_eq!(
            (d.method.clone(), d.query.clone()),
            (Method::DELETE, vec![("cascade".into(), "true".into())])
        );
        let m = create_member_request(
            "p",
            &MemberCreate {
                name: "m".into(),
                address: "10.0.0.4".into(),
                protocol_port: 6443,
                subnet_id: None,
            },
        );
        assert_eq!(m.path, "lbaas/pools/p/members");
        assert_eq!(m.body.unwrap()["member"]["protocol_port"], 6443);
        assert_eq!(list_providers_request().path, "lbaas/providers");
        assert_eq!(list_flavors_request().path, "lbaas/flavors");
        assert_eq!(
            get_request(HEALTH_MONITOR, "h").path,
            "lbaas/healthmonitors/h"
        );
        let l = create_request(
            LISTENER,
            &ListenerCreate {
                listener: ListenerBody {
                    name: "l".into(),
                    protocol: "TCP".into(),
                    protocol_port: 6443,
                    allowed_cidrs: vec!["10.0.0.0/8".into()],
                    default_pool: None,
                },
                loadbalancer_id: "lb".into(),
            },
        );
        assert_eq!(
            l.body.unwrap()["listener"]["allowed_cidrs"],
            json!(["10.0.0.0/8"])
        );
    }
}

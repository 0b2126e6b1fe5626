//! What cloud-provider-openstack left in the cluster's project, removed when the cluster is
//! deleted (after Cluster API has removed the machines, before capo deletes the network).
//!
//! The workload cluster's CCM makes an Octavia load balancer, a floating IP and a security
//! group for each `type: LoadBalancer` Service; its Cinder CSI plugin makes volumes and
//! snapshots for PVCs. Nobody deletes them when the cluster goes, and a load balancer's VIP
//! port keeps the cluster network in use (Neutron's `409 NetworkInUse`). [`sweep`] finds them
//! by what cloud-provider-openstack v1.34 writes on them, with the cluster name capo gives
//! both programs ([`capo_api::names::cloud_provider_cluster_name`], `<namespace>-<cluster>`):
//!
//! | resource | taken when |
//! |---|---|
//! | load balancer (cascade) | named `kube_service_…` and its VIP is on a network capo manages for this cluster, or named `kube_service_<name>_…` with the description `Kubernetes external service <ns>/<svc> from cluster <name>` |
//! | floating IP | on the VIP port of such a load balancer with the CCM's description (`Floating IP for Kubernetes external service …`), or unattached with the description `… from cluster <name>` |
//! | security group | named `lb-sg-…` with the description `Security Group for <ns>/<svc> Service LoadBalancer in cluster <name>` |
//! | snapshot, volume | the property `cinder.csi.openstack.org/cluster=<name>`, and only with [`VolumePolicy::Delete`] |
//!
//! ## Guarantees
//! - Nothing else is touched: a load balancer, floating IP, security group or volume without
//!   those marks (made by hand, by another cluster, by capo itself) is never deleted; a
//!   floating IP the user brought to a Service (`loadBalancerIP`) is left allocated.
//! - No waiting, as everywhere in this crate: one pass lists (at most five GETs: load
//!   balancers, floating IPs, security groups, snapshots, volumes), issues the deletes that can
//!   go now, and returns [`Progress::Waiting`] with the cloud's reason for what cannot yet
//!   (a load balancer `PENDING_*`, Octavia's 409, a security group still on a port, a volume
//!   `in-use` or held by a snapshot). Done once nothing of the cluster is left.
//! - A service missing from the catalog (no Octavia, no Cinder) has nothing to sweep.
//! - Snapshots go before volumes; a volume held by a snapshot that is not the CSI plugin's
//!   (made by hand) is waited for, with Cinder's reason, never forced.
//!
//! ## Limits
//! - Security groups and unattached floating IPs are found by the cluster name only: a CCM run
//!   with its default name (`kubernetes`) leaves them (its load balancers still go, by network).
//! - `<namespace>-<cluster>` is ambiguous when names contain `-` (`a`/`b-c` and `a-b`/`c`):
//!   two such clusters in one project would share CCM/CSI leftovers, as they share every
//!   upstream resource name (`k8s-clusterapi-cluster-<ns>-<name>`).

use std::collections::BTreeSet;

use capo_openstack::blockstorage::{self, Snapshot, Volume};
use capo_openstack::loadbalancer::{self as lbaas, LoadBalancer};
use capo_openstack::network::{self, FloatingIp, SecurityGroup};
use capo_openstack::resource::ListFilter;
use capo_openstack::{Error as ApiError, Session};

use crate::error::{Context, Error, Result};
use crate::progress::Progress;

/// Name prefix of every load balancer the CCM creates.
const LB_PREFIX: &str = "kube_service_";
/// Description prefix of the floating IPs the CCM allocates.
const FIP_DESCRIPTION: &str = "Floating IP for Kubernetes external service ";
/// Name prefix of the CCM's security groups.
const SG_PREFIX: &str = "lb-sg-";
/// Volume and snapshot property the Cinder CSI plugin sets to its `--cluster`.
pub const CSI_CLUSTER_PROPERTY: &str = "cinder.csi.openstack.org/cluster";

/// What to do with the CSI plugin's volumes and snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumePolicy {
    /// Leave them (the default: data is not deleted without being asked).
    Keep,
    /// Delete them with the cluster.
    Delete,
}

/// The cluster whose leftovers to sweep.
#[derive(Debug, Clone)]
pub struct Sweep<'a> {
    /// The CCM's `--cluster-name` / the CSI's `--cluster`.
    pub cluster_name: &'a str,
    /// Networks capo manages for this cluster (a `kube_service_` load balancer with its VIP
    /// there belongs to the cluster whatever name its CCM was given).
    pub networks: &'a [String],
    /// Volumes and snapshots.
    pub volumes: VolumePolicy,
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    /// `<kind> <name> (<id>)` of every delete this pass issued.
    pub deleted: Vec<String>,
    /// `<kind> <id>` of what the policy keeps (CSI volumes and snapshots).
    pub kept: Vec<String>,
    /// Why the sweep is not finished, one entry per resource that has to be waited for.
    pub waiting: Vec<String>,
}

impl Swept {
    /// Done when nothing has to be waited for and nothing was deleted in this pass (a delete
    /// is confirmed by the next pass no longer listing it).
    pub fn progress(&self) -> Progress {
        if self.waiting.is_empty() && self.deleted.is_empty() {
            Progress::Done(())
        } else if self.waiting.is_empty() {
            Progress::waiting(
                "cloud-provider resources",
                "deleted",
                format!(
                    "deleting what cloud-provider-openstack left: {}",
                    self.deleted.join(", ")
                ),
            )
        } else {
            Progress::waiting(
                "cloud-provider resources",
                "busy",
                format!(
                    "waiting for what cloud-provider-openstack left: {}",
                    self.waiting.join("; ")
                ),
            )
        }
    }
}

/// One pass over the project: delete what can go now, say what has to be waited for.
pub async fn sweep(s: &Session, w: &Sweep<'_>) -> Result<Swept> {
    let mut out = Swept::default();
    let project = s
        .project_id()
        .await
        .map_err(|e| Error::api("read the project of the session", e))?;
    let lbs = optional(
        lbaas::list::<LoadBalancer>(
            s,
            lbaas::LOAD_BALANCER,
            &ListFilter {
                project_id: Some(project.clone()),
                ..Default::default()
            },
        )
        .await,
    )
    .ctx(|| "list load balancers".into())?
    .unwrap_or_default();
    let fips: Vec<FloatingIp> = network::list(
        s,
        network::FLOATING_IP,
        &ListFilter {
            project_id: Some(project.clone()),
            ..Default::default()
        },
    )
    .await
    .ctx(|| "list floating IPs".into())?;
    let targets: Vec<&LoadBalancer> = lbs.iter().filter(|l| lb_is_ours(l, w)).collect();
    let vip_ports: BTreeSet<&str> = targets
        .iter()
        .filter_map(|l| l.vip_port_id.as_deref())
        .collect();
    for fip in fips.iter().filter(|f| fip_is_ours(f, w, &vip_ports)) {
        let gone = network::delete(s, network::FLOATING_IP, &fip.id)
            .await
            .ctx_opt(|| format!("delete floating IP {}", fip.id))?
            .is_none();
        if !gone {
            out.deleted.push(format!(
                "floating IP {} ({})",
                fip.floating_ip_address, fip.id
            ));
        }
    }
    for lb in targets {
        delete_lb(s, lb, &mut out).await?;
    }
    let groups: Vec<SecurityGroup> = network::list(
        s,
        network::SECURITY_GROUP,
        &ListFilter {
            project_id: Some(project),
            ..Default::default()
        },
    )
    .await
    .ctx(|| "list security groups".into())?;
    for sg in groups.iter().filter(|g| sg_is_ours(g, w)) {
        match network::delete(s, network::SECURITY_GROUP, &sg.id).await {
            Ok(()) => out
                .deleted
                .push(format!("security group {} ({})", sg.name, sg.id)),
            Err(e) if e.is_not_found() => {}
            Err(e) if conflict(&e) => out.waiting.push(format!(
                "security group {} ({}): {}",
                sg.name,
                sg.id,
                reason(&e)
            )),
            Err(e) => return Err(Error::api(format!("delete security group {}", sg.id), e)),
        }
    }
    sweep_volumes(s, w, &mut out).await?;
    Ok(out)
}

/// Cascade-delete one load balancer, or say why it has to wait.
async fn delete_lb(s: &Session, lb: &LoadBalancer, out: &mut Swept) -> Result<()> {
    if lb.provisioning_status.starts_with("PENDING_") {
        out.waiting.push(format!(
            "load balancer {} ({}) is {}",
            lb.name, lb.id, lb.provisioning_status
        ));
        return Ok(());
    }
    match lbaas::delete_load_balancer(s, &lb.id, true).await {
        Ok(()) => out
            .deleted
            .push(format!("load balancer {} ({})", lb.name, lb.id)),
        Err(e) if e.is_not_found() => {}
        Err(e) if conflict(&e) => out.waiting.push(format!(
            "load balancer {} ({}): {}",
            lb.name,
            lb.id,
            reason(&e)
        )),
        Err(e) => return Err(Error::api(format!("delete load balancer {}", lb.id), e)),
    }
    Ok(())
}

/// CSI snapshots, then CSI volumes no snapshot holds (with [`VolumePolicy::Delete`]); the IDs
/// of both under [`VolumePolicy::Keep`].
async fn sweep_volumes(s: &Session, w: &Sweep<'_>, out: &mut Swept) -> Result<()> {
    let Some(snapshots) =
        optional(blockstorage::list_snapshots(s).await).ctx(|| "list volume snapshots".into())?
    else {
        return Ok(());
    };
    let volumes = blockstorage::list_volumes(s, None)
        .await
        .ctx(|| "list volumes".into())?;
    let snapshots: Vec<&Snapshot> = snapshots
        .iter()
        .filter(|v| csi_cluster(&v.metadata) == Some(w.cluster_name))
        .collect();
    let ours: Vec<&Volume> = volumes
        .iter()
        .filter(|v| csi_cluster(&v.metadata) == Some(w.cluster_name))
        .collect();
    if w.volumes == VolumePolicy::Keep {
        out.kept
            .extend(snapshots.iter().map(|v| format!("snapshot {}", v.id)));
        out.kept
            .extend(ours.iter().map(|v| format!("volume {}", v.id)));
        return Ok(());
    }
    for snap in &snapshots {
        if let Some(why) = busy(&snap.status) {
            out.waiting.push(format!("snapshot {} is {why}", snap.id));
            continue;
        }
        match blockstorage::delete_snapshot(s, &snap.id).await {
            Ok(()) => out.deleted.push(format!("snapshot {}", snap.id)),
            Err(e) if e.is_not_found() => {}
            Err(e) if refused_for_now(&e) => {
                out.waiting
                    .push(format!("snapshot {}: {}", snap.id, reason(&e)))
            }
            Err(e) => return Err(Error::api(format!("delete snapshot {}", snap.id), e)),
        }
    }
    let held: BTreeSet<&str> = snapshots.iter().map(|v| v.volume_id.as_str()).collect();
    for vol in ours {
        if held.contains(vol.id.as_str()) {
            out.waiting
                .push(format!("volume {} waits for its snapshots", vol.id));
            continue;
        }
        if vol.status == "in-use" || !vol.attachments.is_empty() {
            let servers: Vec<&str> = vol
                .attachments
                .iter()
                .map(|a| a.server_id.as_str())
                .collect();
            out.waiting.push(format!(
                "volume {} is attached to server {}",
                vol.id,
                servers.join(", ")
            ));
            continue;
        }
        if let Some(why) = busy(&vol.status) {
            out.waiting.push(format!("volume {} is {why}", vol.id));
            continue;
        }
        match blockstorage::delete_volume(s, &vol.id).await {
            Ok(()) => out.deleted.push(format!("volume {}", vol.id)),
            Err(e) if e.is_not_found() => {}
            Err(e) if refused_for_now(&e) => {
                out.waiting
                    .push(format!("volume {}: {}", vol.id, reason(&e)))
            }
            Err(e) => return Err(Error::api(format!("delete volume {}", vol.id), e)),
        }
    }
    Ok(())
}

/// A state Cinder refuses a delete in, that ends by itself.
fn busy(status: &str) -> Option<&str> {
    match status {
        "creating" | "deleting" | "attaching" | "detaching" | "backing-up" | "restoring-backup"
        | "downloading" | "uploading" | "extending" | "maintenance" | "reserved" => Some(status),
        _ => None,
    }
}

fn csi_cluster(metadata: &std::collections::BTreeMap<String, String>) -> Option<&str> {
    metadata.get(CSI_CLUSTER_PROPERTY).map(String::as_str)
}

/// A load balancer of this cluster's CCM.
fn lb_is_ours(lb: &LoadBalancer, w: &Sweep<'_>) -> bool {
    if !lb.name.starts_with(LB_PREFIX) {
        return false;
    }
    let on_our_network = lb
        .vip_network_id
        .as_deref()
        .is_some_and(|n| w.networks.iter().any(|m| m == n));
    let named = lb
        .name
        .starts_with(&format!("{LB_PREFIX}{}_", w.cluster_name))
        && lb.description.as_deref().is_some_and(|d| {
            d.starts_with("Kubernetes external service ")
                && d.ends_with(&format!(" from cluster {}", w.cluster_name))
        });
    on_our_network || named
}

/// A floating IP the CCM allocated for one of `vip_ports`, or for this cluster and now free.
fn fip_is_ours(fip: &FloatingIp, w: &Sweep<'_>, vip_ports: &BTreeSet<&str>) -> bool {
    if !fip.description.starts_with(FIP_DESCRIPTION) {
        return false;
    }
    match fip.port_id.as_deref() {
        Some(port) => vip_ports.contains(port),
        None => fip
            .description
            .ends_with(&format!(" from cluster {}", w.cluster_name)),
    }
}

/// A security group of this cluster's CCM.
fn sg_is_ours(sg: &SecurityGroup, w: &Sweep<'_>) -> bool {
    sg.name.starts_with(SG_PREFIX)
        && sg.description.starts_with("Security Group for ")
        && sg.description.ends_with(&format!(
            " Service LoadBalancer in cluster {}",
            w.cluster_name
        ))
}

/// A list of a service the catalog may not have: `None` without an endpoint.
fn optional<T>(r: capo_openstack::Result<T>) -> capo_openstack::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(ApiError::NoEndpoint { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn conflict(e: &ApiError) -> bool {
    matches!(e.kind(), Some(capo_openstack::ErrorKind::Conflict))
}

/// Cinder answers 400 (not 409) for a volume that has snapshots or is in a state it cannot be
/// deleted in; both end by themselves or by the owner's hand, never by capo forcing them.
fn refused_for_now(e: &ApiError) -> bool {
    conflict(e) || matches!(e.kind(), Some(capo_openstack::ErrorKind::BadRequest))
}

/// The cloud's own message.
fn reason(e: &ApiError) -> String {
    match e {
        ApiError::Api {
            status, message, ..
        } => format!("HTTP {status}: {message}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lb(name: &str, desc: &str, net: &str) -> LoadBalancer {
        serde_json::from_value(serde_json::json!({
            "id": "lb1", "name": name, "description": desc, "vip_network_id": net,
            "provisioning_status": "ACTIVE"
        }))
        .expect("lb")
    }

    fn sweep_of<'a>(networks: &'a [String]) -> Sweep<'a> {
        Sweep {
            cluster_name: "ns1-c",
            networks,
            volumes: VolumePolicy::Delete,
        }
    }

    #[test]
    fn load_balancers_by_network_or_by_name_and_description() {
        let nets = vec!["net-a".to_string()];
        let w = sweep_of(&nets);
        let desc = "Kubernetes external service default/web from cluster ns1-c";
        assert!(lb_is_ours(
            &lb("kube_service_ns1-c_default_web", desc, "other"),
            &w
        ));
        assert!(lb_is_ours(
            &lb("kube_service_kubernetes_default_web", "x", "net-a"),
            &w
        ));
        // Another cluster of the same project, and a name that only shares a prefix.
        let other = "Kubernetes external service default/web from cluster ns2-c";
        assert!(!lb_is_ours(
            &lb("kube_service_ns2-c_default_web", other, "net-b"),
            &w
        ));
        let longer = "Kubernetes external service default/web from cluster ns1-cc";
        assert!(!lb_is_ours(
            &lb("kube_service_ns1-cc_default_web", longer, "net-b"),
            &w
        ));
        // Made by hand on the cluster network, or capo's own API load balancer.
        assert!(!lb_is_ours(&lb("my-lb", "", "net-a"), &w));
        assert!(!lb_is_ours(
            &lb("k8s-clusterapi-cluster-ns1-c-kubeapi", "", "net-a"),
            &w
        ));
    }

    #[test]
    fn floating_ips_and_groups_by_description() {
        let nets: Vec<String> = vec![];
        let w = sweep_of(&nets);
        let fip = |desc: &str, port: Option<&str>| -> FloatingIp {
            serde_json::from_value(serde_json::json!({
                "id": "f", "floating_ip_address": "172.24.4.9", "floating_network_id": "ext",
                "description": desc, "port_id": port, "status": "DOWN"
            }))
            .expect("fip")
        };
        let ours = "Floating IP for Kubernetes external service default/web from cluster ns1-c";
        let theirs = "Floating IP for Kubernetes external service default/web from cluster ns2-c";
        let vips: BTreeSet<&str> = ["vip1"].into_iter().collect();
        assert!(fip_is_ours(&fip(ours, None), &w, &vips));
        assert!(!fip_is_ours(&fip(theirs, None), &w, &vips));
        assert!(fip_is_ours(&fip(theirs, Some("vip1")), &w, &vips));
        assert!(!fip_is_ours(&fip(ours, Some("a-server-port")), &w, &vips));
        assert!(!fip_is_ours(
            &fip("brought by the user", Some("vip1")),
            &w,
            &vips
        ));
        let sg = |name: &str, desc: &str| -> SecurityGroup {
            serde_json::from_value(
                serde_json::json!({"id": "g", "name": name, "description": desc}),
            )
            .expect("sg")
        };
        let d = "Security Group for default/web Service LoadBalancer in cluster ns1-c";
        assert!(sg_is_ours(&sg("lb-sg-uid-default-web", d), &w));
        assert!(!sg_is_ours(&sg("my-group", d), &w));
        let d2 = "Security Group for default/web Service LoadBalancer in cluster ns2-c";
        assert!(!sg_is_ours(&sg("lb-sg-uid-default-web", d2), &w));
    }

    #[test]
    fn progress_names_what_is_waited_for() {
        let mut s = Swept::default();
        assert!(s.progress().is_done());
        s.deleted.push("load balancer x (1)".into());
        assert!(!s.progress().is_done());
        s.waiting.push("volume v is attached to server a".into());
        match s.progress() {
            Progress::Waiting(w) => assert!(w.message.contains("attached to server a"), "{w}"),
            other => panic!("{other:?}"),
        }
    }
}

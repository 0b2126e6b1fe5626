//! Deletion of everything made for one server: the server (Waiting until Nova no longer
//! lists it), then trunks, ports and volumes that are recorded or adoptable by name +
//! ownership. Absent resources count as deleted; another owner's are never touched.

use capo_openstack::network::{self as net, ListFilter, PORT, Port, TRUNK, Trunk};
use capo_openstack::{Session, TagFilter, blockstorage as bs, compute};

use super::owner::ServerOwner;
use super::server::{find_server, get_server};
use super::volumes::{delete_unattached, named_volumes};
use crate::Progress;
use crate::error::{Context, Error, Result};
use crate::networking::lookup::{delete_opt, get_opt};
use crate::ownership::Ownership;

/// IDs the caller recorded in status (any may be missing after a lost status).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Nova server ID.
    pub instance_id: Option<String>,
    /// Port IDs.
    pub port_ids: Vec<String>,
    /// Volume IDs.
    pub volume_ids: Vec<String>,
}

/// Delete the server and its resources. `port_names` / `volume_names` are the deterministic
/// names (from the resolved spec) used to find what the status no longer records. Done when
/// nothing is left; Waiting while the server is still going away or a volume is still
/// attached.
pub async fn delete_server_resources(
    s: &Session,
    owner: &ServerOwner,
    rec: &Recorded,
    port_names: &[String],
    volume_names: &[String],
) -> Result<Progress> {
    if let Some(wait) = delete_owned_server(s, owner, rec.instance_id.as_deref()).await? {
        return Ok(wait);
    }
    for port in owned_ports(s, owner, &rec.port_ids, port_names).await? {
        delete_trunks_of(s, &port).await?;
        delete_opt(s, PORT, &port.id).await?;
    }
    delete_volumes(s, owner, &rec.volume_ids, volume_names).await
}

/// Some(Waiting) while a server of ours still exists (after asking Nova to delete it).
async fn delete_owned_server(
    s: &Session,
    owner: &ServerOwner,
    recorded: Option<&str>,
) -> Result<Option<Progress>> {
    let Some(server) = skip_foreign(find_server(s, owner, recorded).await)? else {
        return Ok(None);
    };
    if server.task_state.as_deref() != Some("deleting") {
        tracing::info!(id = %server.id, name = %owner.name, "deleting server");
        let deleted = compute::delete_server(s, &server.id).await;
        if deleted
            .ctx_opt(|| format!("delete server {}", server.id))?
            .is_none()
        {
            return Ok(None);
        }
    }
    // One look after the DELETE: clouds that delete at once need no requeue.
    match get_server(s, &server.id).await? {
        None => Ok(None),
        Some(v) if v.status == "DELETED" => Ok(None),
        Some(_) => Ok(Some(Progress::Waiting(format!(
            "server {} is being deleted",
            owner.name
        )))),
    }
}

/// A foreign resource found by our name is left alone during deletion: treat it as absent.
fn skip_foreign<T>(found: Result<Option<T>>) -> Result<Option<T>> {
    match found {
        Err(Error::ForeignResource { kind, id, .. }) => {
            tracing::warn!(kind, %id, "not deleting another owner's resource");
            Ok(None)
        }
        other => other,
    }
}

/// Recorded ports, ports carrying our tag, and unmarked ports with our names; never foreign.
async fn owned_ports(
    s: &Session,
    owner: &ServerOwner,
    recorded: &[String],
    names: &[String],
) -> Result<Vec<Port>> {
    let mut ports: Vec<Port> = Vec::new();
    for id in recorded.iter().filter(|i| !i.is_empty()) {
        if let Some(p) = get_opt::<Port>(s, PORT, id).await? {
            ports.push(p);
        }
    }
    let by_tag = ListFilter {
        tags: TagFilter::all(&[&owner.tag()]),
        ..Default::default()
    };
    let tagged: Vec<Port> = net::list(s, PORT, &by_tag)
        .await
        .ctx(|| format!("list ports tagged {}", owner.tag()))?;
    ports.extend(tagged);
    for name in names {
        if ports.iter().any(|p| &p.name == name) {
            continue;
        }
        let found: Vec<Port> = net::list(s, PORT, &ListFilter::by_name(name))
            .await
            .ctx(|| format!("list ports {name:?}"))?;
        ports.extend(found);
    }
    ports.sort_by(|a, b| a.id.cmp(&b.id));
    ports.dedup_by(|a, b| a.id == b.id);
    ports.retain(|p| !matches!(owner.classify_tags(&p.tags), Ownership::Foreign(_)));
    Ok(ports)
}

/// Trunks whose parent is this port (a port in a trunk cannot be deleted).
async fn delete_trunks_of(s: &Session, port: &Port) -> Result<()> {
    let filter = ListFilter::default().with("port_id", port.id.clone());
    let trunks: Vec<Trunk> = net::list(s, TRUNK, &filter)
        .await
        .ctx(|| format!("list trunks of port {}", port.id))?;
    for t in trunks {
        tracing::info!(id = %t.id, port = %port.id, "deleting trunk");
        delete_opt(s, TRUNK, &t.id).await?;
    }
    Ok(())
}

/// Delete recorded and name-adoptable volumes; Waiting while one is still attached.
async fn delete_volumes(
    s: &Session,
    owner: &ServerOwner,
    recorded: &[String],
    names: &[String],
) -> Result<Progress> {
    let mut vols = Vec::new();
    for id in recorded.iter().filter(|i| !i.is_empty()) {
        let got = bs::get_volume(s, id).await;
        vols.extend(got.ctx_opt(|| format!("get volume {id}"))?);
    }
    // Every volume with one of our names, duplicates of a lost create reply included.
    for name in names {
        for v in named_volumes(s, name).await? {
            if !vols.iter().any(|r| r.id == v.id) {
                vols.push(v);
            }
        }
    }
    for v in vols {
        if matches!(owner.classify_metadata(&v.metadata), Ownership::Foreign(_)) {
            continue;
        }
        if let Progress::Waiting(why) = delete_unattached(s, &v).await? {
            return Ok(Progress::Waiting(why));
        }
    }
    Ok(Progress::Done(()))
}

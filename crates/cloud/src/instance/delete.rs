//! Deletion of everything made for one server: the server, then trunks, ports and volumes
//! that are recorded or adoptable by name + ownership. Absent resources count as deleted;
//! another owner's are never touched.
//!
//! The server counts as deleted once Nova no longer shows it or shows it gone
//! ([`is_gone`](super::server::is_gone)): on a cloud with `reclaim_instance_interval > 0` a
//! deleted server stays `SOFT_DELETED` (shown by ID, left out of lists) until Nova reclaims it
//! (`reclaim_instance_interval` later, at the next run of its periodic task), and capo, like
//! upstream v0.14 (its PR 2834), does not wait for the reclaim. Then:
//! - **ports** are deleted at once, as upstream does. Neutron's current default policy forbids
//!   a project member to delete a port bound to a server (`device_owner: compute:*`), so a port
//!   still bound to a gone server has its `device_id` and `device_owner` cleared first (allowed
//!   to members), then its trunk is deleted (a trunk driver that still refuses to untrunk the
//!   port, bound on its host, is retried until the reclaim unbinds it), then the port; Nova
//!   finds nothing left to unbind when it reclaims the server;
//! - **volumes**: capo attaches its volumes with `delete_on_termination: false` (it deletes them
//!   itself), but Cinder refuses to delete an `in-use` volume and Nova refuses to detach a root
//!   volume. So each of the owner's volumes still attached to a gone server gets
//!   `delete_on_termination: true` (Nova 2.85): Nova deletes it when it reclaims (or
//!   force-deletes) the server, and the deletion is done. That is upstream's end state, which
//!   attaches every volume with `delete_on_termination`: until the reclaim the volumes exist,
//!   attached to the soft-deleted server, and a `restore` brings them back with it. On a Nova
//!   older than 2.85 the deletion waits until the reclaim has detached them, then deletes them;
//! - a DELETE is never sent to a gone server (Nova would soft-delete it again and restart its
//!   reclaim clock).
//!
//! A server restored (Nova's `restore`) while its deletion is still running is live again on
//! the next pass and deleted again (its volumes are not touched while it is live; ports already
//! deleted are not re-made). A server restored after the deletion finished is no longer capo's:
//! it comes back without its ports, with its volumes, and capo does not look for it again.

use capo_openstack::blockstorage::{self as bs, Volume};
use capo_openstack::network::{self as net, ListFilter, PORT, Port, TRUNK, Trunk};
use capo_openstack::{Session, TagFilter, compute};

use super::owner::ServerOwner;
use super::server::{find_server, get_server, get_server_any, is_gone};
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
/// nothing is left but volumes Nova deletes with a gone server; Waiting while the server is
/// still going away or a volume is still attached to a live one.
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
        release_from_gone_server(s, &port).await?;
        delete_trunks_of(s, &port).await?;
        delete_opt(s, PORT, &port.id).await?;
    }
    delete_volumes(s, owner, &rec.volume_ids, volume_names).await
}

/// Some(Waiting) while a server of ours still exists (after asking Nova to delete it); a gone
/// server ([`is_gone`]) is never found, so never deleted twice.
async fn delete_owned_server(
    s: &Session,
    owner: &ServerOwner,
    recorded: Option<&str>,
) -> Result<Option<Progress>> {
    let Some(server) = skip_foreign(find_server(s, owner, recorded).await)? else {
        return Ok(None);
    };
    // Nova's task states of a DELETE in flight (hard, or soft with reclaim_instance_interval).
    let deleting = matches!(
        server.task_state.as_deref(),
        Some("deleting" | "soft-deleting")
    );
    if !deleting {
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
        Some(_) => Ok(Some(Progress::waiting(
            "server",
            &owner.name,
            format!("server {} is being deleted", owner.name),
        ))),
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

/// A port still bound to a server that is gone (`SOFT_DELETED`, or no longer shown): Neutron's
/// current default policy lets a project member delete no port whose `device_owner` is
/// `compute:*` (only admins and Nova, with a service token, may), while it may clear
/// `device_id` and `device_owner`. So they are cleared first and the port is then an ordinary
/// one; Nova, when it reclaims the server, finds no port left to unbind. A port bound to a
/// live server is left as it is.
async fn release_from_gone_server(s: &Session, port: &Port) -> Result<()> {
    if port.device_id.is_empty() || !port.device_owner.starts_with("compute:") {
        return Ok(());
    }
    if get_server(s, &port.device_id).await?.is_some() {
        return Ok(());
    }
    tracing::info!(id = %port.id, server = %port.device_id,
        "releasing port bound to a deleted server");
    let changes = serde_json::json!({"device_id": "", "device_owner": ""});
    let released = net::update::<Port>(s, PORT, &port.id, changes).await;
    released.ctx_opt(|| format!("release port {} from server {}", port.id, port.device_id))?;
    Ok(())
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

/// Delete recorded and name-adoptable volumes; Waiting while one is still attached to a live
/// server. One attached to a gone server is left to Nova ([`leave_to_nova`]).
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
        let progress = if v.status == "in-use" && !v.attachments.is_empty() {
            leave_to_nova(s, &v).await?
        } else {
            delete_unattached(s, &v).await?
        };
        if let Progress::Waiting(w) = progress {
            return Ok(Progress::Waiting(w));
        }
    }
    Ok(Progress::Done(()))
}

/// A volume in use: Done when every server it is attached to is gone ([`is_gone`], i.e.
/// `SOFT_DELETED` until Nova reclaims it) and Nova will delete the volume with it
/// (`delete_on_termination`, set here through Nova 2.85 when it is not yet); Waiting while it
/// is attached to a live server, to one Nova no longer shows (the detach of a reclaim under
/// way), or when Nova is too old to set the flag (the reclaim will detach it).
async fn leave_to_nova(s: &Session, v: &Volume) -> Result<Progress> {
    for a in &v.attachments {
        let server = get_server_any(s, &a.server_id).await?;
        match server {
            Some(srv) if is_gone(&srv.status) => {}
            Some(srv) => {
                return Ok(Progress::waiting(
                    "volume",
                    &v.id,
                    format!(
                        "volume {} is still attached to server {} ({})",
                        v.id, srv.id, srv.status
                    ),
                ));
            }
            None => {
                return Ok(Progress::waiting(
                    "volume",
                    &v.id,
                    format!(
                        "volume {} is still in-use (server {} is being detached)",
                        v.id, a.server_id
                    ),
                ));
            }
        }
        let listed = compute::list_volume_attachments_dot(s, &a.server_id).await;
        let attachments = match listed {
            Err(capo_openstack::Error::MicroversionUnsupported { .. }) => {
                return Ok(Progress::waiting(
                    "volume",
                    &v.id,
                    format!(
                        "volume {} is attached to the soft-deleted server {}: Nova (before \
                         2.85) cannot be asked to delete it with the server; waiting for the \
                         reclaim",
                        v.id, a.server_id
                    ),
                ));
            }
            other => other.ctx_opt(|| format!("list volume attachments of {}", a.server_id))?,
        };
        let marked = attachments
            .unwrap_or_default()
            .iter()
            .any(|x| x.volume_id == v.id && x.delete_on_termination == Some(true));
        if !marked {
            tracing::info!(volume = %v.id, server = %a.server_id,
                "volume attached to a soft-deleted server: Nova deletes it with the server");
            let set = compute::set_delete_on_termination(s, &a.server_id, &v.id, true).await;
            set.ctx_opt(|| {
                format!(
                    "set delete_on_termination of volume {} on server {}",
                    v.id, a.server_id
                )
            })?;
        }
    }
    Ok(Progress::Done(()))
}

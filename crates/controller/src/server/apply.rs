//! The create/update path of an OpenStackServer: resolve (persisted first), ports, volumes,
//! server; then report ACTIVE, BUILD, ERROR (delete and retry slowly) or deleted out of band.

use std::collections::BTreeMap;

use capo_api::constants::condition_reasons::{
    INSTANCE_DELETED, INSTANCE_NOT_FOUND, INSTANCE_STATE_ERROR,
};
use capo_api::constants::condition_types::{FLOATING_ADDRESS_FROM_POOL_READY, INSTANCE_READY};
use capo_api::conversion::server::V1beta1ServerSpec;
use capo_api::v1alpha1::{OpenStackServer, ServerResources};
use capo_api::v1beta1::{
    MachineAddress, ResolvedMachineSpec, SchedulerHintValueType, TypedLocalObjectReference,
};
use capo_api::v1beta2::PortStatus;
use capo_cloud::instance::{self, EnsuredVolume, ServerRequest};
use capo_cloud::{Progress, Wait};
use capo_openstack::Session;
use capo_openstack::compute::{Server, UserData};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use super::cache::LookupCache;
use super::pool_ip;
use super::resolve::Resolver;
use super::scope::Scope;
use super::steady::{fingerprint, is_steady};
use crate::conditions::{INSTANCE_NOT_ACTIVE, INSTANCE_NOT_READY, State};
use crate::error::{Error, KubeContext, Result};
use crate::memo::Part;
use crate::server_spec::{identity, v1alpha1_resolved, v1beta1_resolved, v1beta1_spec};

/// Reconcile an OpenStackServer that is not being deleted (finalizer in place).
pub(super) async fn apply(scope: &mut Scope<'_>) -> Result<Action> {
    let s = scope.session_for(&identity(&scope.obj.spec)).await?;
    let key = scope.key();
    let fp = fingerprint(scope.obj, &scope.status)?;
    if let Some(id) = scope
        .status
        .instance_id
        .clone()
        .filter(|_| scope.status.ready)
        && is_steady(scope.ctx, &key, &fp, &id, &s).await?
    {
        return Ok(scope.resync_later());
    }
    // The cloud calls take v1beta1's shapes: the spec and the resolution are converted once.
    let spec = v1beta1_spec(&scope.obj.spec)?;
    let recorded_resolution = scope
        .status
        .resolved
        .as_ref()
        .map(v1beta1_resolved)
        .transpose()?;
    let resolved = match reusable(recorded_resolution, spec.ports.len()) {
        Some(r) => r,
        None => match resolve(scope, &s, &spec).await? {
            Progress::Done(r) => {
                // Written with the next status write (the server's ID, a wait or a failure),
                // not on its own as upstream does: what is created before that write (ports,
                // volumes, the server) is found again by name, so a resolution lost with a
                // crash is made again and finds it. One write per server less.
                scope.status.resolved = Some(v1alpha1_resolved(&r)?);
                r
            }
            Progress::Waiting(w) => {
                return scope.waiting(INSTANCE_READY, INSTANCE_NOT_READY, w).await;
            }
            Progress::Stuck(why) => {
                let w = Wait::new("resolution", "", why);
                return scope.waiting(INSTANCE_READY, INSTANCE_NOT_READY, w).await;
            }
        },
    };
    let recorded = scope.status.instance_id.clone().filter(|i| !i.is_empty());
    let req = match recorded {
        // The server exists (or existed): ensure_server only looks it up, never creates.
        Some(_) => ServerRequest::default(),
        None => match prepare(scope, &s, &spec, &resolved)
            .await
            .inspect_err(|_| scope.state.unseen.mark(&key))?
        {
            Progress::Done(req) => req,
            Progress::Waiting(w) => {
                return scope.waiting(INSTANCE_READY, INSTANCE_NOT_READY, w).await;
            }
            Progress::Stuck(why) => {
                let w = Wait::new("server resources", "", why);
                return scope.waiting(INSTANCE_READY, INSTANCE_NOT_READY, w).await;
            }
        },
    };
    match instance::ensure_server(&s, &scope.owner, &req, recorded.as_deref()).await {
        Ok((server, Progress::Done(()))) => ready(scope, &s, server, &spec, &resolved).await,
        Ok((server, _)) => not_ready(scope, server).await,
        Err(capo_cloud::Error::InstanceFailed { id, fault, .. }) => {
            failed(scope, &s, &id, &fault).await
        }
        Err(capo_cloud::Error::ServerDeleted { state, .. }) => deleted(scope, state).await,
        Err(e) => {
            scope.state.unseen.mark(&key);
            Err(e.into())
        }
    }
}

async fn resolve(
    scope: &Scope<'_>,
    s: &Session,
    spec: &V1beta1ServerSpec,
) -> Result<Progress<ResolvedMachineSpec>> {
    let r = Resolver {
        s,
        cache: &scope.state.lookups,
        scope: LookupCache::scope_of(s).await,
        client: &scope.ctx.shared.client,
    };
    r.resolve(scope.obj, spec).await
}

/// Ports (IDs recorded in status, written with the next write), volumes and user data;
/// Waiting while a volume is still being created or the user data Secret is missing.
async fn prepare(
    scope: &mut Scope<'_>,
    s: &Session,
    spec: &V1beta1ServerSpec,
    resolved: &ResolvedMachineSpec,
) -> Result<Progress<ServerRequest>> {
    let mut port_ids = Vec::with_capacity(resolved.ports.len());
    for (i, spec) in resolved.ports.iter().enumerate() {
        let rec = recorded_port(scope, i);
        let p = instance::ensure_port(s, &scope.owner, spec, rec.as_deref()).await?;
        // Written with the server's ID (or a failure, or the next wait): a port whose ID was
        // lost with a crash is found again by name.
        record_port(scope, i, &p.id);
        port_ids.push(p.id);
    }
    let plan = instance::plan_volumes(
        &scope.owner.name,
        spec.root_volume.as_ref(),
        resolved.image_id.as_deref(),
        &spec.additional_block_devices,
        spec.availability_zone.as_deref(),
    );
    let volumes: Vec<EnsuredVolume> = match instance::ensure_volumes(
        s,
        &scope.owner,
        &plan,
        &BTreeMap::new(),
        |_, _| {},
    )
    .await?
    {
        Progress::Done(v) => v,
        waiting => return Ok(waiting.map(|_| ServerRequest::default())),
    };
    let user_data = match user_data(scope).await? {
        Progress::Done(u) => u,
        waiting => return Ok(waiting.map(|_| ServerRequest::default())),
    };
    Ok(Progress::Done(request(
        spec, resolved, port_ids, volumes, user_data,
    )))
}

fn recorded_port(scope: &Scope<'_>, i: usize) -> Option<String> {
    scope
        .status
        .resources
        .as_ref()
        .and_then(|r| r.ports.get(i))
        .map(|p| p.id.clone())
        .filter(|id| !id.is_empty())
}

fn record_port(scope: &mut Scope<'_>, i: usize, id: &str) {
    let res = scope
        .status
        .resources
        .get_or_insert_with(ServerResources::default);
    while res.ports.len() <= i {
        res.ports.push(PortStatus::default());
    }
    res.ports[i].id = id.to_owned();
}

/// The bootstrap data (`value` of the Secret in `spec.userDataRef`); never logged.
async fn user_data(scope: &Scope<'_>) -> Result<Progress<Option<UserData>>> {
    let Some(name) = scope
        .obj
        .spec
        .user_data_ref
        .as_ref()
        .and_then(|r| r.name.clone())
        .filter(|n| !n.is_empty())
    else {
        return Ok(Progress::Done(None));
    };
    let ns = &scope.namespace;
    let secret = Api::<Secret>::namespaced(scope.ctx.shared.client.clone(), ns)
        .get_opt(&name)
        .await
        .kctx(|| format!("get Secret {ns}/{name}"))?;
    let value = secret
        .and_then(|s| s.data)
        .and_then(|mut d| d.remove("value"));
    Ok(match value {
        Some(v) => Progress::Done(Some(UserData::new(v.0))),
        None => Progress::waiting(
            "user data Secret",
            &name,
            format!("waiting for key \"value\" of user data Secret {name}"),
        ),
    })
}

fn request(
    spec: &V1beta1ServerSpec,
    resolved: &ResolvedMachineSpec,
    port_ids: Vec<String>,
    volumes: Vec<EnsuredVolume>,
    user_data: Option<UserData>,
) -> ServerRequest {
    let local_devices = spec
        .additional_block_devices
        .iter()
        .filter(|d| d.storage.r#type == "Local")
        .map(|d| (d.name.clone(), u32::try_from(d.size_gib).unwrap_or(0)))
        .collect();
    let scheduler_hints = spec
        .scheduler_hint_additional_properties
        .iter()
        .map(|h| {
            let v = match h.value.r#type {
                SchedulerHintValueType::Bool => serde_json::json!(h.value.bool),
                SchedulerHintValueType::Number => serde_json::json!(h.value.number),
                SchedulerHintValueType::String => serde_json::json!(h.value.string),
            };
            (h.name.clone(), v)
        })
        .collect();
    ServerRequest {
        flavor_id: resolved.flavor_id.clone().unwrap_or_default(),
        image_id: resolved.image_id.clone(),
        port_ids,
        volumes,
        local_devices,
        user_data,
        key_name: Some(spec.ssh_key_name.clone()).filter(|k| !k.is_empty()),
        metadata: spec
            .server_metadata
            .iter()
            .map(|m| (m.key.clone(), m.value.clone()))
            .collect(),
        tags: Vec::new(),
        availability_zone: spec.availability_zone.clone(),
        server_group_id: resolved.server_group_id.clone(),
        scheduler_hints,
        config_drive: spec.config_drive == Some(true),
    }
}

/// The server's addresses as Cluster API wants them: fixed → InternalIP, floating →
/// ExternalIP, plus the server name as InternalDNS. Networks by name; within each, IPv4 before
/// IPv6 and otherwise Nova's order, as upstream lists them (so a dual-stack machine's first
/// InternalIP is its IPv4 address).
pub(crate) fn addresses(server: &Server) -> Vec<MachineAddress> {
    let mut out = Vec::new();
    for network in server.addresses.values() {
        let mut network: Vec<_> = network.iter().collect();
        network.sort_by_key(|a| {
            a.addr
                .parse::<std::net::IpAddr>()
                .map_or(2, |ip| u8::from(ip.is_ipv6()))
        });
        out.extend(network.into_iter().map(|a| {
            MachineAddress {
                address: a.addr.clone(),
                r#type: if a.ip_type.as_deref() == Some("floating") {
                    "ExternalIP"
                } else {
                    "InternalIP"
                }
                .into(),
            }
        }));
    }
    out.push(MachineAddress {
        address: server.name.clone(),
        r#type: "InternalDNS".into(),
    });
    out
}

async fn ready(
    scope: &mut Scope<'_>,
    s: &Session,
    server: Server,
    spec: &V1beta1ServerSpec,
    resolved: &ResolvedMachineSpec,
) -> Result<Action> {
    let first = !scope.status.ready;
    if first
        && scope
            .state
            .unseen
            .take(&scope.key(), scope.obj.creation_timestamp().as_ref())
    {
        delete_duplicate_ports(scope, s, resolved).await?;
    }
    push_address_pairs(scope, s, spec, resolved).await?;
    scope.status.instance_id = Some(server.id.clone());
    scope.status.instance_state = Some(server.status.clone());
    scope.status.addresses = addresses(&server);
    if let Some(pool) = scope.obj.spec.floating_ip_pool_ref.clone() {
        scope.set(INSTANCE_READY, State::True);
        if let Some(action) = pool_address(scope, s, &pool).await? {
            return Ok(action);
        }
    }
    scope.status.ready = true;
    scope.set_instance(State::True);
    scope.flush().await?;
    if first && !owned_by_machine(scope.obj) {
        // A machine's server is announced once, by its OpenStackMachine ("Provisioned").
        let note = format!("server {} is ACTIVE", server.id);
        scope
            .event(EventType::Normal, "InstanceReady", "Reconcile", Some(note))
            .await;
    }
    let fp = fingerprint(scope.obj, &scope.status)?;
    scope
        .ctx
        .memo
        .set_converged(&scope.key(), Part::Object, fp, true);
    Ok(scope.resync_later())
}

/// Each port's allowed address pairs as the spec has them now (the only port setting that may
/// change on an existing server, see the admission rules): a port whose pairs differ from
/// those recorded in `status.resolved` (what it was made, or last updated, with) gets them
/// with one PUT, and the record follows with this reconcile's status write. A port without
/// port security has no pairs to update (Neutron refuses them); its record follows alone.
/// No request when nothing changed.
async fn push_address_pairs(
    scope: &mut Scope<'_>,
    s: &Session,
    spec: &V1beta1ServerSpec,
    resolved: &ResolvedMachineSpec,
) -> Result<()> {
    let ids: Vec<String> = scope
        .status
        .resources
        .as_ref()
        .map(|r| r.ports.iter().map(|p| p.id.clone()).collect())
        .unwrap_or_default();
    let mut record = resolved.clone();
    let mut changed = Vec::new();
    for ((want, had), id) in spec.ports.iter().zip(&mut record.ports).zip(&ids) {
        if want.allowed_address_pairs == had.allowed_address_pairs {
            continue;
        }
        if had.disable_port_security != Some(true) {
            instance::set_address_pairs(s, id, &want.allowed_address_pairs).await?;
            changed.push(id.clone());
        }
        had.allowed_address_pairs = want.allowed_address_pairs.clone();
    }
    if record.ports != resolved.ports {
        scope.status.resolved = Some(v1alpha1_resolved(&record)?);
    }
    if !changed.is_empty() {
        let note = format!(
            "allowed address pairs updated on port(s) {}",
            changed.join(", ")
        );
        scope
            .event(
                EventType::Normal,
                "AddressPairsUpdated",
                "Reconcile",
                Some(note),
            )
            .await;
    }
    Ok(())
}

/// Delete the duplicates of the server's ports ([`instance::delete_duplicate_ports`]) once the
/// server runs with them: a port whose create was still under way when its reply was lost, or
/// its controller killed, has been committed by then. Left for a later pass when it fails (the
/// first ready pass looks again).
async fn delete_duplicate_ports(
    scope: &mut Scope<'_>,
    s: &Session,
    resolved: &ResolvedMachineSpec,
) -> Result<()> {
    for spec in &resolved.ports {
        instance::delete_duplicate_ports(s, &scope.owner, spec)
            .await
            .inspect_err(|_| scope.state.unseen.mark(&scope.key()))?;
    }
    Ok(())
}

/// Whether an OpenStackMachine controls this server.
fn owned_by_machine(oss: &OpenStackServer) -> bool {
    oss.owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.kind == "OpenStackMachine")
}

/// The pool's floating IP on the first port, reported in FloatingAddressFromPoolReady and as
/// an ExternalIP address; Some(requeue) while the pool has not provided it.
async fn pool_address(
    scope: &mut Scope<'_>,
    s: &Session,
    pool: &TypedLocalObjectReference,
) -> Result<Option<Action>> {
    let Some(port_id) = recorded_port(scope, 0) else {
        return Err(Error::InvalidSpec(
            "the server has no port for its floating IP".into(),
        ));
    };
    match pool_ip::ensure(scope, s, pool, &port_id).await? {
        Progress::Done(address) => {
            scope.set(FLOATING_ADDRESS_FROM_POOL_READY, State::True);
            if !scope.status.addresses.iter().any(|a| a.address == address) {
                scope.status.addresses.push(MachineAddress {
                    address,
                    r#type: "ExternalIP".into(),
                });
            }
            Ok(None)
        }
        not_yet @ (Progress::Waiting(_) | Progress::Stuck(_)) => {
            scope.status.ready = false;
            let w = match not_yet {
                Progress::Waiting(w) => w,
                other => Wait::new("pool address", &pool.name, other.why().unwrap_or_default()),
            };
            let waiting = scope.waiting(FLOATING_ADDRESS_FROM_POOL_READY, "WaitingForIPAddress", w);
            Ok(Some(waiting.await?))
        }
    }
}

/// The server exists but is not ACTIVE: BUILD is polled at the pending pace; any other state
/// (SHUTOFF, SUSPENDED, ... of a server that was running) is reported as a warning
/// ([`INSTANCE_NOT_ACTIVE`], a reason of its own since standard conditions have no severity)
/// and re-checked on the slow backoff.
async fn not_ready(scope: &mut Scope<'_>, server: Server) -> Result<Action> {
    // The create reply carries no status yet: a build in progress.
    let state = Some(server.status)
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "BUILD".into());
    let reason = format!("server {} is {state}", scope.owner.name);
    scope.status.instance_id = Some(server.id.clone());
    scope.status.ready = false;
    if state == "BUILD" {
        scope.status.instance_state = Some(state);
        let w = Wait::new("server", server.id, reason);
        return scope.waiting(INSTANCE_READY, INSTANCE_NOT_READY, w).await;
    }
    scope.forget();
    scope.status.instance_state = Some(state);
    scope.set_instance(State::warning(INSTANCE_NOT_ACTIVE, reason));
    scope.flush().await?;
    Ok(Action::requeue(scope.ctx.shared.options.slow_retry))
}

/// The server went to ERROR (NoValidHost, quota, ...): report Nova's fault, delete the failed
/// server (ports and volumes stay for the next attempt) and retry on the slow backoff.
async fn failed(scope: &mut Scope<'_>, s: &Session, id: &str, fault: &str) -> Result<Action> {
    let message = format!("server {id} is in ERROR: {fault}");
    scope.forget();
    // Addresses are recorded only once a server was ACTIVE: such a server is a node that
    // broke, not a failed build. It is reported and kept (its Machine decides), never
    // replaced under the same Machine.
    let was_active =
        !scope.status.addresses.is_empty() && scope.status.instance_id.as_deref() == Some(id);
    scope.status.ready = false;
    scope.status.instance_state = Some("ERROR".into());
    if !was_active {
        // Forget the failed server: the next attempt creates a new one (found by name while it
        // is still going away, and then reported the same way).
        scope.status.instance_id = None;
    }
    scope.set_instance(State::error(INSTANCE_STATE_ERROR, message.clone()));
    scope.flush().await?;
    scope
        .event(
            EventType::Warning,
            INSTANCE_STATE_ERROR,
            "Reconcile",
            Some(message),
        )
        .await;
    if was_active {
        return Ok(Action::requeue(scope.ctx.shared.options.slow_retry));
    }
    match instance::delete_server(s, id).await {
        Ok(()) => tracing::info!(%id, "deleted failed server; retrying later"),
        Err(e) => tracing::warn!(%id, error = %e, "could not delete failed server; retrying later"),
    }
    Ok(Action::requeue(scope.ctx.shared.options.slow_retry))
}

/// The recorded server is gone and nothing with its name exists: deleted outside capo. It is
/// not re-created (upstream's contract): reported so a MachineHealthCheck can remediate, as
/// upstream's server controller does: reason InstanceDeleted while Nova still shows it in a
/// deleted `state`, InstanceNotFound once Nova no longer knows the ID.
async fn deleted(scope: &mut Scope<'_>, state: Option<String>) -> Result<Action> {
    let id = scope.status.instance_id.clone().unwrap_or_default();
    let (reason, message) = match &state {
        Some(s) => (
            INSTANCE_DELETED,
            format!("server {id} was deleted outside capo (Nova shows it {s})"),
        ),
        None => (
            INSTANCE_NOT_FOUND,
            format!("server {id} was deleted outside capo (Nova no longer knows it)"),
        ),
    };
    scope.forget();
    scope.status.ready = false;
    scope.status.instance_state = Some(state.unwrap_or_else(|| "DELETED".into()));
    scope.set_instance(State::error(reason, message.clone()));
    scope.flush().await?;
    scope
        .event(EventType::Warning, reason, "Reconcile", Some(message))
        .await;
    Ok(scope.resync_later())
}

/// A recorded resolution is used as it is only when it has one port per port of the spec:
/// one with no ports (written before its ports were resolved) or with another count (a status
/// edited, or written from another spec) is made again, so the ports created are always the
/// spec's, as upstream checks when it resolves them.
fn reusable(
    recorded: Option<ResolvedMachineSpec>,
    spec_ports: usize,
) -> Option<ResolvedMachineSpec> {
    recorded.filter(|r| !r.ports.is_empty() && r.ports.len() == spec_ports)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's "Resolved ports length mismatch": a resolution never carries another number
    /// of ports than the spec; capo's resolver makes one per spec port, and a recorded one with
    /// another count is not reused.
    #[test]
    fn a_recorded_resolution_with_another_port_count_is_made_again() {
        let with_ports = |n: usize| ResolvedMachineSpec {
            flavor_id: Some("f".into()),
            image_id: Some("i".into()),
            ports: vec![Default::default(); n],
            server_group_id: None,
        };
        assert_eq!(reusable(Some(with_ports(2)), 2), Some(with_ports(2)));
        assert_eq!(reusable(Some(with_ports(1)), 2), None);
        assert_eq!(reusable(Some(with_ports(3)), 2), None);
        assert_eq!(reusable(Some(with_ports(0)), 1), None);
        assert_eq!(reusable(None, 1), None);
    }

    /// Upstream's "With custom scheduler hint bool/number/string": each custom hint becomes a
    /// hint of its own JSON type, and the resolved server group is passed beside them (the
    /// create puts it into the same `os:scheduler_hints`).
    #[test]
    fn custom_scheduler_hints_keep_their_type_beside_the_group() {
        use capo_api::v1beta1::{SchedulerHintAdditionalProperty, SchedulerHintAdditionalValue};
        let hint = |name: &str, r#type, bool, number, string: Option<&str>| {
            SchedulerHintAdditionalProperty {
                name: name.into(),
                value: SchedulerHintAdditionalValue {
                    bool,
                    number,
                    string: string.map(str::to_owned),
                    r#type,
                },
            }
        };
        let spec = V1beta1ServerSpec {
            scheduler_hint_additional_properties: vec![
                hint("b", SchedulerHintValueType::Bool, Some(true), None, None),
                hint("n", SchedulerHintValueType::Number, None, Some(1), None),
                hint("s", SchedulerHintValueType::String, None, None, Some("x")),
            ],
            ..Default::default()
        };
        let resolved = ResolvedMachineSpec {
            server_group_id: Some("sg-1".into()),
            ..Default::default()
        };
        let req = request(&spec, &resolved, vec![], vec![], None);
        assert_eq!(req.server_group_id.as_deref(), Some("sg-1"));
        let want: BTreeMap<String, serde_json::Value> = [
            ("b", serde_json::json!(true)),
            ("n", serde_json::json!(1)),
            ("s", serde_json::json!("x")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(req.scheduler_hints, want);
    }

    #[test]
    fn addresses_by_network_ipv4_first() {
        let server: Server = serde_json::from_value(serde_json::json!({
            "id": "s1",
            "name": "m-1",
            "status": "ACTIVE",
            "addresses": {
                "b-net": [
                    {"addr": "fd00::5", "version": 6, "OS-EXT-IPS:type": "fixed"},
                    {"addr": "10.0.0.5", "version": 4, "OS-EXT-IPS:type": "fixed"},
                    {"addr": "172.24.4.9", "version": 4, "OS-EXT-IPS:type": "floating"},
                ],
                "a-net": [{"addr": "192.168.1.2", "version": 4, "OS-EXT-IPS:type": "fixed"}],
            },
        }))
        .unwrap();
        let got: Vec<(String, String)> = addresses(&server)
            .into_iter()
            .map(|a| (a.r#type, a.address))
            .collect();
        let want = [
            ("InternalIP", "192.168.1.2"),
            ("InternalIP", "10.0.0.5"),
            ("ExternalIP", "172.24.4.9"),
            ("InternalIP", "fd00::5"),
            ("InternalDNS", "m-1"),
        ]
        .map(|(t, a)| (t.to_owned(), a.to_owned()));
        assert_eq!(got, want);
    }

    #[test]
    fn addresses_fixed_floating_and_dns() {
        let server: Server = serde_json::from_value(serde_json::json!({
            "id": "s1",
            "name": "m-1",
            "status": "ACTIVE",
            "addresses": {"net": [
                {"addr": "10.0.0.5", "version": 4, "OS-EXT-IPS:type": "fixed"},
                {"addr": "172.24.4.9", "version": 4, "OS-EXT-IPS:type": "floating"},
            ]},
        }))
        .unwrap();
        let got: Vec<(String, String)> = addresses(&server)
            .into_iter()
            .map(|a| (a.r#type, a.address))
            .collect();
        let want = [
            ("InternalIP", "10.0.0.5"),
            ("ExternalIP", "172.24.4.9"),
            ("InternalDNS", "m-1"),
        ]
        .map(|(t, a)| (t.to_owned(), a.to_owned()));
        assert_eq!(got, want);
    }
}

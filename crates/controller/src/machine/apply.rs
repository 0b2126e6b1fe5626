//! The create/update path of an OpenStackMachine: the OpenStackServer named like the machine,
//! its state copied back (instanceID, providerID, addresses, conditions), API traffic for
//! control-plane machines, then ready.

use std::collections::BTreeMap;

use capo_api::constants::condition_reasons;
use capo_api::constants::condition_reasons::{INSTANCE_DELETED, INSTANCE_NOT_FOUND};
use capo_api::constants::condition_types::{
    INSTANCE_READY, OPENSTACK_AUTHENTICATION_SUCCEEDED, READY,
};
use capo_api::constants::{CLUSTER_NAME_LABEL, SERVER_FINALIZER};
use capo_api::names::provider_id;
use capo_api::v1alpha1::{OpenStackServer, OpenStackServerSpec, OpenStackServerStatus};
use capo_api::v1beta1::{Initialization, OpenStackCluster};
use capo_cloud::Progress;
use capo_openstack::Session;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};

use super::ingress;
use super::scope::Scope;
use crate::capi::Machine;
use crate::conditions::{self, Entry, INSTANCE_NOT_READY, State};
use crate::error::{Error, Result};
use crate::memo::Part;
use crate::runtime::OWNER_ID_ANNOTATION;
use crate::server_spec::{Derivation, identity, server_spec, v1beta1_status_parts};

/// The machine's state from its OpenStackServer's creation until the server reports one.
const SERVER_REQUESTED: &str = "server requested";

/// What the machine reconcile reads besides the OpenStackMachine and its OpenStackServer: the
/// one value both [`apply`] and the fingerprint ([`Inputs::fingerprint`]) read, so a field
/// added here does not compile until the fingerprint hashes it.
pub(super) struct Inputs<'a> {
    pub machine: &'a Machine,
    pub osc: &'a OpenStackCluster,
    pub cluster: &'a str,
    pub control_plane: bool,
    /// How traffic reaches the machine ([`ingress::mode`] of `osc` and `control_plane`),
    /// computed once per reconcile.
    pub ingress: ingress::Mode,
}

impl<'a> Inputs<'a> {
    /// The inputs of one reconcile.
    pub(super) fn new(
        machine: &'a Machine,
        osc: &'a OpenStackCluster,
        cluster: &'a str,
        control_plane: bool,
    ) -> Self {
        Self {
            machine,
            osc,
            cluster,
            control_plane,
            ingress: ingress::mode(osc, control_plane),
        }
    }
}

/// Reconcile an OpenStackMachine that is not being deleted (finalizer in place, cluster
/// infrastructure ready, bootstrap data present), as a sequence of steps: each either lets the
/// next one run or ends the reconcile with the action it returns.
pub(super) async fn apply(scope: &mut Scope<'_>, inp: &Inputs<'_>) -> Result<Action> {
    let oss = scope
        .ctx
        .shared
        .informers
        .openstack_servers
        .get(&scope.namespace, &scope.name)
        .await?;
    if let Some(action) = unchanged(scope, inp, oss.as_ref())? {
        return Ok(action);
    }
    let Some(oss) = oss else {
        return create(scope, inp).await;
    };
    if let Some(action) = previous_server_deleting(scope, &oss).await? {
        return Ok(action);
    }
    address_pairs(scope, inp, &oss).await?;
    let st = oss.status.clone().unwrap_or_default();
    copy_server_status(scope, &st)?;
    set_provider_id(scope, &oss, &st).await?;
    if let Some(action) = server_deleted(scope, &st).await? {
        return Ok(action);
    }
    if let Some(action) = server_not_ready(scope, &st).await? {
        return Ok(action);
    }
    if inp.control_plane || inp.ingress != ingress::Mode::None {
        scope.step = ingress::condition(inp.control_plane);
        if let Some(action) = reconcile_ingress(scope, inp, &oss, &st).await? {
            return Ok(action);
        }
    }
    node_resources(scope, inp, &oss).await?;
    finish(scope, inp, oss).await
}

/// A ready machine nothing it depends on changed for: no cloud call, no write (its server is
/// probed by the OpenStackServer controller).
fn unchanged(
    scope: &Scope<'_>,
    inp: &Inputs<'_>,
    oss: Option<&OpenStackServer>,
) -> Result<Option<Action>> {
    let fp = inp.fingerprint(scope.obj, oss)?;
    let fresh = scope.status.ready == Some(true)
        && scope
            .ctx
            .memo
            .fresh(&scope.key(), Part::Object, &fp)
            .is_some();
    Ok(fresh.then(|| scope.resync_later()))
}

/// No OpenStackServer yet: make it, unless a keepalived control plane still waits for its
/// VIP (written: the machine's only progress before its server exists).
async fn create(scope: &mut Scope<'_>, inp: &Inputs<'_>) -> Result<Action> {
    let key = scope.key();
    if super::extensions::vip_pending(inp.osc, scope.obj, inp.control_plane) {
        let s = State::info(
            INSTANCE_NOT_READY,
            "waiting for the cluster's keepalived VIP",
        );
        scope.set(READY, s);
        scope.flush().await?;
        return Ok(Action::requeue(scope.ctx.memo.delay(&key, "KeepalivedVIP")));
    }
    let servers: Api<OpenStackServer> =
        Api::namespaced(scope.ctx.shared.client.clone(), &scope.namespace);
    create_server(scope, inp, &servers).await?;
    // Nothing to write yet: the server's first state (BUILD, or what stops it) is copied when
    // it reports one. Its status changes wake this machine (owned object); the pace covers a
    // store one event behind that watch (see `crate::informers`).
    Ok(Action::requeue(
        scope.ctx.memo.delay(&key, INSTANCE_NOT_READY),
    ))
}

/// The OpenStackServer of an earlier incarnation is still being deleted: wait (written).
async fn previous_server_deleting(
    scope: &mut Scope<'_>,
    oss: &OpenStackServer,
) -> Result<Option<Action>> {
    if oss.metadata.deletion_timestamp.is_none() {
        return Ok(None);
    }
    let s = State::info(INSTANCE_NOT_READY, "the previous server is being deleted");
    scope.set(READY, s);
    scope.flush().await?;
    let delay = scope.ctx.memo.delay(&scope.key(), "PreviousServerDeleting");
    Ok(Some(Action::requeue(delay)))
}

/// The server vanished (deleted outside capo): the machine is not ready and stays so, so a
/// MachineHealthCheck (or the operator) replaces it (written). The reason is the condition's:
/// v1beta2, the stored version, has no failureReason/failureMessage (dropped on conversion).
async fn server_deleted(
    scope: &mut Scope<'_>,
    st: &OpenStackServerStatus,
) -> Result<Option<Action>> {
    let Some(c) = conditions::get(&st.conditions, INSTANCE_READY)
        .filter(|c| matches!(c.reason(), Some(INSTANCE_DELETED | INSTANCE_NOT_FOUND)))
    else {
        return Ok(None);
    };
    let message = c.message().unwrap_or_default().to_owned();
    scope.status.ready = Some(false);
    // InstanceDeleted on the machine whichever the server says, as upstream's machine
    // controller reports it.
    scope.set(
        INSTANCE_READY,
        State::error(INSTANCE_DELETED, message.clone()),
    );
    scope.set(READY, State::error(INSTANCE_DELETED, message));
    scope.flush().await?;
    Ok(Some(scope.resync_later()))
}

/// The server is not ready: mirror why. Written when the server stops (ERROR, a refused
/// request) or a ready machine loses its server's readiness; a server on its way (BUILD) is
/// not mirrored, as upstream's machine status is first written at Ready: the OpenStackServer
/// shows the progress, and what it recorded meanwhile (ports, its ID) goes out with the next
/// write.
async fn server_not_ready(
    scope: &mut Scope<'_>,
    st: &OpenStackServerStatus,
) -> Result<Option<Action>> {
    if st.ready {
        return Ok(None);
    }
    let was_ready = scope.status.ready == Some(true);
    scope.status.ready = Some(false);
    let state = match instance_state(st) {
        // The instance is up but the server waits on something else (a pool address): the
        // machine is not ready, whatever InstanceReady says.
        Some(State::True) => pending_server_state(st),
        Some(s) => s,
        None => State::info(INSTANCE_NOT_READY, SERVER_REQUESTED),
    };
    let write = was_ready || !state.is_progress();
    scope.set(READY, state);
    if write {
        scope.flush_progress().await?;
    }
    // The OpenStackServer's status changes wake this machine up (owned object); the pace
    // covers a store one event behind that watch.
    let delay = scope.ctx.memo.delay(&scope.key(), INSTANCE_NOT_READY);
    Ok(Some(Action::requeue(delay)))
}

/// The node resources the cluster's extensions reserve (none without extensions).
async fn node_resources(
    scope: &mut Scope<'_>,
    inp: &Inputs<'_>,
    oss: &OpenStackServer,
) -> Result<()> {
    if inp.osc.spec.extensions.is_none() {
        return Ok(());
    }
    let s = server_session(scope, oss).await?;
    super::extensions::reconcile_node_resources(scope, inp.osc, &s, oss).await
}

/// The session of the machine's server's identity.
async fn server_session(scope: &Scope<'_>, oss: &OpenStackServer) -> Result<Session> {
    scope.session_for(&identity(&oss.spec)).await
}

/// The machine is ready: announce it the first time, write, and remember it converged.
async fn finish(scope: &mut Scope<'_>, inp: &Inputs<'_>, oss: OpenStackServer) -> Result<Action> {
    if scope.status.ready != Some(true) {
        let note = format!(
            "server {} is ACTIVE",
            scope.status.instance_id.clone().unwrap_or_default()
        );
        scope
            .event(EventType::Normal, "Provisioned", "Reconcile", Some(note))
            .await;
    }
    scope.status.ready = Some(true);
    scope.status.initialization = Some(Initialization {
        provisioned: Some(true),
    });
    scope.set(READY, State::True);
    scope.flush().await?;
    let fp = inp.fingerprint(scope.obj, Some(&oss))?;
    scope
        .ctx
        .memo
        .set_converged(&scope.key(), Part::Object, fp, true);
    Ok(scope.resync_later())
}

/// The OpenStackServer's InstanceReady as a desired state. Its standard condition has no
/// severity: [`Entry::severity`] recovers it from the reason, so a server that stopped (a
/// warning) or failed (an error) is told apart from one on its way (Info, not mirrored before
/// the machine was ready).
fn instance_state(st: &OpenStackServerStatus) -> Option<State> {
    let c = conditions::get(&st.conditions, INSTANCE_READY)?;
    Some(if c.status() == "True" {
        State::True
    } else {
        not_ready(c)
    })
}

/// A server condition that is not True, as a desired state of the machine.
fn not_ready(c: &impl Entry) -> State {
    let reason = c.reason().unwrap_or(INSTANCE_NOT_READY);
    let message = c.message().unwrap_or_default().to_owned();
    match c.severity() {
        Some("Error") => State::error(reason, message),
        Some("Warning") => State::warning(reason, message),
        _ => State::info(reason, message),
    }
}

/// What a server whose instance is ACTIVE but which is not ready yet waits for: its first
/// condition that is not True, else a generic wait.
fn pending_server_state(st: &OpenStackServerStatus) -> State {
    st.conditions
        .iter()
        .find(|c| c.status() != "True")
        .map(not_ready)
        .unwrap_or_else(|| State::info(INSTANCE_NOT_READY, "waiting for the server to be ready"))
}

fn copy_server_status(scope: &mut Scope<'_>, st: &OpenStackServerStatus) -> Result<()> {
    let (resolved, resources) = v1beta1_status_parts(st)?;
    scope.status.instance_id = st.instance_id.clone();
    scope.status.instance_state = st.instance_state.clone();
    scope.status.addresses = st.addresses.clone();
    scope.status.resolved = resolved;
    scope.status.resources = resources;
    match instance_state(st) {
        Some(s) => scope.set(INSTANCE_READY, s),
        None => scope.set(
            INSTANCE_READY,
            State::info(INSTANCE_NOT_READY, SERVER_REQUESTED),
        ),
    }
    if let Some(auth) = server_authentication(st) {
        scope.set(OPENSTACK_AUTHENTICATION_SUCCEEDED, auth);
    }
    Ok(())
}

/// The server's `OpenStackAuthenticationSucceeded`, for the machine: the server makes the
/// machine's cloud calls with the machine's credentials, so whether they authenticate is the
/// machine's to show too (a session of the machine's own, used for API traffic, writes it as
/// well: [`crate::lifecycle`]).
fn server_authentication(st: &OpenStackServerStatus) -> Option<State> {
    let c = conditions::get(&st.conditions, OPENSTACK_AUTHENTICATION_SUCCEEDED)?;
    let reason = c.reason().unwrap_or(condition_reasons::READY);
    let message = c.message().unwrap_or_default();
    match c.status() {
        "True" => Some(State::noted(reason, message)),
        "False" => Some(State::error(reason, message)),
        _ => None,
    }
}

/// `spec.providerID` = `openstack://<region>/<instanceID>`, written once the ID is known.
async fn set_provider_id(
    scope: &mut Scope<'_>,
    oss: &OpenStackServer,
    st: &OpenStackServerStatus,
) -> Result<()> {
    let Some(id) = st.instance_id.as_deref().filter(|i| !i.is_empty()) else {
        return Ok(());
    };
    let region = oss.spec.identity_ref.region.clone().unwrap_or_default();
    let wanted = provider_id(&region, id);
    if scope.obj.spec.provider_id.as_deref() == Some(wanted.as_str()) {
        return Ok(());
    }
    let patch = serde_json::json!({"spec": {"providerID": wanted}});
    crate::status::merge_patch(&scope.api, &scope.name, patch).await?;
    Ok(())
}

/// LB member or API floating IP; Some(action) while not done.
async fn reconcile_ingress(
    scope: &mut Scope<'_>,
    inp: &Inputs<'_>,
    oss: &OpenStackServer,
    st: &OpenStackServerStatus,
) -> Result<Option<Action>> {
    let mode = &inp.ingress;
    let cond = ingress::condition(inp.control_plane);
    if *mode == ingress::Mode::None {
        scope.set(cond, State::True);
        return Ok(None);
    }
    let Some(port_id) = st
        .resources
        .as_ref()
        .and_then(|r| r.ports.first())
        .map(|p| p.id.clone())
    else {
        return Err(Error::InvalidSpec(
            "the server has no port for API traffic".into(),
        ));
    };
    let s = server_session(scope, oss).await?;
    match ingress::ensure(&s, mode, &scope.name, &port_id).await? {
        Progress::Done(()) => {
            scope.set(cond, State::True);
            Ok(None)
        }
        // The cluster's load balancer shows the member's progress; the machine writes at Ready.
        Progress::Waiting(w) => Ok(Some(scope.waiting_unwritten(cond, "Progressing", w).await?)),
        Progress::Stuck(why) => {
            let reason = capo_api::constants::condition_reasons::LOAD_BALANCER_MEMBER_ERROR;
            Ok(Some(scope.stuck(cond, reason, why).await?))
        }
    }
}

/// The server's ports accept the address pairs the machine asks for now: its spec's, which
/// may change on an existing machine, with the cluster's keepalived VIPs (which may become
/// known later). The OpenStackServer's pairs are replaced where they differ (the only change
/// its admission allows on a port), and the server controller updates the Neutron ports. No
/// write when they agree; a spec that cannot be derived now leaves the server as it is.
async fn address_pairs(scope: &Scope<'_>, inp: &Inputs<'_>, oss: &OpenStackServer) -> Result<()> {
    let Ok(want) = derived_spec(scope, inp) else {
        return Ok(());
    };
    let mut ports = oss.spec.ports.clone();
    for (port, wanted) in ports.iter_mut().zip(&want.ports) {
        port.opts.allowed_address_pairs = wanted.opts.allowed_address_pairs.clone();
    }
    if ports == oss.spec.ports {
        return Ok(());
    }
    tracing::info!(name = %scope.name, "updating the allowed address pairs of the OpenStackServer's ports");
    let api: Api<OpenStackServer> =
        Api::namespaced(scope.ctx.shared.client.clone(), &scope.namespace);
    // The resource version makes a concurrent change fail (409) rather than be overwritten.
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": oss.resource_version()},
        "spec": {"ports": ports},
    });
    api.patch(&scope.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube(format!("update OpenStackServer {}", scope.name), e))?;
    Ok(())
}

/// The OpenStackServer spec the machine derives now (its spec, the cluster's network, security
/// group and BA/ACP extras).
fn derived_spec(scope: &Scope<'_>, inp: &Inputs<'_>) -> Result<OpenStackServerSpec> {
    let osc_status = inp.osc.status.clone().unwrap_or_default();
    let sg = if inp.control_plane {
        osc_status.control_plane_security_group.as_ref()
    } else {
        osc_status.worker_security_group.as_ref()
    };
    let (pairs, ssh_key) =
        super::extensions::derivation_extras(inp.osc, scope.obj, inp.control_plane);
    let d = Derivation {
        cluster_identity: Some(&inp.osc.spec.identity_ref),
        cluster_tags: &inp.osc.spec.tags,
        availability_zone: inp.machine.spec.failure_domain.as_deref(),
        user_data_secret: inp.machine.spec.bootstrap.data_secret_name.as_deref(),
        cluster_network_id: osc_status.network.as_ref().map(|n| n.id.as_str()),
        default_security_group_id: sg.map(|g| g.id.as_str()),
        cluster_disables_port_security: inp.osc.spec.disable_port_security == Some(true),
        primary_subnet: inp.osc.spec.primary_subnet.as_ref(),
        cluster_subnets: &inp.osc.spec.subnets,
        allowed_address_pairs: &pairs,
        default_ssh_key_name: ssh_key.as_deref(),
    };
    server_spec(&scope.obj.spec, &d).map_err(Error::InvalidSpec)
}

/// Create the OpenStackServer named like the machine (owned by it, as controller).
async fn create_server(
    scope: &Scope<'_>,
    inp: &Inputs<'_>,
    api: &Api<OpenStackServer>,
) -> Result<()> {
    let spec = derived_spec(scope, inp)?;
    let server = OpenStackServer {
        metadata: ObjectMeta {
            name: Some(scope.name.clone()),
            namespace: Some(scope.namespace.clone()),
            labels: Some(BTreeMap::from([(
                CLUSTER_NAME_LABEL.to_owned(),
                inp.cluster.to_owned(),
            )])),
            owner_references: scope.obj.controller_owner_ref(&()).map(|r| vec![r]),
            // Created with its controller's finalizer, which that controller would otherwise
            // add as its first write: one request and one reconcile less per machine.
            finalizers: Some(vec![SERVER_FINALIZER.to_owned()]),
            // Likewise its ownership ID (the UID is not known before the create): a fresh one.
            annotations: Some(BTreeMap::from([(
                OWNER_ID_ANNOTATION.to_owned(),
                uuid::Uuid::new_v4().to_string(),
            )])),
            ..Default::default()
        },
        spec,
        status: None,
    };
    tracing::info!(name = %scope.name, "creating OpenStackServer");
    match api.create(&PostParams::default(), &server).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(ae)) if ae.code == 409 => Ok(()),
        Err(e) => Err(Error::kube(
            format!("create OpenStackServer {}", server.name_any()),
            e,
        )),
    }
}

//! The identity Secrets' finalizer: a Secret that an identityRef names carries
//! [`IDENTITY_IN_USE_FINALIZER`] while any capo object that talks to OpenStack on its way out
//! uses it, so deleting everything at once (GitOps, Helm, `kubectl delete -f`) cannot take the
//! credentials away before the cloud resources are gone (upstream issue 1392).
//!
//! ## One owner, level-based
//! This controller alone adds and removes the finalizer. Its reconcile is keyed by the Secret
//! and computes, every time, the Secret's users from the manager's watched stores
//! ([`crate::informers`]): the OpenStackClusters, OpenStackMachines, OpenStackServers and
//! OpenStackFloatingIPPools whose identityRef resolves to it, objects being deleted included
//! (they need the Secret to finish). Users present: the finalizer is added; none: it is
//! removed. No object ever asks "am I the last user?" (two objects deleted at once could
//! each see the other, and the finalizer would stay for ever): the reconcile that runs after
//! the last user left the stores sees none.
//!
//! ## Triggers
//! An object of those kinds that appears (each store's first list included, which covers a
//! restart), goes, or names another Secret schedules the Secret its identityRef names, and the
//! one it named before; other changes (status updates) schedule nothing, as they change no
//! Secret's users. Every `--sync-period` all of them are scheduled again,
//! with the Secrets this controller saw carrying the finalizer (an OpenStackClusterIdentity
//! re-pointed to another Secret changes no object). Requests for one Secret are merged, and
//! reconciles run one at a time, so two never race on one Secret; failures retry with
//! per-Secret backoff.
//!
//! ## Guarantees
//! - Users are counted only once every store holds a complete list; until then nothing is
//!   decided, so a partial view never removes the finalizer.
//! - Only `metadata.finalizers` is written, by a merge patch with the Secret's
//!   `resourceVersion` as precondition: a concurrent change of the Secret makes the patch fail
//!   and the reconcile runs again on the new version; its data is never written. The Secret is
//!   read and patched as metadata only, so its contents never reach the manager here.
//! - A Secret no capo object names is never read or written. A missing Secret is left alone
//!   (its users report "identityRef Secret ... not found", as before). A Secret already being
//!   deleted cannot take a new finalizer (the API server refuses it); it is removed once
//!   unused as any other.
//! - Secrets are neither listed nor watched (the manager has no such RBAC): only `get` and
//!   `patch` by name.
//!
//! ## Scope and limits
//! - The kinds counted are those with a finalizer, which do cloud work at deletion. Templates
//!   (OpenStackClusterTemplate, OpenStackMachineTemplate) are not users: they create nothing,
//!   get no finalizer and their deletion needs no credentials (the machine-template
//!   controller reads flavors and images with them, and simply waits while they are missing).
//!   An OpenStackMachine without an identityRef uses its OpenStackCluster's, and that cluster
//!   stays until its machines are gone (its deletion waits for them), so it is counted there;
//!   its OpenStackServer carries the resolved identityRef and is counted itself.
//! - An identityRef of type ClusterIdentity counts for the Secret its OpenStackClusterIdentity
//!   names (whatever that identity's namespaceSelector says). The OpenStackClusterIdentity
//!   itself gets no finalizer.
//! - With `--namespace`, only Secrets of that namespace are handled (users elsewhere are not
//!   seen, so a Secret of another namespace is never touched).
//! - What this process did not see cannot be undone by it: a manager stopped between the last
//!   user's finalizer removal and this reconcile, or an identityRef or identity re-pointed while
//!   no manager runs, leaves the finalizer on a Secret nothing uses until the operator removes
//!   it (`docs/troubleshooting.md`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use capo_api::v1beta1::{IdentityRefType, OpenStackIdentityReference};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::runtime::scheduler::{ScheduleRequest, scheduler};
use kube::{Api, ResourceExt};

use crate::context::{Context, FIELD_MANAGER};
use crate::error::{Error, Result};
use crate::informers::{Change, Informer};
use crate::lifecycle::Reconciled;

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "identitysecret";

/// The finalizer on an identityRef Secret while a capo object uses it. Upstream has none (its
/// pull request 1393 was never merged); the name is domain-qualified in capo's API group.
pub const IDENTITY_IN_USE_FINALIZER: &str =
    "openstack.infrastructure.cluster.x-k8s.io/identity-in-use";

/// A Secret, by (namespace, name).
type SecretKey = (String, String);

/// What an identityRef names, before resolution.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Target {
    /// A Secret (namespace, name).
    Secret(SecretKey),
    /// An OpenStackClusterIdentity, whose Secret is read when the target is reconciled.
    ClusterIdentity(String),
}

impl Target {
    fn of(namespace: &str, r: &OpenStackIdentityReference) -> Self {
        match r.r#type {
            IdentityRefType::Secret => Self::Secret((namespace.to_owned(), r.name.clone())),
            IdentityRefType::ClusterIdentity => Self::ClusterIdentity(r.name.clone()),
        }
    }
}

/// The target of `obj`'s identityRef, if it names one.
fn target_of<K: Reconciled>(obj: &K) -> Option<Target> {
    let r = obj.identity_ref()?;
    Some(Target::of(&obj.namespace().unwrap_or_default(), &r))
}

/// One object's change as the triggers need it: its UID, its target, whether it is gone.
struct Seen {
    uid: String,
    target: Option<Target>,
    gone: bool,
}

fn seen<K: Reconciled>(changes: impl Stream<Item = Change<K>>) -> impl Stream<Item = Seen> {
    changes.map(|c| {
        let (obj, gone) = match &c {
            Change::Applied(o) => (o, false),
            Change::Deleted(o) => (o, true),
        };
        Seen {
            uid: obj.uid().unwrap_or_else(|| obj.name_any()),
            target: target_of(&**obj),
            gone,
        }
    })
}

/// The Secrets this process saw carrying the finalizer (looked at again every sync period).
type Known = Arc<Mutex<HashSet<SecretKey>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Run the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let informers = &ctx.shared.informers;
    let changes = futures::stream::select_all([
        seen(informers.openstack_clusters.subscribe()).boxed(),
        seen(informers.openstack_machines.subscribe()).boxed(),
        seen(informers.openstack_servers.subscribe()).boxed(),
        seen(informers.openstack_floating_ip_pools.subscribe()).boxed(),
    ]);
    // The target each object named last, so that a changed identityRef releases the old one.
    let mut named: HashMap<String, Target> = HashMap::new();
    let triggers = changes.flat_map(move |s| {
        let before = if s.gone {
            named.remove(&s.uid)
        } else {
            match &s.target {
                Some(t) => named.insert(s.uid.clone(), t.clone()),
                None => named.remove(&s.uid),
            }
        };
        // Users change only when an object appears, goes or names another Secret: a status
        // update (the common change) schedules nothing.
        let mut out: Vec<Target> = Vec::new();
        if s.gone || before != s.target {
            out.extend(s.target);
            out.extend(before.filter(|b| !out.contains(b)));
        }
        futures::stream::iter(out)
    });
    let known: Known = Arc::default();
    let period = ctx
        .shared
        .options
        .sync_period
        .max(std::time::Duration::from_secs(1));
    let periodic = {
        let (ctx, known) = (ctx.clone(), known.clone());
        futures::stream::unfold((), move |()| {
            let (ctx, known) = (ctx.clone(), known.clone());
            async move {
                tokio::time::sleep(period).await;
                let mut all = every_target(&ctx).await;
                all.extend(lock(&known).iter().cloned().map(Target::Secret));
                Some((futures::stream::iter(all), ()))
            }
        })
        .flatten()
    };
    let (retry_tx, retry_rx) = futures::channel::mpsc::unbounded();
    let now = |message| ScheduleRequest {
        message,
        run_at: tokio::time::Instant::now(),
    };
    let requests = futures::stream::select(
        futures::stream::select(triggers, periodic).map(now),
        retry_rx,
    );
    let mut due = std::pin::pin!(scheduler(requests));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let target = tokio::select! {
            () = &mut shutdown => return,
            next = due.next() => match next {
                Some(t) => t,
                None => return,
            },
        };
        let started = Instant::now();
        let key = format!("{target:?}");
        let out = reconcile(&ctx, &known, &target).await;
        let secs = started.elapsed().as_secs_f64();
        match out {
            Ok(()) => {
                ctx.backoff.reset(&key);
                ctx.shared.metrics.observe(CONTROLLER, secs, None);
            }
            Err(e) => {
                ctx.shared
                    .metrics
                    .observe(CONTROLLER, secs, Some(e.category()));
                if e.is_conflict() {
                    tracing::debug!(controller = CONTROLLER, ?target, error = %e, "conflict; retrying");
                } else {
                    tracing::warn!(controller = CONTROLLER, ?target, error = %e, "reconcile failed");
                }
                let _ = retry_tx.unbounded_send(ScheduleRequest {
                    message: target,
                    run_at: tokio::time::Instant::now() + ctx.backoff.next(&key),
                });
            }
        }
    }
}

/// The targets of every object in the stores (those not listed yet are skipped: their first
/// list triggers them).
async fn every_target(ctx: &Context) -> HashSet<Target> {
    let i = &ctx.shared.informers;
    let mut out = HashSet::new();
    out.extend(targets(&i.openstack_clusters).await);
    out.extend(targets(&i.openstack_machines).await);
    out.extend(targets(&i.openstack_servers).await);
    out.extend(targets(&i.openstack_floating_ip_pools).await);
    out
}

async fn targets<K: Reconciled>(informer: &Informer<K>) -> Vec<Target> {
    let all = informer.ready_state().await.unwrap_or_default();
    all.iter().filter_map(|o| target_of(&**o)).collect()
}

/// Add or remove the finalizer on the Secret `target` resolves to, from its users now.
async fn reconcile(ctx: &Context, known: &Known, target: &Target) -> Result<()> {
    let mut identities = HashMap::new();
    let Some(secret) = resolve(ctx, &mut identities, target).await? else {
        return Ok(());
    };
    if ctx
        .shared
        .options
        .namespace
        .as_ref()
        .is_some_and(|ns| *ns != secret.0)
    {
        return Ok(());
    }
    let users = users_of(ctx, &mut identities, &secret).await?;
    let (ns, name) = (&secret.0, &secret.1);
    let api = Api::<Secret>::namespaced(ctx.shared.client.clone(), ns);
    let Some(meta) = api
        .get_metadata_opt(name)
        .await
        .map_err(|e| Error::kube(format!("get Secret {ns}/{name}"), e))?
    else {
        lock(known).remove(&secret);
        return Ok(());
    };
    let has = meta
        .finalizers()
        .iter()
        .any(|f| f == IDENTITY_IN_USE_FINALIZER);
    let deleting = meta.metadata.deletion_timestamp.is_some();
    let finalizers: Vec<String> = match (users, has) {
        (0, true) => meta
            .finalizers()
            .iter()
            .filter(|f| *f != IDENTITY_IN_USE_FINALIZER)
            .cloned()
            .collect(),
        // The API server refuses a new finalizer on an object being deleted.
        (1.., false) if !deleting => {
            let mut list = meta.finalizers().to_vec();
            list.push(IDENTITY_IN_USE_FINALIZER.to_owned());
            list
        }
        _ => {
            let mut k = lock(known);
            if has {
                k.insert(secret.clone());
            } else {
                k.remove(&secret);
            }
            return Ok(());
        }
    };
    let patch = serde_json::json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": meta.resource_version(),
        }
    });
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..Default::default()
    };
    match api
        .patch_metadata(name, &params, &Patch::Merge(patch))
        .await
    {
        Ok(_) => {}
        // Gone meanwhile: nothing left to guard or release.
        Err(kube::Error::Api(ae)) if ae.code == 404 => {
            lock(known).remove(&secret);
            return Ok(());
        }
        Err(e) => {
            return Err(Error::kube(
                format!("patch Secret {ns}/{name} finalizers"),
                e,
            ));
        }
    }
    if users == 0 {
        lock(known).remove(&secret);
        tracing::info!(namespace = %ns, name = %name, "identity Secret no longer used: finalizer removed");
    } else {
        lock(known).insert(secret.clone());
        tracing::info!(namespace = %ns, name = %name, users, "identity Secret in use: finalizer added");
    }
    Ok(())
}

/// The Secret `target` names (`None`: an OpenStackClusterIdentity that does not exist).
/// `identities` keeps the identities read during one reconcile.
async fn resolve(
    ctx: &Context,
    identities: &mut HashMap<String, Option<SecretKey>>,
    target: &Target,
) -> Result<Option<SecretKey>> {
    match target {
        Target::Secret(key) => Ok(Some(key.clone())),
        Target::ClusterIdentity(name) => {
            if let Some(found) = identities.get(name) {
                return Ok(found.clone());
            }
            let r = OpenStackIdentityReference {
                r#type: IdentityRefType::ClusterIdentity,
                name: name.clone(),
                ..Default::default()
            };
            let found = crate::credentials::secret_named_by(ctx, "", &r).await?;
            identities.insert(name.clone(), found.clone());
            Ok(found)
        }
    }
}

/// How many objects of the counted kinds use `secret`, from complete stores.
async fn users_of(
    ctx: &Context,
    identities: &mut HashMap<String, Option<SecretKey>>,
    secret: &SecretKey,
) -> Result<usize> {
    let i = &ctx.shared.informers;
    let mut n = count(ctx, identities, &i.openstack_clusters, secret).await?;
    n += count(ctx, identities, &i.openstack_machines, secret).await?;
    n += count(ctx, identities, &i.openstack_servers, secret).await?;
    n += count(ctx, identities, &i.openstack_floating_ip_pools, secret).await?;
    Ok(n)
}

async fn count<K: Reconciled>(
    ctx: &Context,
    identities: &mut HashMap<String, Option<SecretKey>>,
    informer: &Informer<K>,
    secret: &SecretKey,
) -> Result<usize> {
    let mut n = 0;
    for obj in informer.ready_state().await? {
        if let Some(t) = target_of(&*obj)
            && resolve(ctx, identities, &t).await?.as_ref() == Some(secret)
        {
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_ref_names_a_secret_of_its_namespace_or_an_identity() {
        let mut r = OpenStackIdentityReference {
            name: "cloud-config".into(),
            ..Default::default()
        };
        assert_eq!(
            Target::of("ns", &r),
            Target::Secret(("ns".into(), "cloud-config".into()))
        );
        r.r#type = IdentityRefType::ClusterIdentity;
        assert_eq!(
            Target::of("ns", &r),
            Target::ClusterIdentity("cloud-config".into())
        );
    }

    #[test]
    fn the_finalizer_is_domain_qualified_in_capos_group() {
        let (domain, name) = IDENTITY_IN_USE_FINALIZER.split_once('/').unwrap();
        assert!(domain.ends_with(capo_api::constants::GROUP));
        assert_eq!(name, "identity-in-use");
    }
}

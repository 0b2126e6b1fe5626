//! What every controller shares at runtime: the error policy (backoff), instrumentation, the
//! watch configuration (namespace, watch filter) and the pause checks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use std::hash::{Hash, Hasher};

use crate::capi::Cluster;
use crate::context::Context;
use crate::error::Error;
use crate::informers::{Change, Watched, trim};

/// Label of upstream's `--watch-filter`.
pub const WATCH_FILTER_LABEL: &str = "cluster.x-k8s.io/watch-filter";

/// Watch configuration honouring `--watch-filter`.
pub fn watcher_config(ctx: &Context) -> watcher::Config {
    let wc = watcher::Config::default().any_semantic();
    match &ctx.shared.options.watch_filter {
        Some(v) => wc.labels(&format!("{WATCH_FILTER_LABEL}={v}")),
        None => wc,
    }
}

/// Requeue after a failed reconcile: the cloud's Retry-After, else a slow retry for capacity
/// problems and errors only a spec change can fix, else per-object exponential backoff.
pub fn error_policy<K: Resource, C: AsRef<Context>>(
    obj: Arc<K>,
    err: &Error,
    ctx: Arc<C>,
) -> Action {
    let ctx: &Context = (*ctx).as_ref();
    let key = obj.meta().uid.clone().unwrap_or_default();
    if let Some(after) = err.retry_after() {
        return Action::requeue(after);
    }
    if err.is_slow_retry() || err.is_terminal() {
        return Action::requeue(ctx.shared.options.slow_retry.max(ctx.backoff.next(&key)));
    }
    Action::requeue(ctx.backoff.next(&key))
}

/// Run `f` with metrics, logging and backoff reset on success.
pub async fn instrumented<K, F>(
    controller: &'static str,
    obj: &K,
    ctx: &Context,
    f: F,
) -> Result<Action, Error>
where
    K: Resource,
    F: std::future::Future<Output = Result<Action, Error>>,
{
    let started = Instant::now();
    let name = obj.meta().name.clone().unwrap_or_default();
    let ns = obj.meta().namespace.clone().unwrap_or_default();
    let out = f.await;
    let secs = started.elapsed().as_secs_f64();
    match &out {
        Ok(action) => {
            ctx.backoff
                .reset(obj.meta().uid.as_deref().unwrap_or_default());
            ctx.shared.metrics.observe(controller, secs, None);
            tracing::debug!(controller, namespace = %ns, name = %name, ?action, secs, "reconciled");
        }
        Err(e) => {
            ctx.shared
                .metrics
                .observe(controller, secs, Some(e.category()));
            if e.is_credentials_problem() {
                ctx.shared.identity_reads.forget_all();
            }
            if e.is_conflict() {
                tracing::debug!(controller, namespace = %ns, name = %name, error = %e, "conflict; retrying");
            } else {
                tracing::warn!(controller, namespace = %ns, name = %name, error = %e, "reconcile failed");
            }
        }
    }
    out
}

/// Whether `obj` carries Cluster API's paused annotation.
pub fn has_paused_annotation<K: Resource>(obj: &K) -> bool {
    obj.annotations()
        .contains_key(capo_api::constants::PAUSED_ANNOTATION)
}

/// Annotation holding the ID that ownership tags of this object's cloud resources carry: the
/// object's UID when it was first reconciled, or a random ID set by the controller that created
/// it (an OpenStackMachine's server, which would otherwise need a write of its own for it: the
/// UID is not known before the create). `clusterctl move` and backup restores recreate
/// objects with new UIDs but keep annotations, so the resources stay recognisably ours.
pub const OWNER_ID_ANNOTATION: &str = "infrastructure.cluster.x-k8s.io/capo-owner-id";

/// The ownership ID of `obj` (see [`OWNER_ID_ANNOTATION`]).
pub fn owner_id<K: Resource>(obj: &K) -> String {
    obj.annotations()
        .get(OWNER_ID_ANNOTATION)
        .filter(|v| !v.is_empty())
        .cloned()
        .or_else(|| obj.meta().uid.clone())
        .unwrap_or_default()
}

/// Add `finalizer` and the ownership-ID annotation to `obj` (optimistic concurrency on the
/// resourceVersion). Returns true when the finalizer had to be added: the caller stops and
/// waits for the update event, so nothing is created before the finalizer is persisted.
pub async fn ensure_finalizer<K>(
    api: &kube::Api<K>,
    obj: &K,
    finalizer: &str,
) -> Result<bool, Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let has_finalizer = obj.finalizers().iter().any(|f| f == finalizer);
    let has_owner_id = obj.annotations().contains_key(OWNER_ID_ANNOTATION);
    if has_finalizer && has_owner_id {
        return Ok(false);
    }
    let mut list = obj.finalizers().to_vec();
    if !has_finalizer {
        list.push(finalizer.to_owned());
    }
    let patch = serde_json::json!({
        "metadata": {
            "finalizers": list,
            "annotations": {OWNER_ID_ANNOTATION: owner_id(obj)},
            "resourceVersion": obj.resource_version(),
        }
    });
    crate::status::merge_patch(api, &obj.name_any(), patch).await?;
    Ok(!has_finalizer)
}

/// Remove `finalizer` from `obj` (after its cleanup finished).
pub async fn remove_finalizer<K>(api: &kube::Api<K>, obj: &K, finalizer: &str) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if !obj.finalizers().iter().any(|f| f == finalizer) {
        return Ok(());
    }
    let list: Vec<String> = obj
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    match patch_finalizers(api, obj, list).await {
        // Already gone: the finalizer went with it.
        Err(Error::Kube {
            source: kube::Error::Api(ae),
            ..
        }) if ae.code == 404 => Ok(()),
        other => other,
    }
}

async fn patch_finalizers<K>(api: &kube::Api<K>, obj: &K, list: Vec<String>) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = serde_json::json!({
        "metadata": {
            "finalizers": list,
            "resourceVersion": obj.resource_version(),
        }
    });
    crate::status::merge_patch(api, &obj.name_any(), patch).await?;
    Ok(())
}

/// Whether `obj` is being deleted.
pub fn is_deleting<K: Resource>(obj: &K) -> bool {
    obj.meta().deletion_timestamp.is_some()
}

/// The trigger stream and cache of a controller's primary kind for the kinds no other
/// controller watches (templates), with its own watch: filtered as
/// [`primary_changes`].
pub fn primary_stream<K>(
    api: kube::Api<K>,
    wc: watcher::Config,
) -> (
    kube::runtime::reflector::Store<K>,
    impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Watched,
{
    use kube::runtime::{WatchStreamExt, reflector};
    let (reader, writer) = reflector::store();
    let pred = |o: &K| Some(primary_key(o));
    let stream = kube::runtime::watcher(api, wc)
        .default_backoff()
        .modify(trim)
        .reflect(writer)
        .applied_objects()
        .predicate_filter(pred, Default::default());
    (reader, stream)
}

/// The objects of kind `K` due for a look, for the controller's `reconcile_on`: those whose
/// peer's wait ended ([`crate::pace`]), and the converged objects of `controller` whose sync
/// period passed ([`crate::memo::Resyncs`]).
pub fn nudged<K>(
    ctx: &crate::context::Context,
    controller: &'static str,
) -> impl futures::Stream<Item = kube::runtime::reflector::ObjectRef<K>> + Send + 'static
where
    K: Resource<DynamicType = ()>,
{
    use futures::StreamExt;
    let nudges = ctx.memo.nudges();
    // Converged objects whose sync period passed ([`crate::memo::Resyncs`]), looked for
    // once per RESYNC_TICK (a fraction of the shortest sync period anyone sets).
    let resyncs = ctx.memo.resyncs();
    let tick = RESYNC_TICK
        .min(ctx.shared.options.sync_period / 10)
        .max(MIN_RESYNC_TICK);
    let due = futures::stream::unfold(resyncs, move |resyncs| async move {
        tokio::time::sleep(tick).await;
        let due = resyncs.due(controller);
        Some((futures::stream::iter(due), resyncs))
    })
    .flatten();
    futures::stream::select(nudges, due)
        .map(|(ns, name)| kube::runtime::reflector::ObjectRef::new(&name).within(&ns))
}

/// How often a controller looks for converged objects due for their periodic look.
const RESYNC_TICK: Duration = Duration::from_secs(1);

/// The shortest such interval, whatever the sync period (a zero period must not spin).
const MIN_RESYNC_TICK: Duration = Duration::from_millis(50);

/// The trigger stream of a controller's primary kind from its shared watch (see
/// [`crate::informers`]), passing on only changes that can change the desired state: generation
/// (spec, and the deletion marking), labels, annotations (pause, strict mode), finalizers and
/// owner references (Cluster API sets them after creating the object, and nothing happens
/// before). The controllers' own status writes do not come back as reconciles (upstream
/// reconciles again after each of its status patches). Objects without the `--watch-filter`
/// label are left out.
pub fn primary_changes<K>(
    ctx: &Context,
    changes: impl futures::Stream<Item = Change<K>> + Send + 'static,
) -> impl futures::Stream<Item = Arc<K>> + Send + 'static
where
    K: Watched,
{
    use futures::StreamExt;
    let filter = ctx.shared.options.watch_filter.clone();
    let changes = changes
        .filter(move |c| futures::future::ready(has_filter_label(c.get(), filter.as_deref())));
    changed(changes, primary_key::<K>)
}

/// What a primary object's reconcile depends on besides its spec: a hash of its generation,
/// deletion marking, labels, annotations, finalizers and owner references.
fn primary_key<K: Resource>(o: &K) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    o.meta().generation.hash(&mut h);
    o.meta().deletion_timestamp.is_some().hash(&mut h);
    o.labels().hash(&mut h);
    o.annotations().hash(&mut h);
    o.finalizers().hash(&mut h);
    for r in o.owner_references() {
        r.uid.hash(&mut h);
        r.controller.hash(&mut h);
    }
    h.finish()
}

/// Whether `obj` carries the `--watch-filter` label (always, when no filter is set).
pub fn has_filter_label<K: Resource>(obj: &K, filter: Option<&str>) -> bool {
    filter.is_none_or(|v| obj.labels().get(WATCH_FILTER_LABEL).map(String::as_str) == Some(v))
}

/// Cluster API Clusters, passed on only when first seen and when `spec.paused` flips: a paused
/// object waits for a change, and resuming its Cluster is that change (`clusterctl move`
/// creates the objects in the target while the Cluster is paused, then resumes it). The
/// Clusters' frequent status writes are filtered out.
pub fn cluster_pause_changes(
    ctx: &Context,
) -> impl futures::Stream<Item = Arc<Cluster>> + Send + 'static {
    changed(ctx.shared.informers.clusters.subscribe(), |c: &Cluster| {
        u64::from(c.is_paused())
    })
}

/// OpenStackClusters passed on when first seen and when their abandon annotation changes: the
/// objects of the cluster being deleted follow it ([`crate::abandon`]) and are blocked on a
/// slow backoff meanwhile.
pub fn abandon_changes(
    ctx: &Context,
) -> impl futures::Stream<Item = Arc<crate::stored::Stored<capo_api::v1beta1::OpenStackCluster>>>
+ Send
+ 'static {
    changed(ctx.shared.informers.openstack_clusters.subscribe(), |o| {
        u64::from(crate::abandon::annotated(o))
    })
}

/// Objects passed on when first seen and when their spec (generation), labels or annotations
/// change: for related kinds whose status does not matter to the controller (Cluster API
/// writes the status of its Clusters and Machines many times on their way up; each write used
/// to wake their OpenStack objects for nothing).
pub fn spec_changes<K>(
    changes: impl futures::Stream<Item = Change<K>> + Send + 'static,
) -> impl futures::Stream<Item = Arc<K>> + Send + 'static
where
    K: Watched,
{
    changed(changes, |o: &K| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        o.meta().generation.hash(&mut h);
        o.labels().hash(&mut h);
        o.annotations().hash(&mut h);
        h.finish()
    })
}

/// Every change, deletions included (a child's or a related object's state matters to the
/// objects it maps to).
pub fn all_changes<K>(
    changes: impl futures::Stream<Item = Change<K>> + Send + 'static,
) -> impl futures::Stream<Item = Arc<K>> + Send + 'static
where
    K: Watched,
{
    use futures::StreamExt;
    changes.map(Change::object)
}

/// Applied objects whose `key` differs from the one last passed on for the same object (the
/// first sight always passes); a deletion forgets the object. A predicate filter, as
/// controller-runtime's and kube-runtime's, over a subscription.
fn changed<K, F>(
    changes: impl futures::Stream<Item = Change<K>> + Send + 'static,
    key: F,
) -> impl futures::Stream<Item = Arc<K>> + Send + 'static
where
    K: Watched,
    F: Fn(&K) -> u64 + Send + 'static,
{
    use futures::StreamExt;
    let mut seen: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    changes.filter_map(move |change| {
        let out = match change {
            Change::Applied(obj) => {
                let k = key(&obj);
                (seen.insert(identity(&*obj), k) != Some(k)).then_some(obj)
            }
            Change::Deleted(obj) => {
                seen.remove(&identity(&*obj));
                None
            }
        };
        futures::future::ready(out)
    })
}

/// An object's identity across its life: its UID (a recreated object is another one).
fn identity<K: Resource>(obj: &K) -> String {
    obj.meta()
        .uid
        .clone()
        .unwrap_or_else(|| format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(name: &str, generation: i64) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                generation: Some(generation),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[tokio::test]
    async fn a_change_passes_when_its_key_changed_and_a_deletion_forgets_the_object() {
        let changes = futures::stream::iter(vec![
            Change::Applied(cm("a", 1)),
            Change::Applied(cm("a", 1)),
            Change::Applied(cm("b", 1)),
            Change::Applied(cm("a", 2)),
            Change::Deleted(cm("a", 2)),
            Change::Applied(cm("a", 2)),
        ]);
        let passed: Vec<(String, i64)> = spec_changes(changes)
            .map(|o| (o.name_any(), o.metadata.generation.unwrap_or_default()))
            .collect()
            .await;
        let want = [("a", 1), ("b", 1), ("a", 2), ("a", 2)];
        let want: Vec<(String, i64)> = want.iter().map(|(n, g)| ((*n).into(), *g)).collect();
        assert_eq!(passed, want);
    }

    #[test]
    fn the_watch_filter_label_selects_objects_only_when_set() {
        let mut o = ConfigMap::default();
        assert!(has_filter_label(&o, None));
        assert!(!has_filter_label(&o, Some("blue")));
        o.labels_mut()
            .insert(WATCH_FILTER_LABEL.into(), "blue".into());
        assert!(has_filter_label(&o, Some("blue")));
        assert!(!has_filter_label(&o, Some("green")));
    }

    #[test]
    fn trimming_keeps_only_what_the_controllers_read() {
        let mut o = ConfigMap::default();
        o.metadata.managed_fields = Some(vec![Default::default()]);
        for key in [
            "kubectl.kubernetes.io/last-applied-configuration",
            "cluster.x-k8s.io/cloned-from-name",
            "example.com/users-own",
            capo_api::constants::PAUSED_ANNOTATION,
            crate::capi::MANAGED_BY_ANNOTATION,
            OWNER_ID_ANNOTATION,
            capo_api::constants::STRICT_RULES_ANNOTATION,
            "infrastructure.cluster.x-k8s.io/capo-bastion-spec-hash",
        ] {
            o.annotations_mut().insert(key.into(), "v".into());
        }
        o.labels_mut().insert("any".into(), "label".into());
        trim(&mut o);
        assert!(o.metadata.managed_fields.is_none());
        let kept: Vec<&str> = o.annotations().keys().map(String::as_str).collect();
        assert_eq!(
            kept,
            [
                "cluster.x-k8s.io/managed-by",
                "cluster.x-k8s.io/paused",
                "infrastructure.cluster.x-k8s.io/capo-bastion-spec-hash",
                "infrastructure.cluster.x-k8s.io/capo-owner-id",
                "infrastructure.cluster.x-k8s.io/capo-strict-security-group-rules",
            ]
        );
        assert_eq!(o.labels().len(), 1, "labels are kept");
    }

    #[test]
    fn trimming_drops_an_emptied_annotation_map() {
        let mut o = ConfigMap::default();
        o.annotations_mut()
            .insert("cluster.x-k8s.io/cloned-from-name".into(), "t".into());
        trim(&mut o);
        assert!(o.metadata.annotations.is_none());
    }
}

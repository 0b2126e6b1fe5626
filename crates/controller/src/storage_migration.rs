//! Storage-version migration of capo's CRDs, run by the leader when it starts.
//!
//! A CRD whose storage version changed (v1beta1 → v1beta2 when these CRDs replace those of an
//! earlier capo or of upstream v0.14) still lists the old version in `status.storedVersions`, and etcd
//! still holds every object written before in that version. The API server converts them on
//! each read, but the old version can never be dropped from the CRD while any object is stored
//! in it. So, as the Kubernetes documentation prescribes (and as clusterctl and Cluster API's
//! own CRD migrator do), each object is written back unchanged, which makes the API server
//! store it in the current storage version, and only once all of them were rewritten does
//! `status.storedVersions` shrink to the storage version.
//!
//! A rewrite that fails (an object the conversion or an admission webhook refuses) leaves
//! `storedVersions` as it was: nothing is lost, the object stays readable through conversion,
//! and the migration is tried again later. An object changed meanwhile by someone else
//! (a conflict) or deleted needs nothing more: its new state was written in the storage version.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::error::{Error, KubeContext, Result};

/// Objects listed per request while rewriting.
const PAGE: u32 = 200;
/// First wait before a failed migration is tried again; doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(30);
/// Longest wait between two attempts.
const RETRY_MAX: Duration = Duration::from_secs(600);
/// How long a pass waits for the API server to publish a CRD's new storage version.
const SETTLE: Duration = Duration::from_secs(10);

/// What one CRD's migration did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// The CRD's name.
    pub crd: String,
    /// The versions `status.storedVersions` listed before.
    pub from: Vec<String>,
    /// The storage version every object is now stored in.
    pub to: String,
    /// Objects written back.
    pub rewritten: usize,
}

/// What one pass of [`migrate`] did.
#[derive(Debug, Default)]
pub struct Report {
    /// The CRDs migrated, in the order of the names given.
    pub migrated: Vec<Migrated>,
    /// What stopped the others (one entry per object refused, or per CRD that could not be
    /// read or listed); their `storedVersions` were left as they were.
    pub failures: Vec<Error>,
}

/// Migrates every CRD of `names` whose `status.storedVersions` lists a version other than its
/// storage version; CRDs already migrated (or not installed) cost one GET each. An object that
/// cannot be rewritten does not stop the others, of its CRD or of the next ones.
pub async fn migrate(client: &Client, names: &[String]) -> Report {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut report = Report::default();
    for name in names {
        match migrate_one(client, &crds, name).await {
            Ok((Some(done), _)) => report.migrated.push(done),
            Ok((None, failures)) => report.failures.extend(failures),
            Err(e) => report.failures.push(e),
        }
    }
    report
}

/// One CRD: `Some` once migrated, else the objects that could not be rewritten (none when
/// there was nothing to do).
async fn migrate_one(
    client: &Client,
    crds: &Api<CustomResourceDefinition>,
    name: &str,
) -> Result<(Option<Migrated>, Vec<Error>)> {
    let Some(crd) = crds
        .get_opt(name)
        .await
        .kctx(|| format!("get CRD {name}"))?
    else {
        return Ok((None, Vec::new()));
    };
    let Some(storage) = storage_version(&crd) else {
        return Ok((None, Vec::new()));
    };
    let stored = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    if stored.iter().all(|v| *v == storage) {
        return Ok((None, Vec::new()));
    }
    // The API server switches to a CRD's new storage version shortly after the CRD changes;
    // a rewrite before that would store the old version again.
    let deadline = tokio::time::Instant::now() + SETTLE;
    while !storage_in_effect(client, &crd, &storage).await? {
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::NotYet(format!(
                "CRD {name}: the API server does not store {storage} yet (discovery's storageVersionHash)"
            )));
        }
        tokio::time::sleep(SETTLE / 40).await;
    }
    let (rewritten, failures) = rewrite_all(client, &crd, &storage, &stored).await?;
    if !failures.is_empty() {
        return Ok((None, failures));
    }
    // Guarded by the CRD's resourceVersion: had the CRD changed since it was read (its
    // storage version with it), the patch fails and the next attempt starts over.
    let patch = json!({
        "metadata": {"resourceVersion": crd.metadata.resource_version},
        "status": {"storedVersions": [storage]},
    });
    crds.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .kctx(|| format!("set status.storedVersions of CRD {name} to [{storage}]"))?;
    tracing::info!(crd = %name, from = ?stored, to = %storage, rewritten, "storage version migrated");
    Ok((
        Some(Migrated {
            crd: name.to_owned(),
            from: stored,
            to: storage,
            rewritten,
        }),
        Vec::new(),
    ))
}

/// [`migrate`] capo's own CRDs until it succeeds or `stop` completes, waiting longer after
/// each failure; the controllers run meanwhile (objects stored in an older version are
/// converted on every read, so nothing waits on the migration).
pub async fn run(client: Client, stop: impl std::future::Future<Output = ()>) {
    // A CRD with one version can only store that one: only the others can need a migration.
    let names = capo_api::crds::two_version_names().map(str::to_owned);
    let attempts = async {
        let mut wait = RETRY_FIRST;
        loop {
            let report = migrate(&client, &names).await;
            if report.failures.is_empty() {
                return;
            }
            for e in &report.failures {
                tracing::warn!(error = %e, retry_in_s = wait.as_secs(), "storage version migration incomplete; stored objects stay readable through conversion");
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(RETRY_MAX);
        }
    };
    tokio::select! {
        () = attempts => {}
        () = stop => {}
    }
}

/// The version marked `storage: true`.
fn storage_version(crd: &CustomResourceDefinition) -> Option<String> {
    crd.spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.clone())
}

/// Whether the API server's discovery publishes `storage` as the version it stores `crd`'s
/// kind in: its `storageVersionHash` is the first 8 bytes of the SHA-256 of
/// `<group>/<version>/<kind>`, base64-encoded (what the kube-storage-version-migrator checks).
async fn storage_in_effect(
    client: &Client,
    crd: &CustomResourceDefinition,
    storage: &str,
) -> Result<bool> {
    use base64::Engine as _;
    use sha2::Digest as _;
    let group_version = format!("{}/{storage}", crd.spec.group);
    let resources = client
        .list_api_group_resources(&group_version)
        .await
        .kctx(|| format!("discover {group_version}"))?;
    let digest = sha2::Sha256::digest(format!("{group_version}/{}", crd.spec.names.kind));
    let expected = base64::engine::general_purpose::STANDARD.encode(&digest[..8]);
    Ok(resources
        .resources
        .iter()
        .find(|r| r.name == crd.spec.names.plural)
        .and_then(|r| r.storage_version_hash.as_deref())
        .is_some_and(|hash| hash == expected))
}

/// Objects rewritten so far, and the errors of those that could not be.
#[derive(Default)]
struct Tally {
    rewritten: usize,
    failures: Vec<Error>,
}

impl Tally {
    /// Counts the outcome of one [`rewrite`].
    fn record(&mut self, outcome: Result<bool>) {
        match outcome {
            Ok(true) => self.rewritten += 1,
            Ok(false) => {}
            Err(e) => self.failures.push(e),
        }
    }
}

/// `resource` where the object `meta` lives (its namespace, if it has one).
fn api_for(
    client: &Client,
    meta: &kube::api::ObjectMeta,
    resource: &ApiResource,
) -> Api<DynamicObject> {
    match meta.namespace.as_deref() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

/// `crd`'s kind in `version`.
fn resource_in(crd: &CustomResourceDefinition, version: &str) -> ApiResource {
    ApiResource {
        group: crd.spec.group.clone(),
        version: version.to_owned(),
        api_version: format!("{}/{version}", crd.spec.group),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    }
}

/// Writes every object of `crd` back unchanged, read in `storage`: how many were rewritten,
/// and the errors of those that could not be. `stored` are the versions objects may be
/// stored in.
async fn rewrite_all(
    client: &Client,
    crd: &CustomResourceDefinition,
    storage: &str,
    stored: &[String],
) -> Result<(usize, Vec<Error>)> {
    let resource = resource_in(crd, storage);
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut params = ListParams::default().limit(PAGE);
    let mut tally = Tally::default();
    loop {
        // A list in the storage version converts every object not yet stored in it, so one
        // object without a form in that version fails the whole list. The objects are then
        // listed in an older version they are stored in (which converts only those already
        // rewritten, and that way round every object has a form) and taken one by one.
        let page = match all.list(&params).await {
            Ok(page) => page,
            Err(list_error) => {
                let served =
                    |v: &&String| crd.spec.versions.iter().any(|s| s.name == **v && s.served);
                let Some(older) = stored.iter().filter(|v| *v != storage).find(served) else {
                    return Err(Error::kube(
                        format!("list {} in {storage}", resource.plural),
                        list_error,
                    ));
                };
                rewrite_one_by_one(client, &resource, &resource_in(crd, older), &mut tally).await?;
                return Ok((tally.rewritten, tally.failures));
            }
        };
        for object in &page.items {
            tally.record(rewrite(client, &resource, object).await);
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok((tally.rewritten, tally.failures)),
        }
    }
}

/// [`rewrite_all`] one object at a time: the names listed in `older`, each object read by
/// name in `resource`'s (the storage) version.
async fn rewrite_one_by_one(
    client: &Client,
    resource: &ApiResource,
    older: &ApiResource,
    tally: &mut Tally,
) -> Result<()> {
    let all: Api<DynamicObject> = Api::all_with(client.clone(), older);
    let what = || format!("list {} in {}", older.plural, older.version);
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = all.list_metadata(&params).await.kctx(what)?;
        for meta in &page.items {
            let name = meta.metadata.name.clone().unwrap_or_default();
            match api_for(client, &meta.metadata, resource)
                .get_opt(&name)
                .await
            {
                Ok(Some(object)) => tally.record(rewrite(client, resource, &object).await),
                Ok(None) => {}
                Err(source) => tally.failures.push(Error::kube(
                    format!(
                        "read {} {} in {}",
                        resource.kind,
                        key(&meta.metadata),
                        resource.version
                    ),
                    source,
                )),
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(()),
        }
    }
}

/// `namespace/name`, or `name` for a cluster-scoped object.
fn key(meta: &kube::api::ObjectMeta) -> String {
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

/// Writes `object` back as read; false when it changed or went away meanwhile (its newer
/// state is stored in the storage version already).
async fn rewrite(client: &Client, resource: &ApiResource, object: &DynamicObject) -> Result<bool> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let api = api_for(client, &object.metadata, resource);
    match api.replace(&name, &PostParams::default(), object).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(false),
        Err(source) => Err(Error::kube(
            format!(
                "rewrite {} {} in {}",
                resource.kind,
                key(&object.metadata),
                resource.version
            ),
            source,
        )),
    }
}

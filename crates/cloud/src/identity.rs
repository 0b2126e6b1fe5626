//! Keystone application credentials: one per cluster (BA/ACP extension), handed to the
//! cluster's nodes so they never see the identity the controller uses.
//!
//! Requests follow the Identity API v3 reference (`/v3/users/{user_id}/application_credentials`)
//! and go to the session's auth URL; the user is the session token's user (application
//! credentials belong to a user, on the project the token is scoped to).
//!
//! ## Adoption, and why an existing credential may be replaced
//! The credential's name is deterministic ([`app_credential_name`]), so a crash between the
//! create and the caller recording it is healed by a list by name. Keystone returns the
//! secret **only in the create reply**: a credential found by name whose secret the caller
//! does not hold (the Kubernetes Secret was never written, or was lost) is useless, so it is
//! deleted and a new one created. The caller passes the credential it holds ([`Held`]); that
//! one is kept as long as Keystone still has it.
//!
//! Application credentials carry no tags; the name ends with the first characters of the
//! cluster's ownership ID, so two management clusters sharing a Keystone user never adopt
//! (or delete) each other's credentials for clusters of the same namespace and name.

use capo_openstack::credentials::Secret;
use capo_openstack::{ErrorKind, Request, Service, Session};
use serde::Deserialize;
use serde_json::json;

use crate::error::{Context, Error, Result};

/// Keystone's limit on an application credential's name.
const MAX_NAME: usize = 255;

/// Characters of the ownership ID that end the name.
const OWNER_ID_CHARS: usize = 8;

const S: Service = Service::Identity;

/// An application credential as Keystone lists it (never with its secret).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AppCredential {
    /// Keystone ID.
    pub id: String,
    /// Name (unique per user).
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Project the credential is scoped to.
    #[serde(default)]
    pub project_id: Option<String>,
}

/// A credential whose secret the caller holds: its ID and secret. Debug never shows the secret.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Held {
    /// Keystone ID.
    pub id: String,
    /// The secret Keystone returned when it created the credential.
    pub secret: Secret,
}

/// What [`ensure_app_credential`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ensured {
    /// The credential to use (the held one, or a new one).
    pub credential: Held,
    /// True when it was created by this call (the caller must store the secret now: Keystone
    /// will not return it again).
    pub created: bool,
    /// Credentials of our name that were deleted because their secret was not held.
    pub replaced: Vec<String>,
}

/// The deterministic name: `capo-<namespace>-<cluster>-<first 8 characters of the ownership
/// ID>`, the middle shortened so the whole fits Keystone's 255 characters.
pub fn app_credential_name(namespace: &str, cluster: &str, owner_id: &str) -> String {
    let suffix: String = owner_id.chars().take(OWNER_ID_CHARS).collect();
    let mut base = format!("capo-{namespace}-{cluster}");
    let room = MAX_NAME.saturating_sub(suffix.len() + 1);
    if base.len() > room {
        let mut end = room;
        while !base.is_char_boundary(end) {
            end -= 1;
        }
        base.truncate(end);
    }
    if suffix.is_empty() {
        base
    } else {
        format!("{base}-{suffix}")
    }
}

/// POST /v3/users/{user}/application_credentials (Keystone generates the secret; no roles:
/// the credential gets the token's roles on the token's project; no expiry).
pub fn create_request(user_id: &str, name: &str, description: &str) -> Request {
    Request::post(
        S,
        format!("users/{user_id}/application_credentials"),
        "application_credential_create",
        json!({"application_credential": {"name": name, "description": description}}),
    )
}

/// GET /v3/users/{user}/application_credentials?name=... (the filter Keystone documents; the
/// reply is filtered again here, so a server ignoring it is harmless).
pub fn list_request(user_id: &str, name: &str) -> Request {
    Request::get(
        S,
        format!("users/{user_id}/application_credentials"),
        "application_credential_list",
    )
    .with_query("name", name)
}

/// GET /v3/users/{user}/application_credentials/{id}.
pub fn get_request(user_id: &str, id: &str) -> Request {
    Request::get(
        S,
        format!("users/{user_id}/application_credentials/{id}"),
        "application_credential_get",
    )
}

/// DELETE /v3/users/{user}/application_credentials/{id}.
pub fn delete_request(user_id: &str, id: &str) -> Request {
    Request::delete(
        S,
        format!("users/{user_id}/application_credentials/{id}"),
        "application_credential_delete",
    )
}

/// What the session's token says about where the cluster lives: project, region and the
/// catalog's service hosts (no request while the token is fresh).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenScope {
    /// Keystone project ID.
    pub project_id: String,
    /// Project name, when Keystone returned one.
    pub project_name: Option<String>,
    /// Name of the project's domain, when Keystone returned one.
    pub project_domain_name: Option<String>,
    /// Service hosts by catalog type, plus `auth` (see [`Session::endpoint_hosts`]).
    pub endpoint_hosts: std::collections::BTreeMap<String, String>,
    /// The configured region, else the catalog's only one.
    pub region: Option<String>,
}

/// Read [`TokenScope`] from the session.
pub async fn token_scope(s: &Session) -> Result<TokenScope> {
    let project = || "read the token's project".to_owned();
    Ok(TokenScope {
        project_id: s.project_id().await.ctx(project)?,
        project_name: s.project_name().await.ctx(project)?,
        project_domain_name: s.project_domain_name().await.ctx(project)?,
        endpoint_hosts: s
            .endpoint_hosts()
            .await
            .ctx(|| "read the catalog".to_owned())?,
        region: region(s).await?,
    })
}

/// The configured region, else the catalog's only region for the session's interface.
pub async fn region(s: &Session) -> Result<Option<String>> {
    s.effective_region()
        .await
        .ctx(|| "read the catalog".to_owned())
}

async fn user(s: &Session) -> Result<String> {
    s.user_id().await.ctx(|| "read the token's user".to_owned())
}

/// Create credential `name`; the reply's secret is returned as a [`Secret`]. A reply that
/// cannot be decoded is reported without serde's message (it could quote the secret).
pub async fn create_app_credential(s: &Session, name: &str, description: &str) -> Result<Held> {
    #[derive(Deserialize)]
    struct Reply {
        application_credential: Held,
    }
    let user = user(s).await?;
    let op = || format!("create application credential {name}");
    let reply = s
        .send(&create_request(&user, name, description))
        .await
        .ctx(op)?;
    let decoded: Reply = serde_json::from_slice(&reply.body).map_err(|_| {
        Error::api(
            op(),
            capo_openstack::Error::Decode {
                request: "application_credential_create".into(),
                message: "no application_credential with id and secret in the reply".into(),
            },
        )
    })?;
    Ok(decoded.application_credential)
}

/// The credentials named exactly `name` of the session's user.
pub async fn list_app_credentials_by_name(s: &Session, name: &str) -> Result<Vec<AppCredential>> {
    let user = user(s).await?;
    let all: Vec<AppCredential> = s
        .list(&list_request(&user, name), "application_credentials")
        .await
        .ctx(|| format!("list application credentials named {name}"))?;
    Ok(all.into_iter().filter(|c| c.name == name).collect())
}

/// The credential `id` of the session's user; None when Keystone has none.
pub async fn get_app_credential(s: &Session, id: &str) -> Result<Option<AppCredential>> {
    let user = user(s).await?;
    s.fetch(&get_request(&user, id), "application_credential")
        .await
        .ctx_opt(|| format!("get application credential {id}"))
}

/// Delete credential `id` of the session's user; absent is success.
pub async fn delete_app_credential(s: &Session, id: &str) -> Result<()> {
    let user = user(s).await?;
    s.send(&delete_request(&user, id))
        .await
        .ctx_opt(|| format!("delete application credential {id}"))?;
    Ok(())
}

/// Make sure the caller has a usable credential named `name`: one list by name when the held
/// credential still exists; otherwise every credential of that name is deleted (its secret is
/// lost, see the module documentation) and a new one is created. Failing to delete a leftover
/// while the held credential exists is logged, not returned.
pub async fn ensure_app_credential(
    s: &Session,
    name: &str,
    description: &str,
    held: Option<Held>,
) -> Result<Ensured> {
    let found = list_app_credentials_by_name(s, name).await?;
    let keep = held.filter(|h| found.iter().any(|c| c.id == h.id));
    let mut replaced = Vec::new();
    for stale in found
        .iter()
        .filter(|c| keep.as_ref().is_none_or(|k| k.id != c.id))
    {
        tracing::info!(
            app_credential = %stale.id,
            name,
            "deleting an application credential whose secret is not held (Keystone returns it only at creation)"
        );
        match delete_app_credential(s, &stale.id).await {
            Ok(()) => replaced.push(stale.id.clone()),
            // A leftover must not cost the caller the credential it holds: retried next time.
            Err(e) if keep.is_some() => {
                tracing::warn!(error = %e, "could not delete a leftover application credential");
            }
            Err(e) => return Err(e),
        }
    }
    if let Some(credential) = keep {
        return Ok(Ensured {
            credential,
            created: false,
            replaced,
        });
    }
    let credential = create_app_credential(s, name, description).await?;
    tracing::info!(app_credential = %credential.id, name, "created application credential");
    Ok(Ensured {
        credential,
        created: true,
        replaced,
    })
}

/// Delete every credential named `name` and the one recorded as `recorded_id` (absent is
/// success). Returns the IDs deleted.
pub async fn delete_app_credentials(
    s: &Session,
    name: &str,
    recorded_id: Option<&str>,
) -> Result<Vec<String>> {
    let mut ids: Vec<String> = list_app_credentials_by_name(s, name)
        .await?
        .into_iter()
        .map(|c| c.id)
        .collect();
    if let Some(id) = recorded_id.filter(|id| !id.is_empty())
        && !ids.iter().any(|i| i == id)
    {
        ids.push(id.to_owned());
    }
    for id in &ids {
        delete_app_credential(s, id).await?;
    }
    Ok(ids)
}

/// True when Keystone refused the call (403): e.g. a restricted application credential may
/// not create or delete application credentials, or the user's role does not allow it.
pub fn is_forbidden(e: &Error) -> bool {
    matches!(e, Error::OpenStack { source, .. } if source.kind() == Some(&ErrorKind::Forbidden))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_shapes_follow_the_api_reference() {
        let r = create_request("u1", "capo-ns-c-12345678", "Created by x");
        assert_eq!(r.service, Service::Identity);
        assert_eq!(r.method.as_str(), "POST");
        assert_eq!(r.path, "users/u1/application_credentials");
        assert_eq!(
            r.body,
            Some(
                json!({"application_credential": {"name": "capo-ns-c-12345678", "description": "Created by x"}})
            )
        );
        assert!(!r.is_idempotent());
        let l = list_request("u1", "n");
        assert_eq!(l.path, "users/u1/application_credentials");
        assert_eq!(l.query, vec![("name".to_owned(), "n".to_owned())]);
        assert_eq!(
            get_request("u1", "a1").path,
            "users/u1/application_credentials/a1"
        );
        let d = delete_request("u1", "a1");
        assert_eq!(d.method.as_str(), "DELETE");
        assert_eq!(d.path, "users/u1/application_credentials/a1");
    }

    #[test]
    fn names_are_deterministic_and_fit() {
        let uid = "0f8fad5b-d9cb-469f-a165-70867728950e";
        assert_eq!(app_credential_name("ns", "c1", uid), "capo-ns-c1-0f8fad5b");
        let long = "x".repeat(300);
        let n = app_credential_name("ns", &long, uid);
        assert_eq!(n.len(), MAX_NAME);
        assert!(n.ends_with("-0f8fad5b"));
        assert_eq!(n, app_credential_name("ns", &long, uid));
        assert_eq!(app_credential_name("ns", "c1", ""), "capo-ns-c1");
    }

    #[test]
    fn held_debug_hides_the_secret() {
        let h: Held =
            serde_json::from_value(json!({"id": "a1", "secret": "s3cr3t-value"})).unwrap();
        assert_eq!(h.secret.expose(), "s3cr3t-value");
        assert!(!format!("{h:?}").contains("s3cr3t"));
    }

    async fn sim_session(cloud: &str) -> (capo_sim::Sim, capo_openstack::SessionCache, Session) {
        let sim = capo_sim::Sim::start(capo_sim::SimConfig::default())
            .await
            .unwrap();
        let cache = capo_openstack::SessionCache::new(
            capo_openstack::ClientConfig::default(),
            capo_openstack::ApiMetrics::unregistered(),
        );
        let creds =
            capo_openstack::Credentials::from_clouds_yaml(&sim.clouds_yaml(), cloud, None, None)
                .unwrap();
        let s = cache.session(&creds).unwrap();
        (sim, cache, s)
    }

    /// Create, keep what is held, replace what is not (the crash between create and the
    /// Secret write), delete; the 403 of a restricted application credential.
    #[tokio::test]
    async fn ensure_adopts_replaces_and_deletes_against_the_simulator() {
        let (_sim, _cache, s) = sim_session("capo-sim").await;
        let name = "capo-ns-c1-0f8fad5b";
        let first = ensure_app_credential(&s, name, "d", None).await.unwrap();
        assert!(first.created && first.replaced.is_empty());
        let again = ensure_app_credential(&s, name, "d", Some(first.credential.clone()))
            .await
            .unwrap();
        assert!(!again.created);
        assert_eq!(again.credential, first.credential);
        // The secret was never stored: the credential of our name is useless, so replaced.
        let healed = ensure_app_credential(&s, name, "d", None).await.unwrap();
        assert!(healed.created);
        assert_eq!(healed.replaced, vec![first.credential.id.clone()]);
        assert!(
            get_app_credential(&s, &first.credential.id)
                .await
                .unwrap()
                .is_none()
        );
        let listed = list_app_credentials_by_name(&s, name).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].description.as_deref(), Some("d"));
        let deleted = delete_app_credentials(&s, name, Some(&first.credential.id))
            .await
            .unwrap();
        assert_eq!(deleted.len(), 2, "{deleted:?}");
        assert!(
            list_app_credentials_by_name(&s, name)
                .await
                .unwrap()
                .is_empty()
        );
        delete_app_credential(&s, &healed.credential.id)
            .await
            .unwrap();

        let (_sim2, _cache2, restricted) = sim_session(capo_sim::clouds::APPCRED).await;
        let e = ensure_app_credential(&restricted, name, "d", None)
            .await
            .unwrap_err();
        assert!(is_forbidden(&e), "{e}");
    }
}

//! The cluster's Keystone application credential (unless
//! `spec.extensions.openStack.appCredential: false`): created with the cluster's identity,
//! stored in the Opaque Secret `<cluster>-app-credential` (owned by the OpenStackCluster) as a
//! CAPO identity Secret: key `clouds.yaml` with the cloud `<namespace>-<cluster>`, key
//! `cacert` with the identity's CA when it has one. Its name and Keystone ID go to
//! `status.extensions.openStack.appCredential.{ref,id}`, where the Ansible bootstrap provider
//! finds it (it writes `/opt/auth-opts` and `/opt/cloud_config` on control-plane nodes).
//!
//! Keystone returns a credential's secret only when it creates it, so the Secret is the only
//! copy: a credential found by name whose secret the Secret does not hold is replaced (see
//! [`capo_cloud::identity`]). The secret stays a [`Secret`] (redacted Debug) until it is
//! written into the Kubernetes Secret; it never reaches logs, events, status or errors.
//!
//! When Keystone refuses the credential (403) and the cluster's identity is itself an
//! application credential (Keystone's default, *restricted*, may not create others), the
//! Secret carries that identity's own credential instead, unless
//! `spec.extensions.openStack.shareIdentityCredential` is false: status says
//! `appCredential.shared: true` (and no `id`: capo made nothing in Keystone, so deleting the
//! cluster deletes only the Secret, never the identity's credential), `ExtensionsReady` is True
//! with reason [`APP_CREDENTIAL_SHARED`], and an event says so when the Secret is written. Every
//! full reconcile tries the per-cluster credential again first, so an identity that may create
//! one later gets one. The cluster's steady fingerprint includes the identity's credentials
//! ([`capo_openstack::Credentials::digest`]), so an edited identity Secret is republished at the
//! next sync. Otherwise (sharing off, or a password identity that policy forbids) the cluster
//! still becomes Ready and `ExtensionsReady` is False, saying why and how to fix it
//! ([`report`]).

use std::collections::BTreeMap;

use capo_api::extensions::AppCredentialStatus;
use capo_api::names::app_credential_secret_name;
use capo_cloud::identity::{self, Held};
use capo_openstack::Session;
use capo_openstack::credentials::{AuthMethod, CACERT_KEY, CLOUDS_YAML_KEY, Credentials, Secret};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::Api;
use kube::runtime::events::EventType;

use super::super::scope::Scope;
use super::shared::{EXTENSIONS_READY, apply_owned_secret, cluster_name, spec};
use crate::conditions::{self, State};
use crate::error::{KubeContext, Result};

/// Reason of `ExtensionsReady` when Keystone refused the application credential.
pub const APP_CREDENTIAL_FORBIDDEN: &str = "AppCredentialForbidden";

/// Reason of a True `ExtensionsReady` (and of the event) when the Secret carries the identity's
/// own application credential.
pub const APP_CREDENTIAL_SHARED: &str = "AppCredentialShared";

/// Cloud entry name the bootstrap provider looks up: `<namespace>-<Cluster name>`.
pub fn cloud_name(namespace: &str, cluster: &str) -> String {
    format!("{namespace}-{cluster}")
}

/// Everything the rendered `clouds.yaml` holds. Debug never shows the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudConfig {
    /// Entry name, `<namespace>-<cluster>`.
    pub cloud: String,
    /// Keystone auth URL (the one the cluster's identity uses).
    pub auth_url: String,
    /// Application credential ID.
    pub id: String,
    /// Application credential secret.
    pub secret: Secret,
    /// Region of the cluster's identity.
    pub region: Option<String>,
    /// Endpoint interface of the cluster's identity.
    pub interface: String,
    /// `verify: false` of the cluster's identity, passed on (never turned off here).
    pub insecure: bool,
}

/// A YAML scalar: a JSON string is a valid YAML double-quoted scalar, whatever it holds.
fn scalar(v: &str) -> String {
    serde_json::Value::from(v).to_string()
}

/// The `clouds.yaml` document (deterministic, so the Secret is rewritten only on change).
pub fn render_clouds_yaml(c: &CloudConfig) -> Secret {
    let mut out = format!(
        "clouds:\n  {}:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {}\n      application_credential_id: {}\n      application_credential_secret: {}\n",
        scalar(&c.cloud),
        scalar(&c.auth_url),
        scalar(&c.id),
        scalar(c.secret.expose()),
    );
    if let Some(region) = &c.region {
        out.push_str(&format!("    region_name: {}\n", scalar(region)));
    }
    out.push_str(&format!(
        "    interface: {}\n    identity_api_version: 3\n",
        scalar(&c.interface)
    ));
    if c.insecure {
        out.push_str("    verify: false\n");
    }
    Secret::new(out)
}

fn wanted(scope: &Scope<'_>) -> bool {
    spec(scope.obj)
        .is_some_and(|e| e.open_stack.as_ref().and_then(|o| o.app_credential) != Some(false))
}

/// The identity's own application credential (ID and secret) when Keystone refused one for the
/// cluster and sharing is not turned off. None for a password identity, and for an application
/// credential named by name and user rather than ID (the nodes' consumer reads an ID).
fn shareable(scope: &Scope<'_>, s: &Session) -> Option<(String, Secret)> {
    let creds = s.credentials();
    if sharing_off(scope) || creds.method != AuthMethod::ApplicationCredential {
        return None;
    }
    let auth = &creds.entry.auth;
    Some((
        auth.application_credential_id.clone()?,
        auth.application_credential_secret.clone()?,
    ))
}

fn sharing_off(scope: &Scope<'_>) -> bool {
    spec(scope.obj)
        .and_then(|e| e.open_stack.as_ref())
        .and_then(|o| o.share_identity_credential)
        == Some(false)
}

fn is_shared(recorded: Option<&AppCredentialStatus>) -> bool {
    recorded.and_then(|r| r.shared) == Some(true)
}

fn recorded<'a>(scope: &'a Scope<'_>) -> Option<&'a AppCredentialStatus> {
    scope
        .status
        .extensions
        .as_ref()
        .and_then(|e| e.open_stack.as_ref())
        .and_then(|o| o.app_credential.as_ref())
}

fn set_recorded(scope: &mut Scope<'_>, value: Option<AppCredentialStatus>) {
    let ext = scope.status.extensions.get_or_insert_with(Default::default);
    if value.is_none() && ext.open_stack.is_none() {
        return;
    }
    ext.open_stack
        .get_or_insert_with(Default::default)
        .app_credential = value;
}

/// Keystone name of the cluster's credential.
fn keystone_name(scope: &Scope<'_>) -> String {
    identity::app_credential_name(
        &scope.owner.namespace,
        &cluster_name(scope.obj),
        &scope.owner.uid,
    )
}

/// The credential the Secret holds (None when absent, unreadable or for another cloud name:
/// then a new credential is made and the Secret rewritten).
fn held(secret: &KubeSecret, cloud: &str) -> Option<Held> {
    let data: BTreeMap<String, Vec<u8>> = secret
        .data
        .clone()?
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    let creds = Credentials::from_secret("-", "-", "-", &data, cloud, None).ok()?;
    let auth = creds.entry.auth;
    Some(Held {
        id: auth.application_credential_id?,
        secret: auth.application_credential_secret?,
    })
}

/// Ensure the credential and its Secret; record `{ref, id}` in status. A 403 from Keystone is
/// reported by [`report`], not returned: the rest of the cluster does not depend on it.
pub(super) async fn reconcile(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    if !wanted(scope) {
        if recorded(scope).is_some() {
            cleanup(scope, s).await?;
        }
        return Ok(());
    }
    let name = app_credential_secret_name(&scope.owner.name);
    let cloud = cloud_name(&scope.owner.namespace, &cluster_name(scope.obj));
    let api: Api<KubeSecret> =
        Api::namespaced(scope.ctx.shared.client.clone(), &scope.owner.namespace);
    let current = api
        .get_opt(&name)
        .await
        .kctx(|| format!("get Secret {name}"))?;
    let held = current.as_ref().and_then(|c| held(c, &cloud));
    let description = format!(
        "Created by cluster-api-provider-openstack cluster {}",
        cluster_name(scope.obj)
    );
    let ensured = match identity::ensure_app_credential(
        s,
        &keystone_name(scope),
        &description,
        held,
    )
    .await
    {
        Ok(e) => e,
        Err(e) if identity::is_forbidden(&e) => {
            if let Some((id, secret)) = shareable(scope, s) {
                let held = Held { id, secret };
                let shared = held.id.clone();
                if publish(scope, s, &api, current.as_ref(), &name, cloud, held, true).await? {
                    let note = format!(
                        "Keystone refused an application credential for the cluster ({e}); Secret {name} carries the identity's own application credential {shared}, shared with capo and every cluster of that identity (spec.extensions.openStack.shareIdentityCredential: false publishes none)",
                    );
                    scope
                        .event(
                            EventType::Normal,
                            APP_CREDENTIAL_SHARED,
                            "Reconcile",
                            Some(note),
                        )
                        .await;
                }
                return Ok(());
            }
            // Keystone's message names no secret; the event tells the operator once per
            // full reconcile, ExtensionsReady keeps saying it.
            tracing::warn!(error = %e, "Keystone refused the cluster's application credential");
            scope
                .event(
                    EventType::Warning,
                    APP_CREDENTIAL_FORBIDDEN,
                    "Reconcile",
                    Some(e.to_string()),
                )
                .await;
            // Whatever the Secret holds may be dead by now: publish nothing (the Secret
            // itself goes with the cluster).
            set_recorded(scope, None);
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    publish(
        scope,
        s,
        &api,
        current.as_ref(),
        &name,
        cloud,
        ensured.credential,
        false,
    )
    .await?;
    Ok(())
}

/// Write credential `held` for the nodes into Secret `name` (the clouds.yaml entry `cloud` with
/// the identity's URL, region, interface and TLS setting) and record it in status: with its ID
/// when capo made it, as `shared` (no ID: capo never deletes it) when it is the identity's own.
/// True when the Secret was (re)written.
#[allow(clippy::too_many_arguments)]
async fn publish(
    scope: &mut Scope<'_>,
    s: &Session,
    api: &Api<KubeSecret>,
    current: Option<&KubeSecret>,
    name: &str,
    cloud: String,
    held: Held,
    shared: bool,
) -> Result<bool> {
    let creds = s.credentials();
    let config = CloudConfig {
        cloud,
        auth_url: creds.auth_url().to_owned(),
        id: held.id,
        secret: held.secret,
        // The consumer refuses a clouds.yaml without region_name: the catalog's region when
        // the identity names none.
        region: identity::region(s).await?,
        interface: creds.interface().to_owned(),
        insecure: creds.entry.verify == Some(false),
    };
    let written = write_secret(scope, api, current, name, &config, creds).await?;
    set_recorded(
        scope,
        Some(AppCredentialStatus {
            secret_ref: Some(name.to_owned()),
            id: (!shared).then_some(config.id),
            shared: shared.then_some(true),
        }),
    );
    Ok(written)
}

/// Write the Secret when its bytes differ (the credential is new, or the identity's URL,
/// region or CA changed); true when it was written.
async fn write_secret(
    scope: &Scope<'_>,
    api: &Api<KubeSecret>,
    current: Option<&KubeSecret>,
    name: &str,
    config: &CloudConfig,
    creds: &Credentials,
) -> Result<bool> {
    let clouds_yaml = render_clouds_yaml(config);
    let mut data = BTreeMap::from([(
        CLOUDS_YAML_KEY.to_owned(),
        ByteString(clouds_yaml.expose().as_bytes().to_vec()),
    )]);
    if let Some(ca) = &creds.ca_pem {
        data.insert(CACERT_KEY.to_owned(), ByteString(ca.clone()));
    }
    if current.and_then(|c| c.data.as_ref()) == Some(&data) {
        return Ok(false);
    }
    apply_owned_secret(scope, api, name, data).await?;
    tracing::info!(secret = %name, app_credential = %config.id, "application credential Secret written");
    Ok(true)
}

/// After the other extension steps set `ExtensionsReady`: a shared credential is noted on a
/// True condition; when the credential is wanted but none is recorded (Keystone refused it),
/// say so, naming the field and the fixes.
pub(super) fn report(scope: &mut Scope<'_>, s: &Session) {
    if !wanted(scope) || recorded(scope).and_then(|r| r.id.as_ref()).is_some() {
        return;
    }
    if is_shared(recorded(scope)) {
        if conditions::is_true(&scope.status.conditions, EXTENSIONS_READY) {
            let note = "Keystone refused an application credential for the cluster (the identity is a restricted application credential): the nodes get the identity's own, shared with capo and every cluster of that identity; spec.extensions.openStack.shareIdentityCredential: false publishes none";
            scope.set(EXTENSIONS_READY, State::noted(APP_CREDENTIAL_SHARED, note));
        }
        return;
    }
    let why = if s.credentials().method == AuthMethod::ApplicationCredential {
        "Keystone refused to create the cluster's application credential: the cluster's identity is itself an application credential, and only an unrestricted one may create others"
    } else {
        "Keystone refused to create the cluster's application credential (403) for the identity's user"
    };
    let fix = if s.credentials().method != AuthMethod::ApplicationCredential {
        "set spec.extensions.openStack.appCredential to false (nodes then get no OpenStack credentials), or use an identity that may create application credentials (a user, or an unrestricted application credential)"
    } else if !sharing_off(scope) {
        "name the identity's application credential by application_credential_id in its clouds.yaml (the nodes then get it, shared), set spec.extensions.openStack.appCredential to false (nodes then get no OpenStack credentials), or use an identity that may create application credentials (a user, or an unrestricted application credential)"
    } else {
        "remove spec.extensions.openStack.shareIdentityCredential: false (the nodes then get the identity's own credential), set spec.extensions.openStack.appCredential to false (nodes then get no OpenStack credentials), or use an identity that may create application credentials (a user, or an unrestricted application credential)"
    };
    let mut message = format!("{why}; {fix}");
    // This needs the operator, the other unresolved variables usually only time: it leads.
    if let Some(other) = conditions::get(&scope.status.conditions, EXTENSIONS_READY)
        .filter(|c| c.status == "False")
        .and_then(|c| c.message.as_deref())
    {
        message = format!("{message}; {other}");
    }
    let state = State::warning(APP_CREDENTIAL_FORBIDDEN, message);
    scope.set(EXTENSIONS_READY, state);
}

/// Delete the credential (all of our name, and the recorded one) and its Secret. A 403 (the
/// identity changed to a restricted application credential) leaves the credential behind
/// with a Warning event naming its ID, rather than blocking the cluster's deletion forever.
pub(super) async fn cleanup(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    let recorded_id = recorded(scope).and_then(|r| r.id.clone());
    if recorded_id.is_some() || wanted(scope) {
        match identity::delete_app_credentials(s, &keystone_name(scope), recorded_id.as_deref())
            .await
        {
            Ok(_) => {}
            Err(e) if identity::is_forbidden(&e) => {
                let note = format!(
                    "could not delete the cluster's application credential ({e}); delete it with an identity allowed to"
                );
                tracing::warn!(%note);
                scope
                    .event(
                        EventType::Warning,
                        APP_CREDENTIAL_FORBIDDEN,
                        "Delete",
                        Some(note),
                    )
                    .await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    super::ssh::delete_secret(scope, &app_credential_secret_name(&scope.owner.name)).await?;
    set_recorded(scope, None);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> CloudConfig {
        CloudConfig {
            cloud: "ns1-c1".into(),
            auth_url: "https://keystone.example:5000/v3".into(),
            id: "ac123".into(),
            secret: Secret::new("very-secret-value"),
            region: Some("RegionOne".into()),
            interface: "public".into(),
            insecure: false,
        }
    }

    #[test]
    fn clouds_yaml_is_what_the_bootstrap_provider_and_capo_read() {
        let rendered = render_clouds_yaml(&config());
        assert_eq!(
            rendered.expose(),
            "clouds:\n  \"ns1-c1\":\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: \"https://keystone.example:5000/v3\"\n      application_credential_id: \"ac123\"\n      application_credential_secret: \"very-secret-value\"\n    region_name: \"RegionOne\"\n    interface: \"public\"\n    identity_api_version: 3\n"
        );
        // capo's own parser (an identityRef could use the Secret as is) reads it back.
        let creds = Credentials::from_clouds_yaml(rendered.expose(), "ns1-c1", None, None).unwrap();
        assert_eq!(creds.method, AuthMethod::ApplicationCredential);
        assert_eq!(creds.region.as_deref(), Some("RegionOne"));
        assert_eq!(
            creds.entry.auth.application_credential_id.as_deref(),
            Some("ac123")
        );
        assert_eq!(
            creds
                .entry
                .auth
                .application_credential_secret
                .as_ref()
                .map(Secret::expose),
            Some("very-secret-value")
        );
        let data = BTreeMap::from([(
            CLOUDS_YAML_KEY.to_owned(),
            ByteString(rendered.expose().as_bytes().to_vec()),
        )]);
        let k = KubeSecret {
            data: Some(data),
            ..Default::default()
        };
        assert_eq!(held(&k, "ns1-c1").map(|h| h.id), Some("ac123".into()));
        assert_eq!(held(&k, "other"), None);
    }

    #[test]
    fn awkward_values_are_quoted_and_insecure_is_passed_on() {
        let mut c = config();
        c.secret = Secret::new("a: b # \"c\"\n");
        c.region = None;
        c.insecure = true;
        let rendered = render_clouds_yaml(&c);
        let creds = Credentials::from_clouds_yaml(rendered.expose(), "ns1-c1", None, None).unwrap();
        assert_eq!(
            creds
                .entry
                .auth
                .application_credential_secret
                .as_ref()
                .map(Secret::expose),
            Some("a: b # \"c\"\n")
        );
        assert_eq!(creds.entry.verify, Some(false));
        assert_eq!(creds.region, None);
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let c = config();
        let rendered = render_clouds_yaml(&c);
        for text in [format!("{c:?}"), format!("{rendered:?}")] {
            assert!(!text.contains("very-secret-value"), "{text}");
        }
    }

    #[test]
    fn names() {
        assert_eq!(app_credential_secret_name("c1"), "c1-app-credential");
        assert_eq!(cloud_name("ns1", "c1"), "ns1-c1");
    }
}

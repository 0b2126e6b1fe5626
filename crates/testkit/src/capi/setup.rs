//! What a [`TestEnv`](crate::TestEnv) prepares for the Cluster API managers before they run:
//! their webhook ports and certificate, their CRDs with conversion webhooks, and (once they
//! start) their webhook configurations rewritten to reach them on `127.0.0.1`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde::Deserialize;

use super::{CapiDir, Provider};
use crate::FIELD_MANAGER;
use crate::certs::ServingCerts;
use crate::crds;
use crate::error::{Error, Result};
use crate::process::stable_port;

/// The `conversionReviewVersions` the managers' `/convert` endpoints accept.
const CONVERSION_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The Cluster API side of a [`TestEnv`](crate::TestEnv) started with a build: where the
/// managers will serve their webhooks and with which certificate.
#[derive(Debug)]
pub(crate) struct Endpoints {
    /// The build whose CRDs were installed.
    pub dir: CapiDir,
    /// The webhook serving certificate shared by the three managers.
    pub certs: ServingCerts,
    /// Webhook ports, indexed by [`Provider::index`].
    ports: [u16; 3],
    /// Set while a [`ClusterApi`](super::ClusterApi) runs on these ports.
    pub running: Arc<AtomicBool>,
}

impl Endpoints {
    /// Picks the webhook ports and writes the certificate into `<env_dir>/capi-webhook-certs`.
    pub fn prepare(env_dir: &Path, dir: CapiDir) -> Result<Self> {
        let certs = ServingCerts::generate(&env_dir.join("capi-webhook-certs"), "capi-webhook")?;
        let ports = [stable_port()?, stable_port()?, stable_port()?];
        Ok(Self {
            dir,
            certs,
            ports,
            running: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The webhook port of a provider's manager.
    pub fn webhook_port(&self, provider: Provider) -> u16 {
        self.ports[provider.index()]
    }

    /// The build's CRDs, each multi-version one converting through its owner's webhook.
    pub fn crds(&self) -> Result<Vec<CustomResourceDefinition>> {
        let mut all = Vec::new();
        for provider in Provider::ALL {
            let dir = self.dir.crd_dir(provider);
            let files = crds::yaml_files(&dir)?;
            if files.is_empty() {
                return Err(Error::Incomplete {
                    dir: self.dir.root.clone(),
                    missing: format!("CRD files in {}", dir.display()),
                });
            }
            for mut crd in crds::load(&files)? {
                let owner = Provider::for_group(&crd.spec.group).unwrap_or(provider);
                add_labels(&mut crd, owner);
                set_conversion(&mut crd, self.webhook_port(owner), &self.certs.ca_pem);
                all.push(crd);
            }
        }
        Ok(all)
    }

    /// Installs the webhook configurations of the three managers (server-side apply); returns
    /// their names.
    pub async fn install_webhooks(&self, client: &Client) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for provider in Provider::ALL {
            names.extend(
                install_webhook_manifests(
                    client,
                    &self.dir.webhook_manifests(provider),
                    &format!("capi-{}", provider.config_name()),
                    self.webhook_port(provider),
                    &self.certs.ca_pem,
                )
                .await?,
            );
        }
        Ok(names)
    }
}

/// Installs the webhook configurations of a controller-runtime style `manifests.yaml` (the
/// Cluster API providers' or capo's own `config/webhook/manifests.yaml`), each renamed
/// `<prefix>-<name>` and calling `https://127.0.0.1:<port><service path>` with `ca_pem` as
/// its `caBundle`; returns their names.
pub async fn install_webhook_manifests(
    client: &Client,
    manifests: &Path,
    prefix: &str,
    port: u16,
    ca_pem: &str,
) -> Result<Vec<String>> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let text = std::fs::read_to_string(manifests)
        .map_err(Error::io(format!("reading {}", manifests.display())))?;
    let mut names = Vec::new();
    for config in parse_webhooks(&text, &manifests.display().to_string())? {
        let (name, result) = match config.rewritten(prefix, port, ca_pem) {
            WebhookConfig::Mutating(c) => {
                let name = c.metadata.name.clone().unwrap_or_default();
                let res = mutating.patch(&name, &params, &Patch::Apply(&c)).await;
                (name, res.map(drop))
            }
            WebhookConfig::Validating(c) => {
                let name = c.metadata.name.clone().unwrap_or_default();
                let res = validating.patch(&name, &params, &Patch::Apply(&c)).await;
                (name, res.map(drop))
            }
        };
        result.map_err(Error::kube(format!(
            "installing webhook configuration {name}"
        )))?;
        names.push(name);
    }
    Ok(names)
}

/// The labels Cluster API's kustomizations put on its CRDs (the build holds the plain
/// `crd/bases` files): `cluster.x-k8s.io/provider` on all, and on the bootstrap and control
/// plane CRDs the contract labels `cluster.x-k8s.io/v1beta1: v1beta1` and
/// `cluster.x-k8s.io/v1beta2: v1beta2`, through which the core manager finds which version of a
/// provider kind to use (converting a `v1beta1` Cluster's `controlPlaneRef` needs them).
pub(crate) fn add_labels(crd: &mut CustomResourceDefinition, owner: Provider) {
    let labels = crd.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(
        "cluster.x-k8s.io/provider".to_owned(),
        owner.provider_label().to_owned(),
    );
    if owner != Provider::Core {
        for contract in ["v1beta1", "v1beta2"] {
            labels.insert(format!("cluster.x-k8s.io/{contract}"), contract.to_owned());
        }
    }
}

/// Converts a multi-version CRD through `https://127.0.0.1:<port>/convert`; a CRD with one
/// version gets no conversion (a leftover service reference could never be reached).
pub(crate) fn set_conversion(crd: &mut CustomResourceDefinition, port: u16, ca_pem: &str) {
    crd.spec.conversion = Some(if crd.spec.versions.len() > 1 {
        apiext::CustomResourceConversion {
            strategy: "Webhook".into(),
            webhook: Some(apiext::WebhookConversion {
                client_config: Some(apiext::WebhookClientConfig {
                    url: Some(format!("https://127.0.0.1:{port}/convert")),
                    ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
                    service: None,
                }),
                conversion_review_versions: CONVERSION_REVIEW_VERSIONS
                    .iter()
                    .map(|v| (*v).to_owned())
                    .collect(),
            }),
        }
    } else {
        apiext::CustomResourceConversion {
            strategy: "None".into(),
            webhook: None,
        }
    });
}

/// One document of a `manifests.yaml`.
#[derive(Debug, Clone)]
pub(crate) enum WebhookConfig {
    Mutating(MutatingWebhookConfiguration),
    Validating(ValidatingWebhookConfiguration),
}

impl WebhookConfig {
    /// The configuration named `<prefix>-<name>` (the three Cluster API providers all name
    /// theirs `mutating-webhook-configuration` and `validating-webhook-configuration`), each
    /// webhook calling `https://127.0.0.1:<port><service path>` and trusting `ca_pem`.
    pub fn rewritten(mut self, prefix: &str, port: u16, ca_pem: &str) -> Self {
        let (meta, configs): (_, Vec<&mut WebhookClientConfig>) = match &mut self {
            Self::Mutating(c) => (
                &mut c.metadata,
                c.webhooks
                    .iter_mut()
                    .flatten()
                    .map(|w| &mut w.client_config)
                    .collect(),
            ),
            Self::Validating(c) => (
                &mut c.metadata,
                c.webhooks
                    .iter_mut()
                    .flatten()
                    .map(|w| &mut w.client_config)
                    .collect(),
            ),
        };
        let name = meta.name.clone().unwrap_or_default();
        meta.name = Some(format!("{prefix}-{name}"));
        for config in configs {
            let path = config
                .service
                .take()
                .and_then(|s| s.path)
                .unwrap_or_else(|| "/".to_owned());
            config.url = Some(format!("https://127.0.0.1:{port}{path}"));
            config.ca_bundle = Some(ByteString(ca_pem.as_bytes().to_vec()));
        }
        self
    }
}

/// The webhook configurations in a `manifests.yaml` (`context` names it in errors).
pub(crate) fn parse_webhooks(text: &str, context: &str) -> Result<Vec<WebhookConfig>> {
    let yaml_err = |source| Error::Yaml {
        context: context.to_owned(),
        source,
    };
    let mut out = Vec::new();
    for doc in yaml_serde::Deserializer::from_str(text) {
        let value = yaml_serde::Value::deserialize(doc).map_err(yaml_err)?;
        if value.is_null() {
            continue;
        }
        let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        out.push(match kind {
            "MutatingWebhookConfiguration" => {
                WebhookConfig::Mutating(yaml_serde::from_value(value).map_err(yaml_err)?)
            }
            "ValidatingWebhookConfiguration" => {
                WebhookConfig::Validating(yaml_serde::from_value(value).map_err(yaml_err)?)
            }
            other => {
                return Err(Error::Usage(format!(
                    "{context}: unexpected document of kind {other:?}"
                )));
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    const MANIFESTS: &str = "---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-x}
  name: default.x.cluster.x-k8s.io
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-x}
  name: validation.x.cluster.x-k8s.io
  sideEffects: None
";

    fn client_configs(config: &WebhookConfig) -> Vec<&WebhookClientConfig> {
        match config {
            WebhookConfig::Mutating(c) => c
                .webhooks
                .iter()
                .flatten()
                .map(|w| &w.client_config)
                .collect(),
            WebhookConfig::Validating(c) => c
                .webhooks
                .iter()
                .flatten()
                .map(|w| &w.client_config)
                .collect(),
        }
    }

    #[test]
    fn webhooks_are_renamed_and_point_at_loopback() -> TestResult {
        let out: Vec<_> = parse_webhooks(MANIFESTS, "test")?
            .into_iter()
            .map(|c| c.rewritten("capi-controlplane", 12345, "PEM"))
            .collect();
        let names: Vec<_> = out
            .iter()
            .map(|c| match c {
                WebhookConfig::Mutating(c) => c.metadata.name.clone(),
                WebhookConfig::Validating(c) => c.metadata.name.clone(),
            })
            .collect();
        assert_eq!(
            names,
            [
                Some("capi-controlplane-mutating-webhook-configuration".to_owned()),
                Some("capi-controlplane-validating-webhook-configuration".to_owned())
            ]
        );
        let urls: Vec<_> = out
            .iter()
            .flat_map(client_configs)
            .map(|cc| {
                assert!(cc.service.is_none());
                assert_eq!(
                    cc.ca_bundle.as_ref().map(|b| b.0.as_slice()),
                    Some(&b"PEM"[..])
                );
                cc.url.clone()
            })
            .collect();
        assert_eq!(
            urls,
            [
                Some("https://127.0.0.1:12345/mutate-x".to_owned()),
                Some("https://127.0.0.1:12345/validate-x".to_owned())
            ]
        );
        Ok(())
    }

    #[test]
    fn unknown_documents_are_rejected() {
        let err = parse_webhooks("kind: Service\n", "m.yaml").err();
        assert!(
            err.is_some_and(|e| e.to_string().contains("Service")),
            "a Service is no webhook configuration"
        );
    }

    fn crd(versions: &[&str]) -> yaml_serde::Result<CustomResourceDefinition> {
        let versions: Vec<_> = versions
            .iter()
            .map(|v| {
                format!(
                    "  - {{name: {v}, served: true, storage: {}}}",
                    *v == "v1beta2"
                )
            })
            .collect();
        let yaml = format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: clusters.cluster.x-k8s.io}}\nspec:\n  group: cluster.x-k8s.io\n  names: {{kind: Cluster, plural: clusters}}\n  scope: Namespaced\n  versions:\n{}\n",
            versions.join("\n")
        );
        yaml_serde::from_str(&yaml)
    }

    #[test]
    fn multi_version_crds_convert_through_the_owner() -> TestResult {
        let mut c = crd(&["v1beta1", "v1beta2"])?;
        set_conversion(&mut c, 4242, "PEM");
        let json = serde_json::to_value(&c.spec.conversion)?;
        assert_eq!(json["strategy"], "Webhook");
        assert_eq!(
            json["webhook"]["clientConfig"]["url"],
            "https://127.0.0.1:4242/convert"
        );
        // ByteString serializes as base64 of the PEM.
        assert_eq!(json["webhook"]["clientConfig"]["caBundle"], "UEVN");
        assert_eq!(
            json["webhook"]["conversionReviewVersions"],
            serde_json::json!(["v1", "v1beta1"])
        );

        let mut single = crd(&["v1beta2"])?;
        set_conversion(&mut single, 4242, "PEM");
        assert_eq!(
            single.spec.conversion.map(|c| c.strategy).as_deref(),
            Some("None")
        );
        Ok(())
    }

    #[test]
    fn provider_crds_carry_contract_labels() -> TestResult {
        let mut c = crd(&["v1beta1", "v1beta2"])?;
        add_labels(&mut c, Provider::ControlPlane);
        let labels = c.metadata.labels.unwrap_or_default();
        assert_eq!(
            labels.get("cluster.x-k8s.io/provider").map(String::as_str),
            Some("control-plane-kubeadm")
        );
        assert_eq!(
            labels.get("cluster.x-k8s.io/v1beta2").map(String::as_str),
            Some("v1beta2")
        );
        let mut core = crd(&["v1beta1", "v1beta2"])?;
        add_labels(&mut core, Provider::Core);
        assert_eq!(core.metadata.labels.map(|l| l.len()), Some(1));
        Ok(())
    }

    #[test]
    fn groups_map_to_their_providers() {
        assert_eq!(
            Provider::for_group("ipam.cluster.x-k8s.io"),
            Some(Provider::Core)
        );
        assert_eq!(
            Provider::for_group("bootstrap.cluster.x-k8s.io"),
            Some(Provider::Bootstrap)
        );
        assert_eq!(
            Provider::for_group("controlplane.cluster.x-k8s.io"),
            Some(Provider::ControlPlane)
        );
        assert_eq!(Provider::for_group("infrastructure.cluster.x-k8s.io"), None);
        assert_eq!(Provider::for_group("openstack.k-orc.cloud"), None);
    }
}

//! Installing CustomResourceDefinitions and waiting until they are served.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde::Deserialize;

use crate::FIELD_MANAGER;
use crate::error::{Error, Result};

/// How long a CRD may take to become Established.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// The `*.yaml`/`*.yml` files of a directory, sorted; empty if it does not exist.
pub fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries =
        std::fs::read_dir(dir).map_err(Error::io(format!("reading {}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Every CRD document in the given files.
pub fn load(files: &[PathBuf]) -> Result<Vec<CustomResourceDefinition>> {
    let mut crds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(Error::io(format!("reading {}", file.display())))?;
        crds.extend(parse(&text, &file.display().to_string())?);
    }
    Ok(crds)
}

/// Every CRD document in `text`; `context` names it in errors.
pub fn parse(text: &str, context: &str) -> Result<Vec<CustomResourceDefinition>> {
    let mut crds = Vec::new();
    for doc in yaml_serde::Deserializer::from_str(text) {
        let value = yaml_serde::Value::deserialize(doc).map_err(|source| Error::Yaml {
            context: context.to_owned(),
            source,
        })?;
        if value.is_null() {
            continue;
        }
        let crd: CustomResourceDefinition =
            yaml_serde::from_value(value).map_err(|source| Error::Yaml {
                context: context.to_owned(),
                source,
            })?;
        crds.push(crd);
    }
    Ok(crds)
}

/// Applies the CRDs (server-side apply) and waits until each is Established.
pub async fn install(client: &Client, crds: &[CustomResourceDefinition]) -> Result<Vec<String>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::new();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let mut crd = crd.clone();
        // Files from `controller-gen` carry no status; a stray one would be rejected by SSA.
        crd.status = None;
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(Error::kube(format!("installing CRD {name}")))?;
        names.push(name);
    }
    for name in &names {
        wait_established(&api, name).await?;
    }
    Ok(names)
}

/// True once the CRD reports `Established=True`.
pub fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conds| {
            conds
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

async fn wait_established(api: &Api<CustomResourceDefinition>, name: &str) -> Result<()> {
    let start = Instant::now();
    loop {
        let crd = api
            .get(name)
            .await
            .map_err(Error::kube(format!("reading CRD {name}")))?;
        if is_established(&crd) {
            return Ok(());
        }
        if start.elapsed() > ESTABLISH_TIMEOUT {
            return Err(Error::NotEstablished {
                name: name.to_owned(),
                seconds: ESTABLISH_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

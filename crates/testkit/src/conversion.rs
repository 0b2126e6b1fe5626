//! capo's conversion webhook for a test environment: the OpenStackCluster, -ClusterTemplate,
//! -Machine and -MachineTemplate CRDs serve `v1beta1` and `v1beta2`, so the API server calls a
//! webhook whenever a client (Cluster API's controllers among them) reads or writes the version
//! not stored. Each environment runs capo's own webhook server (`capo_webhook`, the code the
//! manager serves) on `127.0.0.1`, on a thread of its own so it outlives any one test's runtime,
//! and points those CRDs at it. A test that runs the manager can point them at the manager's
//! server instead ([`crate::TestEnv::use_conversion_webhook`]).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use capo_webhook::{WebhookServer, WebhookServerConfig};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::certs::ServingCerts;
use crate::error::{Error, Result};

/// A running conversion webhook server; stops when dropped.
#[derive(Debug)]
pub(crate) struct ConversionServer {
    /// Its port on `127.0.0.1`.
    pub port: u16,
    /// The CA of its serving certificate (the CRDs' `caBundle`).
    pub ca_pem: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ConversionServer {
    /// Writes a serving certificate into `dir` and starts the server.
    pub fn start(dir: &Path) -> Result<Self> {
        let certs = ServingCerts::generate(dir, "capo-conversion")?;
        let config = WebhookServerConfig {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            cert_dir: certs.dir.clone(),
            reload_interval: Duration::from_secs(3600),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, port) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("capo-conversion".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = bound.send(Err(format!("runtime: {e}")));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let server = match WebhookServer::bind(&config).await {
                        Ok(server) => server,
                        Err(e) => {
                            let _ = bound.send(Err(e.to_string()));
                            return;
                        }
                    };
                    let _ = bound.send(server.local_addr().map_err(|e| e.to_string()));
                    let _ = server
                        .run(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })
            .map_err(Error::io("starting the conversion webhook thread"))?;
        let addr = port
            .recv_timeout(Duration::from_secs(30))
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(|e| {
                drop(thread);
                Error::Usage(format!("capo's conversion webhook did not start: {e}"))
            })?;
        Ok(Self {
            port: addr.port(),
            ca_pem: certs.ca_pem,
            stop: Some(stop),
        })
    }
}

impl Drop for ConversionServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Whether the API server must call a conversion webhook for `crd` (it serves several versions).
pub(crate) fn converts(crd: &CustomResourceDefinition) -> bool {
    crd.spec.versions.len() > 1
}

//! The manager's life: connect, serve probes/metrics/webhooks, win the leader election, run
//! the controllers, and on shutdown stop them, then release the Lease.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use capo_controller::Options;
use capo_controller::metrics::ReconcileMetrics;
use capo_openstack::proxy::ProxySettings;
use capo_openstack::{ApiMetrics, ClientConfig, SessionCache};
use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::controllers::{self, Concurrency};
use crate::diagnostics::{self, Readiness};
use crate::error::{Error, Result};
use crate::flags::{AUTO_SCALE_FROM_ZERO, Flags};
use crate::kube_rate::{ClientMetrics, RateLimitLayer};
use crate::kube_requests::RequestCounter;
use crate::leader::{self, Elector, LeaderConfig, LeaderState};
use capo_controller::context::Shared;

/// How long shutdown waits for in-flight reconciles before giving up on them. Reconciles never
/// wait on OpenStack, so they finish well within this. It also bounds a kube-runtime quirk: a
/// controller stopped before its first list completed waits for a store that never becomes
/// ready, so it only ends when aborted here.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Run the manager with `flags` until `shutdown` completes (or leadership is lost).
pub async fn run(flags: Flags, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
    run_with(flags, |_| {}, shutdown).await
}

/// [`run`], with the controller options adjusted by `tune` after the flags were applied (the
/// demo shortens requeue delays to the simulator's fast state transitions).
pub async fn run_with(
    flags: Flags,
    tune: impl FnOnce(&mut Options),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    flags.validate()?;
    for note in flags.ignored() {
        tracing::warn!("{note}");
    }
    capo_openstack::tls::ensure_crypto_provider();
    // The only place the proxy variables are read, once; the OpenStack clients get the result.
    let proxy = proxy_settings(|name| std::env::var(name).ok())?;
    log_proxies(&proxy);
    let config = kube_config(&flags).await?;
    let mut registry = Registry::default();
    let kube_metrics = ClientMetrics::register(&mut registry);
    let limit = RateLimitLayer::new(flags.kube_api_qps, flags.kube_api_burst, kube_metrics);
    let by_resource = RequestCounter::register(&mut registry);
    let client = ClientBuilder::try_from(config.clone())
        .map_err(Error::kube("building the client"))?
        .with_layer(&by_resource)
        .with_layer(&limit)
        .build();
    let version = client
        .apiserver_version()
        .await
        .map_err(Error::kube("contacting the API server"))?;
    tracing::info!(server = %config.cluster_url, version = %version.git_version, "connected to the Kubernetes API server");

    let metrics = ReconcileMetrics::default();
    metrics.register(&mut registry);
    let api_metrics = ApiMetrics::register(&mut registry);
    crate::process_metrics::register(&mut registry);
    let conversions = capo_webhook::ConversionMetrics::register(&mut registry);

    let (stop_tx, stop_rx) = watch::channel(false);
    let ready = Readiness::default();
    let servers = start_servers(&flags, &ready, Arc::new(registry), conversions, &stop_rx).await?;
    let mut options = controller_options(&flags);
    tune(&mut options);
    let shared = Shared::new(
        client.clone(),
        Arc::new(SessionCache::new(
            client_config(&flags, proxy)?,
            api_metrics,
        )),
        options,
        metrics,
    );
    let gates = flags.feature_gates()?;
    tracing::info!(?gates, namespace = ?flags.namespace, watch_filter = ?flags.watch_filter, "starting");

    // Signals become the stop flag; the elector and the controllers watch it.
    let signal_tx = stop_tx.clone();
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutdown requested");
        let _ = signal_tx.send(true);
    });
    let (state_tx, state_rx) = watch::channel(LeaderState::Unknown);
    let election = if flags.leader_elect {
        Some(start_election(
            &flags,
            &config,
            client,
            state_tx,
            stop_rx.clone(),
        ))
    } else {
        state_tx.send_replace(LeaderState::Leader);
        None
    };
    let concurrency = concurrency(&flags, &gates);
    let migrate_storage = flags.storage_version_migration()?;
    if !migrate_storage {
        tracing::info!("storage version migration skipped (--skip-crd-migration-phases)");
    }
    let tasks = lead(
        &shared,
        concurrency,
        migrate_storage,
        &ready,
        state_rx,
        &stop_rx,
    )
    .await;

    let _ = stop_tx.send(true);
    ready.set(false);
    stop_tasks("controller", tasks).await;
    let outcome = match election {
        Some(handle) => finish_election(handle).await,
        None => Ok(()),
    };
    stop_tasks("server", servers).await;
    tracing::info!("stopped");
    outcome
}

type Election = JoinHandle<(Elector, Result<()>)>;

/// Start the elector; it publishes on `state` until `stop`.
fn start_election(
    flags: &Flags,
    config: &Config,
    client: Client,
    state: watch::Sender<LeaderState>,
    stop: watch::Receiver<bool>,
) -> Election {
    let cfg = leader_config(flags, config);
    tracing::info!(lease = %format!("{}/{}", cfg.namespace, cfg.name), identity = %cfg.identity, "leader election enabled");
    let mut elector = Elector::new(client, cfg);
    tokio::spawn(async move {
        let out = elector.run(&state, stop).await;
        // Keep the sender until the elector is done, so waiters see its last state.
        drop(state);
        (elector, out)
    })
}

/// Mark ready once the leadership is known, start the controllers when leading, and return
/// their tasks once the manager must stop (stop flag, or the lease was lost).
async fn lead(
    shared: &Arc<Shared>,
    concurrency: Concurrency,
    migrate_storage: bool,
    ready: &Readiness,
    mut state_rx: watch::Receiver<LeaderState>,
    stop_rx: &watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    // Probes and webhooks work for leaders and followers alike, as in controller-runtime.
    tokio::select! {
        _ = wait_state(&mut state_rx, |s| *s != LeaderState::Unknown) => {}
        () = wait_stop(stop_rx.clone()) => return Vec::new(),
    }
    ready.set(true);
    let tasks = tokio::select! {
        leading = wait_state(&mut state_rx, |s| matches!(s, LeaderState::Leader | LeaderState::Lost)) => {
            if leading != LeaderState::Leader {
                return Vec::new();
            }
            tracing::info!(controllers = ?controllers::CONTROLLERS, openstackmachinetemplate = concurrency.machine_template.is_some(), "starting controllers");
            controllers::spawn_all(shared, concurrency, migrate_storage, stop_rx)
        }
        () = wait_stop(stop_rx.clone()) => return Vec::new(),
    };
    tokio::select! {
        () = wait_stop(stop_rx.clone()) => {}
        _ = wait_state(&mut state_rx, |s| *s == LeaderState::Lost) => {}
    }
    tasks
}

/// The first state satisfying `pred`; never resolves once the elector is gone (without
/// leader election the state stays `Leader` for good).
async fn wait_state(
    rx: &mut watch::Receiver<LeaderState>,
    pred: impl FnMut(&LeaderState) -> bool,
) -> LeaderState {
    // Clone out of the borrow before any other await: the guard is not Send.
    let state = rx.wait_for(pred).await.map(|s| s.clone());
    match state {
        Ok(s) => s,
        Err(_) => std::future::pending().await,
    }
}

/// Resolves once the stop flag is set.
async fn wait_stop(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// Wait for the elector to stop, then release the Lease (controllers are stopped by now).
async fn finish_election(handle: Election) -> Result<()> {
    let Ok((mut elector, out)) = handle.await else {
        return Ok(());
    };
    out?;
    if let Err(e) = elector.release().await {
        tracing::warn!(error = %e, "could not release the leader lease; it expires by itself");
    }
    Ok(())
}

/// Wait for `tasks` (already told to stop) with one deadline for all of them; abort the rest.
async fn stop_tasks(what: &str, tasks: Vec<JoinHandle<()>>) {
    let deadline = tokio::time::Instant::now() + STOP_TIMEOUT;
    for t in tasks {
        let abort = t.abort_handle();
        if tokio::time::timeout_at(deadline, t).await.is_err() {
            tracing::warn!(what, "did not stop in time; aborted");
            abort.abort();
        }
    }
}

/// Bind and start the probe, metrics and webhook servers (bind errors fail the start).
async fn start_servers(
    flags: &Flags,
    ready: &Readiness,
    registry: Arc<Registry>,
    conversions: capo_webhook::ConversionMetrics,
    stop: &watch::Receiver<bool>,
) -> Result<Vec<JoinHandle<()>>> {
    let until = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let mut tasks = Vec::new();
    let server_tls = flags.server_tls()?;
    if let Some(addr) = flags.health_addr()? {
        let listener = capo_tls::bind(addr).await?;
        tracing::info!(addr = %local(&listener, addr), "serving /healthz and /readyz");
        let app = diagnostics::probe_router(ready.clone());
        let serving = capo_tls::serve(listener, None, app, until(stop.clone()), diagnostics::SERVE);
        tasks.push(tokio::spawn(serving));
    }
    if let Some(addr) = flags.diagnostics_addr()? {
        let listener = capo_tls::bind(addr).await?;
        let bound = local(&listener, addr);
        let tls = if flags.insecure_diagnostics {
            tracing::info!(addr = %bound, "serving /metrics over HTTP");
            None
        } else {
            tracing::info!(addr = %bound, "serving /metrics over HTTPS (self-signed certificate)");
            Some(diagnostics::self_signed_acceptor(bound, &server_tls)?.0)
        };
        let app = diagnostics::metrics_router(registry);
        let serving = capo_tls::serve(listener, tls, app, until(stop.clone()), diagnostics::SERVE);
        tasks.push(tokio::spawn(serving));
    }
    if flags.webhook_port != 0 {
        let config = capo_webhook::WebhookServerConfig {
            addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, flags.webhook_port)),
            cert_dir: flags.webhook_cert_dir.clone(),
            ..Default::default()
        };
        let server = capo_webhook::WebhookServer::bind_with(&config, &server_tls)
            .await
            .map_err(Error::Webhook)?
            .with_metrics(conversions);
        tracing::info!(addr = %config.addr, cert_dir = %config.cert_dir.display(), "serving admission and conversion webhooks");
        let stop = until(stop.clone());
        tasks.push(tokio::spawn(async move {
            if let Err(e) = server.run(stop).await {
                tracing::error!(error = %e, "webhook server failed");
            }
        }));
    }
    Ok(tasks)
}

fn local(listener: &tokio::net::TcpListener, fallback: SocketAddr) -> SocketAddr {
    listener.local_addr().unwrap_or(fallback)
}

/// `--kubeconfig`, else `$KUBECONFIG` / `~/.kube/config`, else the in-cluster service account.
async fn kube_config(flags: &Flags) -> Result<Config> {
    match &flags.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| Error::KubeConfig(format!("{}: {e}", path.display())))?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|e| Error::KubeConfig(format!("{}: {e}", path.display())))
        }
        None => Config::infer()
            .await
            .map_err(|e| Error::KubeConfig(e.to_string())),
    }
}

/// The proxies for the OpenStack APIs from environment variables looked up through `get`
/// (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY` and their lower-case forms, `REQUEST_METHOD`), with
/// the rules of Go's `http.ProxyFromEnvironment` that upstream uses.
fn proxy_settings(get: impl Fn(&str) -> Option<String>) -> Result<ProxySettings> {
    ProxySettings::from_lookup(get).map_err(|e| Error::Proxy(e.to_string()))
}

/// Says at start which proxies the OpenStack clients use: scheme, host and port only, never
/// the user or password a proxy URL may carry.
fn log_proxies(proxy: &ProxySettings) {
    if proxy.http_proxy_refused_cgi() {
        tracing::warn!(
            "REQUEST_METHOD is set (a CGI environment): HTTP_PROXY is not used, as Go refuses it there"
        );
    }
    if proxy.is_empty() {
        tracing::info!("OpenStack API requests go direct (no HTTPS_PROXY or HTTP_PROXY)");
        return;
    }
    tracing::info!(
        https_proxy = proxy.https_proxy_display().as_deref().unwrap_or("none"),
        http_proxy = proxy.http_proxy_display().as_deref().unwrap_or("none"),
        no_proxy = proxy.no_proxy(),
        "OpenStack API requests use proxies from the environment (localhost and loopback addresses always go direct)"
    );
}

/// The session cache's settings: `--scope-cache-max-size` (0: no session kept), `--ca-certs`,
/// and the proxies read from the environment.
fn client_config(flags: &Flags, proxy: ProxySettings) -> Result<ClientConfig> {
    let manager_ca = match &flags.ca_certs {
        Some(path) => {
            Some(
                capo_openstack::tls::load_manager_ca(path).map_err(|e| Error::CaCerts {
                    path: path.clone(),
                    message: e.to_string(),
                })?,
            )
        }
        None => None,
    };
    let mut config = ClientConfig {
        capacity: usize::try_from(flags.scope_cache_max_size).unwrap_or(usize::MAX),
        manager_ca,
        ..ClientConfig::default()
    };
    config.http.proxy = proxy;
    Ok(config)
}

/// Per-controller concurrency from the flags; the template controller runs only with the
/// AutoScaleFromZero gate (off by default, as upstream).
pub fn concurrency(flags: &Flags, gates: &BTreeMap<String, bool>) -> Concurrency {
    let autoscale_from_zero = gates.get(AUTO_SCALE_FROM_ZERO).copied().unwrap_or(false);
    Concurrency {
        cluster: flags.openstackcluster_concurrency,
        machine: flags.openstackmachine_concurrency,
        machine_template: autoscale_from_zero.then_some(flags.openstackmachinetemplate_concurrency),
    }
}

/// Controller options from the flags (production timings otherwise).
pub fn controller_options(flags: &Flags) -> Options {
    Options {
        sync_period: flags.sync_period,
        watch_filter: flags.watch_filter.clone().filter(|s| !s.is_empty()),
        namespace: flags.namespace.clone().filter(|s| !s.is_empty()),
        concurrency: flags.openstackcluster_concurrency,
        ..Options::default()
    }
}

/// The Lease: `--leader-elect-namespace`, else the pod's namespace, else the client's default.
fn leader_config(flags: &Flags, config: &Config) -> LeaderConfig {
    let namespace = flags
        .leader_elect_namespace
        .clone()
        .or_else(pod_namespace)
        .unwrap_or_else(|| config.default_namespace.clone());
    LeaderConfig {
        namespace,
        name: leader::LEASE_NAME.to_owned(),
        identity: leader::default_identity(),
        lease_duration: flags.leader_elect_lease_duration,
        renew_deadline: flags.leader_elect_renew_deadline,
        retry_period: flags.leader_elect_retry_period,
    }
}

fn pod_namespace() -> Option<String> {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok()
        })
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_controller_runs_only_with_its_gate_and_flag() {
        let flags = |args: &[&str]| {
            let mut all = vec!["capo-controller-manager"];
            all.extend_from_slice(args);
            let f = Flags::parse_go_style(all).unwrap();
            let gates = f.feature_gates().unwrap();
            concurrency(&f, &gates)
        };
        assert_eq!(flags(&[]).machine_template, None, "gate off by default");
        assert_eq!(
            flags(&["--feature-gates=AutoScaleFromZero=true"]).machine_template,
            Some(10)
        );
        let c = flags(&[
            "--feature-gates=AutoScaleFromZero=true",
            "--openstackmachinetemplate-concurrency=3",
        ]);
        assert_eq!(c.machine_template, Some(3));
        let off = flags(&[
            "--feature-gates=AutoScaleFromZero=false",
            "--openstackmachinetemplate-concurrency=3",
        ]);
        assert_eq!(off.machine_template, None);
    }

    #[test]
    fn proxies_from_the_environment_reach_the_client_config() {
        let vars = [
            ("https_proxy", "http://op:s3cret@proxy.corp:3128"),
            ("NO_PROXY", ".svc,10.0.0.0/8"),
        ];
        let get = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        };
        let proxy = proxy_settings(get).unwrap();
        log_proxies(&proxy);
        let flags = Flags::parse_go_style(["capo-controller-manager"]).unwrap();
        let config = client_config(&flags, proxy).unwrap();
        let p = &config.http.proxy;
        assert_eq!(
            p.https_proxy_display().as_deref(),
            Some("http://proxy.corp:3128 (with credentials)")
        );
        assert_eq!(p.http_proxy_display(), None);
        assert_eq!(p.no_proxy(), ".svc,10.0.0.0/8");
        assert!(!format!("{config:?}").contains("s3cret"));
        // Unusable values stop the manager, naming the variable but not its value.
        let socks =
            |name: &str| (name == "HTTPS_PROXY").then(|| "socks5://op:s3cret@p:1080".into());
        let e = proxy_settings(socks).unwrap_err().to_string();
        assert!(e.contains("HTTPS_PROXY") && !e.contains("s3cret"), "{e}");
        // Nothing set: no proxy, as before.
        assert!(proxy_settings(|_| None).unwrap().is_empty());
    }
}

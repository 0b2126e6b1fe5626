//! Command-line flags, named and defaulted as upstream CAPO v0.14's manager (controller-runtime
//! and component-base conventions): long flags with one or two dashes are not distinguished by
//! Go, so `--v=2` and `-v=2` both work; boolean flags take an optional `=true|false`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser, ValueEnum};

use capo_tls::{GoCipherSuite, MinVersion, ServerTls, go_cipher_suite};

use crate::duration::parse_go_duration;
use crate::error::{Error, Result};

/// Feature gates upstream v0.14 defines; all default to false.
pub const KNOWN_FEATURE_GATES: [&str; 2] = ["PriorityQueue", AUTO_SCALE_FROM_ZERO];

/// The gate of the OpenStackMachineTemplate controller (status.capacity for autoscaling from
/// zero).
pub const AUTO_SCALE_FROM_ZERO: &str = "AutoScaleFromZero";

/// Log output format (`--log-format`, also spelled `--logging-format` as component-base does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The manager's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "capo-controller-manager",
    version,
    about = "capo: Cluster API infrastructure provider for OpenStack (controllers and admission webhooks)"
)]
pub struct Flags {
    /// Path to a kubeconfig. Without it: $KUBECONFIG, then the in-cluster service account.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Enable leader election (a Lease), so only one replica runs the controllers.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          action = ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub leader_elect: bool,
    /// Namespace of the leader-election Lease. Default: the pod's namespace (service account),
    /// else the kubeconfig context's namespace, else `default`.
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_elect_namespace: Option<String>,
    /// How long a Lease is valid without renewal; a follower waits this long before taking it.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_go_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before giving up its leadership.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_go_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// Interval between attempts to acquire or renew the Lease.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_go_duration)]
    pub leader_elect_retry_period: Duration,

    /// Watch and reconcile only this namespace (default: all namespaces).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Reconcile only objects whose `cluster.x-k8s.io/watch-filter` label has this value.
    #[arg(long, value_name = "VALUE")]
    pub watch_filter: Option<String>,
    /// Concurrent OpenStackCluster reconciles.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub openstackcluster_concurrency: u16,
    /// Concurrent OpenStackMachine (and OpenStackServer) reconciles.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub openstackmachine_concurrency: u16,
    /// Concurrent OpenStackMachineTemplate reconciles (with the AutoScaleFromZero gate).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub openstackmachinetemplate_concurrency: u16,
    /// Requeue period of converged objects.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_go_duration)]
    pub sync_period: Duration,
    /// Kubernetes API client QPS (token bucket; 0 or negative: unlimited).
    #[arg(long, value_name = "QPS", default_value_t = 20.0)]
    pub kube_api_qps: f32,
    /// Kubernetes API client burst.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub kube_api_burst: u32,

    /// Admission webhook port; 0 disables the webhook server.
    #[arg(long, value_name = "PORT", default_value_t = capo_webhook::DEFAULT_PORT)]
    pub webhook_port: u16,
    /// Directory holding the webhook serving certificate (tls.crt, tls.key).
    #[arg(long, value_name = "DIR", default_value = capo_webhook::DEFAULT_CERT_DIR)]
    pub webhook_cert_dir: PathBuf,
    /// Address of /healthz and /readyz (`:9440` = all interfaces; `0` disables).
    #[arg(long, value_name = "ADDR", default_value = ":9440")]
    pub health_addr: String,
    /// Address of /metrics (`0` disables). HTTPS with a self-signed certificate unless
    /// --insecure-diagnostics.
    #[arg(long, value_name = "ADDR", default_value = ":8443")]
    pub diagnostics_address: String,
    /// Serve /metrics over plain HTTP.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          action = ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub insecure_diagnostics: bool,
    /// Lowest TLS version of the webhook and HTTPS metrics servers: VersionTLS12 or
    /// VersionTLS13 (VersionTLS10 and VersionTLS11 are accepted and mean VersionTLS12: capo
    /// never offers anything older).
    #[arg(long, value_name = "VERSION", default_value = "VersionTLS12", value_parser = parse_tls_min_version)]
    pub tls_min_version: TlsMinVersion,
    /// TLS 1.2 cipher suites of the webhook and HTTPS metrics servers, Go's names,
    /// comma-separated (repeatable); TLS 1.3 names are accepted and change nothing. Default:
    /// every suite capo implements.
    #[arg(long, value_name = "SUITES", value_delimiter = ',', action = ArgAction::Append)]
    pub tls_cipher_suites: Vec<String>,
    /// Upstream's pprof address: accepted and ignored (a Rust binary has no Go profiler).
    #[arg(long, value_name = "ADDR", default_value = "")]
    pub profiler_address: String,

    /// PEM bundle trusted for OpenStack endpoints when an identity Secret has no `cacert`.
    #[arg(long, value_name = "PATH")]
    pub ca_certs: Option<PathBuf>,
    /// Maximum cached OpenStack sessions (one per distinct credentials + region + CA); 0: none
    /// is kept, every reconcile authenticates anew.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub scope_cache_max_size: u64,
    /// Upstream's load-balancer provider flag: accepted and unused, as upstream v0.14 leaves it
    /// (the provider comes from the OpenStackCluster's `apiServerLoadBalancer.provider`).
    #[arg(long, value_name = "NAME", default_value = "amphora")]
    pub lb_provider: String,
    /// CRD migration phases to skip (repeatable): StorageVersionMigration,
    /// CleanupManagedFields.
    #[arg(long, value_name = "PHASE", action = ArgAction::Append)]
    pub skip_crd_migration_phases: Vec<String>,
    /// Feature gates, `Name=true|false,...` (PriorityQueue, AutoScaleFromZero).
    #[arg(long, value_name = "GATES", default_value = "")]
    pub feature_gates: String,

    /// Log verbosity (klog style: 0-2 info, 3-4 debug, 5+ trace). RUST_LOG overrides it.
    #[arg(short = 'v', long = "v", value_name = "LEVEL", default_value_t = 0)]
    pub verbosity: u8,
    /// Log format.
    #[arg(long, alias = "logging-format", value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

impl Flags {
    /// Parse `args` (the first is the program name), rewriting Go's single-dash long flags
    /// (`-leader-elect`, `-v=2` stays as is) to clap's double dash.
    pub fn parse_go_style<I, T>(args: I) -> std::result::Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        let args: Vec<String> = args.into_iter().map(Into::into).collect();
        Self::try_parse_from(args.into_iter().enumerate().map(|(i, a)| {
            // `-x...` with more than one letter before `=` is a Go long flag.
            let is_go_long = a.starts_with('-')
                && !a.starts_with("--")
                && a[1..].split('=').next().is_some_and(|name| name.len() > 1);
            if i > 0 && is_go_long {
                format!("-{a}")
            } else {
                a
            }
        }))
    }

    /// The parsed `--feature-gates`.
    pub fn feature_gates(&self) -> Result<BTreeMap<String, bool>> {
        parse_feature_gates(&self.feature_gates)
    }

    /// `--health-addr` as a socket address (`None` when disabled).
    pub fn health_addr(&self) -> Result<Option<SocketAddr>> {
        parse_listen_addr(&self.health_addr).map_err(|message| Error::Flag {
            flag: "health-addr",
            message,
        })
    }

    /// `--diagnostics-address` as a socket address (`None` when disabled).
    pub fn diagnostics_addr(&self) -> Result<Option<SocketAddr>> {
        parse_listen_addr(&self.diagnostics_address).map_err(|message| Error::Flag {
            flag: "diagnostics-address",
            message,
        })
    }

    /// The TLS policy of the webhook and HTTPS metrics servers: `--tls-min-version` and
    /// `--tls-cipher-suites`.
    pub fn server_tls(&self) -> Result<ServerTls> {
        let min_version = match self.tls_min_version {
            TlsMinVersion::Tls13 => MinVersion::Tls13,
            TlsMinVersion::Tls10 | TlsMinVersion::Tls11 | TlsMinVersion::Tls12 => MinVersion::Tls12,
        };
        let mut names = self
            .tls_cipher_suites
            .iter()
            .map(|n| n.trim())
            .filter(|n| !n.is_empty())
            .peekable();
        // As Go: no list (or an empty one) keeps the library's defaults.
        let tls12_cipher_suites = if names.peek().is_some() {
            let mut suites = Vec::new();
            for name in names {
                match go_cipher_suite(name) {
                    Ok(GoCipherSuite::Tls12(suite)) => suites.push(suite),
                    Ok(GoCipherSuite::Tls13) => {}
                    Err(message) => {
                        return Err(Error::Flag {
                            flag: "tls-cipher-suites",
                            message,
                        });
                    }
                }
            }
            Some(suites)
        } else {
            None
        };
        Ok(ServerTls {
            min_version,
            tls12_cipher_suites,
        })
    }

    /// Whether `--skip-crd-migration-phases` leaves the storage-version migration to run.
    pub fn storage_version_migration(&self) -> Result<bool> {
        let mut run = true;
        for phase in &self.skip_crd_migration_phases {
            match phase.as_str() {
                PHASE_STORAGE_VERSION_MIGRATION => run = false,
                // capo has no such phase: every version its CRDs list is served.
                PHASE_CLEANUP_MANAGED_FIELDS => {}
                other => {
                    return Err(Error::Flag {
                        flag: "skip-crd-migration-phases",
                        message: format!(
                            "invalid phase {other:?} (valid: {PHASE_STORAGE_VERSION_MIGRATION}, \
                             {PHASE_CLEANUP_MANAGED_FIELDS}; one phase per flag)"
                        ),
                    });
                }
            }
        }
        Ok(run)
    }

    /// Accepted flags that change nothing, or less than upstream's: one message each, for a
    /// warning at start.
    pub fn ignored(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.profiler_address.trim().is_empty() {
            notes.push(format!(
                "--profiler-address={} is ignored: it serves Go's pprof profiler, which a Rust \
                 binary does not have",
                self.profiler_address
            ));
        }
        if matches!(
            self.tls_min_version,
            TlsMinVersion::Tls10 | TlsMinVersion::Tls11
        ) {
            notes.push(format!(
                "--tls-min-version={}: capo never offers TLS below 1.2, so VersionTLS12 applies",
                self.tls_min_version.go_name()
            ));
        }
        notes
    }

    /// Check what clap cannot: leader-election timings, feature gates, listen addresses, the
    /// TLS cipher suites, the CRD migration phases.
    pub fn validate(&self) -> Result<()> {
        self.feature_gates()?;
        self.health_addr()?;
        self.diagnostics_addr()?;
        self.server_tls()?;
        self.storage_version_migration()?;
        let flag = |message: &str| Error::Flag {
            flag: "leader-elect-renew-deadline",
            message: message.to_owned(),
        };
        if self.leader_elect_renew_deadline >= self.leader_elect_lease_duration {
            return Err(flag("must be shorter than --leader-elect-lease-duration"));
        }
        if self.leader_elect_retry_period.is_zero()
            || self.leader_elect_retry_period >= self.leader_elect_renew_deadline
        {
            return Err(flag(
                "must be longer than a non-zero --leader-elect-retry-period",
            ));
        }
        Ok(())
    }
}

/// `--skip-crd-migration-phases` value of the storage-version migration (Cluster API's
/// crdmigrator phase name).
pub const PHASE_STORAGE_VERSION_MIGRATION: &str = "StorageVersionMigration";
/// `--skip-crd-migration-phases` value of Cluster API's managed-fields cleanup, which capo does
/// not have.
pub const PHASE_CLEANUP_MANAGED_FIELDS: &str = "CleanupManagedFields";

/// `--tls-min-version`, in Go's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMinVersion {
    /// `VersionTLS10`: accepted, means TLS 1.2 here.
    Tls10,
    /// `VersionTLS11`: accepted, means TLS 1.2 here.
    Tls11,
    /// `VersionTLS12`, the default.
    Tls12,
    /// `VersionTLS13`.
    Tls13,
}

impl TlsMinVersion {
    const NAMES: [(&'static str, Self); 4] = [
        ("VersionTLS10", Self::Tls10),
        ("VersionTLS11", Self::Tls11),
        ("VersionTLS12", Self::Tls12),
        ("VersionTLS13", Self::Tls13),
    ];

    /// The name Go gives it.
    pub fn go_name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("VersionTLS12", |(n, _)| n)
    }
}

/// Parse a Go TLS version name; empty means the default, as in Kubernetes' flag helper.
pub fn parse_tls_min_version(text: &str) -> std::result::Result<TlsMinVersion, String> {
    if text.is_empty() {
        return Ok(TlsMinVersion::Tls12);
    }
    TlsMinVersion::NAMES
        .iter()
        .find(|(n, _)| *n == text)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<_> = TlsMinVersion::NAMES.iter().map(|(n, _)| *n).collect();
            format!(
                "unknown TLS version {text:?} (possible: {})",
                names.join(", ")
            )
        })
}

/// Parse `Name=bool,Name=bool` against [`KNOWN_FEATURE_GATES`] (unknown names are an error,
/// as in Kubernetes' feature-gate flag).
pub fn parse_feature_gates(text: &str) -> Result<BTreeMap<String, bool>> {
    let err = |message: String| Error::Flag {
        flag: "feature-gates",
        message,
    };
    let mut gates: BTreeMap<String, bool> = KNOWN_FEATURE_GATES
        .iter()
        .map(|g| ((*g).to_owned(), false))
        .collect();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| err(format!("{item:?}: expected Name=true|false")))?;
        let name = name.trim();
        if !gates.contains_key(name) {
            return Err(err(format!(
                "unrecognized feature gate {name:?} (known: {})",
                KNOWN_FEATURE_GATES.join(", ")
            )));
        }
        let on = match value.trim().to_ascii_lowercase().as_str() {
            "true" | "t" | "1" => true,
            "false" | "f" | "0" => false,
            other => return Err(err(format!("{name}: invalid value {other:?}"))),
        };
        gates.insert(name.to_owned(), on);
    }
    Ok(gates)
}

/// Parse a Go listen address: `:9440` (all interfaces), `127.0.0.1:0`, `[::1]:8443`,
/// `localhost:9440`; `0` (or empty) disables the server, as in controller-runtime.
pub fn parse_listen_addr(text: &str) -> std::result::Result<Option<SocketAddr>, String> {
    let t = text.trim();
    if t.is_empty() || t == "0" {
        return Ok(None);
    }
    let (host, port) = t
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?}: expected host:port or :port"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{text:?}: invalid port {port:?}"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Ok(Some(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port,
        )));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Some(SocketAddr::new(ip, port)));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{text:?}: {e}"))?
        .next()
        .map(Some)
        .ok_or_else(|| format!("{text:?}: host has no address"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use capo_tls::rustls;

    fn parse(args: &[&str]) -> Flags {
        let mut all = vec!["capo-controller-manager"];
        all.extend_from_slice(args);
        Flags::parse_go_style(all).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn defaults_are_upstreams() {
        let f = parse(&[]);
        assert!(!f.leader_elect);
        assert_eq!(f.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(f.leader_elect_renew_deadline, Duration::from_secs(10));
        assert_eq!(f.leader_elect_retry_period, Duration::from_secs(2));
        assert_eq!(f.openstackcluster_concurrency, 10);
        assert_eq!(f.openstackmachine_concurrency, 10);
        assert_eq!(f.sync_period, Duration::from_secs(600));
        assert!((f.kube_api_qps - 20.0).abs() < f32::EPSILON);
        assert_eq!(f.kube_api_burst, 30);
        assert_eq!(f.webhook_port, 9443);
        assert_eq!(
            f.webhook_cert_dir,
            PathBuf::from("/tmp/k8s-webhook-server/serving-certs")
        );
        assert_eq!(
            f.health_addr().unwrap(),
            Some("0.0.0.0:9440".parse().unwrap())
        );
        assert_eq!(
            f.diagnostics_addr().unwrap(),
            Some("0.0.0.0:8443".parse().unwrap())
        );
        assert!(!f.insecure_diagnostics);
        assert_eq!(f.scope_cache_max_size, 10);
        assert_eq!(f.verbosity, 0);
        assert_eq!(f.log_format, LogFormat::Text);
        assert!(f.feature_gates().unwrap().values().all(|on| !on));
        assert_eq!(f.tls_min_version, TlsMinVersion::Tls12);
        assert_eq!(f.server_tls().unwrap(), ServerTls::default());
        assert!(f.storage_version_migration().unwrap());
        assert_eq!(f.lb_provider, "amphora");
        assert!(f.profiler_address.is_empty());
        assert!(f.ignored().is_empty());
        f.validate().unwrap();
    }

    #[test]
    fn upstream_only_flags_are_accepted() {
        // Flags of upstream v0.14.7's manager (and Cluster API's flags helper) in an upstream
        // Deployment: all start.
        let f = parse(&[
            "--tls-min-version=VersionTLS13",
            "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
            "--tls-cipher-suites",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
            "--profiler-address=localhost:6060",
            "--lb-provider=ovn",
            "--skip-crd-migration-phases=StorageVersionMigration",
            "-skip-crd-migration-phases=CleanupManagedFields",
            "--scope-cache-max-size=0",
        ]);
        f.validate().unwrap();
        assert_eq!(f.scope_cache_max_size, 0);
        assert_eq!(f.lb_provider, "ovn");
        assert!(!f.storage_version_migration().unwrap());
        let tls = f.server_tls().unwrap();
        assert_eq!(tls.min_version, MinVersion::Tls13);
        assert_eq!(
            tls.tls12_cipher_suites,
            Some(vec![
                rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
                rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            ])
        );
        let ignored = f.ignored();
        assert_eq!(ignored.len(), 1, "{ignored:?}");
        assert!(ignored[0].contains("--profiler-address"), "{ignored:?}");
        // CleanupManagedFields alone leaves the storage-version migration running.
        let f = parse(&["--skip-crd-migration-phases=CleanupManagedFields"]);
        assert!(f.storage_version_migration().unwrap());
    }

    #[test]
    fn tls_versions_below_12_mean_12_with_a_warning() {
        for old in ["VersionTLS10", "VersionTLS11"] {
            let f = parse(&[&format!("--tls-min-version={old}")]);
            f.validate().unwrap();
            assert_eq!(f.server_tls().unwrap().min_version, MinVersion::Tls12);
            let ignored = f.ignored();
            assert!(
                ignored.len() == 1 && ignored[0].contains(old) && ignored[0].contains("1.2"),
                "{ignored:?}"
            );
        }
        // Empty means the default, as in Kubernetes' helper.
        assert_eq!(
            parse(&["--tls-min-version="]).tls_min_version,
            TlsMinVersion::Tls12
        );
        assert_eq!(
            parse(&["--tls-min-version=VersionTLS12"]).ignored().len(),
            0
        );
    }

    #[test]
    fn tls_cipher_suite_lists() {
        let suites = |arg: &str| parse(&[arg]).server_tls().map(|t| t.tls12_cipher_suites);
        // An empty list keeps the defaults, as pflag's empty string slice does.
        assert_eq!(suites("--tls-cipher-suites=").unwrap(), None);
        // Only TLS 1.3 names: no TLS 1.2 suite left (Go's CipherSuites with only TLS 1.3 IDs).
        assert_eq!(
            suites("--tls-cipher-suites=TLS_AES_256_GCM_SHA384").unwrap(),
            Some(vec![])
        );
        let err = |arg: &str| suites(arg).unwrap_err().to_string();
        let cbc = err(
            "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_128_CBC_SHA",
        );
        assert!(cbc.starts_with("--tls-cipher-suites: "), "{cbc}");
        assert!(
            cbc.contains("TLS_RSA_WITH_AES_128_CBC_SHA is not implemented"),
            "{cbc}"
        );
        let unknown = err("--tls-cipher-suites=TLS_NOPE");
        assert!(unknown.contains("TLS_NOPE"), "{unknown}");
    }

    #[test]
    fn usage_errors_name_the_flag() {
        let usage = |args: &[&str]| {
            let mut all = vec!["capo-controller-manager"];
            all.extend_from_slice(args);
            match Flags::parse_go_style(all) {
                Err(e) => (e.exit_code(), e.to_string()),
                Ok(f) => panic!("{args:?} parsed: {f:?}"),
            }
        };
        let (code, message) = usage(&["--tls-min-version=TLS13"]);
        assert_eq!(code, 2);
        assert!(message.contains("--tls-min-version"), "{message}");
        assert!(message.contains("VersionTLS13"), "{message}");
        let start = |args: &[&str]| parse(args).validate().unwrap_err().to_string();
        let phase = start(&["--skip-crd-migration-phases=All"]);
        assert!(
            phase.starts_with("--skip-crd-migration-phases: "),
            "{phase}"
        );
        assert!(phase.contains("\"All\""), "{phase}");
        // Upstream's flag is a string array: a comma is not a separator there either.
        start(&["--skip-crd-migration-phases=StorageVersionMigration,CleanupManagedFields"]);
    }

    #[test]
    fn upstream_manifest_args_parse() {
        // The argument list of upstream's config/manager/manager.yaml and of clusterctl
        // overrides, in Go's spellings.
        let f = parse(&[
            "--leader-elect",
            "--v=2",
            "--diagnostics-address=:8443",
            "--insecure-diagnostics=false",
            "--sync-period=1h30m",
            "-namespace=capo-system",
            "--feature-gates=PriorityQueue=true",
            "--logging-format=json",
        ]);
        assert!(f.leader_elect);
        assert_eq!(f.verbosity, 2);
        assert!(!f.insecure_diagnostics);
        assert_eq!(f.sync_period, Duration::from_secs(5400));
        assert_eq!(f.namespace.as_deref(), Some("capo-system"));
        assert_eq!(f.feature_gates().unwrap().get("PriorityQueue"), Some(&true));
        assert_eq!(f.log_format, LogFormat::Json);
        // config/manager/manager.yaml's arguments, rendered with the default variables.
        let f = parse(&[
            "--leader-elect",
            "--v=2",
            "--diagnostics-address=127.0.0.1:8080",
            "--insecure-diagnostics=true",
            "--feature-gates=PriorityQueue=false,AutoScaleFromZero=false",
        ]);
        assert!(f.insecure_diagnostics);
        assert_eq!(
            f.diagnostics_addr().unwrap(),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        f.validate().unwrap();
        let f = parse(&["--leader-elect=false", "--insecure-diagnostics", "-v", "4"]);
        assert!(!f.leader_elect && f.insecure_diagnostics);
        assert_eq!(f.verbosity, 4);
    }

    #[test]
    fn go_durations_in_flags() {
        let f = parse(&["--sync-period", "30s", "--leader-elect-retry-period=500ms"]);
        assert_eq!(f.sync_period, Duration::from_secs(30));
        assert_eq!(f.leader_elect_retry_period, Duration::from_millis(500));
        let all = ["capo-controller-manager", "--sync-period=10"];
        assert!(Flags::parse_go_style(all).is_err(), "unit is required");
    }

    #[test]
    fn invalid_values_are_rejected() {
        let bad = |args: &[&str]| {
            let mut all = vec!["capo-controller-manager"];
            all.extend_from_slice(args);
            match Flags::parse_go_style(all) {
                Err(_) => true,
                Ok(f) => f.validate().is_err(),
            }
        };
        assert!(bad(&["--openstackcluster-concurrency=0"]));
        assert!(bad(&["--feature-gates=Nope=true"]));
        assert!(bad(&["--feature-gates=PriorityQueue=maybe"]));
        assert!(bad(&["--health-addr=9440"]));
        assert!(bad(&["--leader-elect-renew-deadline=20s"]));
        assert!(bad(&["--leader-elect-retry-period=10s"]));
        assert!(bad(&["--log-format=xml"]));
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen_addr("0"), Ok(None));
        assert_eq!(parse_listen_addr(""), Ok(None));
        assert_eq!(
            parse_listen_addr("127.0.0.1:0"),
            Ok(Some("127.0.0.1:0".parse().unwrap()))
        );
        assert_eq!(
            parse_listen_addr("[::1]:8443"),
            Ok(Some("[::1]:8443".parse().unwrap()))
        );
        assert!(
            parse_listen_addr("localhost:9440")
                .unwrap()
                .unwrap()
                .ip()
                .is_loopback()
        );
        assert!(parse_listen_addr(":http").is_err());
    }
}

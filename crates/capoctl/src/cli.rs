//! Command-line interface. Each subcommand is a variant of [`Command`] and a small `run_*`
//! function; later ones (`inventory`) slot in the same way.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::cloud_conf::{self, Flavor};
use crate::cloud_provider::{self, ClusterRef};
use crate::clouds;
use crate::env::{self, Format};
use crate::error::{Error, Result};
use crate::inventory;

/// capo operator CLI.
#[derive(Debug, Parser)]
#[command(name = "capoctl", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the variables upstream's templates/env.rc exports for clusterctl
    ///
    /// OPENSTACK_CLOUD, OPENSTACK_CLOUD_YAML_B64, OPENSTACK_CLOUD_PROVIDER_CONF_B64 and
    /// OPENSTACK_CLOUD_CACERT_B64. When the cloud has no password, $OS_PASSWORD is used, as
    /// env.rc does.
    ///
    /// Example: eval "$(capoctl env --clouds-yaml clouds.yaml --cloud openstack)"
    Env(EnvArgs),
    /// Print cloud.conf for the external OpenStack cloud controller manager, or the cluster name
    /// for it and the Cinder CSI plugin
    ///
    /// By default, the same file upstream's templates/create_cloud_conf.sh prints. With
    /// --format occm-values, cinder-csi-values or env and -n/--namespace and --cluster: the Helm
    /// values of cloud-provider-openstack's two charts, or CLUSTER_NAME for its manifests, that
    /// give the CCM (--cluster-name) and the CSI plugin (--cluster) the name
    /// <namespace>-<cluster>, by which capo's cleanup at cluster deletion finds the load
    /// balancers and volumes they created. These formats hold no credentials and read no
    /// clouds.yaml.
    ///
    /// Example: capoctl cloud-conf -n team-a --cluster prod --format occm-values > occm.yaml
    CloudConf(CloudConfArgs),
    /// Print a cluster's Ansible inventory (or variables) from the management cluster
    ///
    /// Reads the Secret <cluster>-ansible that capo writes for Ansible bootstrap and
    /// control-plane providers (OpenStackClusters with spec.extensions). With --write DIR,
    /// writes inventory.yaml, vars.yaml and the generated SSH key (id_ed25519, mode 0600).
    ///
    /// Example: capoctl inventory -n team-a prod --write ./prod && ansible-playbook -i ./prod/inventory.yaml -e @./prod/vars.yaml cluster.yml
    Inventory(InventoryArgs),
}

/// `capoctl inventory` arguments.
#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Name of the cluster (the Cluster API Cluster / OpenStackCluster).
    pub cluster: String,
    /// Namespace of the cluster.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// kubeconfig of the management cluster (default: KUBECONFIG, then in-cluster).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Print vars.yaml instead of inventory.yaml.
    #[arg(long)]
    pub vars: bool,
    /// Write inventory.yaml, vars.yaml and id_ed25519 into DIR instead of printing.
    #[arg(long, value_name = "DIR")]
    pub write: Option<PathBuf>,
}

/// Selecting a cloud from a clouds.yaml.
#[derive(Debug, Args)]
pub struct CloudArgs {
    /// Path to clouds.yaml.
    #[arg(long, value_name = "PATH", env = "OS_CLIENT_CONFIG_FILE")]
    pub clouds_yaml: PathBuf,
    /// Name of the cloud entry under `clouds:`.
    #[arg(long, value_name = "NAME", env = "OS_CLOUD")]
    pub cloud: String,
}

/// `capoctl env` arguments.
#[derive(Debug, Args)]
pub struct EnvArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub cloud: CloudArgs,
    /// Output syntax.
    #[arg(long, value_enum, default_value = "shell")]
    pub format: Format,
}

/// `capoctl cloud-conf` arguments.
#[derive(Debug, Args)]
pub struct CloudConfArgs {
    /// Path to clouds.yaml (read by --format cloud-conf only).
    #[arg(long, value_name = "PATH", env = "OS_CLIENT_CONFIG_FILE")]
    pub clouds_yaml: Option<PathBuf>,
    /// Name of the cloud entry under `clouds:` (read by --format cloud-conf only).
    #[arg(long, value_name = "NAME", env = "OS_CLOUD")]
    pub cloud: Option<String>,
    /// Add `ca-file="PATH"` (the CA bundle's path as the CCM sees it). Upstream's script never
    /// writes this line when run as a script, so it is off by default.
    #[arg(long, value_name = "PATH")]
    pub ca_file: Option<String>,
    /// What to print.
    #[arg(long, value_enum, default_value = "cloud-conf")]
    pub format: ConfFormat,
    /// Namespace of the Cluster (management cluster), for the formats that carry its name.
    #[arg(short = 'n', long, value_name = "NAMESPACE", requires = "cluster")]
    pub namespace: Option<String>,
    /// Name of the Cluster, for the formats that carry its name.
    #[arg(long, value_name = "NAME", requires = "namespace")]
    pub cluster: Option<String>,
}

/// What `capoctl cloud-conf` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConfFormat {
    /// cloud.conf, byte for byte what upstream's create_cloud_conf.sh prints
    CloudConf,
    /// Helm values for the openstack-cloud-controller-manager chart (cluster.name, Secret cloud-config)
    OccmValues,
    /// Helm values for the openstack-cinder-csi chart (clusterID, Secret cloud-config)
    CinderCsiValues,
    /// CLUSTER_NAME=<name>, for `kubectl set env ... -e -` on cloud-provider-openstack's manifests
    Env,
}

impl ConfFormat {
    /// The value as written on the command line.
    fn name(self) -> &'static str {
        match self {
            Self::CloudConf => "cloud-conf",
            Self::OccmValues => "occm-values",
            Self::CinderCsiValues => "cinder-csi-values",
            Self::Env => "env",
        }
    }
}

/// Run a parsed command; returns what to print on stdout.
pub fn run(cli: Cli) -> Result<String> {
    match cli.command {
        Command::Env(args) => run_env(&args),
        Command::CloudConf(args) => run_cloud_conf(&args),
        Command::Inventory(args) => inventory::run(&inventory::InventoryOptions {
            kubeconfig: args.kubeconfig,
            namespace: args.namespace,
            cluster: args.cluster,
            vars: args.vars,
            write_to: args.write,
        }),
    }
}

fn run_env(args: &EnvArgs) -> Result<String> {
    let cloud = clouds::load(&args.cloud.clouds_yaml, &args.cloud.cloud)?;
    let os_password = std::env::var("OS_PASSWORD").ok();
    let vars = env::compute(&cloud, os_password.as_deref())?;
    Ok(env::format(&vars, args.format))
}

fn run_cloud_conf(args: &CloudConfArgs) -> Result<String> {
    let render: fn(&ClusterRef) -> String = match args.format {
        ConfFormat::CloudConf => return cloud_conf_file(args),
        ConfFormat::OccmValues => cloud_provider::occm_values,
        ConfFormat::CinderCsiValues => cloud_provider::cinder_csi_values,
        ConfFormat::Env => cloud_provider::env,
    };
    Ok(render(&cluster_ref(args)?))
}

/// `--format cloud-conf`: the cloud.conf of the selected cloud.
fn cloud_conf_file(args: &CloudConfArgs) -> Result<String> {
    if args.cluster.is_some() {
        // `requires` makes --namespace and --cluster come together.
        return Err(Error::Argument {
            arg: "--cluster",
            problem: "has no place in cloud.conf (the CCM and the CSI plugin take the cluster \
                      name as a flag): add --format occm-values, cinder-csi-values or env"
                .to_owned(),
        });
    }
    let missing = |arg, var| Error::Argument {
        arg,
        problem: format!("(or {var}) is required with --format cloud-conf"),
    };
    let clouds_yaml = (args.clouds_yaml.as_ref())
        .ok_or_else(|| missing("--clouds-yaml", "OS_CLIENT_CONFIG_FILE"))?;
    let cloud_name = (args.cloud.as_deref()).ok_or_else(|| missing("--cloud", "OS_CLOUD"))?;
    let cloud = clouds::load(clouds_yaml, cloud_name)?;
    let opts = cloud_conf::Options {
        password: None,
        ca_file: args.ca_file.as_deref(),
    };
    cloud_conf::render(&cloud, Flavor::CreateCloudConf, &opts)
}

/// The checked cluster of the formats that carry its name (and no credentials).
fn cluster_ref(args: &CloudConfArgs) -> Result<ClusterRef> {
    let format = args.format.name();
    if args.ca_file.is_some() {
        return Err(Error::Argument {
            arg: "--ca-file",
            problem: format!("is a cloud.conf line; --format {format} has no cloud.conf"),
        });
    }
    let (Some(namespace), Some(name)) = (&args.namespace, &args.cluster) else {
        return Err(Error::Argument {
            arg: "--namespace and --cluster",
            problem: format!("are required with --format {format}"),
        });
    };
    ClusterRef::new(namespace, name)
}

//! Command-line interface. Each subcommand is a variant of [`Command`] and a small `run_*`
//! function; later ones (`inventory`) slot in the same way.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::cloud_conf::{self, Flavor};
use crate::clouds;
use crate::env::{self, Format};
use crate::error::Result;
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
    /// Print cloud.conf for the external OpenStack cloud controller manager
    ///
    /// The same file upstream's templates/create_cloud_conf.sh prints.
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
    #[command(flatten)]
    #[allow(missing_docs)]
    pub cloud: CloudArgs,
    /// Add `ca-file="PATH"` (the CA bundle's path as the CCM sees it). Upstream's script never
    /// writes this line when run as a script, so it is off by default.
    #[arg(long, value_name = "PATH")]
    pub ca_file: Option<String>,
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
    let cloud = clouds::load(&args.cloud.clouds_yaml, &args.cloud.cloud)?;
    let opts = cloud_conf::Options {
        password: None,
        ca_file: args.ca_file.as_deref(),
    };
    cloud_conf::render(&cloud, Flavor::CreateCloudConf, &opts)
}

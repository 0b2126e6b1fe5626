//! OpenStackServer services: resolve image/flavor/server group, then ports (+trunks), volumes
//! and the Nova server, and delete them all again. Used by the machine and bastion controllers.
//!
//! Same guarantees as the cluster services (see the crate docs), with the owner being one
//! OpenStackServer ([`ServerOwner`]):
//! - ports and trunks carry the Neutron tag `capo-server-uid=<uid>`; servers and volumes carry
//!   the metadata key `capo-server-uid` (Cinder volumes have no tags);
//! - lookups go by recorded ID, else by deterministic name + ownership; an untagged resource
//!   with our name is upstream's (or ours from before a crash) and is adopted; another
//!   server's is never touched ([`crate::Error::ForeignResource`]);
//! - nothing waits: a server in BUILD, a volume `creating`, a server still being deleted are
//!   [`crate::Progress::Waiting`]; the caller records the ID and requeues;
//! - a POST whose reply was lost (`OutcomeUnknown`) returns a retryable error, and the rerun
//!   finds what it created by name + ownership instead of creating a second one.

pub mod delete;
pub mod owner;
pub mod ports;
pub mod resolve;
pub mod server;
pub mod volumes;

pub use delete::{Recorded, delete_server_resources};
pub use owner::ServerOwner;
pub use ports::{
    EnsuredPort, delete_duplicate_ports, ensure_port, ensure_ports, port_name, set_address_pairs,
};
pub use resolve::{
    find_image, resolve_flavor, resolve_image, resolve_network, resolve_security_group,
    resolve_server_group, resolve_subnet, subnet_and_network,
};
pub use server::{ServerRequest, delete_server, ensure_server, get_server, is_gone};
pub use volumes::{EnsuredVolume, VolumeSpec, ensure_volume, ensure_volumes, plan_volumes};

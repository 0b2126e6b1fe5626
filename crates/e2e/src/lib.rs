//! The end-to-end tier: the real Cluster API v1.14 controllers drive capo on capo-sim.
//!
//! One [`world::World`] per test binary, a [`management::Management`] cluster: a kube-apiserver
//! with Cluster API v1.14's CRDs, the core, kubeadm bootstrap and KubeadmControlPlane managers
//! with their conversion and admission webhooks (from `hack/capi.sh build`), the
//! workload-cluster emulator (Nodes, control-plane pods and etcd membership at each cluster's
//! endpoint), and capo's manager in-process. The `clusterctl move` scenario starts a second
//! management cluster as the move's target. Each
//! scenario ([`scenario::Scenario`]) takes a namespace and a capo-sim of its own, generates its
//! cluster with `clusterctl` from `templates/`, and ends by deleting the Cluster and checking the
//! cloud is empty. The fault soak ([`soak`], `capo-soak`, docs/soak.md) runs on the same
//! management cluster, with capo's manager as a child process it kills and restarts.
//!
//! The tier must run inside a network namespace with only a loopback interface
//! (`hack/e2e.sh` makes one): see docs/testing.md.

pub mod ansible;
pub mod child_manager;
pub mod cloud;
pub mod cluster;
pub mod installed;
pub mod management;
pub mod scenario;
pub mod soak;
pub mod world;

#!/usr/bin/env bash
# The project's demo command (README, line 1): capo end to end on this machine, driven by the real
# Cluster API controllers, no cloud needed. Sets up what is missing (the pinned kube-apiserver,
# etcd and kubectl, and Cluster API v1.14 with clusterctl and the workload-cluster emulator, built
# from the Go module proxy and cached, the first time only), builds capo-demo (crates/demo) and runs
# it: kube-apiserver + etcd, Cluster API's core, kubeadm bootstrap and KubeadmControlPlane managers,
# the workload-cluster emulator, capo's manager and capo-sim; `clusterctl generate cluster` from
# templates/cluster-template.yaml, applied unchanged; progress until the Cluster is Available; then
# Cluster API deletes it and the cloud is checked empty. See docs/demo.md.
#   hack/demo.sh            run and tear down
#   hack/demo.sh --keep     keep everything running until Ctrl-C (prints how to reach it)
#   hack/demo.sh --help     all options (timeout, cluster name, machine counts)
#
# Cluster API's managers listen on every interface (they have no flag to pick one), so, like
# hack/e2e.sh, the demo runs inside a fresh network namespace with only loopback up
# (`unshare --net`; as root, otherwise with --map-root-user). It is built outside first: crates.io
# is not reachable inside.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CAPO_CACHE_DIR:-$HOME/.cache/capo}/target}"
export CARGO_INCREMENTAL=0

say() { echo "demo: $*" >&2; }

if ! command -v cargo >/dev/null 2>&1; then
  say "cargo is missing; install Rust (https://rustup.rs), the toolchain is pinned by rust-toolchain.toml"
  exit 1
fi

bin="$CARGO_TARGET_DIR/debug/capo-demo"
build() {
  say "building capo-demo"
  cargo build --locked -p capo-demo --bin capo-demo
}

# --help needs neither the environment nor the namespace.
for arg in "$@"; do
  if [[ "$arg" == -h || "$arg" == --help || "$arg" == -V || "$arg" == --version ]]; then
    build
    exec "$bin" "$@"
  fi
done

for tool in unshare ip; do
  if ! command -v "$tool" >/dev/null; then
    say "$tool is missing; installing util-linux and iproute2"
    apt-get update -qq && apt-get install -y -qq util-linux iproute2 >/dev/null
  fi
done

say "test environment (kube-apiserver, etcd, kubectl; built once, then cached)"
CAPO_TEST_ENV_DIR="${CAPO_TEST_ENV_DIR:-$(hack/test-env.sh | tail -n 1)}"
say "Cluster API v1.14 (managers, clusterctl, workload-cluster emulator; built once, then cached)"
CAPO_CAPI_BUILD_DIR="${CAPO_CAPI_BUILD_DIR:-$(hack/capi.sh build | tail -n 1)}"
export CAPO_TEST_ENV_DIR CAPO_CAPI_BUILD_DIR

build

say "capo-demo${*:+ $*} (in a network namespace with only loopback)"
# Root can make a network namespace directly; anyone else needs a user namespace for it.
userns=()
[[ "$(id -u)" == 0 ]] || userns=(--map-root-user)
# CAPO_E2E_NETNS: the management cluster's check that it runs in such a namespace.
exec unshare --net "${userns[@]}" -- bash -c '
  ip link set lo up
  export CAPO_E2E_NETNS=1
  exec "$0" "$@"
' "$bin" "$@"

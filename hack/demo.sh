#!/usr/bin/env bash
# The project's demo command (README, line 1): capo end to end on this machine, no cloud needed.
# Sets up what is missing (pinned kube-apiserver/etcd/kubectl built from the Go module proxy and
# cached, the first time only), builds capoctl and runs `capoctl demo`, which starts capo-sim,
# kube-apiserver + etcd and capo-controller-manager, creates a 3+2 machine cluster, shows it
# become Ready with its endpoint and Ansible inventory, then tears everything down.
#   hack/demo.sh            run and tear down
#   hack/demo.sh --keep     keep everything running until Ctrl-C
#   hack/demo.sh --help     all options (timeout, cluster name, log verbosity)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "demo: cargo is missing; install Rust (https://rustup.rs), the toolchain is pinned by rust-toolchain.toml" >&2
  exit 1
fi

echo "==> test environment (kube-apiserver, etcd, kubectl, Cluster API and ORC CRDs)" >&2
CAPO_TEST_ENV_DIR="$(hack/test-env.sh | tail -n 1)"
export CAPO_TEST_ENV_DIR

echo "==> building capoctl" >&2
cargo build --locked -p capoctl --bin capoctl
bin="${CARGO_TARGET_DIR:-$PWD/target}/debug/capoctl"

echo "==> capoctl demo $*" >&2
exec "$bin" demo "$@"

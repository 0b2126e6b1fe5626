#!/usr/bin/env bash
# The end-to-end tier (docs/testing.md): the real Cluster API v1.14 controllers (core, kubeadm
# bootstrap, KubeadmControlPlane), clusterctl and the workload-cluster emulator drive capo's
# manager on capo-sim; the Ansible scenario adds the real Ansible bootstrap and control-plane
# providers. Builds what it needs (hack/test-env.sh, hack/capi.sh, hack/partners.sh: cached), then runs
# crates/e2e inside a fresh network namespace that has only a loopback interface: Cluster API's
# managers bind their webhook servers on every interface, which there means loopback only, and
# the clusters' endpoints are floating IPs from capo-sim's loopback external network.
#
#   hack/e2e.sh                      every scenario
#   hack/e2e.sh kcp_scaling          the scenarios whose name contains the filter (cargo's)
#   hack/e2e.sh clusterctl_move      the move scenario (crates/e2e/tests/move.rs)
#   hack/e2e.sh ansible_control      the Ansible providers' scenario (crates/e2e/tests/ansible.rs)
#   hack/e2e.sh demo_                the demo run as hack/demo.sh runs it (crates/demo/tests/demo.rs)
#
# CAPO_E2E_KEEP=1 keeps each scenario's logs (printed at the end of a failing scenario).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CAPO_CACHE_DIR:-$HOME/.cache/capo}/target}"
export CARGO_INCREMENTAL=0

say() { echo "e2e: $*" >&2; }

source hack/lib/netns.sh
netns_tools
netns_builds

# Build outside the namespace (crates.io is not reachable inside it).
cargo test --locked -p capo-e2e -p capo-testkit -p capo-demo --test scenarios --test move --test ansible --test capi --test demo --no-run

netns_exec bash -c '
  if [[ $# == 0 ]]; then
    # The test kit'"'"'s own check of the Cluster API launcher (conversion and admission webhooks).
    cargo test --offline --locked -p capo-testkit --test capi -- --nocapture
  fi
  # Each test binary is a process with its own management cluster(s): scenarios.rs shares one,
  # move.rs (clusterctl move) has a source and a target of its own, ansible.rs one with the
  # Ansible providers; the demo test runs the capo-demo binary (hack/demo.sh), which starts its own.
  exec cargo test --offline --locked --no-fail-fast -p capo-e2e -p capo-demo --test scenarios --test move --test ansible --test demo -- --test-threads 1 --nocapture "$@"
' e2e "$@"

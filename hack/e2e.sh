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
  tests=(cargo test --offline --locked --no-fail-fast -p capo-e2e -p capo-demo)
  if [[ $# != 0 ]]; then
    exec "${tests[@]}" --test scenarios --test move --test ansible --test demo -- --test-threads 1 --nocapture "$@"
  fi
  # The test kit'"'"'s own check of the Cluster API launcher (conversion and admission webhooks).
  cargo test --offline --locked -p capo-testkit --test capi -- --nocapture
  # Each test binary is a process with its own management cluster(s): scenarios.rs shares one
  # among its scenarios (run one at a time, so each one'"'"'s figures are its own), move.rs
  # (clusterctl move) has a source and a target, ansible.rs one with the Ansible providers; the
  # demo test runs the capo-demo binary (hack/demo.sh), which starts its own. Two lanes run side
  # by side, scenarios.rs and the others in turn: most of each lane is waiting on Cluster API'"'"'s
  # and the simulated cloud'"'"'s pace, and it keeps the tier about five minutes shorter. The second
  # lane'"'"'s output is printed after the first'"'"'s.
  lane="$(mktemp -t capo-e2e-lane.XXXXXX)"
  "${tests[@]}" --test move --test ansible --test demo -- --test-threads 1 --nocapture >"$lane" 2>&1 &
  other=$!
  status=0
  "${tests[@]}" --test scenarios -- --test-threads 1 --nocapture || status=$?
  wait "$other" || status=$?
  echo "--- move, ansible and demo (run beside the scenarios) ---"
  cat "$lane"
  rm -f "$lane"
  exit "$status"
' e2e "$@"

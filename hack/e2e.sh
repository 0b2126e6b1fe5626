#!/usr/bin/env bash
# The end-to-end tier (docs/testing.md): the real Cluster API v1.14 controllers (core, kubeadm
# bootstrap, KubeadmControlPlane), clusterctl and the workload-cluster emulator drive capo's
# manager on capo-sim; the Ansible scenario adds the real Ansible bootstrap and control-plane
# providers. Builds what it needs (hack/test-env.sh, hack/capi.sh, hack/partners.sh: cached), then runs
# crates/e2e inside a fresh network namespace that has only a loopback interface: Cluster API's
# managers bind their webhook servers on every interface, which there means loopback only, and
# the clusters' endpoints are floating IPs from capo-sim's loopback external network.
#
#   hack/e2e.sh                      every scenario, in three lanes at once (below)
#   hack/e2e.sh kcp_scaling          the scenarios whose name contains the filter (cargo's)
#   hack/e2e.sh clusterctl_move      the move scenario (crates/e2e/tests/move.rs)
#   hack/e2e.sh ansible_control      the Ansible providers' scenario (crates/e2e/tests/ansible.rs)
#   hack/e2e.sh demo_                the demo run as hack/demo.sh runs it (crates/demo/tests/demo.rs)
#
# CAPO_E2E_KEEP=1 keeps each scenario's logs (printed at the end of a failing scenario).
#
# Without a filter the tier runs as three lanes at once, each a test process with a management
# cluster of its own (so each lane's figures are its capo manager's alone): two halves of
# scenarios.rs, and the launcher check, move, Ansible and demo. Most of a scenario's time is
# waiting (Cluster API's ClusterCache retries a first failed connection after 30 s, and no flag
# shortens it), so the lanes share the two cores well; one after the other took 20 min. Each
# lane's 127.100.N.0/24 endpoint ranges start at its own base (CAPO_E2E_RANGE_BASE). A lane's
# output is printed when it ends, whole.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CAPO_CACHE_DIR:-$HOME/.cache/capo}/target}"
export CARGO_INCREMENTAL=0

say() { echo "e2e: $*" >&2; }

source hack/lib/netns.sh
netns_tools
netns_builds

# Build outside the namespace (crates.io is not reachable inside it).
build=(cargo test --locked -p capo-e2e -p capo-testkit -p capo-demo --test scenarios --test move
       --test ansible --test capi --test demo --no-run)
if [[ $# == 0 ]]; then
  # The same build also lists the test executables, run directly by the lanes (one cargo at a
  # time may hold the build directory): "<target> <package directory> <executable>" per line.
  # Compiler messages still go to stderr as usual.
  bins="$("${build[@]}" --message-format=json-render-diagnostics |
    python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], os.path.dirname(m["manifest_path"]), m["executable"])
')"
  export CAPO_E2E_BINS="$bins"
  netns_exec bash hack/lib/e2e-lanes.sh
else
  # A filter: the matching tests one after the other, through cargo.
  "${build[@]}"
  netns_exec bash -c '
  # Each test binary is a process with its own management cluster(s): scenarios.rs shares one,
  # move.rs (clusterctl move) has a source and a target of its own, ansible.rs one with the
  # Ansible providers; the demo test runs the capo-demo binary (hack/demo.sh), which starts its own.
  exec cargo test --offline --locked --no-fail-fast -p capo-e2e -p capo-demo --test scenarios --test move --test ansible --test demo -- --test-threads 1 --nocapture "$@"
' e2e "$@"
fi

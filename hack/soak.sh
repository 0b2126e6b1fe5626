#!/usr/bin/env bash
# The fault soak (docs/soak.md): several clusters go through create → scale → delete cycles under
# the real Cluster API controllers while capo-sim injects random OpenStack faults and capo's
# manager, a child process, is SIGKILLed at random moments; after every step the cloud must hold
# exactly what the objects describe. Same setup as hack/e2e.sh (hack/lib/netns.sh): built outside,
# run in a network namespace with only loopback.
#
#   hack/soak.sh                                   2 clusters x 2 cycles (the CI setting)
#   hack/soak.sh --clusters 4 --cycles 50          a long run
#   hack/soak.sh --seed 42                         replay a schedule (the seed is printed)
#   hack/soak.sh --help                            every setting (fault and kill intervals, ...)
#
# Exits non-zero on any leak, duplicate, unsettled step, unfinished deletion or manager crash.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CAPO_CACHE_DIR:-$HOME/.cache/capo}/target}"
export CARGO_INCREMENTAL=0

say() { echo "soak: $*" >&2; }

source hack/lib/netns.sh
netns_tools
netns_builds

# Build outside the namespace (crates.io is not reachable inside it).
cargo build --locked -p capo-manager --bin capo-controller-manager -p capo-e2e --bin capo-soak

bin="$CARGO_TARGET_DIR/debug"
netns_exec "$bin/capo-soak" --manager "$bin/capo-controller-manager" "$@"

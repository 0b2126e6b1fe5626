#!/usr/bin/env bash
# Side-by-side benchmark of upstream CAPO v0.14.7 and capo on capo-sim (docs/bench.md):
#
#   hack/bench.sh [capo-bench arguments]      e.g. --clusters 10 --machines 10
#
# Builds what it needs (capo's manager and capo-bench with cargo; upstream's manager from the Go
# module proxy through hack/upstream-capo.sh build; kube-apiserver and etcd through
# hack/test-env.sh; all cached), then runs capo-bench inside a private network namespace whose
# only interface is loopback: upstream's webhook server listens on every interface.
#
# Environment:
#   CAPO_BENCH_PROFILE     release (default) or debug: how capo's manager and capo-bench are built
#   CAPO_BENCH_NO_NETNS    do not run inside a private network namespace
#   CAPO_CACHE_DIR         cache root (default ~/.cache/capo)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

say() { echo "bench: $*" >&2; }
die() { say "$*"; exit 1; }

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CAPO_CACHE_DIR:-$HOME/.cache/capo}/target}"
export CARGO_INCREMENTAL=0
profile="${CAPO_BENCH_PROFILE:-release}"
case "$profile" in
  release) cargo_profile=(--release) ;;
  debug) cargo_profile=() ;;
  *) die "CAPO_BENCH_PROFILE must be release or debug, not $profile" ;;
esac

CAPO_TEST_ENV_DIR="$(hack/test-env.sh | tail -n 1)"
CAPO_UPSTREAM_DIR="$(hack/upstream-capo.sh build | tail -n 1)"
say "building capo-controller-manager and capo-bench ($profile)"
cargo build --locked "${cargo_profile[@]}" -p capo-manager -p capo-bench >&2
bin="$CARGO_TARGET_DIR/$profile"
export CAPO_TEST_ENV_DIR CAPO_UPSTREAM_DIR
export CAPO_MANAGER_BIN="$bin/capo-controller-manager"
# capo's CRDs of this checkout (not those of the checkout that built the binary).
export CAPO_TEST_CRD_DIR="$repo/config/crd/bases"
bench=("$bin/capo-bench" "$@")

if [[ -n "${CAPO_BENCH_NO_NETNS:-}" ]]; then
  say "WARNING: CAPO_BENCH_NO_NETNS set: upstream's webhook server listens on all interfaces"
  exec "${bench[@]}"
fi
userns=()
[[ $(id -u) == 0 ]] || userns=(--map-root-user)
unshare "${userns[@]}" --net true 2>/dev/null ||
  die "cannot create a network namespace (unshare --net); set CAPO_BENCH_NO_NETNS=1 to run without one"
exec unshare "${userns[@]}" --net -- bash -c 'ip link set lo up && exec "$@"' bash "${bench[@]}"

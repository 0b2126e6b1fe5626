#!/usr/bin/env bash
# Runs the upstream Go provider, CAPO (sigs.k8s.io/cluster-api-provider-openstack), against capo-sim:
# a fidelity check of the simulator by a client it was not written with.
#
#   hack/upstream-capo.sh build      build (once) and print the directory holding
#                                    bin/capo-upstream and crds/*.yaml (upstream's CRDs)
#   hack/upstream-capo.sh scenario   create a cluster and two machines with the upstream manager on
#                                    capo-sim, delete everything, check nothing is left (see
#                                    docs/upstream-capo.md); exits non-zero on any failure
#   hack/upstream-capo.sh --update   regenerate hack/upstream-capo/mod/go.{mod,sum} from the version
#                                    below (to bump: edit CAPO_VERSION, run --update, commit the files)
#
# Only the Go module proxy is needed. The manager is built from the module pinned by
# hack/upstream-capo/mod/go.{mod,sum}, so every download is checked against a hash in the repository;
# the result is cached under a key made of the version, the Go version and those files' hash.
# The last line of stdout of `build` is the directory. Progress goes to stderr, build output to
# <cache>/build.log.
#
# Environment:
#   CAPO_CACHE_DIR         cache root (default ~/.cache/capo); builds live in upstream-capo/<key>
#   CAPO_UPSTREAM_JOBS     go build parallelism (default 2)
#   CAPO_SIM_BIN           capo-sim binary (default <cache>/target/debug/capo-sim)
#   CAPO_UPSTREAM_KEEP     scenario: keep the work directory (logs, kubeconfig) even on success
#   CAPO_UPSTREAM_NO_NETNS scenario: do not run inside a private network namespace (see below)
set -euo pipefail

CAPO_VERSION=v0.14.7  # sigs.k8s.io/cluster-api-provider-openstack
RECIPE=1              # bump when the recipe below changes the output

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$repo/hack/upstream-capo"
cache="${CAPO_CACHE_DIR:-$HOME/.cache/capo}"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=mod"

say() { echo "upstream-capo: $*" >&2; }
die() { say "$*"; exit 1; }

build() {
  local update=$1
  command -v go >/dev/null || die "the Go toolchain (1.24 or newer) is required on PATH"
  local go_version pins key root out
  go_version=$(go env GOVERSION)
  pins=$({ cat "$here"/mod/go.mod "$here"/mod/go.sum 2>/dev/null || true; } | sha256sum | cut -c1-12)
  key="capo-${CAPO_VERSION}_${go_version}_r${RECIPE}-${pins}"
  root="$cache/upstream-capo"
  out="$root/$key"
  ready() { [[ -x "$out/bin/capo-upstream" && -d "$out/crds" ]]; }
  if ! $update && ready; then echo "$out"; return; fi

  mkdir -p "$root"
  # One build at a time per cache; a second caller waits and then finds the result.
  exec 9>"$root/.lock"
  flock 9
  if ! $update && ready; then echo "$out"; return; fi

  local log="$root/build.log" jobs="${CAPO_UPSTREAM_JOBS:-2}"
  : >"$log"
  run() { "$@" >>"$log" 2>&1 || { say "failed: $* (log: $log)"; tail -n 40 "$log" >&2; exit 1; }; }

  if $update; then
    say "regenerating $here/mod from $CAPO_VERSION"
    mkdir -p "$here/mod"
    rm -f "$here/mod/go.sum"
    printf 'module capo.test/upstream-capo\n\ngo 1.24.0\n\nrequire sigs.k8s.io/cluster-api-provider-openstack %s\n' \
      "$CAPO_VERSION" >"$here/mod/go.mod"
    # `go get` adds upstream's own requirements (it has no replace directives) and fills go.sum.
    (cd "$here/mod" && run go get "sigs.k8s.io/cluster-api-provider-openstack@${CAPO_VERSION}")
  else
    grep -q "sigs.k8s.io/cluster-api-provider-openstack ${CAPO_VERSION}\b" "$here/mod/go.mod" ||
      die "hack/upstream-capo/mod/go.mod does not match $CAPO_VERSION; run $0 --update"
  fi

  # Global: the EXIT trap runs after this function returns.
  work=$(mktemp -d "$root/.build-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/out/bin" "$work/out/crds"

  say "building the upstream manager $CAPO_VERSION (first run only; several minutes)"
  local started=$SECONDS
  # -mod=mod would let go add missing requirements; the pins must already be complete, so check
  # that the files are unchanged afterwards.
  local before
  before=$(cat "$here/mod/go.mod" "$here/mod/go.sum" | sha256sum)
  (cd "$here/mod" && run nice -n 10 go build -p "$jobs" -trimpath "-ldflags=-s -w" \
    -o "$work/out/bin/capo-upstream" sigs.k8s.io/cluster-api-provider-openstack)
  if ! $update && [[ "$(cat "$here/mod/go.mod" "$here/mod/go.sum" | sha256sum)" != "$before" ]]; then
    die "the build changed hack/upstream-capo/mod/go.{mod,sum}; run $0 --update and commit"
  fi
  say "built in $((SECONDS - started)) s"

  local dir
  dir=$(cd "$here/mod" && go mod download -json "sigs.k8s.io/cluster-api-provider-openstack" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d "$dir/config/crd/bases" ]] || die "could not find upstream's module directory"
  cp "$dir"/config/crd/bases/*.yaml "$work/out/crds/"
  chmod -R u+w "$work/out"
  "$work/out/bin/capo-upstream" --version >>"$log" 2>&1 || true

  if $update; then
    pins=$(cat "$here"/mod/go.mod "$here"/mod/go.sum | sha256sum | cut -c1-12)
    key="capo-${CAPO_VERSION}_${go_version}_r${RECIPE}-${pins}"
    out="$root/$key"
    rm -rf "$out"
  fi
  mv -T "$work/out" "$out"
  say "ready: $out"
  echo "$out"
}

scenario() {
  local test_env upstream sim
  test_env=$("$repo/hack/test-env.sh" | tail -n 1)
  upstream=$(build false | tail -n 1)
  sim="${CAPO_SIM_BIN:-$cache/target/debug/capo-sim}"
  [[ -x "$sim" ]] || die "capo-sim not found at $sim (build it: cargo build -p capo-sim, or set CAPO_SIM_BIN)"
  local driver=("python3" "$here/scenario.py" --test-env "$test_env" --upstream "$upstream" --sim "$sim" --manifests "$here")
  # The manager's webhook server has no flag for its host and listens on every interface
  # (controller-runtime's webhook.Options.Host is left empty by main.go). A private network
  # namespace, whose only interface is loopback, keeps it and everything else unreachable.
  if [[ -n "${CAPO_UPSTREAM_NO_NETNS:-}" ]]; then
    say "WARNING: CAPO_UPSTREAM_NO_NETNS set: the manager's webhook server listens on all interfaces"
    exec "${driver[@]}"
  fi
  local userns=()
  [[ $(id -u) == 0 ]] || userns=(--map-root-user)
  unshare "${userns[@]}" --net true 2>/dev/null ||
    die "cannot create a network namespace (unshare --net); set CAPO_UPSTREAM_NO_NETNS=1 to run without one"
  exec unshare "${userns[@]}" --net -- bash -c 'ip link set lo up && exec "$@"' bash "${driver[@]}"
}

case "${1:-}" in
  build) build false ;;
  --update) build true ;;
  scenario) scenario ;;
  *) die "usage: $0 build|scenario|--update" ;;
esac

#!/usr/bin/env bash
# Builds (once) and prints the directory of a pinned Cluster API release for end-to-end tests:
#   <dir>/bin/cluster-api-manager             sigs.k8s.io/cluster-api/core
#   <dir>/bin/kubeadm-bootstrap-manager       sigs.k8s.io/cluster-api/bootstrap/kubeadm
#   <dir>/bin/kubeadm-control-plane-manager   sigs.k8s.io/cluster-api/controlplane/kubeadm
#   <dir>/bin/clusterctl                      sigs.k8s.io/cluster-api/cmd/clusterctl
#   <dir>/bin/capo-workload-emulator          hack/capi/emulator (what kubeadm, the kubelets and the
#                                             cloud controller manager would make appear in a
#                                             workload cluster; see hack/capi/emulator/main.go)
#   <dir>/config/{core,bootstrap,controlplane}/crds/*.yaml            the providers' CRDs (bases,
#                                             with the contract labels their kustomizations add)
#   <dir>/config/{core,bootstrap,controlplane}/webhook/manifests.yaml their webhook configurations
#   <dir>/VERSION                             the Cluster API version
# The last line of stdout is <dir>. Progress goes to stderr, build output to <cache>/capi/build.log.
#
# Only the Go module proxy is needed. Every module is pinned by hack/capi/go.{mod,sum} (the Cluster
# API binaries are `tool` entries of that module, so their dependencies are pinned too), and the
# result is cached under a key made of the version, the Go version, the recipe number and the hash
# of the files under hack/capi/. A cached run only computes the key.
#
#   hack/capi.sh build            build if needed, print the directory
#   hack/capi.sh build --update   regenerate hack/capi/go.{mod,sum} from the version below, then build
#                                 (to bump the version: edit it here, run --update, commit the files)
#
# Environment:
#   CAPO_CACHE_DIR   cache root (default ~/.cache/capo); builds live in capi/<key>
#   CAPO_CAPI_JOBS   go build parallelism (default 2)
set -euo pipefail

CAPI_VERSION=v1.14.2   # sigs.k8s.io/cluster-api, .../api and .../test (the in-memory workload cluster)
RECIPE=2               # bump when the recipe below changes the output

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$repo/hack/capi"
# Same rules as hack/test-env.sh: the installed toolchain only, no workspace, static binaries, no
# VCS stamping.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-buildvcs=false"

say() { echo "capi: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { die "usage: $0 build [--update]"; }

# shellcheck source=hack/lib/cache.sh
source "$repo/hack/lib/cache.sh"
build_args "$@"

command -v go >/dev/null || die "the Go toolchain (1.26 or newer: Cluster API ${CAPI_VERSION} says go 1.26) is required on PATH, but 'go' was not found"
command -v flock >/dev/null || die "'flock' (util-linux) is required on PATH"

# --- the cache key: cheap enough to compute on every call -------------------------------------
go_version=$(go env GOVERSION)
make_key() { key="capi-${CAPI_VERSION}_${go_version}_r${RECIPE}-$(hash_inputs "$here")"; }
make_key
root="${CAPO_CACHE_DIR:-$HOME/.cache/capo}/capi"
out="$root/$key"
bins=(cluster-api-manager kubeadm-bootstrap-manager kubeadm-control-plane-manager clusterctl capo-workload-emulator)
ready() {
  local b
  for b in "${bins[@]}"; do [[ -x "$out/bin/$b" ]] || return 1; done
  [[ -f "$out/VERSION" && -f "$out/config/core/webhook/manifests.yaml" && -d "$out/config/controlplane/crds" ]]
}

cache_lock_or_exit
jobs="${CAPO_CAPI_JOBS:-2}"

# --- --update: write go.mod from the pinned version, let `go mod tidy` fill in the rest ---------
# The test module's go.mod replaces the root and api modules with ../ paths, which Go ignores in a
# dependency, so this module requires all three explicitly. The four Cluster API programs are
# `tool` entries, which makes `go mod tidy` pin their dependencies too.
if $update; then
  say "regenerating $here/go.{mod,sum} for Cluster API ${CAPI_VERSION}"
  rm -f "$here/go.sum"
  cat >"$here/go.mod" <<EOF
module capo.test/capi

go 1.26.0

require (
	sigs.k8s.io/cluster-api ${CAPI_VERSION}
	sigs.k8s.io/cluster-api/api ${CAPI_VERSION}
	sigs.k8s.io/cluster-api/test ${CAPI_VERSION}
)

tool (
	sigs.k8s.io/cluster-api/bootstrap/kubeadm
	sigs.k8s.io/cluster-api/cmd/clusterctl
	sigs.k8s.io/cluster-api/controlplane/kubeadm
	sigs.k8s.io/cluster-api/core
)
EOF
  (cd "$here" && run go mod tidy)
  # The key depends on the files just written.
  make_key
  out="$root/$key"
  mod_mode=mod
else
  for m in sigs.k8s.io/cluster-api sigs.k8s.io/cluster-api/api sigs.k8s.io/cluster-api/test; do
    grep -Eq "^[[:space:]]*$m ${CAPI_VERSION}( |\$)" "$here/go.mod" ||
      die "hack/capi/go.mod does not pin $m ${CAPI_VERSION}; run $0 build --update"
  done
  mod_mode=readonly
fi

work=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out/bin"

# Stamped like the release build does, so the managers log and clusterctl reports the release
# rather than a development placeholder.
minor=${CAPI_VERSION#v1.}
minor=${minor%%.*}
capi_ldflags="-s -w"
for kv in gitVersion=${CAPI_VERSION} gitMajor=1 gitMinor=${minor} gitTreeState=clean; do
  capi_ldflags+=" -X sigs.k8s.io/cluster-api/version.${kv}"
done
build() { # <output name> <package>
  local started=$SECONDS
  (cd "$here" && run go build -mod="$mod_mode" -p "$jobs" -trimpath "-ldflags=${capi_ldflags}" -o "$work/out/bin/$1" "$2")
  say "built $1 in $((SECONDS - started)) s"
}

# The core manager first: it is the one every end-to-end test needs.
say "building Cluster API ${CAPI_VERSION} (first run only; several minutes on 2 cores)"
build cluster-api-manager sigs.k8s.io/cluster-api/core
build kubeadm-bootstrap-manager sigs.k8s.io/cluster-api/bootstrap/kubeadm
build kubeadm-control-plane-manager sigs.k8s.io/cluster-api/controlplane/kubeadm
build clusterctl sigs.k8s.io/cluster-api/cmd/clusterctl

# Inside the module the version comes from go.mod and the hash from go.sum.
capi=$(cd "$here" && go mod download -json sigs.k8s.io/cluster-api | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n "$capi" && -d "$capi/core/config/crd/bases" ]] || die "could not find the sigs.k8s.io/cluster-api module directory"
# The CRDs are the bases, plus the labels the provider's crd/kustomization.yaml adds: the bootstrap
# and control plane providers' contract labels (cluster.x-k8s.io/v1beta2: v1beta2, ...), without
# which the core controllers cannot resolve a KubeadmControlPlane or KubeadmConfigTemplate. No
# conversion webhook stanza is added (every object is used at its storage version).
for part in core:core bootstrap:bootstrap/kubeadm controlplane:controlplane/kubeadm; do
  name=${part%%:*}
  src="$capi/${part#*:}/config"
  mkdir -p "$work/out/config/$name/crds" "$work/out/config/$name/webhook"
  labels=$(sed -n 's/^[[:space:]]*\(cluster\.x-k8s\.io\/v1beta[0-9]*: v1beta[0-9]*\)[[:space:]]*$/\1/p' "$src/crd/kustomization.yaml")
  [[ "$name" == core || -n "$labels" ]] || die "no contract labels in $src/crd/kustomization.yaml"
  for crd in "$src"/crd/bases/*.yaml; do
    if [[ -n "$labels" ]]; then
      grep -q '^  labels:' "$crd" && die "$crd already has labels; the recipe needs updating"
      awk -v labels="$labels" '
        { print }
        /^metadata:$/ && !done { print "  labels:"; n = split(labels, l, "\n"); for (i = 1; i <= n; i++) print "    " l[i]; done = 1 }
      ' "$crd" >"$work/out/config/$name/crds/${crd##*/}"
    else
      cp "$crd" "$work/out/config/$name/crds/"
    fi
  done
  cp "$src/webhook/manifests.yaml" "$work/out/config/$name/webhook/"
done
echo "$CAPI_VERSION" >"$work/out/VERSION"

build capo-workload-emulator ./emulator
chmod -R u+w "$work/out"

CLUSTERCTL_DISABLE_VERSIONCHECK=true "$work/out/bin/clusterctl" version >>"$log" 2>&1 || true

# Publish atomically: readers see nothing or the complete directory.
rm -rf "$out"
mv -T "$work/out" "$out"
say "ready: $out"
echo "$out"

#!/usr/bin/env bash
# Builds (once) and prints the directory of a pinned Kubernetes test environment:
#   <dir>/bin/{kube-apiserver,etcd,kubectl}   built from upstream Go modules
#   <dir>/crds/*.yaml                          Cluster API (core, kubeadm) and ORC CRDs, copied from their modules
# The last line of stdout is <dir>. Progress goes to stderr, build output to <cache>/build.log.
#
# Only the Go module proxy is needed (no GitHub, no dl.k8s.io). Every module is pinned by the
# go.mod/go.sum files under hack/test-env/, so each download is checked against a hash in the
# repository, and the result is cached under a key made of the versions, the Go version and
# those files' hash.
#
#   hack/test-env.sh            build if needed, print the directory
#   hack/test-env.sh --update   regenerate hack/test-env/*/go.{mod,sum} from the versions below
#                               (to bump a version: edit it here, run --update, commit the files)
#
# Environment:
#   CAPO_CACHE_DIR        cache root (default ~/.cache/capo); environments live in test-env/<key>
#   CAPO_TEST_ENV_JOBS    go build parallelism (default 2; the build is CPU and memory hungry)
set -euo pipefail

K8S_VERSION=v1.34.3          # kube-apiserver, kubectl
K8S_STAGING_VERSION=v0.34.3  # k8s.io/* staging modules released with K8S_VERSION
ETCD_VERSION=v3.6.8          # etcd 3.6 is what Kubernetes 1.34 is tested with
CAPI_VERSION=v1.12.5         # Cluster API CRDs
ORC_VERSION=v2.4.0           # ORC Image CRD (the ORC v2.4 API that CAPO v0.14 reads)
RECIPE=4                     # bump when the recipe below changes the output

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/test-env"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-buildvcs=false"

say() { echo "test-env: $*" >&2; }
die() { say "$*"; exit 1; }

update=false
case "${1:-}" in
  --update) update=true ;;
  "") ;;
  *) die "usage: $0 [--update]" ;;
esac

command -v go >/dev/null || die "the Go toolchain (1.24 or newer) is required on PATH"

# --- the cache key: cheap enough to compute on every call (<1 s when cached) ---------------
go_version=$(go env GOVERSION)
pins=$({ cat "$here"/*/go.mod "$here"/*/go.sum 2>/dev/null || true; } | sha256sum | cut -c1-12)
key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_capi-${CAPI_VERSION}_orc-${ORC_VERSION}_${go_version}_r${RECIPE}-${pins}"
root="${CAPO_CACHE_DIR:-$HOME/.cache/capo}/test-env"
out="$root/$key"
ready() { [[ -x "$out/bin/kube-apiserver" && -x "$out/bin/etcd" && -x "$out/bin/kubectl" && -d "$out/crds" ]]; }

# shellcheck source=hack/lib/cache.sh
source "${here%/*}/lib/cache.sh"
cache_lock_or_exit
jobs="${CAPO_TEST_ENV_JOBS:-2}"

# --- --update: write the go.mod files from the pinned versions; go.sum is filled by the build --
write_modules() {
  # k8s.io/kubernetes replaces its staging modules with ./staging paths, which Go ignores in a
  # dependency, so this module replaces each of them with its published version.
  local k8s_mod
  k8s_mod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [[ -n "$k8s_mod" ]] || die "could not download k8s.io/kubernetes@${K8S_VERSION}"
  mkdir -p "$here/k8s" "$here/etcd" "$here/crds"
  rm -f "$here"/*/go.sum
  {
    printf 'module capo.test/test-env/k8s\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$K8S_VERSION"
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"${K8S_STAGING_VERSION}"'#p' "$k8s_mod"
    printf ')\n'
  } >"$here/k8s/go.mod"
  printf 'module capo.test/test-env/etcd\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$here/etcd/go.mod"
  printf 'module capo.test/test-env/crds\n\ngo 1.24.0\n\nrequire (\n\tgithub.com/k-orc/openstack-resource-controller/v2 %s\n\tsigs.k8s.io/cluster-api %s\n)\n' \
    "$ORC_VERSION" "$CAPI_VERSION" >"$here/crds/go.mod"
}

if $update; then
  say "regenerating $here from the pinned versions"
  write_modules
  mod_mode=mod
else
  grep -q "k8s.io/kubernetes ${K8S_VERSION}\$" "$here/k8s/go.mod" &&
    grep -q "go.etcd.io/etcd/server/v3 ${ETCD_VERSION}\$" "$here/etcd/go.mod" &&
    grep -q "sigs.k8s.io/cluster-api ${CAPI_VERSION}\$" "$here/crds/go.mod" ||
    die "hack/test-env/*/go.mod do not match the versions in $0; run $0 --update"
  mod_mode=readonly
fi

work=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out/bin" "$work/out/crds"

# Stamped the way Kubernetes' own build does, so /version and the compatibility (emulation)
# version say 1.34 rather than a development placeholder.
# shellcheck source=hack/lib/k8s.sh
source "$here/../lib/k8s.sh"
ldflags=$(k8s_ldflags "$K8S_VERSION")

say "building kube-apiserver and kubectl ${K8S_VERSION} (first run only; several minutes)"
for cmd in kube-apiserver kubectl; do
  (cd "$here/k8s" && run go build -mod="$mod_mode" -p "$jobs" -trimpath "-ldflags=${ldflags}" \
    -o "$work/out/bin/$cmd" "k8s.io/kubernetes/cmd/$cmd")
done

say "building etcd ${ETCD_VERSION}"
(cd "$here/etcd" && run go build -mod="$mod_mode" -p "$jobs" -trimpath "-ldflags=-s -w" \
  -o "$work/out/bin/etcd" go.etcd.io/etcd/server/v3)

say "extracting Cluster API ${CAPI_VERSION} and ORC ${ORC_VERSION} CRDs"
# Inside the crds module the versions come from its go.mod and the hashes from its go.sum.
module_dir() {
  (cd "$here/crds" && go mod download -json "$1") | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
if $update; then
  (cd "$here/crds" && run go mod download -json sigs.k8s.io/cluster-api github.com/k-orc/openstack-resource-controller/v2)
fi
capi=$(module_dir sigs.k8s.io/cluster-api)
orc=$(module_dir github.com/k-orc/openstack-resource-controller/v2)
[[ -d "$capi" && -d "$orc" ]] || die "could not download the Cluster API or ORC module"
# Core objects the controllers read, plus the kinds cluster templates (templates/) use or users
# commonly add: kubeadm bootstrap/control plane, ClusterClass, MachineHealthCheck.
for f in config/crd/bases/cluster.x-k8s.io_clusters config/crd/bases/cluster.x-k8s.io_machines \
  config/crd/bases/cluster.x-k8s.io_machinesets config/crd/bases/cluster.x-k8s.io_machinedeployments \
  config/crd/bases/ipam.cluster.x-k8s.io_ipaddressclaims config/crd/bases/ipam.cluster.x-k8s.io_ipaddresses \
  config/crd/bases/cluster.x-k8s.io_clusterclasses config/crd/bases/cluster.x-k8s.io_machinehealthchecks \
  bootstrap/kubeadm/config/crd/bases/bootstrap.cluster.x-k8s.io_kubeadmconfigs \
  bootstrap/kubeadm/config/crd/bases/bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates \
  controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanes \
  controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanetemplates; do
  cp "$capi/$f.yaml" "$work/out/crds/"
done
cp "$orc/config/crd/bases/openstack.k-orc.cloud_images.yaml" "$work/out/crds/"
chmod -R u+w "$work/out"

"$work/out/bin/kube-apiserver" --version >>"$log" 2>&1
"$work/out/bin/etcd" --version >>"$log" 2>&1

if $update; then
  # The key depends on the files just written; recompute it.
  pins=$(cat "$here"/*/go.mod "$here"/*/go.sum | sha256sum | cut -c1-12)
  key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_capi-${CAPI_VERSION}_orc-${ORC_VERSION}_${go_version}_r${RECIPE}-${pins}"
  out="$root/$key"
  rm -rf "$out"
fi
# Publish atomically: readers see nothing or the complete directory.
mv -T "$work/out" "$out"
say "ready: $out"
echo "$out"

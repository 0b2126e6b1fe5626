#!/usr/bin/env bash
# Builds (once) and prints the directory of a pinned Kubernetes test environment:
#   <dir>/bin/{kube-apiserver,etcd,kubectl}   built from the Go module proxy
#   <dir>/crds/*.yaml                          Cluster API and ORC CRDs, copied from their modules
# The last line of stdout is <dir>. Build chatter goes to stderr and to <cache>/build.log.
#
# Only the Go module proxy is needed (no GitHub, no dl.k8s.io): each binary is built from its
# upstream module at a pinned version, so the result is reproducible and cached by version.
#
# Environment:
#   CAPO_CACHE_DIR   cache root (default ~/.cache/capo); the environment lives in test-env/<key>
#   CAPO_TEST_ENV_JOBS  go build parallelism (default 2; the build is memory and CPU hungry)
set -euo pipefail

K8S_VERSION=v1.34.3          # kube-apiserver, kubectl
K8S_STAGING_VERSION=v0.34.3  # k8s.io/* staging modules matching K8S_VERSION
ETCD_VERSION=v3.6.8          # etcd 3.6 is what Kubernetes 1.34 is tested with
CAPI_VERSION=v1.12.5         # Cluster API CRDs
ORC_VERSION=v2.4.0           # ORC Image CRD (ORC v2.4 is what CAPO v0.14 depends on)
RECIPE=2                     # bump when the recipe below changes the output

export GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false" GOWORK=off CGO_ENABLED=0

go_version=$(go env GOVERSION)
key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_capi-${CAPI_VERSION}_orc-${ORC_VERSION}_${go_version}_r${RECIPE}"
root="${CAPO_CACHE_DIR:-$HOME/.cache/capo}/test-env"
out="$root/$key"

if [[ -x "$out/bin/kube-apiserver" && -x "$out/bin/etcd" && -x "$out/bin/kubectl" && -d "$out/crds" ]]; then
  echo "$out"
  exit 0
fi

mkdir -p "$root"
work=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
log="$root/build.log"
: >"$log"
jobs="${CAPO_TEST_ENV_JOBS:-2}"
build_flags=(-p "$jobs" -trimpath "-ldflags=-s -w")

say() { echo "test-env: $*" >&2; }
run() { "$@" >>"$log" 2>&1 || { say "failed: $* (log: $log)"; tail -n 40 "$log" >&2; exit 1; }; }

# Path of a module in the module cache (downloads it through the proxy if needed).
module_dir() {
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

mkdir -p "$work/out/bin" "$work/out/crds" "$work/k8s" "$work/etcd"

say "building kube-apiserver and kubectl ${K8S_VERSION} (first run only; several minutes)"
# k8s.io/kubernetes replaces its staging modules with ./staging paths, which Go ignores in a
# dependency, so the main module has to replace each of them with its published version.
k8s_mod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[[ -n "$k8s_mod" ]] || { say "could not download k8s.io/kubernetes@${K8S_VERSION}"; exit 1; }
{
  echo "module capo.test/test-env/k8s"
  echo
  echo "go 1.24.0"
  echo
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo
  echo "replace ("
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"${K8S_STAGING_VERSION}"'#p' "$k8s_mod"
  echo ")"
} >"$work/k8s/go.mod"
# Stamp the version the way Kubernetes' own build does, so /version and the compatibility
# (emulation) version report 1.34 instead of a development placeholder.
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=${K8S_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor} -X $pkg.gitTreeState=clean"
done
k8s_flags=(-p "$jobs" -trimpath "-ldflags=${k8s_ldflags}")
(cd "$work/k8s" && run go build "${k8s_flags[@]}" -o "$work/out/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
(cd "$work/k8s" && run go build "${k8s_flags[@]}" -o "$work/out/bin/kubectl" k8s.io/kubernetes/cmd/kubectl)

say "building etcd ${ETCD_VERSION}"
printf 'module capo.test/test-env/etcd\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$work/etcd/go.mod"
(cd "$work/etcd" && run go build "${build_flags[@]}" -o "$work/out/bin/etcd" go.etcd.io/etcd/server/v3)

say "extracting Cluster API ${CAPI_VERSION} and ORC ${ORC_VERSION} CRDs"
capi=$(cd "$work/k8s" && module_dir "sigs.k8s.io/cluster-api@${CAPI_VERSION}")
orc=$(cd "$work/k8s" && module_dir "github.com/k-orc/openstack-resource-controller/v2@${ORC_VERSION}")
for f in cluster.x-k8s.io_clusters cluster.x-k8s.io_machines cluster.x-k8s.io_machinesets \
  cluster.x-k8s.io_machinedeployments ipam.cluster.x-k8s.io_ipaddressclaims ipam.cluster.x-k8s.io_ipaddresses; do
  cp "$capi/config/crd/bases/$f.yaml" "$work/out/crds/"
done
cp "$orc/config/crd/bases/openstack.k-orc.cloud_images.yaml" "$work/out/crds/"
chmod -R u+w "$work/out"

"$work/out/bin/kube-apiserver" --version >>"$log" 2>&1
"$work/out/bin/etcd" --version >>"$log" 2>&1

# Publish atomically: a concurrent run either sees nothing or the complete directory.
if ! mv -T "$work/out" "$out" 2>/dev/null; then
  [[ -x "$out/bin/kube-apiserver" ]] || { say "could not publish $out"; exit 1; }
fi
say "ready: $out"
echo "$out"

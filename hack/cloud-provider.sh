#!/usr/bin/env bash
# Builds (once) and prints the directory of a pinned cloud-provider-openstack and the Kubernetes CSI
# sidecars it needs, for tests that run them against the real OpenStack services
# (hack/openstack-env.sh) and a test kube-apiserver (see crates/testkit/src/cloud_provider.rs):
#   <dir>/bin/openstack-cloud-controller-manager  k8s.io/cloud-provider-openstack/cmd/openstack-cloud-controller-manager
#   <dir>/bin/cinder-csi-plugin                   k8s.io/cloud-provider-openstack/cmd/cinder-csi-plugin
#   <dir>/bin/csi-provisioner                     github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner
#   <dir>/bin/csi-snapshotter                     github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter
#   <dir>/bin/snapshot-controller                 github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller
#   <dir>/crds/*.yaml                             the VolumeSnapshot, VolumeSnapshotContent and
#                                                 VolumeSnapshotClass CRDs, copied from the pinned
#                                                 external-snapshotter client module
#   <dir>/VERSION                                 the versions above, one `name version` a line
# The last line of stdout is <dir>. Progress goes to stderr, build output to <cache>/cloud-provider/build.log.
#
# Only the Go module proxy is needed. Every module is pinned by hack/cloud-provider/*/go.{mod,sum}
# (one module per upstream project, with its programs as `tool` entries), and
# the result is cached under a key made of the versions, the Go version, the recipe number and the
# hash of the files under hack/cloud-provider/ and of this script. A cached run only computes the key.
#
#   hack/cloud-provider.sh build            build if needed, print the directory
#   hack/cloud-provider.sh build --update   regenerate hack/cloud-provider/*/go.{mod,sum} from the
#                                           versions below, then build
#
# Environment:
#   CAPO_CACHE_DIR             cache root (default ~/.cache/capo); builds live in cloud-provider/<key>
#   CAPO_CLOUD_PROVIDER_JOBS   go build parallelism (default 2)
set -euo pipefail

CPO_VERSION=v1.34.1          # k8s.io/cloud-provider-openstack: the CCM and the Cinder CSI plugin
PROVISIONER_VERSION=v5.3.0   # github.com/kubernetes-csi/external-provisioner/v5
SNAPSHOTTER_VERSION=v8.4.0   # github.com/kubernetes-csi/external-snapshotter/v8 (Kubernetes 1.34 libraries)
RECIPE=1                     # bump when the recipe below changes the output

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$repo/hack/cloud-provider"
# Same rules as hack/test-env.sh: the installed toolchain only, no workspace, static binaries, no
# VCS stamping.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-buildvcs=false"

say() { echo "cloud-provider: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { die "usage: $0 build [--update]"; }

# shellcheck source=hack/lib/cache.sh
source "$repo/hack/lib/cache.sh"
build_args "$@"

command -v go >/dev/null || die "the Go toolchain (1.25 or newer) is required on PATH, but 'go' was not found"
command -v flock >/dev/null || die "'flock' (util-linux) is required on PATH"

# --- the cache key: cheap enough to compute on every call -------------------------------------
go_version=$(go env GOVERSION)
make_key() {
  key="cpo-${CPO_VERSION}_prov-${PROVISIONER_VERSION}_snap-${SNAPSHOTTER_VERSION}_${go_version}_r${RECIPE}-$(hash_inputs "$here")"
}
mkdir -p "$here"
make_key
root="${CAPO_CACHE_DIR:-$HOME/.cache/capo}/cloud-provider"
out="$root/$key"
bins=(openstack-cloud-controller-manager cinder-csi-plugin csi-provisioner csi-snapshotter snapshot-controller)
ready() {
  local b
  for b in "${bins[@]}"; do [[ -x "$out/bin/$b" ]] || return 1; done
  [[ -f "$out/VERSION" && -f "$out/crds/snapshot.storage.k8s.io_volumesnapshots.yaml" ]]
}

cache_lock_or_exit
jobs="${CAPO_CLOUD_PROVIDER_JOBS:-2}"

# --- --update: one module per upstream project, so each builds with the versions it is released with
# Each module requires its project at the pinned version, has the programs as `tool` entries (so
# `go mod tidy` pins their dependencies too) and repeats the project's own replace directives
# that name a published version (Go ignores a dependency's replacements, and the upstream builds
# depend on them: cloud-provider-openstack and the provisioner replace Kubernetes' staging
# modules, which k8s.io/kubernetes requires at v0.0.0). The snapshotter's main module replaces
# its client module with ./client, so that module requires the client at the same version.
# Sharing one module between the three breaks the build: minimal version selection mixes their
# dependency versions (gateway-api and structured-merge-diff, otelgrpc and csi-lib-utils).
write_module() { # <dir> <module> <version> <extra require lines> <tool packages...>
  local name=$1 dir=$here/$1 mod=$2 version=$3 extra=$4 gomod
  shift 4
  gomod=$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [[ -n "$gomod" ]] || die "could not download $mod@$version"
  mkdir -p "$dir"
  rm -f "$dir/go.sum"
  {
    printf 'module capo.test/cloud-provider/%s\n\ngo 1.25.1\n\nrequire (\n\t%s %s\n%s\n)\n\ntool (\n' "$name" "$mod" "$version" "$extra"
    printf '\t%s\n' "$@"
    printf ')\n\nreplace (\n'
    sed -n -E 's#^[[:space:]]*(replace[[:space:]]+)?([^[:space:]()]+)([[:space:]]+v[^[:space:]]+)?[[:space:]]+=>[[:space:]]+([^[:space:].][^[:space:]]*)[[:space:]]+(v[^[:space:]]+)[[:space:]]*$#\t\2\3 => \4 \5#p' "$gomod"
    printf ')\n'
  } >"$dir/go.mod"
  (cd "$dir" && run go mod tidy)
}
if $update; then
  say "regenerating $here/*/go.{mod,sum}"
  write_module cpo k8s.io/cloud-provider-openstack "$CPO_VERSION" "" \
    k8s.io/cloud-provider-openstack/cmd/openstack-cloud-controller-manager \
    k8s.io/cloud-provider-openstack/cmd/cinder-csi-plugin
  write_module provisioner github.com/kubernetes-csi/external-provisioner/v5 "$PROVISIONER_VERSION" "" \
    github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner
  write_module snapshotter github.com/kubernetes-csi/external-snapshotter/v8 "$SNAPSHOTTER_VERSION" \
    "$(printf '\tgithub.com/kubernetes-csi/external-snapshotter/client/v8 %s\n' "$SNAPSHOTTER_VERSION")" \
    github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter \
    github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller
  # The key depends on the files just written.
  make_key
  out="$root/$key"
  mod_mode=mod
else
  for pin in "cpo k8s.io/cloud-provider-openstack ${CPO_VERSION}" \
    "provisioner github.com/kubernetes-csi/external-provisioner/v5 ${PROVISIONER_VERSION}" \
    "snapshotter github.com/kubernetes-csi/external-snapshotter/v8 ${SNAPSHOTTER_VERSION}" \
    "snapshotter github.com/kubernetes-csi/external-snapshotter/client/v8 ${SNAPSHOTTER_VERSION}"; do
    read -r dir m v <<<"$pin"
    grep -Eq "^[[:space:]]*$m $v( |\$)" "$here/$dir/go.mod" 2>/dev/null ||
      die "hack/cloud-provider/$dir/go.mod does not pin $m $v; run $0 build --update"
  done
  mod_mode=readonly
fi

work=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out/bin" "$work/out/crds"

build() { # <module dir> <output name> <package> [ldflags]
  local started=$SECONDS
  (cd "$here/$1" && run nice -n 10 go build -mod="$mod_mode" -p "$jobs" -trimpath "-ldflags=-s -w ${4:-}" -o "$work/out/bin/$2" "$3")
  say "built $2 in $((SECONDS - started)) s"
}

say "building cloud-provider-openstack ${CPO_VERSION} and the CSI sidecars (first run only; many minutes on 2 cores)"
build cpo openstack-cloud-controller-manager k8s.io/cloud-provider-openstack/cmd/openstack-cloud-controller-manager \
  "-X k8s.io/cloud-provider-openstack/pkg/version.Version=${CPO_VERSION}"
build cpo cinder-csi-plugin k8s.io/cloud-provider-openstack/cmd/cinder-csi-plugin \
  "-X k8s.io/cloud-provider-openstack/pkg/version.Version=${CPO_VERSION}"
build provisioner csi-provisioner github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner \
  "-X main.version=${PROVISIONER_VERSION}"
build snapshotter csi-snapshotter github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter \
  "-X main.version=${SNAPSHOTTER_VERSION}"
build snapshotter snapshot-controller github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller \
  "-X main.version=${SNAPSHOTTER_VERSION}"

# The snapshot CRDs live in the client module (its config/crd), which the module cache holds once
# go.sum has been checked.
client=$(cd "$here/snapshotter" && go mod download -json github.com/kubernetes-csi/external-snapshotter/client/v8 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n "$client" && -d "$client/config/crd" ]] || die "could not find the external-snapshotter client module's config/crd"
for kind in volumesnapshotclasses volumesnapshotcontents volumesnapshots; do
  cp "$client/config/crd/snapshot.storage.k8s.io_${kind}.yaml" "$work/out/crds/"
done
printf '%s %s\n' cloud-provider-openstack "$CPO_VERSION" external-provisioner "$PROVISIONER_VERSION" \
  external-snapshotter "$SNAPSHOTTER_VERSION" >"$work/out/VERSION"
chmod -R u+w "$work/out"

# Publish atomically: readers see nothing or the complete directory.
rm -rf "$out"
mv -T "$work/out" "$out"
say "ready: $out"
echo "$out"

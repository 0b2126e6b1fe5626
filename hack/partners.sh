#!/usr/bin/env bash
# Builds (once) the test partners: the real consumers of capo's BA/ACP extension, from the public
# snapshot in ../shared/partners (see docs/partners.md). Nothing of theirs is copied into the repo.
#
#   hack/partners.sh build   extract the snapshot, build the binaries, collect the CRDs; the last
#                            line of stdout is the directory holding
#                              bin/ansible-bootstrap       ./bootstrap/ansible (AnsibleConfig)
#                              bin/ansible-controlplane    ./controlplane/ansible (AnsibleControlPlane),
#                                                          when it builds (a failure is logged, not fatal)
#                              bin/capo-test-sshd          hack/partners/sshd: the SSH daemons of a bastion
#                                                          and its machines, for the provider's SSH probe
#                              crds/*.yaml                 the Ansible providers' CRDs (with the control
#                                                          plane's vars `Config`) and Kubean's CRDs;
#                                                          the fork's Cluster API core CRDs in crds/core/
#                              src/                        the extracted sources (to read, and for the
#                                                          paths error messages name)
#
# Only the Go module proxy is needed. The snapshot carries its own go.mod and go.sum (no replace
# directives), so every download is checked against a hash inside the tarball, and the tarball's hash
# is part of the cache key: key = <tarball sha256 prefix>_<go version>_r<RECIPE>-<hack/partners hash>.
# capo-test-sshd is built inside the extracted module, so it uses the snapshot's pinned
# golang.org/x/crypto and needs no pins of its own. A cached run only computes the key (~0.1 s).
# Progress goes to stderr, build output to <cache>/partners/build.log.
#
# Environment:
#   CAPO_PARTNERS_DIR   directory holding the snapshot (default ../shared/partners from the repo)
#   CAPO_CACHE_DIR      cache root (default ~/.cache/capo); builds live in partners/<key>
#   CAPO_PARTNERS_JOBS  go build parallelism (default 2)
set -euo pipefail

SNAPSHOT=goend-cluster-api-54358ae6.tar.gz
RECIPE=2  # bump when the recipe below changes the output

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
partners="${CAPO_PARTNERS_DIR:-$repo/../shared/partners}"
cache="${CAPO_CACHE_DIR:-$HOME/.cache/capo}"
# Same rules as hack/test-env.sh: the installed toolchain only (no toolchain download), no
# workspace, static binaries, no VCS stamping (the extracted tree is not a repository).
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=mod"

say() { echo "partners: $*" >&2; }
die() { say "$*"; exit 1; }

[[ "${1:-}" == build ]] || die "usage: $0 build"
tarball="$partners/$SNAPSHOT"
[[ -f "$tarball" ]] || die "$tarball not found (set CAPO_PARTNERS_DIR)"
command -v go >/dev/null || die "the Go toolchain (1.25 or newer: the snapshot's go.mod says go 1.25) is required on PATH"

go_version=$(go env GOVERSION)
sum=$(sha256sum "$tarball" | cut -c1-12)
ours=$(cat "$repo"/hack/partners/sshd/*.go | sha256sum | cut -c1-8)
key="goend-${sum}_${go_version}_r${RECIPE}-${ours}"
root="$cache/partners"
out="$root/$key"
ready() { [[ -x "$out/bin/ansible-bootstrap" && -x "$out/bin/capo-test-sshd" && -d "$out/crds" && -d "$out/src" ]]; }
if ready; then echo "$out"; exit 0; fi

mkdir -p "$root"
# One build at a time per cache; a second caller waits and then finds the result.
exec 9>"$root/.lock"
flock 9
if ready; then echo "$out"; exit 0; fi

log="$root/build.log"
: >"$log"
run() { "$@" >>"$log" 2>&1 || { say "failed: $* (log: $log)"; tail -n 40 "$log" >&2; exit 1; }; }
jobs="${CAPO_PARTNERS_JOBS:-2}"

work=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out/bin" "$work/out/crds/core"
run tar -xzf "$tarball" -C "$work"
src="$work/goend-cluster-api"
[[ -f "$src/go.mod" ]] || die "unexpected snapshot layout: no goend-cluster-api/go.mod"

say "building the Ansible bootstrap provider (first run only; about 5 minutes on 2 cores)"
started=$SECONDS
(cd "$src" && run go build -p "$jobs" -trimpath "-ldflags=-s -w" -o "$work/out/bin/ansible-bootstrap" ./bootstrap/ansible)
say "bootstrap provider built in $((SECONDS - started)) s"

say "building the Ansible control-plane provider"
started=$SECONDS
if (cd "$src" && go build -p "$jobs" -trimpath "-ldflags=-s -w" -o "$work/out/bin/ansible-controlplane" ./controlplane/ansible) >>"$log" 2>&1; then
  say "control-plane provider built in $((SECONDS - started)) s"
else
  say "the control-plane provider did not build (see $log); continuing with the bootstrap provider only"
fi

say "building capo-test-sshd"
mkdir "$src/capo-test-sshd"
cp "$repo"/hack/partners/sshd/*.go "$src/capo-test-sshd/"
(cd "$src" && run go build -p "$jobs" -trimpath "-ldflags=-s -w" -o "$work/out/bin/capo-test-sshd" ./capo-test-sshd)
rm -rf "$src/capo-test-sshd"

cp "$src"/bootstrap/ansible/config/crd/bases/*.yaml "$work/out/crds/"
cp "$src"/controlplane/ansible/config/crd/bases/*.yaml "$work/out/crds/"
# `configs.controlplane.cluster.x-k8s.io`: the vars overrides the bootstrap provider reads.
cp "$src"/controlplane/ansible/upstream/config/crd/bases/*.yaml "$work/out/crds/"
cp "$partners"/kubean-crds/*.yaml "$work/out/crds/"
# The fork's Cluster API core CRDs, kept apart: the test environment installs CAPI v1.12's, and a
# test decides which to use (crates/testkit/src/partners.rs explains the choice).
cp "$src"/config/crd/bases/*.yaml "$work/out/crds/core/"
mv "$src" "$work/out/src"
chmod -R u+w "$work/out"

# Publish atomically: readers see nothing or the complete directory.
rm -rf "$out"
mv -T "$work/out" "$out"
say "ready: $out"
echo "$out"

#!/usr/bin/env bash
# Builds the capo-controller-manager container image offline and reproducibly, without a container
# engine or a registry (the Dockerfile is the online equivalent):
#   1. a static binary: `cargo build --release --locked` for x86_64-unknown-linux-gnu with glibc
#      linked in (+crt-static), from a copy of the sources at a fixed place in the cache, with
#      its, cargo home's and the target directory's paths remapped so the binary does not depend
#      on where it was built; checked to be static and to run (--help);
#   2. an image from scratch (hack/lib/oci.sh): the binary as /manager, /etc/passwd and group
#      with nonroot 65532, nsswitch.conf, Debian's CA bundle, /tmp; ENTRYPOINT ["/manager"],
#      USER 65532:65532, OCI labels; written as an OCI image-layout archive that
#      `ctr -n k8s.io images import`, `podman load` and `skopeo copy oci-archive:...` read.
# Progress goes to stderr, cargo's output to <cache>/images/build.log. stdout: the manifest
# digest, then the archive's path as the last line.
#
#   hack/image.sh                 build, print the digest and the archive
#   hack/image.sh --tag TAG       tag the image TAG instead of v<workspace version>
#   hack/image.sh --check         also assemble the image a second time from the same binary in
#                                 another directory and fail unless both digests are equal
#
# Environment:
#   CAPO_REGISTRY       image repository prefix (default localhost/capo): the reference is
#                       $CAPO_REGISTRY/capo-controller-manager:TAG
#   CAPO_IMAGE_TAG      the tag when --tag is not given (default v<[workspace.package] version>)
#   CAPO_CACHE_DIR      cache root (default ~/.cache/capo); archives go to images/
#   CARGO_TARGET_DIR    cargo's target directory (default <cache>/target, as hack/test.sh)
#   SOURCE_DATE_EPOCH   the image's dates (default: the time of the checked-out commit, else 0)
set -euo pipefail

say() { echo "image: $*" >&2; }
die() { say "$*"; exit 1; }

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${CAPO_IMAGE_TAG:-}"
check=false
while (($#)); do
  case "$1" in
    --tag) [[ $# -ge 2 && -n "$2" ]] || die "--tag needs a value"; tag=$2; shift 2 ;;
    --check) check=true; shift ;;
    *) die "usage: $0 [--tag TAG] [--check]" ;;
  esac
done

# shellcheck source=hack/lib/version.sh
source "$src/hack/lib/version.sh"
version=$(capo_version "$src") || exit 1
tag="${tag:-v$version}"
[[ "$tag" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "invalid image tag '$tag'"
name=capo-controller-manager
ref="${CAPO_REGISTRY:-localhost/capo}/$name:$tag"

cache="${CAPO_CACHE_DIR:-$HOME/.cache/capo}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}"
export CARGO_INCREMENTAL=0
mkdir -p "$CARGO_TARGET_DIR"
CARGO_TARGET_DIR="$(cd "$CARGO_TARGET_DIR" && pwd)"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
root="$cache/images"
mkdir -p "$root"
# One build at a time per cache: a second caller waits, then finds cargo's work done.
exec 9>"$root/.lock"
flock 9
log="$root/build.log"
: >"$log"

# shellcheck source=hack/lib/oci.sh
source "$src/hack/lib/oci.sh"

# --- the binary ---------------------------------------------------------------------------------
# An explicit --target keeps RUSTFLAGS off build scripts and proc macros (they run on the host,
# dynamically linked) and puts the result in $CARGO_TARGET_DIR/<target>/release. glibc >= 2.34
# has the files and dns NSS modules built in, so the static binary resolves names from
# /etc/hosts and DNS without loading any library. The manager in a pod reaches the API server by
# IP (KUBERNETES_SERVICE_HOST), OpenStack by the names in clouds.yaml.
#
# The build runs on a copy of the sources at a fixed place in the cache: RUSTFLAGS (which name
# the source path to remap) are part of every crate's fingerprint, so building each fresh
# clone where it lies would rebuild every dependency (minutes); from the fixed copy only the
# workspace's own crates rebuild.
target=x86_64-unknown-linux-gnu
build_src="$cache/image-src"
rm -rf "$build_src"
mkdir -p "$build_src"
cp -a "$src/Cargo.toml" "$src/Cargo.lock" "$src/rust-toolchain.toml" "$src/crates" "$build_src/"
export RUSTFLAGS="-C target-feature=+crt-static --remap-path-prefix=$build_src=/capo --remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$CARGO_TARGET_DIR=/target"
say "building $name (release, static glibc, $target; a cold build takes tens of minutes)"
start=$SECONDS
(cd "$build_src" && cargo build --release --locked --target "$target" -p capo-manager --bin "$name") >>"$log" 2>&1 ||
  { say "cargo build failed (log: $log)"; tail -n 40 "$log" >&2; exit 1; }
bin="$CARGO_TARGET_DIR/$target/release/$name"
say "built in $((SECONDS - start)) s: $(stat -c %s "$bin") bytes, sha256 $(sha256sum "$bin" | cut -c1-64)"

# Static: no program interpreter, and `ldd` finds nothing to load.
if readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
  die "$bin is dynamically linked: $(file -b "$bin")"
fi
ldd_out=$(ldd "$bin" 2>&1 || true)
grep -Eq 'not a dynamic executable|statically linked' <<<"$ldd_out" || die "ldd $bin: $ldd_out"
"$bin" --help >/dev/null || die "$bin --help failed"

# --- the image ----------------------------------------------------------------------------------
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || echo 0)}"
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  say "warning: the checkout has uncommitted changes; the revision label says $revision"
fi
export SOURCE_DATE_EPOCH="$epoch"

work=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT

# assemble DIR OUT: stage the root filesystem in DIR and write the archive OUT; prints the digest.
assemble() {
  local dir=$1 out=$2
  mkdir -p "$dir"
  oci_base_rootfs "$dir"
  install -m 0755 "$bin" "$dir/manager"
  oci_image "$dir" "$ref" "$out" \
    --entrypoint '["/manager"]' --user 65532:65532 \
    --label "org.opencontainers.image.title=$name" \
    --label "org.opencontainers.image.description=Cluster API infrastructure provider for OpenStack (capo), controller manager" \
    --label "org.opencontainers.image.version=$tag" \
    --label "org.opencontainers.image.revision=$revision" \
    --label "org.opencontainers.image.licenses=Apache-2.0"
}

archive="$root/$name-$tag.tar"
say "assembling $ref"
digest=$(assemble "$work/a" "$work/image.tar")
if $check; then
  # Another directory, other file dates, another umask: none of it may reach the image.
  sleep 1
  second=$( (umask 077 && assemble "$work/second/rootfs" "$work/second.tar") )
  [[ "$digest" == "$second" ]] || die "not reproducible: $digest, then $second"
  cmp -s "$work/image.tar" "$work/second.tar" || die "not reproducible: the archives differ"
  say "reproducible: both assemblies gave $digest"
fi
# Publish atomically: readers see the previous archive or the complete new one.
mv -f "$work/image.tar" "$archive"
printf '%s\n' "$digest" >"$archive.digest"
say "$ref@$digest: $archive ($(stat -c %s "$archive") bytes)"
echo "$digest"
echo "$archive"

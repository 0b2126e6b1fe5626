#!/usr/bin/env bash
# Writes a release of capo as a clusterctl provider repository version directory, with upstream
# CAPO's file names, so `clusterctl init --infrastructure openstack:VERSION` and
# `clusterctl generate cluster` read it (docs/install.md):
#   infrastructure-components.yaml   `kubectl kustomize config/default` with the manager's image
#                                    set to the release image and imagePullPolicy IfNotPresent
#   metadata.yaml                    the repository root's (release series -> contract)
#   cluster-template*.yaml, clusterclass*.yaml   from templates/
#   capo-controller-manager-VERSION.tar          the image as an OCI archive (hack/image.sh),
#                                                with its manifest digest in <archive>.digest
# The directory is written under a temporary name and renamed when complete, so a failure leaves
# nothing half-written (and a previous release of the same VERSION in place). Progress goes to
# stderr; the last line of stdout is the directory.
#
#   hack/release.sh VERSION [--out DIR] [--image-archive PATH]
#     VERSION               vMAJOR.MINOR.PATCH (optionally -PRERELEASE); MAJOR.MINOR must be a
#                           releaseSeries of metadata.yaml; also the image tag
#     --out DIR             the directory to write (default
#                           <cache>/release/infrastructure-openstack/VERSION: clusterctl wants
#                           <base>/infrastructure-openstack/VERSION/ for a local repository)
#     --image-archive PATH  ship this image archive (made by hack/image.sh for the same
#                           reference) instead of building the image
#
# Environment:
#   CAPO_REGISTRY      image repository prefix (default localhost/capo); the image reference is
#                      $CAPO_REGISTRY/capo-controller-manager:VERSION
#   CAPO_CACHE_DIR     cache root (default ~/.cache/capo)
#   KUBECTL            kubectl to render with (default: $CAPO_TEST_ENV_DIR/bin/kubectl, else
#                      the one hack/test-env.sh builds)
set -euo pipefail

say() { echo "release: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { die "usage: $0 VERSION [--out DIR] [--image-archive PATH]"; }

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="" out="" archive=""
while (($#)); do
  case "$1" in
    --out) [[ $# -ge 2 && -n "$2" ]] || usage; out=$2; shift 2 ;;
    --image-archive) [[ $# -ge 2 && -n "$2" ]] || usage; archive=$2; shift 2 ;;
    -*) usage ;;
    *) [[ -z "$version" ]] || usage; version=$1; shift ;;
  esac
done
[[ -n "$version" ]] || usage

# --- the inputs, all checked before anything is written ---------------------------------------
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'
[[ "$version" =~ $semver ]] ||
  die "VERSION '$version' is not vMAJOR.MINOR.PATCH (for example v0.2.0)"
series="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

metadata="$src/metadata.yaml"
[[ -f "$metadata" ]] || die "$metadata is missing"
# releaseSeries entries as MAJOR.MINOR, one a line (either key order within an entry).
known=$(awk '
  /^releaseSeries:/ { in_series = 1; next }
  /^[^ #-]/ { in_series = 0 }
  !in_series { next }
  /^- / { if (maj != "" && min != "") print maj "." min; maj = min = ""; sub(/^- /, "  ") }
  /^  major:/ { maj = $2 }
  /^  minor:/ { min = $2 }
  END { if (maj != "" && min != "") print maj "." min }' "$metadata")
grep -qxF "$series" <<<"$known" ||
  die "metadata.yaml ($metadata) has no releaseSeries for $series (it has: ${known//$'\n'/ }); add one with its contract before releasing $version"

ref="${CAPO_REGISTRY:-localhost/capo}/capo-controller-manager:$version"
cache="${CAPO_CACHE_DIR:-$HOME/.cache/capo}"
out="${out:-$cache/release/infrastructure-openstack/$version}"
[[ "$(basename "$(dirname "$out")")/$(basename "$out")" == "infrastructure-openstack/$version" ]] ||
  say "note: clusterctl reads a local repository only as <base>/infrastructure-openstack/$version/; $out is not"

if [[ -n "$archive" ]]; then
  [[ -f "$archive" ]] || die "image archive $archive does not exist"
  # The archive must be the image this release's components name.
  archived=$(tar -xOf "$archive" index.json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["manifests"][0]["annotations"]["io.containerd.image.name"])' 2>/dev/null) ||
    die "$archive is not an OCI image archive made by hack/image.sh (no index.json naming the image)"
  [[ "$archived" == "$ref" ]] || die "$archive holds $archived, not $ref"
fi

if [[ -z "${KUBECTL:-}" ]]; then
  if [[ -n "${CAPO_TEST_ENV_DIR:-}" ]]; then
    KUBECTL="$CAPO_TEST_ENV_DIR/bin/kubectl"
  else
    say "locating kubectl (hack/test-env.sh; builds it on first use)"
    KUBECTL="$("$src/hack/test-env.sh" | tail -n 1)/bin/kubectl"
  fi
fi
[[ -x "$KUBECTL" ]] || die "kubectl $KUBECTL is not executable"

# --- the release, in a temporary directory next to the final one --------------------------------
mkdir -p "$(dirname "$out")"
work=$(mktemp -d "$(dirname "$out")/.$(basename "$out").tmp-XXXXXX")
trap 'rm -rf "$work"' EXIT

# An overlay of config/default (copied, so kustomize's root is the copy) that sets the image.
mkdir -p "$work/.kustomize"
cp -r "$src/config" "$work/.kustomize/config"
mkdir "$work/.kustomize/config/release"
cat >"$work/.kustomize/config/release/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../default
images:
- name: capo-controller-manager
  newName: ${ref%:*}
  newTag: ${ref##*:}
patches:
- target:
    group: apps
    kind: Deployment
    name: capo-controller-manager
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/imagePullPolicy
      value: IfNotPresent
EOF
components="$work/infrastructure-components.yaml"
"$KUBECTL" kustomize "$work/.kustomize/config/release" >"$components" 2>"$work/kustomize.err" || {
  cat "$work/kustomize.err" >&2
  die "kubectl kustomize of config/default failed"
}
rm -rf "$work/.kustomize" "$work/kustomize.err"
grep -qE "^ +image: ${ref//./\\.}\$" "$components" ||
  die "the rendered components do not contain the image $ref (did config/default's image name change?)"
grep -qE '^ +imagePullPolicy: IfNotPresent$' "$components" ||
  die "the rendered components do not set imagePullPolicy: IfNotPresent"

cp "$metadata" "$work/metadata.yaml"
shopt -s nullglob
templates=("$src"/templates/cluster-template*.yaml "$src"/templates/clusterclass*.yaml)
((${#templates[@]})) || die "no cluster-template*.yaml in $src/templates"
cp "${templates[@]}" "$work/"

image="$work/capo-controller-manager-$version.tar"
if [[ -z "$archive" ]]; then
  say "building the image $ref (hack/image.sh)"
  archive=$(CAPO_IMAGE_TAG="$version" "$src/hack/image.sh" | tail -n 1)
fi
cp "$archive" "$image"
if [[ -f "$archive.digest" ]]; then
  cp "$archive.digest" "$image.digest"
fi

# Publish: the previous directory, if any, is moved aside and removed only after the rename.
chmod 0755 "$work"
old=""
if [[ -e "$out" ]]; then
  old=$(mktemp -d "$(dirname "$out")/.$(basename "$out").old-XXXXXX")
  mv -T "$out" "$old/release"
fi
if ! mv -T "$work" "$out"; then
  [[ -z "$old" ]] || mv -T "$old/release" "$out"
  die "could not rename $work to $out"
fi
trap - EXIT
[[ -z "$old" ]] || rm -rf "$old"
say "release $version of $ref: $out"
ls -l "$out" >&2
echo "$out"

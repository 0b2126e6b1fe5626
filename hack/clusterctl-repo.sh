#!/usr/bin/env bash
# Builds (once) and prints the directory of a clusterctl local provider repository, and the container
# images it references, for everything a management cluster needs besides capo itself:
#   <dir>/repo/cluster-api/v1.14.2/{core-components,metadata}.yaml
#   <dir>/repo/bootstrap-kubeadm/v1.14.2/{bootstrap-components,metadata}.yaml
#   <dir>/repo/control-plane-kubeadm/v1.14.2/{control-plane-components,metadata}.yaml
#   <dir>/repo/infrastructure-openstack/v0.14.7/{infrastructure-components,metadata}.yaml
#                                        upstream CAPO (the Go provider), for comparisons and migrations,
#                                        with the release's cluster-template*/clusterclass*/image-template*
#   <dir>/repo/cert-manager/v1.21.1/cert-manager.yaml   cert-manager's Helm chart rendered with its CRDs
#   <dir>/orc/v2.4.0/install.yaml        ORC, which upstream CAPO needs (kubectl apply --server-side -f;
#                                        clusterctl does not install it)
#   <dir>/images/*.tar, <dir>/images.txt one-layer OCI archives (hack/lib/oci.sh), "<ref> <archive>" lines
#   <dir>/clusterctl.yaml                providers and cert-manager pointing at the above (file:// URLs)
#   <dir>/bin/{helm,clusterctl}          helm (used to render cert-manager), clusterctl (a copy of hack/capi.sh's)
# The components are the providers' own kustomize configurations (from their Go modules) rendered
# with kubectl kustomize, with the image set to a local reference (localhost/...) and
# imagePullPolicy IfNotPresent, as the providers' release targets do with their registry's.
# clusterctl variables (${CAPI_DIAGNOSTICS_ADDRESS:=...}) are kept for clusterctl to substitute.
#
# Binaries: the Cluster API managers and clusterctl come from hack/capi.sh, upstream CAPO's from
# hack/upstream-capo.sh, kubectl from hack/test-env.sh; cert-manager's, ORC's and helm are built
# here from the modules pinned under hack/clusterctl-repo/. cert-manager's own main packages
# (cmd/controller, cmd/webhook, cmd/cainjector) are separate Go modules that the module proxy does
# not serve, so hack/clusterctl-repo/cert-manager has small mains of ours over the packages of the
# root module github.com/cert-manager/cert-manager (see its README).
#
#   hack/clusterctl-repo.sh build            build if needed, print the directory
#   hack/clusterctl-repo.sh build --update   regenerate hack/clusterctl-repo/*/go.{mod,sum} from the
#                                            versions below, then build
#
# Add capo itself (a release directory written by hack/release.sh, holding
# infrastructure-components.yaml and metadata.yaml) to a copy of <dir>/clusterctl.yaml, see the
# comment in it.
#
# Environment:
#   CAPO_CACHE_DIR   cache root (default ~/.cache/capo); builds live in clusterctl-repo/<key>
#   CAPO_REPO_JOBS   go build parallelism (default 2)
set -euo pipefail

CAPI_VERSION=v1.14.2          # must be hack/capi.sh's
CERT_MANAGER_VERSION=v1.21.1  # clusterctl v1.14's CertManagerDefaultVersion
CAPO_VERSION=v0.14.7          # must be hack/upstream-capo.sh's
ORC_VERSION=v2.4.0            # what CAPO v0.14.7's go.mod requires
HELM_VERSION=v3.22.0
RECIPE=1                      # bump when the recipe below changes the output

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$repo/hack/clusterctl-repo"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-buildvcs=false"

say() { echo "clusterctl-repo: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { die "usage: $0 build [--update]"; }

# shellcheck source=hack/lib/cache.sh
source "$repo/hack/lib/cache.sh"
build_args "$@"

command -v go >/dev/null || die "the Go toolchain (1.26 or newer) is required on PATH"
command -v python3 >/dev/null || die "python3 is required (hack/lib/oci.sh)"

# --- the cache key ------------------------------------------------------------------------------
# The inputs built elsewhere (Cluster API, upstream CAPO, kubectl) are pinned by their scripts'
# versions, which are part of the key here; the files under hack/clusterctl-repo/ and hack/lib/oci.sh
# are hashed.
go_version=$(go env GOVERSION)
make_key() {
  key="capi-${CAPI_VERSION}_cm-${CERT_MANAGER_VERSION}_capo-${CAPO_VERSION}_orc-${ORC_VERSION}_${go_version}_r${RECIPE}-$(hash_inputs "$here" "$repo/hack/lib/oci.sh")"
}
make_key
root="${CAPO_CACHE_DIR:-$HOME/.cache/capo}/clusterctl-repo"
out="$root/$key"
ready() { [[ -f "$out/clusterctl.yaml" && -f "$out/images.txt" ]]; }

cache_lock_or_exit
jobs="${CAPO_REPO_JOBS:-2}"
# shellcheck source=hack/lib/oci.sh
source "$repo/hack/lib/oci.sh"

# --- --update: write the go.mod files from the versions, let `go mod tidy` fill in the rest ------
if $update; then
  say "regenerating $here/*/go.{mod,sum}"
  rm -f "$here"/{helm,orc,cert-manager}/go.sum
  printf 'module capo.test/clusterctl-repo/helm\n\ngo 1.26.0\n\nrequire helm.sh/helm/v3 %s\n\ntool helm.sh/helm/v3/cmd/helm\n' \
    "$HELM_VERSION" >"$here/helm/go.mod"
  printf 'module capo.test/clusterctl-repo/orc\n\ngo 1.26.0\n\nrequire github.com/k-orc/openstack-resource-controller/v2 %s\n\ntool github.com/k-orc/openstack-resource-controller/v2/cmd/manager\n' \
    "$ORC_VERSION" >"$here/orc/go.mod"
  # A module path under github.com/cert-manager/cert-manager, so that the mains may import the root
  # module's internal/ packages (Go checks import paths, not module boundaries).
  printf 'module github.com/cert-manager/cert-manager/capo-cmd\n\ngo 1.26.0\n\nrequire github.com/cert-manager/cert-manager %s\n' \
    "$CERT_MANAGER_VERSION" >"$here/cert-manager/go.mod"
  (cd "$here/helm" && run go mod tidy)
  (cd "$here/orc" && run go mod tidy)
  # -e: the tests of the Venafi issuer need github.com/Venafi/vcert/v5, which the proxy refuses;
  # the mains do not import it.
  (cd "$here/cert-manager" && run go mod tidy -e)
  make_key
  out="$root/$key"
  mod_mode=mod
else
  # (a `tool` module's requirement is marked // indirect)
  pinned() { grep -Eq "^[[:space:]]*$2 $3( |\$)" "$here/$1/go.mod"; }
  pinned helm helm.sh/helm/v3 "$HELM_VERSION" &&
    pinned orc github.com/k-orc/openstack-resource-controller/v2 "$ORC_VERSION" &&
    pinned cert-manager github.com/cert-manager/cert-manager "$CERT_MANAGER_VERSION" ||
    die "hack/clusterctl-repo/*/go.mod do not match the versions in $0; run $0 build --update"
  mod_mode=readonly
fi

# --- the inputs built by the other scripts (each waits on its own lock) --------------------------
say "waiting for hack/capi.sh, hack/upstream-capo.sh and hack/test-env.sh (cached after their first build)"
capi_dir=$("$repo/hack/capi.sh" build | tail -n 1)
[[ "$(cat "$capi_dir/VERSION")" == "$CAPI_VERSION" ]] || die "hack/capi.sh builds $(cat "$capi_dir/VERSION"), not $CAPI_VERSION"
capo_dir=$("$repo/hack/upstream-capo.sh" build | tail -n 1)
kubectl="$("$repo/hack/test-env.sh" | tail -n 1)/bin/kubectl"
[[ -x "$kubectl" ]] || die "no kubectl in hack/test-env.sh's output"

work=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
o="$work/out"
mkdir -p "$o/bin" "$o/images" "$o/repo" "$work/bin"

module_dir() { # <module dir> <module path>
  (cd "$1" && go mod download -json "$2") | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
capi_src=$(module_dir "$repo/hack/capi" sigs.k8s.io/cluster-api)
capo_src=$(module_dir "$repo/hack/upstream-capo/mod" sigs.k8s.io/cluster-api-provider-openstack)
cm_src=$(module_dir "$here/cert-manager" github.com/cert-manager/cert-manager)
orc_src=$(module_dir "$here/orc" github.com/k-orc/openstack-resource-controller/v2)
[[ -d "$capi_src/core/config/default" && -d "$capo_src/config/default" && -d "$cm_src/deploy/charts/cert-manager" && -d "$orc_src/config/default" ]] ||
  die "could not find the Cluster API, CAPO, cert-manager or ORC module sources"

gobuild() { # <module dir> <output> <package> [ldflags]
  local started=$SECONDS
  (cd "$1" && run nice -n 10 go build -mod="$mod_mode" -p "$jobs" -trimpath "-ldflags=-s -w ${4:-}" -o "$2" "$3")
  say "built ${2##*/} in $((SECONDS - started)) s"
}

say "building helm, cert-manager ${CERT_MANAGER_VERSION} and ORC ${ORC_VERSION} (first run only; several minutes)"
# Stamped as helm's Makefile does: its version, and the Kubernetes version `helm template` assumes
# (1.N for k8s.io/client-go v0.N; unstamped it is 1.20, which cert-manager's chart refuses).
client_go=$(cd "$here/helm" && go list -mod="$mod_mode" -m -f '{{.Version}}' k8s.io/client-go)
k8s_minor=${client_go#v0.}
k8s_minor=${k8s_minor%%.*}
helm_ldflags="-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=${k8s_minor}"
done
gobuild "$here/helm" "$o/bin/helm" helm.sh/helm/v3/cmd/helm "$helm_ldflags"
"$o/bin/helm" version >>"$log" 2>&1
cm_ldflags="-X github.com/cert-manager/cert-manager/pkg/util.AppVersion=${CERT_MANAGER_VERSION}"
for c in controller webhook cainjector; do
  gobuild "$here/cert-manager" "$work/bin/cert-manager-$c" "./$c" "$cm_ldflags"
done
gobuild "$here/orc" "$work/bin/orc-manager" github.com/k-orc/openstack-resource-controller/v2/cmd/manager
cp "$capi_dir/bin/clusterctl" "$o/bin/clusterctl"

# --- images ------------------------------------------------------------------------------------
# One binary on the base root file system (CA bundle, passwd with nonroot), running as 65532.
# Cluster API's, CAPO's and ORC's Deployments run `command: [/manager]`; cert-manager's chart passes
# only args, so its images have the binary as ENTRYPOINT, as upstream's.
: >"$o/images.txt"
image() { # <name> <ref> <binary> <path in image> <entrypoint JSON or "">
  local rootfs="$work/rootfs-$1" flags=(--user 65532:65532)
  oci_base_rootfs "$rootfs"
  install -D -m 0755 "$3" "$rootfs$4"
  [[ -n "$5" ]] && flags+=(--entrypoint "$5")
  oci_image "$rootfs" "$2" "$o/images/$1.tar" "${flags[@]}" >/dev/null
  echo "$2 images/$1.tar" >>"$o/images.txt"
  rm -rf "$rootfs"
}
capi_ref() { echo "localhost/capi/$1:${CAPI_VERSION}"; }
cm_ref() { echo "localhost/cert-manager/cert-manager-$1:${CERT_MANAGER_VERSION}"; }
capo_ref="localhost/capi-openstack/capi-openstack-controller:${CAPO_VERSION}"
orc_ref="localhost/k-orc/openstack-resource-controller:${ORC_VERSION}"
say "writing images"
image cluster-api-controller "$(capi_ref cluster-api-controller)" "$capi_dir/bin/cluster-api-manager" /manager ""
image kubeadm-bootstrap-controller "$(capi_ref kubeadm-bootstrap-controller)" "$capi_dir/bin/kubeadm-bootstrap-manager" /manager ""
image kubeadm-control-plane-controller "$(capi_ref kubeadm-control-plane-controller)" "$capi_dir/bin/kubeadm-control-plane-manager" /manager ""
for c in controller webhook cainjector; do
  image "cert-manager-$c" "$(cm_ref "$c")" "$work/bin/cert-manager-$c" "/app/cmd/$c/$c" "[\"/app/cmd/$c/$c\"]"
done
image capi-openstack-controller "$capo_ref" "$capo_dir/bin/capo-upstream" /manager ""
image openstack-resource-controller "$orc_ref" "$work/bin/orc-manager" /manager ""

# --- components --------------------------------------------------------------------------------
# render <kustomization dir> <upstream image> <local ref> <output>: kubectl kustomize, then the
# image and the pull policy replaced (each must occur, so a changed upstream config fails here).
render() {
  local tmp="$work/render.yaml"
  run "$kubectl" kustomize "$1" -o "$tmp"
  grep -q "image: $2\$" "$tmp" || die "$1 does not use the image $2"
  sed -e "s#image: $2\$#image: $3#" -e 's#imagePullPolicy: Always$#imagePullPolicy: IfNotPresent#' "$tmp" >"$4"
  ! grep -q 'imagePullPolicy: Always' "$4" || die "$4 still has imagePullPolicy: Always"
}
say "rendering the components"
for p in cluster-api:core:core-components:cluster-api-controller \
  bootstrap-kubeadm:bootstrap/kubeadm:bootstrap-components:kubeadm-bootstrap-controller \
  control-plane-kubeadm:controlplane/kubeadm:control-plane-components:kubeadm-control-plane-controller; do
  IFS=: read -r label path file img <<<"$p"
  mkdir -p "$o/repo/$label/$CAPI_VERSION"
  render "$capi_src/$path/config/default" "gcr.io/k8s-staging-cluster-api/$img:main" "$(capi_ref "$img")" \
    "$o/repo/$label/$CAPI_VERSION/$file.yaml"
  cp "$capi_src/metadata.yaml" "$o/repo/$label/$CAPI_VERSION/metadata.yaml"
done
mkdir -p "$o/repo/infrastructure-openstack/$CAPO_VERSION"
render "$capo_src/config/default" "gcr.io/k8s-staging-capi-openstack/capi-openstack-controller:dev" "$capo_ref" \
  "$o/repo/infrastructure-openstack/$CAPO_VERSION/infrastructure-components.yaml"
cp "$capo_src/metadata.yaml" "$o/repo/infrastructure-openstack/$CAPO_VERSION/metadata.yaml"
# The release also ships the cluster templates (clusterctl generate cluster --flavor ...).
cp "$capo_src"/templates/{cluster-template,clusterclass,image-template}*.yaml "$o/repo/infrastructure-openstack/$CAPO_VERSION/"
mkdir -p "$o/orc/$ORC_VERSION"
render "$orc_src/config/default" "controller:latest" "$orc_ref" "$o/orc/$ORC_VERSION/install.yaml"
# ORC's manager.yaml sets no pull policy: add one after the image, at the same indentation.
sed -i 's#^\([[:space:]]*\)\(image: '"$orc_ref"'\)$#\1\2\n\1imagePullPolicy: IfNotPresent#' "$o/orc/$ORC_VERSION/install.yaml"
grep -q "imagePullPolicy: IfNotPresent" "$o/orc/$ORC_VERSION/install.yaml" || die "could not set ORC's pull policy"

# cert-manager: the chart as its release renders it (namespace cert-manager, release name
# cert-manager, CRDs included), our images, no startupapicheck Job (clusterctl waits for the
# webhook itself) so no ctl image is needed; the acmesolver image is only referenced by the
# controller's flag (used for ACME HTTP-01 challenges, which a management cluster does not run).
mkdir -p "$o/repo/cert-manager/$CERT_MANAGER_VERSION"
cp -r "$cm_src/deploy/charts/cert-manager" "$work/chart"
chmod -R u+w "$work/chart"
# The chart in the module has placeholder versions; the release sets them.
sed -i -e "s/^version: .*/version: ${CERT_MANAGER_VERSION}/" -e "s/^appVersion: .*/appVersion: ${CERT_MANAGER_VERSION}/" "$work/chart/Chart.yaml"
helm_args=(template cert-manager "$work/chart" --namespace cert-manager
  --set crds.enabled=true --set startupapicheck.enabled=false
  --set image.repository=localhost/cert-manager/cert-manager-controller
  --set webhook.image.repository=localhost/cert-manager/cert-manager-webhook
  --set cainjector.image.repository=localhost/cert-manager/cert-manager-cainjector
  --set acmesolver.image.repository=localhost/cert-manager/cert-manager-acmesolver
  --set image.pullPolicy=IfNotPresent --set webhook.image.pullPolicy=IfNotPresent
  --set cainjector.image.pullPolicy=IfNotPresent)
{
  # helm template does not render the Namespace (the release's cert-manager.yaml has it).
  printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cert-manager\n'
  HELM_CACHE_HOME="$work/helm" HELM_CONFIG_HOME="$work/helm" HELM_DATA_HOME="$work/helm" \
    "$o/bin/helm" "${helm_args[@]}" 2>>"$log"
} >"$o/repo/cert-manager/$CERT_MANAGER_VERSION/cert-manager.yaml" || die "helm template failed (log: $log)"
for c in controller webhook cainjector; do
  grep -q "image: \"$(cm_ref "$c")\"" "$o/repo/cert-manager/$CERT_MANAGER_VERSION/cert-manager.yaml" ||
    die "the rendered cert-manager.yaml does not use $(cm_ref "$c")"
done

# --- clusterctl.yaml ---------------------------------------------------------------------------
# The file:// URLs point into the published directory.
r="$out/repo"
cat >"$o/clusterctl.yaml" <<EOF
# clusterctl configuration for the local repository built by hack/clusterctl-repo.sh.
# Use: CLUSTERCTL_DISABLE_VERSIONCHECK=true clusterctl init --config <this file> \\
#        --core cluster-api:${CAPI_VERSION} --bootstrap kubeadm:${CAPI_VERSION} \\
#        --control-plane kubeadm:${CAPI_VERSION} --infrastructure openstack:<version>
# after importing the images listed in images.txt into the nodes' container runtime
# (ctr -n k8s.io images import <archive>).
#
# capo itself: copy this file and add an entry like the one below for its release directory (written
# by hack/release.sh), laid out as clusterctl wants it, {basepath}/infrastructure-openstack/<version>/
# {infrastructure-components.yaml,metadata.yaml}. clusterctl reads the version from the path: link
# or copy <release> to <basepath>/infrastructure-openstack/vX.Y.Z/ and list that, instead of (or
# after; a later entry with the same name and type replaces an earlier one) upstream's:
#   - name: openstack
#     type: InfrastructureProvider
#     url: file://<basepath>/infrastructure-openstack/vX.Y.Z/infrastructure-components.yaml
# Upstream CAPO (${CAPO_VERSION}) needs ORC installed first:
#   kubectl apply --server-side -f $out/orc/${ORC_VERSION}/install.yaml
providers:
  - name: cluster-api
    type: CoreProvider
    url: file://$r/cluster-api/${CAPI_VERSION}/core-components.yaml
  - name: kubeadm
    type: BootstrapProvider
    url: file://$r/bootstrap-kubeadm/${CAPI_VERSION}/bootstrap-components.yaml
  - name: kubeadm
    type: ControlPlaneProvider
    url: file://$r/control-plane-kubeadm/${CAPI_VERSION}/control-plane-components.yaml
  - name: openstack
    type: InfrastructureProvider
    url: file://$r/infrastructure-openstack/${CAPO_VERSION}/infrastructure-components.yaml
cert-manager:
  url: file://$r/cert-manager/${CERT_MANAGER_VERSION}/cert-manager.yaml
  version: ${CERT_MANAGER_VERSION}
EOF
chmod -R u+w "$o"

# Publish atomically: readers see nothing or the complete directory.
rm -rf "$out"
mv -T "$o" "$out"
say "ready: $out"
echo "$out"

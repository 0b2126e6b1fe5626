#!/usr/bin/env bash
# The installed tier (docs/install.md): capo as operators run it. Builds capo's release (image and
# clusterctl artifacts: hack/release.sh), a local clusterctl provider repository with cert-manager
# and Cluster API's core, kubeadm bootstrap and control-plane providers as images built here
# (hack/clusterctl-repo.sh), starts a real single-node management cluster (hack/mgmt-cluster.sh:
# kubelet, containerd, kube-proxy, in a network namespace of its own), loads the images into its
# containerd and runs `clusterctl init --wait-providers` from that repository, as docs/install.md
# tells operators to. Then the scenarios of crates/e2e/tests/installed.rs: clusterctl's default
# flavor created through the installed controllers on capo-sim, scaled and deleted, nothing
# left in the cloud; two replicas of capo, the leader's pod deleted while it creates a cluster,
# the other taking over with nothing created twice; then the drop-in path on the same cluster:
# upstream CAPO v0.14.7 installed by clusterctl in capo's place creates a cluster, and
# `clusterctl upgrade apply` puts capo's release back, which adopts it without touching the
# cloud, scales it and deletes it. Fails if capo's log holds a single Forbidden (its RBAC must be exactly
# enough). Last, bad input as operators meet it, on the same cluster after `clusterctl delete`:
# a release whose metadata declares another contract, or no series for its version (refused
# before anything is installed), cert-manager not ready (its webhook's image missing) and capo's
# image missing from the node (clusterctl names what is not ready); once the images are there,
# capo converges without a reinstall and a rerun of `clusterctl init` is a no-op; then
# `clusterctl upgrade apply` to the next patch release (the same build, tagged so). Prints the
# figures of docs/install.md (init to Available, capo's memory and CPU from the scenarios).
#
#   hack/installed.sh               build what is missing (cached), run the tier, tear it all down
#   hack/installed.sh --keep        leave the management cluster running afterwards (stop it with
#                                   hack/mgmt-cluster.sh stop <dir>)
#   hack/installed.sh --clusters N  also measure capo's pod with N clusters (a figure, not in CI)
#   hack/installed.sh --build       only build what the tier needs (hack/test.sh starts it early,
#                                   in the background)
#
# Environment: CAPO_INSTALLED_DIR (the cluster's state directory, default /tmp/capo-installed).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CAPO_CACHE_DIR:-$HOME/.cache/capo}/target}"
export CARGO_INCREMENTAL=0

say() { echo "installed: $*" >&2; }
die() { say "$*"; exit 1; }

keep=false
build_only=false
clusters=0
while (($#)); do
  case "$1" in
    --keep) keep=true ;;
    --build) build_only=true ;;
    --clusters)
      [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--clusters needs a positive number"
      clusters=$2
      shift
      ;;
    *) die "usage: $0 [--build | [--keep] [--clusters N]]" ;;
  esac
  shift
done

# shellcheck source=hack/lib/version.sh
source hack/lib/version.sh
version="v$(capo_version .)"
dir="${CAPO_INSTALLED_DIR:-/tmp/capo-installed}"
export CAPO_MGMT_NETNS="${CAPO_MGMT_NETNS:-capo-installed}"

say "building what the tier needs (cached after the first run)"
# capo's release first: the only part a change to capo's sources rebuilds.
release_dir="$(hack/release.sh "$version" | tail -n 1)"
capi_dir="$(hack/capi.sh build | tail -n 1)"
hack/mgmt-cluster.sh build >/dev/null
repo_dir="$(hack/clusterctl-repo.sh build | tail -n 1)"
if $build_only; then
  say "built: $release_dir, $repo_dir"
  exit 0
fi
cargo test --locked -p capo-e2e --test installed --no-run 2>&1 | tail -n 3 >&2
test_bin="$(cargo test --locked -p capo-e2e --test installed --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])
')"
[[ -x "$test_bin" ]] || die "could not find the installed tier's test binary"

cleanup() {
  local rc=$?
  if ((rc != 0)) && [[ -d "$dir/logs" ]]; then
    say "failed; the last lines of each component's log:"
    for f in "$dir"/logs/*.log; do echo "--- $f" >&2; tail -n 15 "$f" >&2; done
    hack/mgmt-cluster.sh exec kubectl get pods -A -o wide >&2 || true
  fi
  if $keep; then
    say "kept: KUBECONFIG=$dir/kubeconfig, CAPO_MGMT_NETNS=$CAPO_MGMT_NETNS CAPO_MGMT_DIR=$dir hack/mgmt-cluster.sh exec kubectl ..."
  else
    hack/mgmt-cluster.sh stop "$dir" || true
  fi
  exit "$rc"
}
trap cleanup EXIT
kubeconfig="$(hack/mgmt-cluster.sh start "$dir" | tail -n 1)"
export CAPO_MGMT_DIR="$dir"
mx() { hack/mgmt-cluster.sh exec "$@"; }

say "loading the images into the node's containerd"
t0=$SECONDS
archives=("$release_dir"/*.tar)
while read -r _ archive; do archives+=("$repo_dir/$archive"); done <"$repo_dir/images.txt"
hack/mgmt-cluster.sh load "${archives[@]}"
say "${#archives[@]} images loaded in $((SECONDS - t0)) s"

# The local repository's configuration with a release of capo (in clusterctl's layout,
# {base}/infrastructure-openstack/{version}/) as the openstack infrastructure provider instead
# of upstream's; clusterctl's wait for cert-manager cut to the given timeout, if any.
capo_config() { # infrastructure-components.yaml [cert-manager timeout]
  python3 - "$repo_dir/clusterctl.yaml" "$1" "${2:-}" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text, n = re.subn(r"(name: openstack\n\s+type: InfrastructureProvider\n\s+url: )\S+", r"\g<1>file://" + sys.argv[2], text)
if n != 1:
    sys.exit("the repository's clusterctl.yaml has no openstack InfrastructureProvider entry")
if sys.argv[3]:
    text, n = re.subn(r"^cert-manager:\n", "cert-manager:\n  timeout: " + sys.argv[3] + "\n", text, flags=re.M)
    if n != 1:
        sys.exit("the repository's clusterctl.yaml has no cert-manager section")
print(text, end="")
PY
}
mkdir -p "$dir/clusterctl"
config="$dir/clusterctl/clusterctl.yaml"
capo_config "$release_dir/infrastructure-components.yaml" >"$config"

cc=(env HOME="$dir" CLUSTERCTL_DISABLE_VERSIONCHECK=true "$capi_dir/bin/clusterctl")
capi_version="$(cat "$capi_dir/VERSION")"
init() { # clusterctl configuration, more arguments: the init docs/install.md gives operators
  local cfg=$1
  shift
  mx "${cc[@]}" init --config "$cfg" --kubeconfig "$kubeconfig" \
    --core "cluster-api:$capi_version" --bootstrap "kubeadm:$capi_version" \
    --control-plane "kubeadm:$capi_version" --infrastructure "openstack:$version" --wait-providers "$@"
}

say "clusterctl init (cert-manager, Cluster API core, kubeadm bootstrap and control plane, capo $version)"
t0=$SECONDS
init "$config" --wait-provider-timeout 600
init_s=$((SECONDS - t0))
say "figures: clusterctl init to every provider Available: ${init_s} s"

scenarios() { # test-binary arguments
  mx env CAPO_INSTALLED_KUBECONFIG="$kubeconfig" CAPO_INSTALLED_CLUSTERCTL_CONFIG="$config" \
    CAPO_INSTALLED_UPSTREAM_CONFIG="$repo_dir/clusterctl.yaml" \
    CAPO_INSTALLED_VERSION="$version" CAPO_CAPI_BUILD_DIR="$capi_dir" CAPO_INSTALLED_CLUSTERS="$clusters" \
    "$test_bin" --nocapture --test-threads 1 "$@"
}
# capo's log, every running replica's whole log (a selector alone prints the last 10 lines):
# not one Forbidden (its RBAC must be exactly enough), and plain text (the container runtime
# writes it to a file).
check_capo_log() {
  mx kubectl -n capo-system logs -l cluster.x-k8s.io/provider=infrastructure-openstack --tail=-1 --prefix \
    >"$dir/logs/capo-pod-$1.log"
  if grep -i forbidden "$dir/logs/capo-pod-$1.log" >&2; then
    die "capo's log holds Forbidden requests (above): its RBAC is not enough"
  fi
  if grep -q $'\x1b\[' "$dir/logs/capo-pod-$1.log"; then
    die "capo's log in the pod holds terminal escape codes ($dir/logs/capo-pod-$1.log)"
  fi
  say "capo's log ($1): no Forbidden, no escape codes"
}

say "the scenarios: the default flavor through the installed providers; a leader failover mid-create"
scenarios --skip upstream_
check_capo_log scenarios
if ((clusters > 0)); then
  say "measurement: capo's pod with $clusters clusters"
  scenarios --ignored many_clusters_resident_memory
  check_capo_log "$clusters-clusters"
fi

# The drop-in path on the same cluster: capo and its CRDs removed (no OpenStack* object is
# left), then ORC and upstream CAPO v0.14.7 installed by clusterctl from the local repository;
# the scenario lets upstream create a cluster and runs `clusterctl upgrade apply` to capo.
say "drop-in: upstream CAPO v0.14.7 installed by clusterctl init, then clusterctl upgrade apply to capo $version"
mx "${cc[@]}" delete --infrastructure openstack --include-crd --config "$config" --kubeconfig "$kubeconfig"
mx kubectl apply --server-side -f "$repo_dir/orc/v2.4.0/install.yaml" >/dev/null
mx kubectl -n orc-system rollout status deploy/orc-controller-manager --timeout=180s
mx "${cc[@]}" init --config "$repo_dir/clusterctl.yaml" --kubeconfig "$kubeconfig" \
  --infrastructure openstack:v0.14.7 --wait-providers --wait-provider-timeout 300
# Cluster API's managers still watch the v1beta2 kinds capo's CRDs served (upstream's serve only
# v1beta1): restarted, they start as on a cluster where upstream was installed first.
for deploy in capi-system/capi-controller-manager \
  capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-controller-manager \
  capi-kubeadm-control-plane-system/capi-kubeadm-control-plane-controller-manager; do
  mx kubectl -n "${deploy%/*}" rollout restart "deploy/${deploy#*/}" >/dev/null
  mx kubectl -n "${deploy%/*}" rollout status "deploy/${deploy#*/}" --timeout=180s >/dev/null
done
scenarios upstream_
check_capo_log upgrade

# Bad input as operators meet it, on the same cluster: capo uninstalled as docs/install.md says,
# then `clusterctl init` of releases clusterctl must refuse, and with images missing from the node.
say "bad input: capo uninstalled (clusterctl delete --include-crd), then installed wrongly, then rightly"
mx "${cc[@]}" delete --infrastructure openstack --include-crd --config "$config" --kubeconfig "$kubeconfig"
# clusterctl does not wait for the deletions it asks for (a CRD goes once its objects are gone).
left=$(mx kubectl get crd -o name | grep '/openstack.*\.infrastructure\.cluster\.x-k8s\.io$' || true)
# shellcheck disable=SC2086 # one argument per CRD
[[ -z "$left" ]] || mx kubectl wait --for=delete $left --timeout=60s >/dev/null ||
  die "clusterctl delete --include-crd left capo's CRDs: $left"
mx kubectl -n capo-system wait --for=delete deploy/capo-controller-manager --timeout=60s >/dev/null ||
  die "clusterctl delete left capo's Deployment"
openstack_providers() {
  mx kubectl get providers.clusterctl.cluster.x-k8s.io -A -o name | grep -c infrastructure-openstack || true
}
# A copy of the release whose metadata.yaml is a Python expression over the original's `text`.
bad_release() { # name, expression
  local rel="$dir/bad/$1/infrastructure-openstack/$version"
  mkdir -p "$rel"
  cp "$release_dir/infrastructure-components.yaml" "$rel/"
  python3 -c "import sys; text = open(sys.argv[1]).read(); print($2, end='')" \
    "$release_dir/metadata.yaml" >"$rel/metadata.yaml"
  ! cmp -s "$release_dir/metadata.yaml" "$rel/metadata.yaml" || die "bad_release $1 changed nothing"
  capo_config "$rel/infrastructure-components.yaml" >"$dir/bad/$1/clusterctl.yaml"
}
refused() { # what, what clusterctl must say, init arguments...
  local what=$1 expected=$2 out
  shift 2
  if out=$(init "$@" 2>&1); then
    echo "$out" >&2
    die "clusterctl init succeeded with $what"
  fi
  grep -qF -- "$expected" <<<"$out" || { echo "$out" >&2; die "clusterctl init with $what did not say: $expected"; }
  say "bad input, $what: $(grep '^Error:' <<<"$out" | head -n 1)"
}

bad_release contract 'text.replace("minor: 2\n  contract: v1beta2", "minor: 2\n  contract: v1alpha4")'
refused "a release declaring another contract" \
  "detected contract version v1alpha4 for provider infrastructure-openstack" "$dir/bad/contract/clusterctl.yaml"
bad_release series 'text.replace("- major: 0\n  minor: 2\n  contract: v1beta2\n", "")'
refused "a release without a series for its version" \
  "version $version for the provider capo-system/infrastructure-openstack does not match any release series" \
  "$dir/bad/series/clusterctl.yaml"
(($(openstack_providers) == 0)) || die "a refused clusterctl init installed capo"

# cert-manager not ready (its webhook's image gone from the node, its pod restarted) and capo's
# image not on the node: clusterctl reinstalls cert-manager, waits for it and stops there.
capo_image=$(sed -n 's/^ *image: //p' "$release_dir/infrastructure-components.yaml" | head -n 1)
[[ -n "$capo_image" ]] || die "no image in $release_dir/infrastructure-components.yaml"
cm_webhook=localhost/cert-manager/cert-manager-webhook:v1.21.1
grep -q "^$cm_webhook " "$repo_dir/images.txt" || die "$cm_webhook is not in $repo_dir/images.txt"
hack/mgmt-cluster.sh unload "$cm_webhook" "$capo_image"
mx kubectl -n cert-manager delete pod -l app.kubernetes.io/component=webhook --wait=true >/dev/null
capo_config "$release_dir/infrastructure-components.yaml" 20s >"$dir/bad/cert-manager-timeout.yaml"
refused "cert-manager not ready" "Waiting for cert-manager to be available" "$dir/bad/cert-manager-timeout.yaml"
(($(openstack_providers) == 0)) || die "clusterctl init installed capo without cert-manager"

# cert-manager's image back: the same init goes on, installs capo and names its Deployment, whose
# pod cannot pull the image.
hack/mgmt-cluster.sh load "$repo_dir/$(awk -v ref="$cm_webhook" '$1 == ref {print $2}' "$repo_dir/images.txt")"
refused "capo's image not on the node" \
  'deployment "capo-controller-manager" is not ready after 30s' "$config" --wait-provider-timeout 30
reason=$(mx kubectl -n capo-system get pods -l cluster.x-k8s.io/provider=infrastructure-openstack \
  -o jsonpath='{.items[0].status.containerStatuses[0].state.waiting.reason}')
[[ "$reason" == ErrImagePull || "$reason" == ImagePullBackOff ]] ||
  die "capo's pod is waiting for '$reason', not for its image"
say "bad input: capo's pod waits with $reason"

# The image loaded, capo's pod starts at the kubelet's next pull (its back-off is at most five
# minutes) with nothing reinstalled, and a rerun of the same init is a no-op.
t0=$SECONDS
hack/mgmt-cluster.sh load "$release_dir"/*.tar
out=$(init "$config" --wait-provider-timeout 30 2>&1) || { echo "$out" >&2; die "the rerun of clusterctl init failed"; }
mx kubectl -n capo-system rollout status deploy/capo-controller-manager --timeout=330s >/dev/null
(($(openstack_providers) == 1)) || die "capo is not installed once: $(openstack_providers) providers"
say "bad input: capo Available $((SECONDS - t0)) s after its image was loaded, the rerun of init a no-op"
check_capo_log bad-input

# An upgrade within capo's series, as docs/install.md tells operators: the next patch release
# built beside this one in a repository of the tier's own (the same build, tagged as the next
# version), then `clusterctl upgrade apply`.
next="${version%.*}.$((${version##*.} + 1))"
say "upgrade: clusterctl upgrade apply from capo $version to $next"
upgrade_repo="$dir/upgrade-repo/infrastructure-openstack"
mkdir -p "$upgrade_repo"
cp -r "$release_dir" "$upgrade_repo/$version"
next_dir=$(hack/release.sh "$next" --out "$upgrade_repo/$next" | tail -n 1)
hack/mgmt-cluster.sh load "$next_dir"/*.tar
capo_config "$upgrade_repo/$version/infrastructure-components.yaml" >"$dir/upgrade-repo/clusterctl.yaml"
t0=$SECONDS
mx "${cc[@]}" upgrade apply --config "$dir/upgrade-repo/clusterctl.yaml" --kubeconfig "$kubeconfig" \
  --infrastructure "capo-system/openstack:$next" --wait-providers --wait-provider-timeout 300
image=$(mx kubectl -n capo-system get deploy capo-controller-manager -o jsonpath='{.spec.template.spec.containers[0].image}')
[[ "$image" == *":$next" ]] || die "after the upgrade capo's Deployment runs $image, not $next"
installed=$(mx kubectl -n capo-system get providers.clusterctl.cluster.x-k8s.io infrastructure-openstack -o jsonpath='{.version}')
[[ "$installed" == "$next" ]] || die "clusterctl's inventory says capo $installed after the upgrade to $next"
mx kubectl -n capo-system rollout status deploy/capo-controller-manager --timeout=120s >/dev/null
say "upgrade: capo $next Available $((SECONDS - t0)) s after clusterctl upgrade apply"
check_capo_log upgrade-patch
say "all passed"

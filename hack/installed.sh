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
# enough). Prints the figures the issue asks for (init to Available, capo's RSS).
#
#   hack/installed.sh           build what is missing (cached), run the tier, tear it all down
#   hack/installed.sh --keep    leave the management cluster running afterwards (stop it with
#                               hack/mgmt-cluster.sh stop <dir>)
#
# Environment: CAPO_INSTALLED_DIR (the cluster's state directory, default /tmp/capo-installed).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CAPO_CACHE_DIR:-$HOME/.cache/capo}/target}"
export CARGO_INCREMENTAL=0

say() { echo "installed: $*" >&2; }
die() { say "$*"; exit 1; }

keep=false
case "${1:-}" in
  --keep) keep=true ;;
  "") ;;
  *) die "usage: $0 [--keep]" ;;
esac

version="v$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)"
dir="${CAPO_INSTALLED_DIR:-/tmp/capo-installed}"
export CAPO_MGMT_NETNS="${CAPO_MGMT_NETNS:-capo-installed}"

say "building what the tier needs (cached after the first run)"
env_dir="$(hack/test-env.sh | tail -n 1)"
capi_dir="$(hack/capi.sh build | tail -n 1)"
hack/mgmt-cluster.sh build >/dev/null
repo_dir="$(hack/clusterctl-repo.sh build | tail -n 1)"
release_dir="$(hack/release.sh "$version" | tail -n 1)"
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

# The local repository's configuration with capo's release (already in clusterctl's layout,
# {base}/infrastructure-openstack/{version}/) as the openstack infrastructure provider instead
# of upstream's.
mkdir -p "$dir/clusterctl"
python3 - "$repo_dir/clusterctl.yaml" "$release_dir/infrastructure-components.yaml" >"$dir/clusterctl/clusterctl.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text, n = re.subn(r"(name: openstack\n\s+type: InfrastructureProvider\n\s+url: )\S+", r"\g<1>file://" + sys.argv[2], text)
if n != 1:
    sys.exit("the repository's clusterctl.yaml has no openstack InfrastructureProvider entry")
print(text, end="")
PY
config="$dir/clusterctl/clusterctl.yaml"

say "clusterctl init (cert-manager, Cluster API core, kubeadm bootstrap and control plane, capo $version)"
t0=$SECONDS
mx env HOME="$dir" CLUSTERCTL_DISABLE_VERSIONCHECK=true "$capi_dir/bin/clusterctl" init \
  --config "$config" --kubeconfig "$kubeconfig" \
  --core "cluster-api:$(cat "$capi_dir/VERSION")" --bootstrap "kubeadm:$(cat "$capi_dir/VERSION")" \
  --control-plane "kubeadm:$(cat "$capi_dir/VERSION")" --infrastructure "openstack:$version" \
  --wait-providers --wait-provider-timeout 600
init_s=$((SECONDS - t0))
say "figures: clusterctl init to every provider Available: ${init_s} s"

# capo's resident memory, read from its container's process (ctr names the task's pid).
capo_rss() {
  local cid pid
  cid=$(mx kubectl -n capo-system get pods -l cluster.x-k8s.io/provider=infrastructure-openstack \
    -o jsonpath='{.items[0].status.containerStatuses[0].containerID}')
  cid=${cid#containerd://}
  pid=$(ctr --address "$dir/containerd.sock" -n k8s.io tasks ls | awk -v id="$cid" '$1 == id {print $2}')
  [[ -n "$pid" ]] || { echo "unknown"; return; }
  awk '/^VmRSS/ {printf "%.1f MiB\n", $2 / 1024}' "/proc/$pid/status"
}
sleep 20
say "figures: capo's RSS at idle, 20 s after init: $(capo_rss)"

scenarios() { # test-binary arguments
  mx env CAPO_INSTALLED_KUBECONFIG="$kubeconfig" CAPO_INSTALLED_CLUSTERCTL_CONFIG="$config" \
    CAPO_INSTALLED_UPSTREAM_CONFIG="$repo_dir/clusterctl.yaml" \
    CAPO_INSTALLED_VERSION="$version" CAPO_CAPI_BUILD_DIR="$capi_dir" \
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
say "figures: capo's RSS after the scenarios: $(capo_rss)"
check_capo_log scenarios

# The drop-in path on the same cluster: capo and its CRDs removed (no OpenStack* object is
# left), then ORC and upstream CAPO v0.14.7 installed by clusterctl from the local repository;
# the scenario lets upstream create a cluster and runs `clusterctl upgrade apply` to capo.
say "drop-in: upstream CAPO v0.14.7 installed by clusterctl init, then clusterctl upgrade apply to capo $version"
cc=(env HOME="$dir" CLUSTERCTL_DISABLE_VERSIONCHECK=true "$capi_dir/bin/clusterctl")
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
say "all passed"

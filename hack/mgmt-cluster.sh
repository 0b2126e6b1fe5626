#!/usr/bin/env bash
# A real single-node Kubernetes management cluster, the kind operators install Cluster API
# providers on: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a kubelet and
# kube-proxy, with containerd + runc and the CNI bridge from Debian, every pod an image built
# here (no registry is reached). It runs inside a network namespace of its own, so no packet
# leaves it:
#   node address  10.250.0.1 on the namespace's lo (API server https://10.250.0.1:6443)
#   pods          10.251.0.0/24 on the bridge cni0 inside the namespace
#   services      10.252.0.0/24 (kube-proxy, iptables mode), routed to the bridge so the node's
#                 own connections reach kube-proxy's rules; kubernetes.default is 10.252.0.1
#   local range   10.253.0.0/16 routed to lo: whatever listens there (capo-sim, the workload
#                 emulator's endpoints) is reachable from the node and from every pod
# The namespace has no route anywhere else.
#
#   hack/mgmt-cluster.sh build             build once (cached) and print the build directory
#   hack/mgmt-cluster.sh start [DIR]       start the cluster; state, logs and kubeconfig in DIR
#                                          (default /tmp/capo-mgmt); prints DIR/kubeconfig last
#   hack/mgmt-cluster.sh load ARCHIVE...   import OCI image archives into the node's containerd
#   hack/mgmt-cluster.sh unload REF...     remove images from it (what a node that never had
#                                          them looks like: the kubelet's next pull fails)
#   hack/mgmt-cluster.sh exec CMD...       run CMD inside the cluster's network namespace with
#                                          KUBECONFIG set (e.g. `exec kubectl get pods -A`)
#   hack/mgmt-cluster.sh stop [DIR]        stop everything, unmount, delete the namespace and DIR
#   hack/mgmt-cluster.sh build --update    regenerate hack/mgmt-cluster/go.{mod,sum} from the
#                                          test environment's Kubernetes version
#
# Built from the Go module proxy and pinned by hack/mgmt-cluster/go.{mod,sum} (the same
# Kubernetes version as hack/test-env.sh, whose kube-apiserver, etcd and kubectl it uses): kubelet,
# kube-proxy, kube-controller-manager, kube-scheduler, and the pause image from Kubernetes'
# build/pause/linux/pause.c. containerd, runc, the CNI plugins and iptables are installed from
# Debian when missing. Cached under ${CAPO_CACHE_DIR:-~/.cache/capo}/mgmt-cluster/<key>.
#
# Environment: CAPO_MGMT_NETNS (namespace name, default capo-mgmt), CAPO_MGMT_DIR (the state
# directory `load` and `exec` use, default /tmp/capo-mgmt), CAPO_MGMT_JOBS (go build
# parallelism, default 2).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$repo/hack/mgmt-cluster"
RECIPE=1
PAUSE_VERSION=3.10.1
PAUSE_IMAGE="localhost/capo/pause:${PAUSE_VERSION}"
NODE=capo-mgmt
NODE_IP=10.250.0.1
POD_CIDR=10.251.0.0/24
SERVICE_CIDR=10.252.0.0/24
SERVICE_IP=10.252.0.1
LOCAL_RANGE=10.253.0.0/16
netns="${CAPO_MGMT_NETNS:-capo-mgmt}"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-buildvcs=false"

say() { echo "mgmt-cluster: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { die "usage: $0 build [--update] | start [DIR] | load ARCHIVE... | unload REF... | exec CMD... | stop [DIR]"; }

# shellcheck source=hack/lib/oci.sh
source "$repo/hack/lib/oci.sh"

# --- build -----------------------------------------------------------------------------------
k8s_version() { sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$here/go.mod"; }

build_key() {
  local pins
  pins=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)
  echo "k8s-$(k8s_version)_pause-${PAUSE_VERSION}_$(go env GOVERSION)_r${RECIPE}-${pins}"
}

build() {
  # shellcheck source=hack/lib/cache.sh
  source "$repo/hack/lib/cache.sh"
  # shellcheck source=hack/lib/k8s.sh
  source "$repo/hack/lib/k8s.sh"
  build_args build "$@"
  command -v go >/dev/null || die "the Go toolchain is required on PATH"
  command -v cc >/dev/null || die "a C compiler (Debian's gcc) is required for the pause image"
  if $update; then
    sed 's#^module .*#module capo.test/mgmt-cluster#' "$repo/hack/test-env/k8s/go.mod" >"$here/go.mod"
    cp "$repo/hack/test-env/k8s/go.sum" "$here/go.sum"
    (cd "$here" && go list -mod=mod -deps k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy \
      k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler >/dev/null)
  fi
  root="${CAPO_CACHE_DIR:-$HOME/.cache/capo}/mgmt-cluster"
  out="$root/$(build_key)"
  ready() { [[ -x "$out/bin/kubelet" && -x "$out/bin/kube-proxy" && -s "$out/images/pause.tar" ]]; }
  update=false
  cache_lock_or_exit
  local version ldflags cmd
  # Global: the EXIT trap runs after this function returns.
  work=$(mktemp -d "$root/.build-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/out/bin" "$work/out/images"
  version=$(k8s_version)
  # Stamped as Kubernetes' own build does, so the node reports its real version.
  ldflags=$(k8s_ldflags "$version")
  say "building kubelet, kube-proxy, kube-controller-manager and kube-scheduler ${version} (first run only; several minutes)"
  for cmd in kubelet kube-proxy kube-controller-manager kube-scheduler; do
    (cd "$here" && run go build -mod=readonly -p "${CAPO_MGMT_JOBS:-2}" -trimpath "-ldflags=${ldflags}" \
      -o "$work/out/bin/$cmd" "k8s.io/kubernetes/cmd/$cmd")
  done
  say "building the pause image ${PAUSE_IMAGE} from Kubernetes' build/pause/linux/pause.c"
  local src
  src=$(cd "$here" && go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -f "$src/build/pause/linux/pause.c" ]] || die "pause.c not found in k8s.io/kubernetes@${version}"
  mkdir -p "$work/pause"
  run cc -Os -Wall -Werror -static -DVERSION="v${PAUSE_VERSION}" -o "$work/pause/pause" "$src/build/pause/linux/pause.c"
  strip "$work/pause/pause"
  SOURCE_DATE_EPOCH=0 oci_image "$work/pause" "$PAUSE_IMAGE" "$work/out/images/pause.tar" \
    --entrypoint '["/pause"]' --user 65535:65535 >/dev/null
  chmod -R u+w "$work/out"
  mv -T "$work/out" "$out"
  say "ready: $out"
  echo "$out"
}

# --- helpers for the running cluster ---------------------------------------------------------
state_dir() { echo "${1:-/tmp/capo-mgmt}"; }
in_ns() { nsenter --net="/run/netns/$netns" -- "$@"; }

ensure_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v nsenter >/dev/null || missing+=(util-linux)
  command -v ip >/dev/null || missing+=(iproute2)
  if ((${#missing[@]})); then
    say "installing ${missing[*]} from Debian"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # apt starts Debian's containerd service where systemd runs; ours has its own socket and root.
}

# A CA and the certificates of every component (client certificates carry the identity RBAC
# and the Node authorizer expect).
make_pki() {
  local pki=$1
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=capo-mgmt-ca" 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    cert() { # name CN O [SAN]
      local name=$1 cn=$2 o=$3 san=${4:-}
      openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$cn${o:+/O=$o}" 2>/dev/null
      local ext="extendedKeyUsage=clientAuth"
      [[ -n "$san" ]] && ext="extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san"
      openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
        -extfile <(printf '%s\n' "$ext") -out "$name.crt" 2>/dev/null
      rm -f "$name.csr"
    }
    cert apiserver kube-apiserver "" "IP:${NODE_IP},IP:${SERVICE_IP},IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
    cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
    cert admin kubernetes-admin system:masters
    cert controller-manager system:kube-controller-manager ""
    cert scheduler system:kube-scheduler ""
    cert kube-proxy system:kube-proxy ""
    cert kubelet "system:node:${NODE}" system:nodes
  )
}

kubeconfig() { # name -> kubeconfig for that client certificate
  local dir=$1 name=$2
  cat >"$dir/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $NODE
  cluster:
    server: https://${NODE_IP}:6443
    certificate-authority: $dir/pki/ca.crt
users:
- name: $name
  user:
    client-certificate: $dir/pki/$name.crt
    client-key: $dir/pki/$name.key
contexts:
- name: $name@$NODE
  context: {cluster: $NODE, user: $name}
current-context: $name@$NODE
EOF
}

# Starts `name` in the namespace, logging to DIR/logs/name.log; its pid in DIR/pids/name.
daemon() {
  local dir=$1 name=$2
  shift 2
  nsenter --net="/run/netns/$netns" -- setsid "$@" >"$dir/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/pids/$name"
}

wait_for() { # description seconds command...
  local what=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
  say "$what"
}

start() {
  local dir
  dir=$(state_dir "${1:-}")
  [[ "$(id -u)" == 0 ]] || die "the management cluster needs root (network namespace, kubelet, containerd)"
  [[ ! -e "/run/netns/$netns" ]] || die "network namespace $netns exists: run '$0 stop${1:+ $1}' first"
  ensure_packages
  local build env
  build=$(build | tail -n 1)
  env=$("$repo/hack/test-env.sh" | tail -n 1)
  rm -rf "$dir"
  mkdir -p "$dir"/{logs,pids,etcd,cni/net.d,containerd/root,containerd/state,kubelet,pod-logs}
  echo "$netns" >"$dir/netns"
  ln -s "$env/bin/kubectl" "$dir/kubectl"

  say "network namespace $netns: node $NODE_IP on lo, pods $POD_CIDR, services $SERVICE_CIDR, local $LOCAL_RANGE"
  ip netns add "$netns"
  in_ns ip link set lo up
  in_ns ip addr add "$NODE_IP/32" dev lo
  in_ns ip route add local "$LOCAL_RANGE" dev lo
  # The pods' bridge, made here rather than by the CNI plugin (which takes it as it finds it),
  # so service addresses can be routed to it: a connection from the node itself (the API
  # server calling a webhook) needs a route before kube-proxy's DNAT sends it to a pod.
  in_ns ip link add cni0 type bridge
  in_ns ip link set cni0 up
  in_ns ip route add "$SERVICE_CIDR" dev cni0
  # Pods reach services through kube-proxy's rules on the bridge; forwarding stays inside the
  # namespace (it has no other interface).
  in_ns sysctl -qw net.ipv4.ip_forward=1
  in_ns sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true

  make_pki "$dir/pki"
  local n
  for n in admin controller-manager scheduler kube-proxy kubelet; do kubeconfig "$dir" "$n"; done
  cp "$dir/admin.kubeconfig" "$dir/kubeconfig"

  daemon "$dir" etcd "$env/bin/etcd" --data-dir "$dir/etcd" --listen-client-urls http://127.0.0.1:2379 \
    --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
    --unsafe-no-fsync
  daemon "$dir" kube-apiserver "$env/bin/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
    --advertise-address "$NODE_IP" --bind-address "$NODE_IP" --secure-port 6443 \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --client-ca-file "$dir/pki/ca.crt" --tls-cert-file "$dir/pki/apiserver.crt" --tls-private-key-file "$dir/pki/apiserver.key" \
    --kubelet-client-certificate "$dir/pki/apiserver-kubelet-client.crt" --kubelet-client-key "$dir/pki/apiserver-kubelet-client.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$dir/pki/sa.pub" --service-account-signing-key-file "$dir/pki/sa.key" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true \
    --kubelet-preferred-address-types InternalIP
  wait_for "kube-apiserver is ready" 120 in_ns "$env/bin/kubectl" --kubeconfig "$dir/kubeconfig" get --raw /readyz ||
    die "kube-apiserver did not become ready: $(tail -n 20 "$dir/logs/kube-apiserver.log")"

  daemon "$dir" kube-controller-manager "$build/bin/kube-controller-manager" --kubeconfig "$dir/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$dir/controller-manager.kubeconfig" --authorization-kubeconfig "$dir/controller-manager.kubeconfig" \
    --service-account-private-key-file "$dir/pki/sa.key" --root-ca-file "$dir/pki/ca.crt" \
    --cluster-signing-cert-file "$dir/pki/ca.crt" --cluster-signing-key-file "$dir/pki/ca.key" \
    --use-service-account-credentials --leader-elect=false --bind-address 127.0.0.1 \
    --service-cluster-ip-range "$SERVICE_CIDR"
  daemon "$dir" kube-scheduler "$build/bin/kube-scheduler" --kubeconfig "$dir/scheduler.kubeconfig" \
    --authentication-kubeconfig "$dir/scheduler.kubeconfig" --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1

  cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$dir/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  # Containers never get a lower oom_score_adj than containerd's own: this machine's bounding
  # set has no CAP_SYS_RESOURCE, so lowering it (the sandbox's -998) fails.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
EOF
  cat >"$dir/cni/net.d/10-capo-mgmt.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "capo-mgmt",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$dir/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  daemon "$dir" containerd containerd --config "$dir/containerd.toml"
  wait_for "containerd is ready" 60 ctr --address "$dir/containerd.sock" version ||
    die "containerd did not start: $(tail -n 20 "$dir/logs/containerd.log")"
  CAPO_MGMT_DIR="$dir" load "$build/images/pause.tar"

  # The kubelet's cgroups under one named after the namespace, so two clusters on one machine
  # (or a cluster and another kubelet) never manage each other's pods.
  local hierarchy
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -e "$hierarchy/cgroup.procs" ]] && mkdir -p "$hierarchy$netns"
  done
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $dir/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /$netns
containerRuntimeEndpoint: unix://$dir/containerd.sock
failSwapOn: false
address: $NODE_IP
healthzBindAddress: 127.0.0.1
podLogsDir: $dir/pod-logs
resolvConf: ""
oomScoreAdj: 0
serializeImagePulls: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  daemon "$dir" kubelet "$build/bin/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubelet.kubeconfig" \
    --root-dir "$dir/kubelet" --hostname-override "$NODE" --node-ip "$NODE_IP"

  cat >"$dir/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $dir/kube-proxy.kubeconfig}
hostnameOverride: $NODE
bindAddress: $NODE_IP
clusterCIDR: $POD_CIDR
mode: iptables
conntrack: {maxPerCore: 0}
oomScoreAdj: 0
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
EOF
  daemon "$dir" kube-proxy "$build/bin/kube-proxy" --config "$dir/kube-proxy.yaml"

  wait_for "node $NODE is Ready" 180 in_ns "$env/bin/kubectl" --kubeconfig "$dir/kubeconfig" wait --for=condition=Ready "node/$NODE" --timeout=1s ||
    die "node $NODE did not become Ready: $(tail -n 30 "$dir/logs/kubelet.log")"
  # Pods can be created once the controller manager has made the namespace's ServiceAccount.
  wait_for "ServiceAccount default/default exists" 60 in_ns "$env/bin/kubectl" --kubeconfig "$dir/kubeconfig" get serviceaccount default ||
    die "kube-controller-manager made no ServiceAccount: $(tail -n 20 "$dir/logs/kube-controller-manager.log")"
  say "ready: kubectl --kubeconfig $dir/kubeconfig (inside: $0 exec kubectl ...)"
  echo "$dir/kubeconfig"
}

load() {
  local dir=${CAPO_MGMT_DIR:-/tmp/capo-mgmt} archive
  for archive in "$@"; do
    [[ -s "$archive" ]] || die "no image archive at $archive (was it built?)"
    ctr --address "$dir/containerd.sock" -n k8s.io images import --no-unpack=false "$archive" >/dev/null ||
      die "containerd refused the image archive $archive"
  done
}

unload() {
  local dir=${CAPO_MGMT_DIR:-/tmp/capo-mgmt}
  (($#)) || usage
  ctr --address "$dir/containerd.sock" -n k8s.io images rm "$@" >/dev/null ||
    die "containerd could not remove $*"
}

stop() {
  local dir pid name
  dir=$(state_dir "${1:-}")
  # The pods' network namespaces, which containerd pins under /var/run/netns: read from the
  # bundles of its tasks before anything stops.
  local pod_netns
  pod_netns=$(cat "$dir"/containerd/state/io.containerd.runtime.v2.task/k8s.io/*/config.json 2>/dev/null |
    grep -o '/var/run/netns/cni-[0-9a-f-]*' | sort -u || true)
  # The kubelet first, so it restarts nothing; then the pods' processes (containerd's shims
  # and their children), then the control plane.
  for name in kubelet kube-proxy kube-scheduler kube-controller-manager; do
    [[ -f "$dir/pids/$name" ]] && kill "$(cat "$dir/pids/$name")" 2>/dev/null || true
  done
  if [[ -S "$dir/containerd.sock" ]]; then
    for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $dir/containerd.sock" || true); do
      pkill -KILL -P "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    done
  fi
  for name in containerd kube-apiserver etcd; do
    [[ -f "$dir/pids/$name" ]] && kill "$(cat "$dir/pids/$name")" 2>/dev/null || true
  done
  sleep 1
  for name in "$dir"/pids/*; do
    [[ -f "$name" ]] && kill -KILL "$(cat "$name")" 2>/dev/null || true
  done
  # Volumes, sandboxes and snapshots mounted under the state directory.
  if [[ -d "$dir" ]]; then
    grep -o " $dir/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  for name in $pod_netns; do umount "$name" 2>/dev/null || true; rm -f "$name"; done
  # The kubelet's cgroups (empty now), so the next cluster starts from none.
  find /sys/fs/cgroup/*/"$netns" -depth -type d -exec rmdir {} + 2>/dev/null || true
  [[ -e "/run/netns/$netns" ]] && ip netns delete "$netns"
  rm -rf "$dir"
  say "stopped"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  start) shift; start "$@" ;;
  load) shift; load "$@" ;;
  unload) shift; unload "$@" ;;
  exec)
    shift
    dir=${CAPO_MGMT_DIR:-/tmp/capo-mgmt}
    KUBECONFIG="$dir/kubeconfig" PATH="$dir:$PATH" exec nsenter --net="/run/netns/$netns" -- "$@"
    ;;
  stop) shift; stop "$@" ;;
  *) usage ;;
esac

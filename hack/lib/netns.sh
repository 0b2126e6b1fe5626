# Sourced by the scripts that run the end-to-end tier's programs (hack/e2e.sh, hack/soak.sh) and
# by hack/test.sh for the cloud-provider-openstack test on the real services. Cluster API's
# managers bind their webhook servers on every interface and the clusters' endpoints are
# floating IPs of capo-sim's loopback external network, so those programs run in a fresh network
# namespace with only a loopback interface; netns_bridge carries ports of the host's loopback
# into it. The caller defines say().

# unshare and ip, installed when missing.
netns_tools() {
  local tool
  for tool in unshare ip; do
    if ! command -v "$tool" >/dev/null; then
      say "$tool is missing; installing util-linux and iproute2"
      apt-get update -qq && apt-get install -y -qq util-linux iproute2 >/dev/null
    fi
  done
}

# The test environment, Cluster API and the Ansible providers (each built once, then cached),
# exported for the programs that run in the namespace.
netns_builds() {
  CAPO_TEST_ENV_DIR="${CAPO_TEST_ENV_DIR:-$(hack/test-env.sh | tail -n 1)}"
  CAPO_CAPI_BUILD_DIR="${CAPO_CAPI_BUILD_DIR:-$(hack/capi.sh build | tail -n 1)}"
  CAPO_PARTNERS_BUILD_DIR="${CAPO_PARTNERS_BUILD_DIR:-$(hack/partners.sh build | tail -n 1)}"
  export CAPO_TEST_ENV_DIR CAPO_CAPI_BUILD_DIR CAPO_PARTNERS_BUILD_DIR
  say "Cluster API build: $CAPO_CAPI_BUILD_DIR"
  say "Ansible providers build: $CAPO_PARTNERS_BUILD_DIR"
}

# The API ports of the real OpenStack services (hack/openstack-env.sh: Keystone, Nova, Cinder,
# Placement, Glance, Neutron, Octavia), all on 127.0.0.1 of the host's namespace, where their
# catalog and clouds.yaml point.
# shellcheck disable=SC2034 # used by the scripts that source this file
NETNS_OPENSTACK_PORTS=(5000 8774 8776 8778 9292 9696 9876)

# The host-side socat processes of netns_bridge, stopped by netns_bridge_stop.
NETNS_BRIDGE_PIDS=()

# netns_bridge DIR PORT...: makes each 127.0.0.1:PORT of this (the host's) namespace answer on
# 127.0.0.1:PORT inside the namespaces netns_exec makes afterwards, without a packet leaving a
# loopback: the two sides meet on unix sockets DIR/PORT.sock (a socket file is reached through the
# file system, which the namespaces share). Here one `socat` per port listens on DIR/PORT.sock
# (mode 0600) and connects each client to 127.0.0.1:PORT; netns_exec then starts, in its
# namespace, one `socat` per port listening on 127.0.0.1:PORT (and nowhere else) that connects to
# that socket, and stops them when its command ends. Exports CAPO_NETNS_BRIDGE_DIR and
# CAPO_NETNS_BRIDGE_PORTS for netns_exec. Call netns_bridge_stop when done.
netns_bridge() {
  local dir="$1" port tries
  shift
  if ! command -v socat >/dev/null; then
    say "socat is missing; installing it"
    apt-get update -qq && apt-get install -y -qq socat >/dev/null
  fi
  mkdir -p "$dir"
  for port in "$@"; do
    socat UNIX-LISTEN:"$dir/$port.sock",fork,unlink-early,mode=600,backlog=128 TCP:127.0.0.1:"$port" &
    NETNS_BRIDGE_PIDS+=("$!")
  done
  for port in "$@"; do
    tries=0
    until [[ -S "$dir/$port.sock" ]]; do
      if ((++tries > 100)); then
        say "netns_bridge: socat does not listen on $dir/$port.sock"
        netns_bridge_stop
        return 1
      fi
      sleep 0.05
    done
  done
  export CAPO_NETNS_BRIDGE_DIR="$dir" CAPO_NETNS_BRIDGE_PORTS="$*"
}

# Stops the host side of netns_bridge and removes its sockets (each connection's own socat ends
# with its connection).
netns_bridge_stop() {
  local pid port
  for pid in "${NETNS_BRIDGE_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${NETNS_BRIDGE_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  NETNS_BRIDGE_PIDS=()
  if [[ -n "${CAPO_NETNS_BRIDGE_DIR:-}" ]]; then
    for port in ${CAPO_NETNS_BRIDGE_PORTS:-}; do
      rm -f "$CAPO_NETNS_BRIDGE_DIR/$port.sock"
    done
  fi
  unset CAPO_NETNS_BRIDGE_DIR CAPO_NETNS_BRIDGE_PORTS
}

# Replaces the shell with `command args...` run in a new network namespace whose loopback is up,
# CAPO_E2E_NETNS=1 set (the management cluster's check that it runs in one). After netns_bridge,
# the namespace's side of the bridge runs around the command (then its exit status is the
# command's).
netns_exec() {
  # Root can make a network namespace directly; anyone else needs a user namespace for it.
  local userns=()
  [[ "$(id -u)" == 0 ]] || userns=(--map-root-user)
  exec unshare --net "${userns[@]}" -- bash -c '
    ip link set lo up
    export CAPO_E2E_NETNS=1
    [[ -n "${CAPO_NETNS_BRIDGE_DIR:-}" ]] || exec "$@"
    pids=()
    stop() { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; }
    trap stop EXIT
    trap "exit 143" TERM INT
    for port in $CAPO_NETNS_BRIDGE_PORTS; do
      socat TCP-LISTEN:"$port",bind=127.0.0.1,fork,reuseaddr,backlog=128 \
        UNIX-CONNECT:"$CAPO_NETNS_BRIDGE_DIR/$port.sock" &
      pids+=("$!")
    done
    for port in $CAPO_NETNS_BRIDGE_PORTS; do
      tries=0
      until [[ -n "$(ss -Hltn "sport = :$port")" ]]; do
        if ((++tries > 100)); then
          echo "netns_exec: socat does not listen on 127.0.0.1:$port" >&2
          exit 1
        fi
        sleep 0.05
      done
    done
    rc=0
    "$@" || rc=$?
    exit "$rc"
  ' netns "$@"
}

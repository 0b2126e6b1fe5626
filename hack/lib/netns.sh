# Sourced by the scripts that run the end-to-end tier's programs (hack/e2e.sh, hack/soak.sh).
# Cluster API's managers bind their webhook servers on every interface and the clusters'
# endpoints are floating IPs of capo-sim's loopback external network, so those programs run in a
# fresh network namespace with only a loopback interface. The caller defines say().

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

# Replaces the shell with `command args...` run in a new network namespace whose loopback is up,
# CAPO_E2E_NETNS=1 set (the management cluster's check that it runs in one).
netns_exec() {
  # Root can make a network namespace directly; anyone else needs a user namespace for it.
  local userns=()
  [[ "$(id -u)" == 0 ]] || userns=(--map-root-user)
  exec unshare --net "${userns[@]}" -- bash -c '
    ip link set lo up
    export CAPO_E2E_NETNS=1
    exec "$@"
  ' netns "$@"
}

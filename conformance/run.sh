#!/usr/bin/env bash
# Simulator conformance: drives capo-sim with the official OpenStack clients (openstacksdk,
# python-openstackclient, python-octaviaclient) from the pinned project virtualenv.
#   conformance/run.sh [pytest args...]
# Uses $CAPO_SIM_BIN when set, else builds capo-sim into ${CARGO_TARGET_DIR:-target}.
#   CAPO_CONFORMANCE_CLOUD=real conformance/run.sh [pytest args...]
# runs the same suite against real OpenStack services instead (differential fidelity): starts
# them with hack/openstack-env.sh unless $CAPO_REAL_CLOUDS_YAML names the clouds.yaml of running
# ones; tests marked sim_only are skipped (see conformance/NOTES.md).
# Exits non-zero when any test fails (or none ran).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

venv="$(hack/python-env.sh | tail -n 1)"

if [[ "${CAPO_CONFORMANCE_CLOUD:-sim}" == real ]]; then
  if [[ -z "${CAPO_REAL_CLOUDS_YAML:-}" ]]; then
    CAPO_REAL_CLOUDS_YAML="$(hack/openstack-env.sh start | tail -n 1)"
    export CAPO_REAL_CLOUDS_YAML
  fi
elif [[ -z "${CAPO_SIM_BIN:-}" ]]; then
  target="${CARGO_TARGET_DIR:-$root/target}"
  cargo build --locked -j2 -p capo-sim --bin capo-sim >&2
  export CAPO_SIM_BIN="$target/debug/capo-sim"
fi

# The suite reads clouds.yaml only from the file capo-sim writes; drop any OS_* settings of the caller.
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(OS_[A-Za-z0-9_]*\)=.*/\1/p')

exec "$venv/bin/python" -m pytest -q -p no:cacheprovider conformance "$@"

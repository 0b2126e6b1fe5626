#!/usr/bin/env bash
# Real OpenStack services (PyPI 2026.2 releases) on 127.0.0.1, as a test partner for capo:
# Keystone, Neutron (ML2, agentless), Placement, Nova (fake virt driver, two hosts in two
# availability zones), Glance, Cinder (no-op volume driver), Octavia (no-op amphorae on fake Nova
# servers, real VIP ports), on MariaDB, RabbitMQ and memcached. No data plane: servers never boot.
#
#   hack/openstack-env.sh start  [--dir D]   install what is missing, start everything from the
#                                            baseline (the cloud as the first start left it, with
#                                            its fixtures: nothing of earlier runs survives);
#                                            the LAST stdout line is the clouds.yaml path
#                                            (clouds `capo-real`: member of project `capo`;
#                                            `capo-real-admin`: cloud admin). A second start while
#                                            running only prints that path.
#   hack/openstack-env.sh stop   [--dir D]   stop every process start launched (by pid)
#   hack/openstack-env.sh status [--dir D]   list those processes
#
# Installs, idempotently: apt packages mariadb-server rabbitmq-server memcached (needs root), and
# one Python 3.12 virtualenv pinned by hack/openstack-env/requirements.txt plus the shims in
# hack/openstack-env/shims, cached under $CAPO_CACHE_DIR/openstack-env/<key> (key = hash of those
# files and the Python version), built under a lock so concurrent callers build it once.
# State, configs, logs and pid files live in the run directory D
# (default $CAPO_CACHE_DIR/openstack-run), never in the repository.
#
# Environment:
#   CAPO_CACHE_DIR            cache root (default ~/.cache/capo)
#   CAPO_OPENSTACK_PYTHON     a Python 3.12 interpreter (default: pyenv's newest 3.12, else python3.12)
#   CAPO_OPENSTACK_RECLAIM_INTERVAL  Nova's reclaim_instance_interval in seconds (default 0): > 0
#                             makes a deleted server SOFT_DELETED until reclaimed; a start with
#                             another value than the running services have restarts Nova's API
#                             and compute hosts
# See docs/real-openstack.md.
set -euo pipefail

RECIPE=1   # bump when the venv recipe below changes in a way the hashed files do not show
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/openstack-env"
cache="${CAPO_CACHE_DIR:-$HOME/.cache/capo}"
run_dir="$cache/openstack-run"

say() { echo "openstack-env: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { die "usage: $0 start|stop|status [--dir DIR]"; }

cmd="${1:-}"; [[ -n "$cmd" ]] || usage; shift
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) [[ $# -ge 2 ]] || usage; run_dir="$2"; shift 2 ;;
    --dir=*) run_dir="${1#--dir=}"; shift ;;
    *) usage ;;
  esac
done
mkdir -p "$run_dir"
run_dir="$(cd "$run_dir" && pwd)"

# --- processes recorded in <run>/pids/NN-name.pid, NN = start order ------------------------------
pid_files() { ls "$run_dir"/pids/*.pid 2>/dev/null | sort ${1:-} || true; }
# Running and not a zombie (an exited child of a finished start may never be reaped).
alive() {
  local st
  st="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  st="${st##*) }"
  [[ "${st%% *}" != Z && "${st%% *}" != X ]]
}

all_alive() {
  local f n=0
  for f in $(pid_files); do alive "$(cat "$f")" || return 1; n=$((n + 1)); done
  [[ $n -gt 0 ]]
}

stop_all() {
  local f p name pids=()
  for f in $(pid_files -r); do
    p="$(cat "$f")"; name="$(basename "$f" .pid)"; name="${name#*-}"
    if alive "$p"; then
      # Each process was started as the leader of its own session: signal its whole group
      # (uwsgi workers, rabbitmq's beam), and nothing else.
      kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
      say "stopping $name ($p)"
      pids+=("$p")
      # Stop the OpenStack services before the databases and the message bus they use.
      if [[ "$name" == mariadb || "$name" == rabbitmq || "$name" == epmd || "$name" == memcached ]]; then
        wait_gone 30 "$p"
      fi
    fi
    rm -f "$f"
  done
  wait_gone 30 "${pids[@]+"${pids[@]}"}"
  rm -f "$run_dir/ready"
}

wait_gone() {
  local limit="$1" p i left; shift
  for ((i = 0; i < limit * 4; i++)); do
    left=()
    for p in "$@"; do alive "$p" && left+=("$p"); done
    [[ ${#left[@]} -eq 0 ]] && return 0
    sleep 0.25
  done
  for p in "${left[@]}"; do
    say "killing $p (did not stop within ${limit}s)"
    kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
  done
}

status() {
  local f p name state any=false
  for f in $(pid_files); do
    any=true; p="$(cat "$f")"; name="$(basename "$f" .pid)"; name="${name#*-}"
    if alive "$p"; then state=running; else state=dead; fi
    printf '%-24s %-8s %s\n' "$name" "$p" "$state"
  done
  $any || echo "not running ($run_dir)"
  [[ -f "$run_dir/ready" ]] && echo "clouds.yaml: $(cat "$run_dir/ready")"
  return 0
}

# --- installation ----------------------------------------------------------------------------------
install_packages() {
  if command -v mariadbd >/dev/null && [[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] && command -v memcached >/dev/null; then
    return
  fi
  [[ $(id -u) -eq 0 ]] || die "mariadb-server rabbitmq-server memcached are missing and installing them needs root"
  say "apt: installing mariadb-server rabbitmq-server memcached"
  # Installing must not start the system's own instances (they would listen on default addresses).
  local guard=false
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; guard=true
  fi
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      mariadb-server mariadb-client rabbitmq-server memcached openssl; } >"$cache/openstack-env-apt.log" 2>&1 ||
    { $guard && rm -f /usr/sbin/policy-rc.d; tail -n 30 "$cache/openstack-env-apt.log" >&2; die "apt-get failed"; }
  if $guard; then rm -f /usr/sbin/policy-rc.d; fi
}

find_python() {
  if [[ -n "${CAPO_OPENSTACK_PYTHON:-}" ]]; then echo "$CAPO_OPENSTACK_PYTHON"; return; fi
  local root cand
  root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
  cand="$(ls -d "$root"/versions/3.12.*/bin/python3.12 2>/dev/null | sort -V | tail -n 1 || true)"
  if [[ -n "$cand" ]]; then echo "$cand"; return; fi
  command -v python3.12 || die "no Python 3.12 found (set CAPO_OPENSTACK_PYTHON)"
}

# Prints the venv directory, building it if needed.
ensure_venv() {
  local python pyver key root dir
  python="$(find_python)"
  pyver="$("$python" -c 'import sys; print(sys.version.split()[0])')"
  [[ "$pyver" == 3.12.* ]] || die "$python is Python $pyver; the pinned OpenStack release wants 3.12"
  key="$( { echo "recipe $RECIPE python $pyver"; cat "$here/requirements.txt";
            (cd "$here/shims" && find . -type f \( -name '*.py' -o -name '*.toml' \) | LC_ALL=C sort |
               while read -r f; do echo "== $f"; cat "$f"; done); } | sha256sum | cut -c1-16)"
  root="$cache/openstack-env"
  dir="$root/py$pyver-$key"
  if [[ ! -f "$dir/.complete" ]]; then
    mkdir -p "$root"
    exec 8>"$root/.lock"
    flock 8
    if [[ ! -f "$dir/.complete" ]]; then
      say "building the OpenStack virtualenv $dir (first run only; a few minutes)"
      local log="$root/build-$key.log" work
      rm -rf "$dir"; mkdir -p "$dir"
      : >"$log"
      export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
      {
        "$python" -m venv "$dir/venv" &&
          nice -n 10 "$dir/venv/bin/pip" install -q -r "$here/requirements.txt" &&
          # Build the shims from a copy so no build artefacts land in the repository.
          work="$(mktemp -d)" && cp -r "$here/shims/." "$work/" &&
          nice -n 10 "$dir/venv/bin/pip" install -q --no-deps --no-build-isolation "$work" &&
          rm -rf "$work"
      } >>"$log" 2>&1 || { tail -n 40 "$log" >&2; die "virtualenv build failed (log: $log)"; }
      # Nova imports compute drivers only as nova.virt.<name>; point one such name at the shim.
      local virt
      virt="$("$dir/venv/bin/python" -c 'import nova.virt, os; print(os.path.dirname(nova.virt.__file__))')"
      printf '# Written by hack/openstack-env.sh: the stable-identity fake driver of capo_os_shims.\nfrom capo_os_shims.nova_fake import StableFakeDriver  # noqa: F401\n' >"$virt/capo_fake.py"
      echo "$key" >"$dir/.complete"
      say "virtualenv ready ($(du -sh "$dir/venv" | cut -f1))"
    fi
    flock -u 8
  fi
  echo "$dir/venv $key"
}

start() {
  mkdir -p "$cache"
  install_packages
  local venv key
  read -r venv key < <(ensure_venv) || true
  [[ -n "${key:-}" && -x "$venv/bin/python" ]] || die "no virtualenv"
  exec 9>"$run_dir/.lock"
  flock 9
  # Nova's soft delete is part of its running configuration: a start asking for another interval
  # than the running services have restarts Nova's API and compute hosts only (seconds).
  local reclaim="${CAPO_OPENSTACK_RECLAIM_INTERVAL:-0}"
  if [[ -f "$run_dir/ready" ]] && all_alive; then
    if [[ "$(cat "$run_dir/reclaim" 2>/dev/null || echo 0)" == "$reclaim" ]]; then
      cat "$run_dir/ready"
      return
    fi
    if "$venv/bin/python" "$here/osenv.py" restart-nova --dir "$run_dir" --venv "$venv" --key "$key"; then
      echo "$reclaim" >"$run_dir/reclaim"
      return
    fi
    say "restarting Nova failed (logs in $run_dir/logs); starting everything again"
  fi
  echo "$venv" >"$run_dir/venv"
  echo "$reclaim" >"$run_dir/reclaim"
  # Whatever is left of an earlier start (some processes died) is stopped: the start below resets
  # the databases to the baseline, which no running service may see happen.
  stop_all
  "$venv/bin/python" "$here/osenv.py" start --dir "$run_dir" --venv "$venv" --key "$key" ||
    die "start failed; logs in $run_dir/logs (stop with: $0 stop --dir $run_dir)"
}

case "$cmd" in
  start) start ;;
  stop) exec 9>"$run_dir/.lock"; flock 9; stop_all ;;
  status) status ;;
  *) usage ;;
esac

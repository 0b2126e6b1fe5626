# Run by hack/e2e.sh inside its network namespace: the whole end-to-end tier as three lanes at
# once. CAPO_E2E_BINS lists the test executables, "<target> <package directory> <executable>"
# per line. Each lane is one or more test processes run one after the other, each process with
# its own management cluster; each lane's output goes to a file, printed whole when the lane
# ends. Exits non-zero when any test failed.
set -uo pipefail

say() { echo "e2e: $*" >&2; }

# The scenarios of scenarios.rs that lane A runs (cargo filters: substrings of test names);
# lane B runs the others. About half of scenarios.rs's wall time each (docs/testing.md).
lane_a_filters=(kcp_scaling deleted_control_plane_server machine_health_check default_template)

bin_of() {
  local target dir exe
  while read -r target dir exe; do
    if [[ "$target" == "$1" ]]; then echo "$dir $exe"; return; fi
  done <<<"$CAPO_E2E_BINS"
  say "no test executable for $1"; return 1
}

# run_test <target> <args...>: one test process, from its package directory as cargo runs it.
run_test() {
  local target="$1" dir exe
  shift
  read -r dir exe < <(bin_of "$target") || return 1
  echo "     Running $target ($exe)"
  (cd "$dir" && CARGO_MANIFEST_DIR="$dir" "$exe" --test-threads 1 --nocapture "$@")
}

lane_a() {
  run_test scenarios "${lane_a_filters[@]}"
}

lane_b() {
  local skips=() f
  for f in "${lane_a_filters[@]}"; do skips+=(--skip "$f"); done
  run_test scenarios "${skips[@]}"
}

lane_c() {
  local rc=0
  # The test kit's own check of the Cluster API launcher (conversion and admission webhooks).
  run_test capi || rc=1
  run_test move || rc=1
  run_test ansible || rc=1
  run_test demo || rc=1
  return $rc
}

out="$(mktemp -d -t capo-e2e-lanes.XXXXXX)"
trap 'rm -rf "$out"' EXIT
t0=$SECONDS
declare -A pids
# Bases 1, 81, 161: each lane has 80 endpoint ranges of its own.
base=1
for lane in a b c; do
  CAPO_E2E_RANGE_BASE=$base "lane_$lane" >"$out/$lane.log" 2>&1 &
  pids[$lane]=$!
  base=$((base + 80))
done

failed=()
for lane in a b c; do
  if wait "${pids[$lane]}"; then status=passed; else status=FAILED; failed+=("$lane"); fi
  echo "==== e2e lane $lane: $status (tier at $((SECONDS - t0)) s) ===="
  cat "$out/$lane.log"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  say "lanes failed: ${failed[*]}"
  exit 1
fi
say "all lanes passed in $((SECONDS - t0)) s"

# Sourced by hack/test.sh. Runs integration test executables of one package a few at a time, each
# with one test thread, instead of one `cargo test` that runs them one after another with several
# threads: the same number of tests at once, but no thread idles while a binary's last, longest
# test finishes alone. Each binary's output is printed when it ends, whole.

# test_executables PACKAGE TEST...: builds the tests (no run) and prints "name path" per test.
test_executables() {
  local package=$1
  shift
  local args=()
  local t
  for t in "$@"; do args+=(--test "$t"); done
  cargo test --locked -p "$package" "${args[@]}" --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])
'
}

# jobs_running PID...: how many of the PIDs are still running.
jobs_running() {
  local pid n=0
  for pid in "$@"; do
    kill -0 "$pid" 2>/dev/null && n=$((n + 1))
  done
  echo "$n"
}

# run_test_pool WORKERS PACKAGE_DIR TEST... -- ARGS...: runs each named test executable (from the
# package in PACKAGE_DIR, in the order given: put the longest first) with `--test-threads 1 ARGS`,
# at most WORKERS at once, from PACKAGE_DIR as cargo would. Returns 1 when any failed, after all
# ran; prints each one's output and duration when it ends.
run_test_pool() {
  local workers=$1 dir=$2
  shift 2
  local tests=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    tests+=("$1")
    shift
  done
  [[ $# -gt 0 ]] && shift
  local package
  package=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$dir/Cargo.toml" | head -n 1)
  declare -A exe=()
  local name path
  while read -r name path; do exe[$name]=$path; done < <(test_executables "$package" "${tests[@]}")
  local logs
  logs=$(mktemp -d -t capo-test-pool.XXXXXX)
  local failed=0
  # Only this pool's own jobs are waited for: a bare `wait -n` would return at once for any other
  # background job of the caller that already ended, and a bare `wait` would reap the caller's
  # jobs and lose their exit status.
  local pids=()
  for name in "${tests[@]}"; do
    if [[ -z "${exe[$name]:-}" ]]; then
      echo "test pool: no executable for $name" >&2
      return 1
    fi
    while (($(jobs_running "${pids[@]}") >= workers)); do
      wait -n "${pids[@]}" 2>/dev/null || true
    done
    (
      start=$SECONDS
      rc=0
      (cd "$dir" && CARGO_MANIFEST_DIR="$PWD" "${exe[$name]}" --test-threads 1 "$@") \
        >"$logs/$name.log" 2>&1 || rc=$?
      {
        echo "     Running tests/$name.rs (${exe[$name]}; $((SECONDS - start)) s, exit $rc)"
        cat "$logs/$name.log"
      } >"$logs/$name.out"
      echo "$rc" >"$logs/$name.rc"
      flock "$logs/.print" cat "$logs/$name.out"
    ) &
    pids+=("$!")
  done
  wait "${pids[@]}" 2>/dev/null || true
  for name in "${tests[@]}"; do
    if [[ "$(cat "$logs/$name.rc" 2>/dev/null)" != 0 ]]; then
      echo "test pool: tests/$name.rs failed" >&2
      failed=1
    fi
  done
  rm -rf "$logs"
  return "$failed"
}

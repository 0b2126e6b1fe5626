# Sourced by hack/test.sh: the integration test executables of a package, to run them directly
# (several at once, each printing its output when it ends) instead of through one `cargo test`
# that runs them one after another.

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

# Sourced by the hack/*.sh scripts that build something once into a cache directory keyed by its
# inputs. Before cache_lock_or_exit, the caller defines $update (true with --update: build_args
# sets it), $root (the cache), $out (this key's directory), ready() (is $out complete?) and say().

# Print $out and exit when it is ready (unless updating); otherwise take the cache's lock, so one
# build runs at a time and a second caller waits and then finds the result, and start an empty
# $log. run() appends a command's output to $log and stops the script, showing the log's tail,
# if it fails.
cache_lock_or_exit() {
  if ! $update && ready; then
    echo "$out"
    exit 0
  fi
  mkdir -p "$root"
  exec 9>"$root/.lock"
  flock 9
  if ! $update && ready; then
    echo "$out"
    exit 0
  fi
  log="$root/build.log"
  : >"$log"
}

run() { "$@" >>"$log" 2>&1 || { say "failed: $* (log: $log)"; tail -n 40 "$log" >&2; exit 1; }; }

# The arguments of a `build [--update]` command: sets $update, or calls the caller's usage().
build_args() {
  update=false
  [[ "${1:-}" == build ]] || usage
  case "${2:-}" in
    --update) update=true ;;
    "") ;;
    *) usage ;;
  esac
  (($# <= 2)) || usage
}

# A short hash of every file below DIR (but editor backups) and of the given FILEs' contents:
# the part of a cache key that changes with the recipe's inputs.
hash_inputs() { # DIR [FILE...]
  local dir=$1 f
  shift
  {
    (cd "$dir" && find . -type f ! -name '*~' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    for f in "$@"; do sha256sum <"$f"; done
  } | sha256sum | cut -c1-12
}

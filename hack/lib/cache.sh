# Sourced by the hack/*.sh scripts that build something once into a cache directory keyed by its
# inputs. The caller defines $update (true with --update), $root (the cache), $out (this key's
# directory), ready() (is $out complete?) and say().

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

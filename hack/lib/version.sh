# Sourced by the hack/*.sh scripts that need capo's version: the [workspace.package] version of
# the Cargo.toml in the given source directory (default: the current one), without a leading v.
capo_version() {
  local version
  version=$(sed -n '/^\[workspace\.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' "${1:-.}/Cargo.toml")
  [[ -n "$version" ]] || { echo "no version in [workspace.package] of ${1:-.}/Cargo.toml" >&2; return 1; }
  echo "$version"
}

#!/usr/bin/env bash
# docs/parity.md names capo's tests as `path::fn_name`; fail when one of them no longer exists
# (the file is gone, or no `fn fn_name` in it), so the table cannot point at a renamed or removed
# test. Also fails when the table names no test at all (a broken pattern would pass silently).
set -euo pipefail
cd "$(dirname "$0")/../.."

doc=docs/parity.md
refs="$(grep -oE '`crates/[A-Za-z0-9_./-]+\.rs::[A-Za-z0-9_]+`' "$doc" | tr -d '`' | sort -u)"
count="$(printf '%s\n' "$refs" | grep -c . || true)"
if [[ "$count" -eq 0 ]]; then
  echo "parity-references: no capo test named in $doc" >&2
  exit 1
fi
missing=0
while IFS= read -r ref; do
  path="${ref%%::*}"
  name="${ref##*::}"
  if [[ ! -f "$path" ]]; then
    echo "parity-references: $doc names $ref, but $path does not exist" >&2
    missing=$((missing + 1))
  elif ! grep -qE "fn ${name}[[:space:]]*[(<]" "$path"; then
    echo "parity-references: $doc names $ref, but $path has no fn $name" >&2
    missing=$((missing + 1))
  fi
done <<<"$refs"
if [[ "$missing" -gt 0 ]]; then
  echo "parity-references: $missing of $count test references are broken" >&2
  exit 1
fi
echo "parity-references: all $count capo tests named in $doc exist"

#!/usr/bin/env bash
# Creates (or reuses) the project-local Python virtualenv at .venv with the pinned packages from
# conformance/requirements.txt: openstacksdk, python-openstackclient, python-octaviaclient, pytest and
# ansible-core. Needs only python3 (>= 3.11, with the venv module) and access to PyPI.
# Idempotent: the sha256 of requirements.txt is stored in the venv after a successful install, and a
# matching stamp means nothing to do (and nothing printed but the path).
# The last line printed is always the venv's absolute path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CAPO_VENV_DIR:-$root/.venv}"
reqs="$root/conformance/requirements.txt"
stamp="$venv/.capo-requirements.sha256"
python="${PYTHON:-python3}"

want="$(sha256sum "$reqs" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "$venv"
  exit 0
fi

if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "python-env.sh: $python is older than 3.11 (ansible-core needs 3.11+)" >&2
  exit 1
fi

# A venv left half-built by an interrupted run is rebuilt from scratch rather than patched.
if [[ ! -x "$venv/bin/python" ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2
fi
rm -f "$stamp"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
"$venv/bin/python" -m pip install --quiet --requirement "$reqs" >&2
# Packages from an older requirements.txt that are no longer listed are left in place; they are
# harmless for the suite, and a clean rebuild is `rm -rf .venv`.
echo "$want" > "$stamp"
echo "$venv"

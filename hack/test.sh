#!/usr/bin/env bash
# The project's test command (README, line 2): installs what the tests need on a fresh machine
# (pinned kube-apiserver/etcd/kubectl built from the Go module proxy, a Python virtualenv with the
# official OpenStack clients and ansible-core), then runs every tier in one pass:
#   1. formatting and lints, 2. all Rust tests (unit, capo-sim, client layer, real kube-apiserver),
#   3. simulator conformance with openstacksdk and python-openstackclient.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "test environment (kube-apiserver, etcd, kubectl, CAPI and ORC CRDs)"
CAPO_TEST_ENV_DIR="$(hack/test-env.sh | tail -n 1)"
export CAPO_TEST_ENV_DIR
echo "using $CAPO_TEST_ENV_DIR"

step "python virtualenv (openstacksdk, python-openstackclient, ansible-core)"
CAPO_VENV="$(hack/python-env.sh | tail -n 1)"
export CAPO_VENV
echo "using $CAPO_VENV"

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test (unit, simulator, client layer, real kube-apiserver)"
cargo test --workspace --locked

step "simulator conformance with the official OpenStack clients"
# `cargo test` built the capo-sim binary (for its own integration tests) with the workspace's
# feature set; building it alone would resolve features differently and recompile dependencies.
CAPO_SIM_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/capo-sim"
[[ -x "$CAPO_SIM_BIN" ]] || cargo build --locked -p capo-sim --bin capo-sim
CAPO_SIM_BIN="$CAPO_SIM_BIN" conformance/run.sh

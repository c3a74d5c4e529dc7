#!/usr/bin/env bash
# Installs what kith's tests need, then runs every test: formatting, lints, the Rust test
# suite, and the Python oracle tests (networkx) against the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
if ! need cargo; then
    echo "test.sh: cargo not found; kith needs a Rust toolchain (rustup, Rust >= 1.88)" >&2
    exit 1
fi
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
bash scripts/system-deps.sh
if ! need python3; then
    apt-get update -qq && apt-get install -y -qq python3 python3-pip python3-venv
fi
PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install -q -r tests/oracle/requirements.txt

# One profile (release) for everything, so each dependency is built once.
cargo fmt --all --check
cargo clippy --workspace --all-targets --release -- -D warnings
cargo test --workspace --release
cargo build --release -p kith

target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
KITH_BIN="$target_dir/release/kith" python3 -m pytest -q tests/oracle

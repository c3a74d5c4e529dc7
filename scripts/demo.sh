#!/usr/bin/env bash
# Sets up what kith needs to build, then runs its main job on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
    echo "demo.sh: cargo not found; kith needs a Rust toolchain (rustup, Rust >= 1.89)" >&2
    exit 1
fi
bash scripts/system-deps.sh
exec cargo run --release -p kith -- demo "$@"

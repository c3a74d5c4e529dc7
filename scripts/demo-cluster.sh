#!/usr/bin/env bash
# Sets up what kith needs to build and to run a local cluster, then runs `kith demo cluster`:
# 3 Cassandra nodes, a Redis Cluster and 3 kith servers on loopback, under load, with one of
# each killed midway.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
    echo "demo-cluster.sh: cargo not found; kith needs a Rust toolchain (rustup, Rust >= 1.89)" >&2
    exit 1
fi
bash scripts/system-deps.sh
bash scripts/cluster-deps.sh
exec cargo run --release -p kith -- demo cluster "$@"

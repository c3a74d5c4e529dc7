#!/usr/bin/env bash
# Regenerates every published figure and table the seed papers report, on the shared datasets:
# installs what the experiments need (Redis, Java and Cassandra), builds kith, and runs
# `kith experiment all` into bench/results/reproduction/ (the manifest there has dates, commit
# and machine). A full run writes the table to docs/reproduction.md too. Arguments go to
# `kith experiment all` (e.g. --resume, --only twibo, --quick, which writes
# bench/results/reproduction-quick/); after a stop, --resume finishes the steps not done.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
    echo "reproduce.sh: cargo not found; kith needs a Rust toolchain (rustup, Rust >= 1.89)" >&2
    exit 1
fi
bash scripts/system-deps.sh
bash scripts/cluster-deps.sh
bash scripts/bench-deps.sh
cargo build --release -p kith
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
out="bench/results/reproduction"
doc=(--doc docs/reproduction.md)
for arg in "$@"; do
    if [ "$arg" = "--quick" ]; then
        out="bench/results/reproduction-quick"
        doc=()
    fi
done
exec "$target_dir/release/kith" experiment all --out "$out" "${doc[@]}" "$@"

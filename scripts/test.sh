#!/usr/bin/env bash
# Installs what kith's tests need, then runs every test: formatting, lints, the Rust test
# suite, and the Python oracle tests (networkx) against the release binary. The tests of the
# store on Cassandra share one 3-node cluster on 10.251.2.1-3 (network namespaces of its
# own on a bridge), and the tests of several servers
# one Redis Cluster on 127.0.2.1-6 (port 6390), started here and stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
if ! need cargo; then
    echo "test.sh: cargo not found; kith needs a Rust toolchain (rustup, Rust >= 1.89)" >&2
    exit 1
fi
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
bash scripts/system-deps.sh
if ! need python3; then
    apt-get update -qq && apt-get install -y -qq python3 python3-pip python3-venv
fi
PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install -q -r tests/oracle/requirements.txt

# Redis (Debian's redis-server), Java and Maven for Apache Cassandra; fio for the quick
# reproduction's device calibration; HAProxy (Debian's) for the test of deploy/haproxy.cfg in
# front of several servers; Chromium and its driver (Debian's) for the dashboard's browser test.
bash scripts/cluster-deps.sh
bash scripts/bench-deps.sh
apt_missing=()
need haproxy || apt_missing+=(haproxy)
need chromium || apt_missing+=(chromium)
need chromedriver || apt_missing+=(chromium-driver)
if ((${#apt_missing[@]})); then
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${apt_missing[@]}"
fi

# A Redis for the feed tests, on a free loopback port, stopped on exit.
redis_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >/dev/null &
redis_pid=$!
cluster_dir=""
cleanup() {
    kill "$redis_pid" 2>/dev/null || true
    if [ -n "$cluster_dir" ]; then
        "$kith_bin" cluster down --dir "$cluster_dir" --grace-s 10 >/dev/null 2>&1 || true
        # The nodes' own disks (tmpfs) are unmounted by `down`; lazily here if one is busy.
        for d in "$cluster_dir"/node*; do
            if mountpoint -q "$d" 2>/dev/null; then umount -l "$d" || true; fi
        done
        rm -rf "$cluster_dir" || true
        # And its network, should `down` not have removed it.
        for ns in kith-2-1 kith-2-2 kith-2-3; do ip netns delete "$ns" 2>/dev/null || true; done
        ip link delete kithbr2 2>/dev/null || true
    fi
}
trap cleanup EXIT
for _ in $(seq 100); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
export KITH_TEST_REDIS="redis://127.0.0.1:$redis_port"

# One profile (release) for everything, so each dependency is built once.
cargo fmt --all --check
cargo clippy --workspace --all-targets --release -- -D warnings
cargo build --release -p kith
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
kith_bin="$target_dir/release/kith"

# The Cassandra cluster the tests of the store on Cassandra share, and the Redis Cluster
# (three masters with a replica each, on 127.0.2.1-6) the tests of several servers share.
# Each node has a skewable clock, a 2 GiB tmpfs and a network namespace of its own (at
# 10.251.2.1-3), for the trial's clock-skew, full-disk and partition faults.
cluster_dir=$(mktemp -d /tmp/kith-test-cluster.XXXXXX)
"$kith_bin" cluster up --nodes 3 --dir "$cluster_dir" --base 127.0.2.1 --heap-mb 768 --skewable --disk-mb 2048 --netns
KITH_TEST_CASSANDRA=$(python3 -c 'import json, sys; print(",".join(n["address"] for n in json.load(open(sys.argv[1]))["nodes"]))' "$cluster_dir/cluster.json")
export KITH_TEST_CASSANDRA
export KITH_TEST_CLUSTER_DIR="$cluster_dir"
KITH_TEST_REDIS_CLUSTER=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print(",".join("redis://%s:%d" % (n["address"], n["port"]) for n in c["nodes"]))' "$cluster_dir/redis-cluster.json")
export KITH_TEST_REDIS_CLUSTER

# --no-fail-fast: one failing test binary does not hide the others' results. The trial test
# (crates/kith/tests/trial.rs) kills, pauses and skews the shared clusters' nodes, so it runs
# last, after every other test that uses them.
trial_test=every_nemesis_once_finds_no_anomaly_kith_guarantees
cargo test --workspace --release --no-fail-fast -- --skip "$trial_test"

# Every fuzz target over its checked-in corpus, then a few seconds of fuzzing each
# (scripts/fuzz.sh --seconds N for a real run).
bash scripts/fuzz.sh --smoke

KITH_BIN="$kith_bin" python3 -m pytest -q tests/oracle

# The Python package (python/), built by maturin into this Python, then its tests: every
# algorithm against networkx, layouts against the CLI, the client against a real server.
PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install -q ./python
KITH_BIN="$kith_bin" python3 -m pytest -q python/tests

# The dashboard in a real browser (headless Chromium through chromedriver) against a real
# server: every view checked against the API, screenshots into bench/results/ui/.
KITH_BIN="$kith_bin" python3 -m pytest -q tests/ui

# Last: one short trial per nemesis over the shared clusters (it breaks their nodes on purpose).
cargo test --release -p kith --test trial -- --exact "$trial_test"

#!/usr/bin/env bash
# Coverage-guided fuzzing of kith with libFuzzer (the fuzz/ crate, cargo-fuzz's layout),
# built with the stable toolchain: the same instrumentation cargo-fuzz asks rustc for.
#
#   scripts/fuzz.sh [--smoke] [--seconds N] [--runs N] [--keep] [--json FILE] [TARGET...]
#
# Each target first replays its checked-in corpus (fuzz/corpus/<target>, plus the seeds in
# fuzz/seeds/<target>), then fuzzes for N seconds (default 60; --smoke: 5) on one core, or
# with --runs until it has executed N inputs (the seconds still cap it).
# New inputs the fuzzer finds go to a scratch corpus; --keep merges them into
# fuzz/corpus/<target>, minimised (libFuzzer's -merge=1 keeps only inputs that add coverage).
# A crash stops the target with the input saved in fuzz/artifacts/<target>/ and a non-zero
# exit. --json writes the executions and crashes per target. RocksDB is linked from the test
# build's library (build it first: `cargo build --release -p kith-store`), so it is never
# compiled twice.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
runs=-1
keep=0
json=""
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) seconds=5 ;;
        --keep) keep=1 ;;
        --seconds) seconds="$2"; shift ;;
        --runs) runs="$2"; shift ;;
        --json) json="$2"; shift ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1") ;;
    esac
    shift
done
all=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^kith-fuzz$')
if [ ${#targets[@]} -eq 0 ]; then
    read -r -a targets <<<"$(echo $all)"
fi
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$all" || { echo "fuzz.sh: no target $t (have: $(echo $all))" >&2; exit 2; }
done

# The prebuilt RocksDB of the test build (its target directory as .ci/run and test.sh use).
main_target="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}"
if [ -z "${ROCKSDB_LIB_DIR:-}" ]; then
    lib=$(ls -t "$main_target"/release/build/librocksdb-sys-*/out/librocksdb.a 2>/dev/null | head -1 || true)
    if [ -z "$lib" ]; then
        echo "fuzz.sh: no librocksdb.a under $main_target; run 'cargo build --release -p kith-store' first" >&2
        exit 1
    fi
    export ROCKSDB_LIB_DIR="$(dirname "$lib")"
fi
export ROCKSDB_STATIC=1

# Instrumented like cargo-fuzz does (sancov counters, comparison tracing), with debug
# assertions and overflow checks on; only the target's code, not build scripts.
export CARGO_TARGET_DIR="${KITH_FUZZ_TARGET_DIR:-$HOME/.cache/kith-fuzz-target}"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
triple=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --manifest-path fuzz/Cargo.toml --target "$triple" --bins

scratch=$(mktemp -d)
# The targets' own files (inputs handed to readers, the HTTP target's store) go here,
# in memory where the machine has /dev/shm.
shm=$(mktemp -d -p "$([ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")" kith-fuzz.XXXXXX)
export KITH_FUZZ_SCRATCH="$shm"
trap 'rm -rf "$scratch" "$shm"' EXIT
results=()
status=0
for t in "${targets[@]}"; do
    bin="$CARGO_TARGET_DIR/$triple/release/$t"
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t" "$scratch/$t"
    dirs=("$scratch/$t" "fuzz/corpus/$t")
    [ -d "fuzz/seeds/$t" ] && dirs+=("fuzz/seeds/$t")
    echo "fuzz.sh: $t for ${seconds}s over ${dirs[*]:1}"
    log="$scratch/$t.log"
    set +e
    "$bin" -max_total_time="$seconds" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" "${dirs[@]}" >"$log" 2>&1
    code=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    crashes=0
    if [ $code -ne 0 ]; then
        crashes=1
        status=1
        tail -40 "$log" >&2
        echo "fuzz.sh: $t FAILED (exit $code); input saved under fuzz/artifacts/$t/" >&2
    fi
    echo "fuzz.sh: $t: ${execs:-0} executions, $crashes crashes"
    if [ $keep = 1 ]; then
        "$bin" -merge=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 "fuzz/corpus/$t" \
            "$scratch/$t" >"$scratch/$t.merge.log" 2>&1 || tail -5 "$scratch/$t.merge.log" >&2
        echo "fuzz.sh: $t: corpus now $(ls "fuzz/corpus/$t" | wc -l) inputs"
    fi
    results+=("{\"target\": \"$t\", \"seconds\": ${took:-$seconds}, \"executions\": ${execs:-0}, \"crashes\": $crashes}")
done
if [ -n "$json" ]; then
    python3 - "$json" "${results[@]}" <<'PY'
import json, sys, subprocess, platform, datetime, os
out, rows = sys.argv[1], [json.loads(r) for r in sys.argv[2:]]
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
doc = {
    "benchmark": "fuzz",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "commit": commit,
    "machine": {"host": platform.node(), "cpus": os.cpu_count(), "kernel": platform.release()},
    "fuzzer": "libFuzzer (libfuzzer-sys), sancov inline 8-bit counters, trace-compares",
    "targets": rows,
}
with open(out, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
print(f"fuzz.sh: wrote {out}")
PY
fi
exit $status

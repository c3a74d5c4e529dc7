"""Where requests spent their time, per run of `kith trial cluster`, from the histories it
kept (`--history-dir`): the median store time (the answers' `Server-Timing`) of each call
kind, over the whole run and over its first 8 s, beside the run's feed strategy and
acknowledged operations.

    python3 scripts/history_timing.py OUT.json TRIAL.json [TRIAL.json ...]
"""

import datetime
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import bench_meta  # noqa: E402

KINDS = ["feed", "follows", "friends", "post", "follow"]
STORE = re.compile(r"store;dur=([\d.]+)")


def medians(entries, until_s=None):
    out = {}
    for kind in KINDS:
        xs = [float(m.group(1)) for e in entries
              if e["call"]["f"] == kind and (m := STORE.search(e.get("timing") or ""))
              and (until_s is None or e["invoke_ms"] < until_s * 1000)]
        out[kind] = round(statistics.median(xs), 1) if xs else None
    return out


def main():
    out_path, trials = sys.argv[1], sys.argv[2:]
    result = {"benchmark": "history-timing", "date": datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"), "commit": bench_meta.commit(),
        "machine": bench_meta.machine(), "unit": "ms of store time per answer (median)",
        "trials": []}
    for path in trials:
        trial = json.load(open(path))
        runs = []
        for r in trial["runs"]:
            history = r.get("history")
            if not history or not os.path.exists(history):
                sys.exit(f"{path}: run {r['run']}: history {history!r} not found")
            entries = [json.loads(line) for line in open(history) if line.strip()]
            runs.append({"nemesis": r["nemesis"], "run": r["run"], "feed": r["feed"],
                         "cache": r["cache"], "commit": r.get("commit"),
                         "ok": sum(v["ok"] for v in r["ops"].values()),
                         "whole_run": medians(entries), "first_8_s": medians(entries, 8)})
        result["trials"].append({"file": os.path.basename(path), "runs": runs})
    json.dump(result, open(out_path, "w"), indent=2)
    print(f"history timing: {out_path}")


if __name__ == "__main__":
    main()

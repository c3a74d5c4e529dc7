#!/usr/bin/env python3
"""`kith bench http` of two kith binaries, side by side in one run, as ratios.

    scripts/http_before_after.py --before OLD_KITH --after NEW_KITH [--pairs 3]
        [--out bench/results/http-before-after-<date>.json] [-- BENCH ARGS...]

Each pair runs both binaries' `kith bench http` with the same arguments, alternating which
goes first (so drift on a shared machine falls on both), and the JSON keeps every run's
requests per second and p99, the ratio after/before per pair and of the means per case,
and the geometric mean of those ratios. Each binary serves with its own defaults, so the
"after" column includes whatever limits it applies by default.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile


def git(*args, cwd=None):
    out = subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd)
    return out.stdout.strip() or None


def version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return out.stdout.strip()


def run(binary, bench_args, out, log):
    with open(log, "w") as f:
        subprocess.run([binary, "bench", "http", *bench_args, "--out", out],
                       stdout=f, stderr=subprocess.STDOUT, check=True)
    with open(out) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="the baseline kith binary")
    p.add_argument("--after", required=True, help="the kith binary under test")
    p.add_argument("--before-label", default=None, help="what the baseline is (e.g. a commit)")
    p.add_argument("--after-label", default=None)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--out", default=None)
    p.add_argument("bench_args", nargs="*", help="arguments for `kith bench http` (after --)")
    a = p.parse_args()
    if a.pairs < 1:
        p.error("--pairs must be at least 1")
    for b in (a.before, a.after):
        if not os.access(b, os.X_OK):
            p.error(f"{b}: not an executable")
    today = datetime.date.today().isoformat()
    out = a.out or f"bench/results/http-before-after-{today}.json"
    runs = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="kith-http-ab.") as tmp:
        for i in range(a.pairs):
            order = ["before", "after"] if i % 2 == 0 else ["after", "before"]
            for side in order:
                binary = a.before if side == "before" else a.after
                print(f"pair {i + 1}/{a.pairs}: {side} ({binary})", file=sys.stderr, flush=True)
                runs[side].append(run(binary, a.bench_args, f"{tmp}/{side}-{i}.json",
                                      f"{tmp}/{side}-{i}.log"))
    names = [c["name"] for c in runs["before"][0]["cases"]]
    cases = []
    for i, name in enumerate(names):
        b = [r["cases"][i]["requests_per_s"] for r in runs["before"]]
        f = [r["cases"][i]["requests_per_s"] for r in runs["after"]]
        cases.append({
            "name": name,
            "path": runs["after"][0]["cases"][i].get("path"),
            "before_requests_per_s": b,
            "after_requests_per_s": f,
            "ratio_after_over_before_per_pair": [round(x / y, 3) for x, y in zip(f, b)],
            "ratio_of_means": round(statistics.mean(f) / statistics.mean(b), 3),
            "before_p99_ms": [r["cases"][i]["p99_ms"] for r in runs["before"]],
            "after_p99_ms": [r["cases"][i]["p99_ms"] for r in runs["after"]],
            "non_2xx_before": [r["cases"][i]["non_2xx"] for r in runs["before"]],
            "non_2xx_after": [r["cases"][i]["non_2xx"] for r in runs["after"]],
        })
    first = runs["after"][0]
    doc = {
        "benchmark": "http-before-after",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": git("rev-parse", "HEAD"),
        "machine": first.get("machine") or {"host": platform.node(), "cpus": os.cpu_count()},
        "tool": first.get("tool"),
        "before": {"binary": a.before, "version": version(a.before), "label": a.before_label},
        "after": {"binary": a.after, "version": version(a.after), "label": a.after_label},
        "command": "kith bench http " + " ".join(a.bench_args),
        "pairs": a.pairs,
        "server": first.get("server"),
        "users": first.get("users"),
        "hot": first.get("hot"),
        "connections": first.get("connections"),
        "duration_s": first.get("duration_s"),
        "cases": cases,
        "geometric_mean_ratio": round(
            statistics.geometric_mean([c["ratio_of_means"] for c in cases]), 3),
    }
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    for c in cases:
        print(f'{c["name"]:42s} before {statistics.mean(c["before_requests_per_s"]):9.0f}/s  '
              f'after {statistics.mean(c["after_requests_per_s"]):9.0f}/s  '
              f'ratio {c["ratio_of_means"]}  pairs {c["ratio_after_over_before_per_pair"]}')
    print(f"geometric mean ratio {doc['geometric_mean_ratio']}; wrote {out}")


if __name__ == "__main__":
    main()

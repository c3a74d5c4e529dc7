#!/usr/bin/env python3
"""Bondhu's cold "list all friends" at 40 B on the three graphs of issue 21, in one command.

    scripts/bondhu_requests.py [--kith KITH] [--out bench/results/bondhu-requests-<date>]
        [--users 1000] [--repeat 8]

Runs `kith experiment bondhu-datasize --sizes 40` (layouts default, parcom and kith, each
user queried on every layout's store in turn) on ego-Facebook, soc-brightkite and a dense
Facebook100-like LFR graph it generates, and writes each graph's CSV and charts under OUT
and `summary.json` beside them: the rows, with date, commit and machine.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

# The dense graph: 15,000 users, 80 friends on average, 30 % of each user's friends outside
# its community (Facebook100's campus graphs have 0.8k-40k users and mean degrees of 40-110).
DENSE = ["--model", "lfr", "--nodes", "15000", "--avg-degree", "80", "--max-degree", "800",
         "--mu", "0.3", "--min-community", "100", "--max-community", "1500", "--seed", "7"]


def git(*args):
    out = subprocess.run(["git", *args], capture_output=True, text=True)
    return out.stdout.strip() or None


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"cpu": cpu, "cores": os.cpu_count(), "os": platform.release()}


def rows(path):
    with open(path) as f:
        out = []
        for row in csv.DictReader(f):
            out.append({k: (v if k in ("method", "mode") else float(v)) for k, v in row.items()})
        return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kith", default="kith", help="the kith binary")
    p.add_argument("--datasets", default=os.environ.get("KITH_DATASETS", "../shared/datasets"))
    p.add_argument("--out", default=None)
    p.add_argument("--users", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=8)
    a = p.parse_args()
    if a.users < 1 or a.repeat < 1:
        p.error("--users and --repeat must be at least 1")
    today = datetime.date.today().isoformat()
    out = a.out or f"bench/results/bondhu-requests-{today}"
    os.makedirs(out, exist_ok=True)
    commit = git("rev-parse", "--short", "HEAD")
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with tempfile.TemporaryDirectory() as tmp:
        dense = os.path.join(tmp, "fb15k.kgraph")
        subprocess.run([a.kith, "graph", "generate", *DENSE, "-o", dense], check=True)
        graphs = [
            ("facebook_combined", os.path.join(a.datasets, "facebook_combined.txt.gz"),
             "shared/datasets/facebook_combined.txt.gz (ego-Facebook)"),
            ("soc-brightkite", os.path.join(a.datasets, "soc-brightkite.mtx.gz"),
             "shared/datasets/soc-brightkite.mtx.gz"),
            ("fb15k", dense, "kith graph generate " + " ".join(DENSE)
             + " (a dense Facebook100-like graph, ids in random order)"),
        ]
        summary = {
            "benchmark": "bondhu-datasize, 40 B, cold, layouts measured together with users "
                         f"interleaved (kith experiment bondhu-datasize --sizes 40 --users "
                         f"{a.users} --repeat {a.repeat})",
            "command": "scripts/bondhu_requests.py",
            "date": date,
            "commit": commit,
            "machine": machine(),
            "graphs": {},
        }
        for name, path, source in graphs:
            if not os.path.exists(path):
                sys.exit(f"bondhu_requests: {path}: no such file (set --datasets or "
                         "KITH_DATASETS)")
            print(f"== {name}", flush=True)
            dest = os.path.join(out, name)
            subprocess.run([a.kith, "experiment", "bondhu-datasize", "--graph", path,
                            "--out", dest, "--sizes", "40", "--users", str(a.users),
                            "--repeat", str(a.repeat)], check=True)
            summary["graphs"][name] = {
                "source": source,
                "rows": rows(os.path.join(dest, "bondhu-datasize.csv")),
            }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    for name, g in summary["graphs"].items():
        for r in g["rows"]:
            print(f"{name:18} {r['method']:8} median {r['median_ms']:.4f} ms "
                  f"({r['median_improvement']:+.1%}), data {r['data_median_ms']:.4f} ms "
                  f"({r['data_median_improvement']:+.1%}), HDD model "
                  f"{r['hdd_model_improvement']:+.1%} / data {r['hdd_model_data_improvement']:+.1%}"
                  f", requests {r['requests_mean']:.2f}")
    print(f"wrote {out}/summary.json")


if __name__ == "__main__":
    main()

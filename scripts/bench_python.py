#!/usr/bin/env python3
"""The Python package's cost, side by side in one run: kith.pagerank and kith.triangles
called from Python against the same algorithms in the kith CLI, and against networkx and
python-igraph; and the cost of converting to and from networkx.

    KITH_BIN=target/release/kith python3 scripts/bench_python.py [--lfr-nodes 1000000]

Graphs: soc-Slashdot0902 (undirected, as the CLI reads it by default) and a seeded LFR
graph (generated here, saved as .kgraph for the CLI). PageRank runs 20 iterations with no
early stop; the peers run their own PageRank to networkx's default tolerance (1e-6), and
kith is timed at that tolerance too for their ratio. Triangles are counted per user
(kith.triangles, as networkx.triangles; igraph lists them); kith.triangle_count, the count
alone, is reported beside. Each time is the median of --trials runs (--overhead-trials for
the Python-against-CLI pairs), and each ratio the
ratio of two medians whose sides ran back to back in every trial, so a change in the
machine's speed during the run touches both (against the peers, each is
timed warm, best of two after an untimed run, as a repeated call is). The Python call is timed on a
freshly read graph, so it includes building the in-link arrays, as the CLI's reported
`seconds` does; a second call (arrays cached) is reported beside it. networkx runs on Slashdot only: on the LFR graph it would need tens of
GB. Writes bench/results/python-<date>.json and a PNG beside it.
"""

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import kith
from bench_meta import commit, machine

ROOT = pathlib.Path(__file__).resolve().parents[1]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def cli_once(binary, args):
    """One CLI run: its reported `seconds` (in-link arrays, algorithm, output rows), its
    `run_s` where it reports one, and the whole process's wall time."""
    wall, done = timed(lambda: subprocess.run([binary, *map(str, args), "--json"],
                                              capture_output=True, text=True, check=True))
    report = json.loads(done.stdout)
    return report["seconds"], report.get("run_s"), wall


def paired(trials, warm=False, **runs):
    """Runs every function in `runs` once per trial, one after another, so that a change
    in the machine's speed during the run touches all of them alike. With `warm`, each
    runs once untimed first in every trial and is then timed best of two, so that none is
    timed on caches the one before it filled with its own data. Returns each one's times,
    by name."""
    times = {name: [] for name in runs}
    for _ in range(trials):
        for name, fn in runs.items():
            if warm:
                fn()
                times[name].append(min(fn(), fn()))
            else:
                times[name].append(fn())
    return times


def median(xs):
    return statistics.median(xs)


def ratio(num, den):
    """The ratio of the medians. Both sides ran interleaved, trial by trial, so a drift in
    the machine's speed touches both alike; the medians, not each trial's ratio, because a
    run of 15 ms moves by 10 % between two back-to-back trials."""
    return median(num) / median(den)


def bench_graph(name, path, binary, trials, overhead_trials, with_networkx, progress):
    import igraph

    row = {"graph": name}
    g = kith.read(path)
    row["users"], row["edges"] = len(g), g.number_of_edges()

    progress(f"{name}: the CLI and kith from Python, trial by trial")
    cli_pr, cli_tri = [], []

    def py_pagerank():
        fresh = kith.read(path)
        first, _ = timed(lambda: kith.pagerank(fresh, max_iter=20, tol=0))
        warm, _ = timed(lambda: kith.pagerank(fresh, max_iter=20, tol=0))
        return first, warm

    def py_triangles():
        fresh = kith.read(path)
        return timed(lambda: kith.triangles(fresh))[0]

    t = paired(overhead_trials,
               cli_pagerank=lambda: cli_once(binary, ["analyze", "pagerank", path,
                                                      "--iterations", 20]),
               py_pagerank=py_pagerank,
               cli_triangles=lambda: cli_once(binary, ["analyze", "triangles", path]),
               py_triangles=py_triangles)
    row["times_s"] = {"cli_pagerank_seconds": [c[0] for c in t["cli_pagerank"]],
                      "python_pagerank": [p[0] for p in t["py_pagerank"]],
                      "cli_triangles_seconds": [c[0] for c in t["cli_triangles"]],
                      "python_triangles": t["py_triangles"]}
    cli_pr, py_pr = t["cli_pagerank"], t["py_pagerank"]
    cli_tri, py_tri = t["cli_triangles"], t["py_triangles"]
    row["pagerank_20"] = {
        "cli_seconds": median([c[0] for c in cli_pr]),
        "cli_run_s": median([c[1] for c in cli_pr]),
        "cli_process_s": median([c[2] for c in cli_pr]),
        "python_s": median([p[0] for p in py_pr]),
        "python_warm_s": median([p[1] for p in py_pr]),
        "python_over_cli": ratio([p[0] for p in py_pr], [c[0] for c in cli_pr])}
    row["triangles"] = {
        "cli_seconds": median([c[0] for c in cli_tri]),
        "cli_process_s": median([c[2] for c in cli_tri]),
        "python_s": median(py_tri),
        "python_over_cli": ratio(py_tri, [c[0] for c in cli_tri])}

    progress(f"{name}: python-igraph and kith")
    edges = g.edges()
    G_ig = igraph.Graph(n=len(g), edges=edges.astype(np.int64), directed=False)
    counts = {}

    def count(key, fn):
        def run():
            elapsed, out = timed(fn)
            counts[key] = out
            return elapsed
        return run

    t = paired(trials, warm=True,
               kith_pagerank=lambda: timed(lambda: kith.pagerank(g, tol=1e-6))[0],
               igraph_pagerank=lambda: timed(lambda: G_ig.pagerank(damping=0.85))[0],
               kith_triangles=count("kith", lambda: int(kith.triangles(g).sum()) // 3),
               kith_triangle_count=count("kith_count", lambda: kith.triangle_count(g)),
               igraph_triangles=count("igraph", lambda: len(G_ig.list_triangles())))
    assert counts["igraph"] == counts["kith"] == counts["kith_count"], counts
    row["times_s"].update({f"peers_{k}": v for k, v in t.items()})
    row["peers"] = {
        "kith_pagerank_tol_s": median(t["kith_pagerank"]),
        "kith_triangles_s": median(t["kith_triangles"]),
        "kith_triangle_count_s": median(t["kith_triangle_count"]),
        "igraph_pagerank_s": median(t["igraph_pagerank"]),
        "igraph_triangles_s": median(t["igraph_triangles"]),
        "igraph_pagerank_over_kith": ratio(t["igraph_pagerank"], t["kith_pagerank"]),
        "igraph_triangles_over_kith": ratio(t["igraph_triangles"], t["kith_triangles"])}
    if with_networkx:
        import networkx as nx

        progress(f"{name}: networkx (and the conversions) and kith")
        t = paired(trials, to_networkx=lambda: timed(g.to_networkx)[0])
        G = g.to_networkx()
        t.update(paired(trials,
                        from_networkx=lambda: timed(lambda: kith.Graph.from_networkx(G))[0],
                        to_scipy=lambda: timed(g.to_scipy)[0]))
        row["conversion"] = {"to_networkx_s": median(t["to_networkx"]),
                             "from_networkx_s": median(t["from_networkx"]),
                             "to_scipy_s": median(t["to_scipy"])}
        # networkx's triangles are per user, as kith.triangles is; kith's PageRank runs to
        # the same tolerance.
        t = paired(trials, warm=True,
                   kith_pagerank=lambda: timed(lambda: kith.pagerank(g, tol=1e-6))[0],
                   networkx_pagerank=lambda: timed(
                       lambda: nx.pagerank(G, alpha=0.85, tol=1e-6))[0],
                   kith_triangles=lambda: timed(lambda: kith.triangles(g))[0],
                   networkx_triangles=count(
                       "networkx", lambda: sum(nx.triangles(G).values()) // 3))
        assert counts["networkx"] == counts["kith"]
        row["times_s"].update({f"networkx_section_{k}": v for k, v in t.items()})
        row["peers"].update({
            "networkx_pagerank_s": median(t["networkx_pagerank"]),
            "networkx_triangles_s": median(t["networkx_triangles"]),
            "networkx_pagerank_over_kith": ratio(t["networkx_pagerank"], t["kith_pagerank"]),
            "networkx_triangles_over_kith": ratio(t["networkx_triangles"],
                                                  t["kith_triangles"])})
    return row


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_python: matplotlib not installed; no plot", file=sys.stderr)
        return None
    fig, axes = plt.subplots(1, len(rows), figsize=(6 * len(rows), 4.5), squeeze=False)
    for ax, row in zip(axes[0], rows):
        p = row["peers"]
        labels = ["kith (Python)", "igraph"]
        pr = [p["kith_pagerank_tol_s"], p["igraph_pagerank_s"]]
        tri = [p["kith_triangles_s"], p["igraph_triangles_s"]]
        if "networkx_pagerank_s" in p:
            labels.append("networkx")
            pr.append(p["networkx_pagerank_s"])
            tri.append(p["networkx_triangles_s"])
        x = np.arange(len(labels))
        ax.bar(x - 0.2, pr, 0.4, label="PageRank (tol 1e-6)")
        ax.bar(x + 0.2, tri, 0.4, label="triangles")
        ax.set_xticks(x, labels)
        ax.set_yscale("log")
        ax.set_ylabel("seconds (log)")
        ax.set_title(f"{row['graph']}: {row['users']:,} users, {row['edges']:,} edges")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return str(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5)
    # The Python-against-CLI trials are cheap (tens of ms on Slashdot) and their spread on a
    # shared machine is wide (13-42 ms for one 15 ms count), so they get more of them.
    ap.add_argument("--overhead-trials", type=int, default=25)
    ap.add_argument("--lfr-nodes", type=int, default=1_000_000)
    ap.add_argument("--datasets", default=os.environ.get(
        "KITH_DATASETS", str(ROOT.parent / "shared" / "datasets")))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    binary = os.environ.get("KITH_BIN")
    if not binary or not pathlib.Path(binary).is_file():
        sys.exit("bench_python: set KITH_BIN to the built kith binary")

    def progress(msg):
        print(f"bench_python: {msg}", file=sys.stderr, flush=True)

    rows = []
    slashdot = pathlib.Path(a.datasets) / "soc-Slashdot0902.txt.gz"
    rows.append(bench_graph("soc-Slashdot0902", slashdot, binary, a.trials,
                            a.overhead_trials, True, progress))
    with tempfile.TemporaryDirectory() as tmp:
        progress(f"generating LFR({a.lfr_nodes:,})")
        lfr, _ = kith.generate.lfr(a.lfr_nodes, avg_degree=20, mu=0.2, seed=1)
        path = pathlib.Path(tmp) / "lfr.kgraph"
        lfr.save(path)
        del lfr
        rows.append(bench_graph(f"LFR({a.lfr_nodes:,})", path, binary, a.trials,
                                a.overhead_trials, False, progress))
    date = datetime.datetime.now(datetime.timezone.utc)
    out = pathlib.Path(a.out or ROOT / "bench" / "results" / f"python-{date:%Y-%m-%d}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    png = plot(rows, out.with_suffix(".png"))
    import igraph
    import networkx
    report = {"benchmark": "python", "date": date.isoformat(timespec="seconds"),
              "commit": commit(), "machine": machine(), "trials": a.trials,
              "overhead_trials": a.overhead_trials,
              "versions": {"kith": kith.__version__, "numpy": np.__version__,
                           "networkx": networkx.__version__, "igraph": igraph.__version__},
              "graphs": rows, "plot": png}
    out.write_text(json.dumps(report, indent=2) + "\n")
    for r in rows:
        pr, tri, p = r["pagerank_20"], r["triangles"], r["peers"]
        print(f"{r['graph']}: pagerank Python/CLI {pr['python_over_cli']:.3f} "
              f"({pr['python_s']:.4f} s vs {pr['cli_seconds']:.4f} s), triangles Python/CLI "
              f"{tri['python_over_cli']:.3f}; igraph/kith pagerank "
              f"{p['igraph_pagerank_over_kith']:.1f}x, triangles "
              f"{p['igraph_triangles_over_kith']:.1f}x"
              + (f"; networkx/kith pagerank {p['networkx_pagerank_over_kith']:.0f}x, "
                 f"triangles {p['networkx_triangles_over_kith']:.0f}x"
                 if "networkx_pagerank_s" in p else ""))
    print(f"bench_python: wrote {out}")


if __name__ == "__main__":
    main()

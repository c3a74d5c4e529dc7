#!/usr/bin/env python3
"""The Python package's cost, side by side in one run: kith.pagerank and kith.triangles
called from Python against the same algorithms in the kith CLI, and against networkx and
python-igraph; and the cost of converting to and from networkx.

    KITH_BIN=target/release/kith python3 scripts/bench_python.py [--lfr-nodes 1000000]

Graphs: soc-Slashdot0902 (undirected, as the CLI reads it by default) and a seeded LFR
graph (generated here, saved as .kgraph for the CLI). PageRank runs 20 iterations with no
early stop; the peers run their own PageRank to networkx's default tolerance (1e-6), and
kith is timed at that tolerance too for their ratio. Each figure is the median of
--trials runs. The Python call is timed on a freshly read graph, so it includes building
the in-link arrays, as the CLI's reported `seconds` does; a second call (arrays cached) is
reported beside it. networkx runs on Slashdot only: on the LFR graph it would need tens of
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


def median_time(fn, trials):
    times, out = [], None
    for _ in range(trials):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def cli_run(binary, args, trials):
    """Medians of the CLI's reported `seconds` (in-link arrays, algorithm, output rows),
    its `run_s` where it reports one, and the whole process."""
    seconds, runs, walls = [], [], []
    for _ in range(trials):
        t = time.perf_counter()
        done = subprocess.run([binary, *map(str, args), "--json"], capture_output=True,
                              text=True, check=True)
        walls.append(time.perf_counter() - t)
        report = json.loads(done.stdout)
        seconds.append(report["seconds"])
        if "run_s" in report:
            runs.append(report["run_s"])
    return {"seconds": statistics.median(seconds),
            "run_s": statistics.median(runs) if runs else None,
            "process_s": statistics.median(walls)}


def bench_graph(name, path, binary, trials, with_networkx, progress):
    import igraph

    row = {"graph": name}
    g = kith.read(path)
    row["users"], row["edges"] = len(g), g.number_of_edges()

    progress(f"{name}: the CLI")
    cli_pr = cli_run(binary, ["analyze", "pagerank", path, "--iterations", 20], trials)
    cli_tri = cli_run(binary, ["analyze", "triangles", path], trials)

    progress(f"{name}: kith from Python")
    first_pr, warm_pr, first_tri = [], [], []
    for _ in range(trials):
        fresh = kith.read(path)
        t = time.perf_counter()
        kith.pagerank(fresh, max_iter=20, tol=0)
        first_pr.append(time.perf_counter() - t)
        t = time.perf_counter()
        kith.pagerank(fresh, max_iter=20, tol=0)
        warm_pr.append(time.perf_counter() - t)
        fresh = kith.read(path)
        t = time.perf_counter()
        kith.triangles(fresh)
        first_tri.append(time.perf_counter() - t)
    py_pr, py_pr_warm = statistics.median(first_pr), statistics.median(warm_pr)
    py_tri = statistics.median(first_tri)
    row["pagerank_20"] = {
        "cli_seconds": cli_pr["seconds"], "cli_run_s": cli_pr["run_s"],
        "cli_process_s": cli_pr["process_s"], "python_s": py_pr, "python_warm_s": py_pr_warm,
        "python_over_cli": py_pr / cli_pr["seconds"]}
    row["triangles"] = {
        "cli_seconds": cli_tri["seconds"], "cli_process_s": cli_tri["process_s"],
        "python_s": py_tri, "python_over_cli": py_tri / cli_tri["seconds"]}

    progress(f"{name}: python-igraph")
    edges = g.edges()
    G_ig = igraph.Graph(n=len(g), edges=edges.astype(np.int64), directed=False)
    kith_tol, _ = median_time(lambda: kith.pagerank(g, tol=1e-6), trials)
    ig_pr, _ = median_time(lambda: G_ig.pagerank(damping=0.85), trials)
    ig_tri, ig_count = median_time(lambda: len(G_ig.list_triangles()), trials)
    kith_tri, kith_count = median_time(lambda: kith.triangle_count(g), trials)
    assert ig_count == kith_count, (ig_count, kith_count)
    row["peers"] = {"kith_pagerank_tol_s": kith_tol, "kith_triangles_s": kith_tri,
                    "igraph_pagerank_s": ig_pr, "igraph_triangles_s": ig_tri,
                    "igraph_pagerank_over_kith": ig_pr / kith_tol,
                    "igraph_triangles_over_kith": ig_tri / kith_tri}
    if with_networkx:
        import networkx as nx

        progress(f"{name}: networkx (and the conversions)")
        to_nx, G = median_time(g.to_networkx, trials)
        from_nx, _ = median_time(lambda: kith.Graph.from_networkx(G), trials)
        to_sp, _ = median_time(g.to_scipy, trials)
        row["conversion"] = {"to_networkx_s": to_nx, "from_networkx_s": from_nx,
                             "to_scipy_s": to_sp}
        nx_trials = max(1, min(trials, 3))
        nx_pr, _ = median_time(lambda: nx.pagerank(G, alpha=0.85, tol=1e-6), nx_trials)
        nx_tri, nx_count = median_time(lambda: sum(nx.triangles(G).values()) // 3, nx_trials)
        assert nx_count == kith_count
        row["peers"].update({"networkx_pagerank_s": nx_pr, "networkx_triangles_s": nx_tri,
                             "networkx_pagerank_over_kith": nx_pr / kith_tol,
                             "networkx_triangles_over_kith": nx_tri / kith_tri})
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
    rows.append(bench_graph("soc-Slashdot0902", slashdot, binary, a.trials, True, progress))
    with tempfile.TemporaryDirectory() as tmp:
        progress(f"generating LFR({a.lfr_nodes:,})")
        lfr, _ = kith.generate.lfr(a.lfr_nodes, avg_degree=20, mu=0.2, seed=1)
        path = pathlib.Path(tmp) / "lfr.kgraph"
        lfr.save(path)
        del lfr
        rows.append(bench_graph(f"LFR({a.lfr_nodes:,})", path, binary, a.trials, False,
                                progress))
    date = datetime.datetime.now(datetime.timezone.utc)
    out = pathlib.Path(a.out or ROOT / "bench" / "results" / f"python-{date:%Y-%m-%d}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    png = plot(rows, out.with_suffix(".png"))
    import igraph
    import networkx
    report = {"benchmark": "python", "date": date.isoformat(timespec="seconds"),
              "commit": commit(), "machine": machine(), "trials": a.trials,
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

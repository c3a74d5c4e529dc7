"""Degree distributions of kith's generators beside real social graphs, as log-log CCDFs.

Usage: python3 bench/plot_degree_ccdf.py [--kith target/release/kith] [--datasets DIR]
                                          [--out bench/results/degree-ccdf.png]

kith writes every degree (`kith graph stats --degrees-out`); this script only plots them. Each
generator is asked for the size and mean degree of the real graph it is drawn beside.
"""

import argparse
import csv
import json
import os
import pathlib
import subprocess
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def degrees(kith, graph, workdir, extra=()):
    out = workdir / (pathlib.Path(graph).name + ".degrees.csv")
    stats = subprocess.run([kith, "graph", "stats", graph, "--json", "--degrees-out", out, *extra],
                           check=True, capture_output=True, text=True).stdout
    with open(out) as f:
        return [int(row["degree"]) for row in csv.DictReader(f)], json.loads(stats)


def ccdf(values):
    values = sorted(values)
    n = len(values)
    xs, ys = [], []
    for i, v in enumerate(values):
        if i == 0 or v != values[i - 1]:
            xs.append(v)
            ys.append((n - i) / n)
    return xs, ys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kith", default=str(ROOT / "target" / "release" / "kith"))
    parser.add_argument("--datasets", default=os.environ.get("KITH_DATASETS", ROOT.parent / "shared" / "datasets"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "degree-ccdf.png"))
    args = parser.parse_args()
    datasets = pathlib.Path(args.datasets)

    real = ["facebook_combined.txt.gz", "soc-brightkite.mtx.gz", "soc-Slashdot0902.txt.gz"]
    fig, axes = plt.subplots(1, len(real), figsize=(6 * len(real), 4.8))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for ax, name in zip(axes, real):
            d, stats = degrees(args.kith, datasets / name, tmp)
            ax.loglog(*ccdf(d), "k-", lw=2.5, label=f"{name.split('.')[0]} (real)")
            n, mean = stats["nodes"], stats["degree"]["mean"]
            for model, style in [("lfr", "C0--"), ("rmat", "C1-."), ("ba", "C2:")]:
                graph = tmp / f"{model}-{name}.kgraph"
                subprocess.run([args.kith, "graph", "generate", "--model", model, "--nodes", str(n),
                                "--avg-degree", f"{mean:.3f}", "--seed", "1", "-o", graph],
                               check=True, capture_output=True)
                dg, _ = degrees(args.kith, graph, tmp)
                ax.loglog(*ccdf(dg), style, lw=1.6, label=model)
            ax.set_title(f"{name.split('.')[0]}: {n:,} nodes, mean degree {mean:.1f}")
            ax.set_xlabel("degree k")
            ax.set_ylabel("P(degree ≥ k)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""`kith graph stats` against networkx on real graphs: degree sequences, summaries, components.

networkx reads the files itself (its own parser, its own notion of degree), so agreement checks
kith's loader and statistics independently.
"""

import gzip
import json
import math
import statistics

import networkx as nx
import pytest


def read_edges(path, comments=("#", "%")):
    """Yield (u, v) from a gzipped whitespace edge list, skipping comments and blank lines."""
    with gzip.open(path, "rt") as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0].startswith(comments):
                continue
            yield int(parts[0]), int(parts[1])


def nx_graph(path, directed):
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_edges_from(read_edges(path))
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    return g


def summary(degrees):
    """The same definitions kith documents: numpy-style median, nearest-rank percentiles."""
    d = sorted(degrees)
    n = len(d)
    rank = lambda p: d[max(1, math.ceil(p * n)) - 1]
    return {
        "min": d[0],
        "median": float(statistics.median(d)),
        "mean": sum(d) / n,
        "p90": rank(0.90),
        "p99": rank(0.99),
        "max": d[-1],
    }


def kith_stats(kith, path, tmp_path, directed):
    degrees_csv = tmp_path / "degrees.csv"
    args = ["graph", "stats", path, "--json", "--degrees-out", degrees_csv]
    if directed:
        args.append("--directed")
    stats = json.loads(kith(*args))
    lines = degrees_csv.read_text().splitlines()
    assert lines[0] == "id,degree"
    degrees = {int(i): int(d) for i, d in (l.split(",") for l in lines[1:])}
    return stats, degrees


CASES = [
    ("facebook_combined.txt.gz", False),
    ("ca-GrQc.txt.gz", False),
    ("email-Enron.txt.gz", False),
    ("wiki-Vote.txt.gz", True),
    ("email-Eu-core.txt.gz", True),
]


@pytest.mark.parametrize("name,directed", CASES)
def test_stats_match_networkx(kith, datasets, tmp_path, name, directed):
    path = datasets / name
    stats, degrees = kith_stats(kith, path, tmp_path, directed)
    g = nx_graph(path, directed)

    assert stats["nodes"] == g.number_of_nodes()
    assert stats["edges"] == g.number_of_edges()
    assert stats["directed"] == directed

    # The full degree sequence, vertex by vertex (in + out for directed graphs).
    assert degrees == dict(g.degree())

    want = summary([d for _, d in g.degree()])
    for key, value in want.items():
        assert stats["degree"][key] == pytest.approx(value, rel=1e-12), key

    components = list(nx.weakly_connected_components(g) if directed else nx.connected_components(g))
    assert stats["components"] == len(components)
    assert stats["largest_component"] == max(map(len, components))

    if directed:
        assert stats["out_degree"]["max"] == max(d for _, d in g.out_degree())
        assert stats["in_degree"]["max"] == max(d for _, d in g.in_degree())


def test_ego_facebook_snapshot_matches_networkx(kith, datasets, tmp_path):
    """The issue's named check, through a .kgraph snapshot rather than the text file."""
    snapshot = tmp_path / "fb.kgraph"
    kith("graph", "import", datasets / "facebook_combined.txt.gz", "-o", snapshot)
    stats, degrees = kith_stats(kith, snapshot, tmp_path, False)
    g = nx_graph(datasets / "facebook_combined.txt.gz", False)
    assert degrees == dict(g.degree())
    assert stats["components"] == nx.number_connected_components(g) == 1
    assert sorted(degrees.values()) == sorted(d for _, d in g.degree())

"""`kith analyze` against networkx on real graphs: PageRank (L1 < 1e-6 with the same damping
and dangling handling), triangles per vertex, connected components and hop distances,
exactly.
"""

import gzip
import json
import random

import networkx as nx
import pytest


def read(path, directed):
    g = nx.DiGraph() if directed else nx.Graph()
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            u, v = map(int, line.split()[:2])
            g.add_node(u)
            g.add_node(v)
            if u != v:
                g.add_edge(u, v)
    return g


def per_user(path):
    rows = path.read_text().splitlines()[1:]
    return {int(u): v for u, v in (r.split(",") for r in rows)}


GRAPHS = [("facebook_combined.txt.gz", False), ("ca-GrQc.txt.gz", False), ("email-Eu-core.txt.gz", True)]


@pytest.mark.parametrize("name,directed", GRAPHS)
def test_pagerank_matches_networkx(kith, datasets, tmp_path, name, directed):
    g = read(datasets / name, directed)
    want = nx.pagerank(g, alpha=0.85, tol=1e-13, max_iter=10_000)
    out = tmp_path / "pr.csv"
    args = ["analyze", "pagerank", datasets / name, "--iterations", "10000", "--tolerance", "1e-13", "--out", out]
    kith(*args, *(["--directed"] if directed else []))
    got = {u: float(v) for u, v in per_user(out).items()}
    assert set(got) == set(want)
    l1 = sum(abs(got[u] - want[u]) for u in want)
    assert l1 < 1e-6, l1


@pytest.mark.parametrize("name,directed", GRAPHS)
def test_triangles_and_components_match_networkx(kith, datasets, tmp_path, name, directed):
    g = read(datasets / name, False)
    out = tmp_path / "t.csv"
    kith("analyze", "triangles", datasets / name, "--out", out)
    got = {u: int(v) for u, v in per_user(out).items()}
    assert got == nx.triangles(g)
    kith("analyze", "cc", datasets / name, "--out", out)
    labels = per_user(out)
    ours = {}
    for u, label in labels.items():
        ours.setdefault(label, set()).add(u)
    assert sorted(map(sorted, ours.values())) == sorted(map(sorted, nx.connected_components(g)))


@pytest.mark.parametrize("name,directed", GRAPHS)
def test_clustering_and_cores_match_networkx(kith, datasets, tmp_path, name, directed):
    g = read(datasets / name, False)
    out = tmp_path / "c.csv"
    report = json.loads(kith("analyze", "clustering", datasets / name, "--out", out, "--json"))
    got = {u: float(v) for u, v in per_user(out).items()}
    want = nx.clustering(g)
    assert max(abs(got[u] - want[u]) for u in want) < 1e-12
    assert abs(report["average_clustering"] - nx.average_clustering(g)) < 1e-12
    kith("analyze", "kcore", datasets / name, "--out", out)
    assert {u: int(v) for u, v in per_user(out).items()} == nx.core_number(g)


@pytest.mark.parametrize("name,directed", GRAPHS)
def test_hop_distances_match_networkx(kith, datasets, tmp_path, name, directed):
    g = read(datasets / name, directed)
    out = tmp_path / "d.csv"
    for source in random.Random(4).sample(sorted(g.nodes()), 3):
        kith("analyze", "sssp", datasets / name, "--source", source, "--out", out, *(["--directed"] if directed else []))
        got = {u: int(d) for u, d in per_user(out).items()}
        assert got == nx.single_source_shortest_path_length(g, source)


def test_random_graphs(kith, tmp_path):
    rng = random.Random(8)
    for i in range(5):
        g = nx.gnm_random_graph(300, rng.randint(200, 1500), seed=i, directed=bool(i % 2))
        path = tmp_path / f"g{i}.txt"
        path.write_text("".join(f"{u} {v}\n" for u, v in g.edges()))
        directed = ["--directed"] if g.is_directed() else []
        # Isolated vertices are not in an edge list; compare on the vertices that are.
        h = g.subgraph([v for v in g if g.degree(v) > 0]).copy()
        out = tmp_path / "o.csv"
        kith("analyze", "pagerank", path, "--iterations", "10000", "--tolerance", "1e-13", "--out", out, *directed)
        got = {u: float(v) for u, v in per_user(out).items()}
        want = nx.pagerank(h, tol=1e-13, max_iter=10_000)
        assert sum(abs(got[u] - want[u]) for u in want) < 1e-6
        kith("analyze", "triangles", path, "--out", out)
        assert {u: int(v) for u, v in per_user(out).items()} == nx.triangles(h.to_undirected())


@pytest.mark.parametrize("name,directed", GRAPHS)
def test_weighted_distances_match_networkx_dijkstra(kith, datasets, tmp_path, name, directed):
    g = read(datasets / name, directed)
    rng = random.Random(11)
    weights = tmp_path / "w.tsv"
    with weights.open("w") as f:
        f.write("# source target weight\n")
        for u, v in g.edges():
            w = round(rng.uniform(0.0, 5.0), 3)
            g[u][v]["weight"] = w
            f.write(f"{u} {v} {w}\n")
    out = tmp_path / "d.csv"
    for source in rng.sample(sorted(g.nodes()), 3):
        args = ["analyze", "sssp", datasets / name, "--source", source, "--weights", weights, "--out", out]
        kith(*args, *(["--directed"] if directed else []))
        got = {u: float(d) for u, d in per_user(out).items()}
        want = nx.single_source_dijkstra_path_length(g, source, weight="weight")
        assert set(got) == set(want)
        assert max(abs(got[u] - want[u]) for u in want) < 1e-9


def test_mutual_friends_and_suggestions_match_networkx(kith, datasets, tmp_path):
    g = read(datasets / "facebook_combined.txt.gz", False)
    out = tmp_path / "mf.csv"
    report = json.loads(
        kith("analyze", "mutual-friends", datasets / "facebook_combined.txt.gz", "--user", 107, "--top", 10,
             "--out", out, "--json")
    )
    rows = out.read_text().splitlines()[1:]
    assert len(rows) == g.number_of_edges()
    for row in rows:
        a, b, count, common = row.split(",")
        listed = [int(x) for x in common.split()]
        assert int(count) == len(listed)
        assert listed == sorted(nx.common_neighbors(g, int(a), int(b)))
    friends = set(g[107])
    scores = {}
    for w in g:
        if w != 107 and w not in friends:
            c = len(friends & set(g[w]))
            if c:
                scores[w] = c
    want = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:10]
    got = [(s["uid"], s["common"]) for s in report["people_you_may_know"]]
    assert got == want


@pytest.mark.parametrize("name", ["facebook_combined.txt.gz", "ca-GrQc.txt.gz", "email-Eu-core.txt.gz"])
def test_mapreduce_jobs_match_networkx(kith, datasets, tmp_path, name):
    g = read(datasets / name, False)
    spill = ["--memory-mb", "1", "--spill-dir", tmp_path / "spill"]
    t = json.loads(kith("analyze", "mr", "triangles", datasets / name, *spill, "--json"))
    assert t["triangles"] == sum(nx.triangles(g).values()) // 3
    assert t["io"]["spill_runs"] > 0 or name != "facebook_combined.txt.gz"
    cc = json.loads(kith("analyze", "mr", "cc", datasets / name, *spill, "--json"))
    sizes = [len(c) for c in nx.connected_components(g)]
    assert (cc["components"], cc["largest"]) == (len(sizes), max(sizes))
    mf = json.loads(kith("analyze", "mr", "mutual-friends", datasets / name, *spill, "--json"))
    assert mf["total_common"] == sum(len(list(nx.common_neighbors(g, u, v))) for u, v in g.edges())

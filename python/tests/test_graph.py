"""kith.read on every format the CLI reads, against an independent parse in Python; the
conversions to and from networkx and SciPy; and what bad input gets."""

import gzip
import io
import zipfile

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import kith


def edge_set(pairs, directed):
    """Edges as a set, self-loops dropped, each undirected edge once."""
    out = set()
    for u, v in pairs:
        if u == v:
            continue
        out.add((u, v) if directed else (min(u, v), max(u, v)))
    return out


def kith_edge_set(g):
    nodes = g.nodes
    pairs = g.edges()
    return set(zip(nodes[pairs[:, 0]].tolist(), nodes[pairs[:, 1]].tolist()))


def parse_text(path, comment, skip_size_line=False):
    """Two integer columns per line, comment lines and (for MatrixMarket) the size line
    skipped: the independent reader the formats are checked against."""
    pairs, size_seen = [], not skip_size_line
    with gzip.open(path, "rt") as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith(comment):
                continue
            fields = s.split()
            if not size_seen:
                size_seen = True
                continue
            pairs.append((int(fields[0]), int(fields[1])))
    return pairs


@pytest.mark.parametrize("name,comment,directed", [
    ("ca-GrQc.txt.gz", "#", False),
    ("email-Eu-core.txt.gz", "#", True),
    ("out.ego-twitter.gz", "%", True),
])
def test_text_formats_read_every_edge(datasets, name, comment, directed):
    g = kith.read(datasets / name, directed=directed)
    want = edge_set(parse_text(datasets / name, comment), directed)
    assert g.is_directed() == directed
    assert kith_edge_set(g) == want
    assert g.number_of_edges() == len(want)


def test_matrix_market_reads_every_edge(datasets):
    path = datasets / "soc-brightkite.mtx.gz"
    with gzip.open(path, "rt") as f:
        has_size_line = any(not l.startswith("%") and l.strip() for l in f)
    g = kith.read(path)
    want = edge_set(parse_text(path, "%", skip_size_line=has_size_line), False)
    # A file without a banner may carry the size line or not; kith must agree either way.
    if kith_edge_set(g) != want:
        want = edge_set(parse_text(path, "%", skip_size_line=False), False)
    assert kith_edge_set(g) == want


def test_csv_in_a_zip_reads_every_edge(datasets):
    path = datasets / "git_web_ml.zip"
    g = kith.read(path, member="git_web_ml/musae_git_edges.csv")
    with zipfile.ZipFile(path) as z:
        lines = io.TextIOWrapper(z.open("git_web_ml/musae_git_edges.csv")).read().splitlines()
    want = edge_set([tuple(map(int, l.split(",")[:2])) for l in lines[1:] if l], False)
    assert kith_edge_set(g) == want


def test_ego_archive_is_the_combined_graph(datasets):
    ego = kith.read(datasets / "facebook.tar.gz")
    combined = kith.read(datasets / "facebook_combined.txt.gz")
    assert kith_edge_set(ego) == kith_edge_set(combined)


def test_a_snapshot_round_trips(tmp_path, facebook):
    path = tmp_path / "fb.kgraph"
    facebook.save(path)
    again = kith.read(path)
    assert np.array_equal(again.nodes, facebook.nodes)
    assert kith_edge_set(again) == kith_edge_set(facebook)


def test_bad_files_are_named_with_their_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n3 4\n5 x\n")
    with pytest.raises(kith.ParseError) as e:
        kith.read(bad)
    assert "bad.txt" in str(e.value) and "3" in str(e.value)
    with pytest.raises(FileNotFoundError):
        kith.read(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="unknown format"):
        kith.read(bad, format="graphml")
    truncated = tmp_path / "cut.txt.gz"
    lines = "".join(f"{i} {i * 7919 % 10007}\n" for i in range(20000)).encode()
    whole = gzip.compress(lines)
    truncated.write_bytes(whole[: len(whole) // 2])
    with pytest.raises((kith.ParseError, OSError)):
        kith.read(truncated)


def test_networkx_round_trips_integer_ids(facebook):
    G = facebook.to_networkx()
    assert G.number_of_nodes() == 4039 and G.number_of_edges() == 88234
    back = kith.Graph.from_networkx(G)
    assert np.array_equal(back.nodes, facebook.nodes)
    assert kith_edge_set(back) == kith_edge_set(facebook)


def test_networkx_keeps_labels_isolated_nodes_direction_and_weights():
    G = nx.DiGraph()
    G.add_nodes_from(["lonely", ("a", 1)])
    G.add_edge("ann", "bob", weight=2.5)
    G.add_edge("bob", "ann", weight=0.5)
    G.add_edge("bob", ("a", 1))
    g = kith.Graph.from_networkx(G, weight="weight")
    assert g.is_directed() and g.is_weighted and len(g) == 4
    assert "lonely" in g and "nobody" not in g
    H = g.to_networkx()
    assert set(H.nodes) == set(G.nodes)
    assert {(u, v, d["weight"]) for u, v, d in H.edges(data=True)} == {
        ("ann", "bob", 2.5), ("bob", "ann", 0.5), ("bob", ("a", 1), 1.0)}


def test_scipy_is_networkx_adjacency(grqc, eu_core):
    for g in (grqc, eu_core):
        G = g.to_networkx()
        want = nx.to_scipy_sparse_array(G, nodelist=g.nodes.tolist(), format="csr")
        got = g.to_scipy()
        assert isinstance(got, sp.csr_array)
        assert (got != want).nnz == 0


def test_from_edges_checks_its_input():
    with pytest.raises(ValueError, match="pair"):
        kith.Graph.from_edges([(1, 2, 3)])
    with pytest.raises(ValueError, match="negative"):
        kith.Graph.from_edges(np.array([[1, -2]]))
    with pytest.raises(ValueError, match="one per edge"):
        kith.Graph.from_edges([(1, 2)], weights=[1.0, 2.0])
    g = kith.Graph.from_edges([(1, 1), (1, 2), (2, 1)])
    assert g.number_of_edges() == 1 and g._g.cleaning() == (1, 1)
    with pytest.raises(KeyError, match="7"):
        g.neighbors(7)


def test_generators_are_seeded_and_plant_communities():
    g, communities = kith.generate.lfr(3000, avg_degree=12, mu=0.2, seed=5)
    again, same = kith.generate.lfr(3000, avg_degree=12, mu=0.2, seed=5)
    assert len(g) == 3000 and len(communities) == 3000
    assert kith_edge_set(g) == kith_edge_set(again) and np.array_equal(communities, same)
    pairs = g.edges()
    outside = np.mean(communities[pairs[:, 0]] != communities[pairs[:, 1]])
    assert 0.1 < outside < 0.3, outside
    r = kith.generate.rmat(1 << 12, avg_degree=16, seed=3)
    assert len(r) == 4096 and not r.is_directed() and r.number_of_edges() > 20000
    b = kith.generate.ba(1000, avg_degree=10, seed=2)
    # A clique of m + 1 = 6, then m = 5 new edges per vertex.
    assert b.number_of_edges() == 15 + 5 * (1000 - 6)
    with pytest.raises(ValueError):
        kith.generate.ba(3, avg_degree=10)


def test_generators_give_the_cli_graphs(cli, tmp_path):
    for model, args, made in [
        ("lfr", ["--avg-degree", 12, "--mu", 0.3], kith.generate.lfr(2500, avg_degree=12, mu=0.3, seed=9)[0]),
        ("rmat", ["--avg-degree", 16], kith.generate.rmat(2048, avg_degree=16, seed=9)),
        ("ba", ["--avg-degree", 8], kith.generate.ba(2500, avg_degree=8, seed=9)),
    ]:
        out = tmp_path / f"{model}.kgraph"
        n = 2048 if model == "rmat" else 2500
        cli("graph", "generate", "--model", model, "--nodes", n, "--seed", 9, *args, "-o", out)
        assert kith_edge_set(kith.read(out)) == kith_edge_set(made), model


def test_tuple_labels_and_weights_of_both_directions():
    G = nx.grid_2d_graph(3, 3)
    g = kith.Graph.from_networkx(G)
    assert (1, 1) in g and (0, 0) in g and (5, 5) not in g
    assert sorted(g.neighbors((1, 1)).tolist()) == sorted(G[(1, 1)])
    assert kith.sssp(g, (0, 0), as_dict=True) == nx.single_source_shortest_path_length(G, (0, 0))
    two = kith.Graph.from_edges([((0, 0), (0, 1))])
    assert two.index((0, 1)) == 1 and (0, 1) in two
    with pytest.raises(ValueError):
        g.nodes[0] = "x"
    # An undirected edge given both ways with two weights: one weight, the first, both ways.
    w = kith.Graph.from_edges([(1, 2), (2, 1)], weights=[5.0, 7.0])
    assert kith.sssp(w, 1, weight="w").tolist() == [0.0, 5.0]
    assert kith.sssp(w, 2, weight="w").tolist() == [5.0, 0.0]
    assert (w.to_scipy() != w.to_scipy().T).nnz == 0
    # A directed pair made undirected keeps the smaller weight, both ways.
    d = kith.Graph.from_edges([(5, 2), (2, 5), (2, 9)], directed=True, weights=[3.0, 4.0, 2.0])
    u = d.to_undirected()
    assert kith.sssp(u, 2, weight="w").tolist() == [0.0, 3.0, 2.0]
    assert kith.sssp(u, 5, weight="w").tolist() == [3.0, 0.0, 5.0]
    assert {(a, b, x["weight"]) for a, b, x in u.to_networkx().edges(data=True)} == {
        (2, 5, 3.0), (2, 9, 2.0)}
    # Integer ids in an object array are ids, ascending.
    o = kith.Graph.from_edges(np.array([[10, 3]], dtype=object))
    assert o.nodes.tolist() == [3, 10] and o.nodes.dtype == np.uint64

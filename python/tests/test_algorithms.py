"""Every algorithm of the Python package against networkx (and brute force) on the shared
datasets, with the verifiers on; the GIL is released while they run."""

import random
import threading
import time

import networkx as nx
import numpy as np
import pytest

import kith


@pytest.fixture(scope="module")
def graphs(facebook, grqc, eu_core):
    """Each graph with its networkx twin."""
    return [(g, g.to_networkx()) for g in (facebook, grqc, eu_core)]


def by_node(g, values):
    return dict(zip(g.nodes.tolist(), np.asarray(values).tolist()))


def test_pagerank_is_networkx(graphs):
    for g, G in graphs:
        want = nx.pagerank(G, alpha=0.85, tol=1e-10, max_iter=500)
        got = kith.pagerank(g, alpha=0.85, tol=1e-10, max_iter=500, verify=True)
        assert got.shape == (len(g),) and got.dtype == np.float64
        assert sum(abs(got[i] - want[u]) for i, u in enumerate(g.nodes.tolist())) < 1e-8
        f32 = kith.pagerank(g, max_iter=60, tol=0, precision="f32", verify=True)
        assert np.abs(f32 - got).sum() < 1e-5
    g, G = graphs[0]
    assert kith.pagerank(g, alpha=0.9, as_dict=True).keys() == set(G.nodes)
    with pytest.raises(kith.ConvergenceError):
        kith.pagerank(g, max_iter=2, tol=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        kith.pagerank(g, alpha=1.5)
    with pytest.raises(ValueError, match="formulation"):
        kith.pagerank(g, formulation="google")


def test_lfgraph_pagerank_sums_to_about_n(facebook):
    ranks = kith.pagerank(facebook, formulation="lfgraph", max_iter=30, tol=0, verify=True)
    assert abs(ranks.sum() - len(facebook)) < 1e-6 * len(facebook)


def test_triangles_and_clustering_are_networkx(graphs):
    for g, G in graphs:
        U = G.to_undirected() if G.is_directed() else G
        assert kith.triangles(g, as_dict=True, verify=True) == nx.triangles(U)
        assert kith.triangle_count(g, verify=True) == sum(nx.triangles(U).values()) // 3
        want = nx.clustering(U)
        got = kith.clustering(g, verify=True)
        assert max(abs(got[i] - want[u]) for i, u in enumerate(g.nodes.tolist())) < 1e-12
        assert abs(kith.average_clustering(g) - nx.average_clustering(U)) < 1e-12


def test_components_are_networkx(graphs):
    for g, G in graphs:
        want = sorted((frozenset(c) for c in nx.weakly_connected_components(G))
                      if G.is_directed() else (frozenset(c) for c in nx.connected_components(G)),
                      key=lambda c: (-len(c), min(c)))
        got = sorted((frozenset(c) for c in kith.connected_components(g)),
                     key=lambda c: (-len(c), min(c)))
        assert got == want
        labels = kith.components(g, method="label-propagation", verify=True)
        assert all(labels[i] == min(c) for c in want for i in map(g.index, c))


def test_sssp_is_networkx(graphs):
    rng = random.Random(3)
    for g, G in graphs:
        for source in rng.sample(list(G.nodes), 3):
            want = nx.single_source_shortest_path_length(G, source)
            assert kith.sssp(g, source, as_dict=True, verify=True) == want
            dist = kith.sssp(g, source)
            assert np.isinf(dist).sum() == len(g) - len(want)


def test_weighted_sssp_is_dijkstra(grqc, eu_core):
    rng = random.Random(11)
    for base in (grqc, eu_core):
        G = base.to_networkx()
        for u, v in G.edges:
            G[u][v]["w"] = rng.choice([0.5, 1.0, 2.0, 3.25])
        g = kith.Graph.from_networkx(G, weight="w")
        for source in rng.sample(list(G.nodes), 3):
            want = nx.single_source_dijkstra_path_length(G, source, weight="w")
            got = kith.sssp(g, source, weight="w", as_dict=True, verify=True)
            assert got.keys() == want.keys()
            assert max(abs(got[k] - want[k]) for k in want) < 1e-9
    with pytest.raises(ValueError, match="no weights"):
        kith.sssp(grqc, 3466, weight="w")
    with pytest.raises(KeyError):
        kith.sssp(grqc, 10**12)


def test_kcore_is_networkx(graphs):
    for g, G in graphs:
        U = G.to_undirected() if G.is_directed() else G
        U = nx.Graph(U)
        U.remove_edges_from(nx.selfloop_edges(U))
        assert kith.kcore(g, as_dict=True, verify=True) == nx.core_number(U)


def test_mutual_friends_are_common_neighbours(grqc):
    G = grqc.to_networkx()
    mf = kith.mutual_friends(grqc, verify=True)
    assert len(mf) == G.number_of_edges()
    got = mf.to_dict()
    for (a, b), common in got.items():
        assert G.has_edge(a, b)
        assert sorted(common) == sorted(nx.common_neighbors(G, a, b))
    assert mf.counts().sum() == len(mf.common)


def test_people_you_may_know_is_brute_force(facebook):
    G = facebook.to_networkx()
    for user in (0, 107, 1684, 3980):
        friends = set(G[user])
        counts = {}
        for w in G.nodes:
            if w != user and w not in friends:
                c = len(friends & set(G[w]))
                if c:
                    counts[w] = c
        want = sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:10]
        assert kith.people_you_may_know(facebook, user, 10, verify=True) == want


def test_the_gil_is_released_while_an_algorithm_runs(datasets):
    """Another Python thread keeps running while kith computes (with the GIL held it would
    not run at all until the call returned)."""
    g = kith.read(datasets / "soc-Slashdot0902.txt.gz")
    started, done = threading.Event(), threading.Event()

    def work():
        started.set()
        kith.pagerank(g, max_iter=150, tol=0)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    time.sleep(0.01)
    spins = 0
    while not done.is_set():
        spins += 1
    t.join()
    assert spins > 10_000, spins


def test_mid_size_slashdot_is_networkx(datasets):
    """soc-Slashdot0902 (82,168 users, 948,464 links): PageRank on the directed graph,
    triangles on its friendships."""
    g = kith.read(datasets / "soc-Slashdot0902.txt.gz", directed=True)
    G = g.to_networkx()
    want = nx.pagerank(G, tol=1e-10, max_iter=300)
    got = kith.pagerank(g, tol=1e-10, max_iter=300)
    assert sum(abs(got[i] - want[u]) for i, u in enumerate(g.nodes.tolist())) < 1e-8
    assert kith.triangles(g, as_dict=True) == nx.triangles(G.to_undirected())

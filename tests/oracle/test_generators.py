"""Generated graphs checked by networkx: LFR's realised mixing from its own communities file, and
the edge-list writer's output as another tool reads it."""

import json

import networkx as nx
import pytest


@pytest.mark.parametrize("mu", [0.1, 0.4])
def test_lfr_mixing_as_networkx_measures_it(kith, tmp_path, mu):
    edges = tmp_path / "lfr.txt"
    cmty = tmp_path / "lfr.cmty.txt"
    report = json.loads(kith("graph", "generate", "--model", "lfr", "--nodes", 20000, "--mu", mu,
                             "--seed", 3, "-o", edges, "--communities-out", cmty, "--json"))
    g = nx.read_edgelist(edges, nodetype=int, comments="#")
    community = {}
    for index, line in enumerate(cmty.read_text().splitlines()):
        for member in line.split("\t"):
            assert int(member) not in community, "communities overlap"
            community[int(member)] = index
    assert set(community) == set(range(20000))
    assert g.number_of_edges() == report["edges"]

    crossing = sum(1 for u, v in g.edges() if community[u] != community[v])
    realised = crossing / g.number_of_edges()
    assert realised == pytest.approx(report["lfr"]["mu_realized"], abs=1e-9)
    assert abs(realised - mu) < 0.01

    # Planted communities are good ones: modularity well above zero and near 1 - mu.
    partition = {}
    for node, c in community.items():
        partition.setdefault(c, set()).add(node)
    q = nx.algorithms.community.modularity(g, partition.values())
    assert q > (1 - mu) - 0.1

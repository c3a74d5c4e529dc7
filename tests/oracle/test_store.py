"""`kith store` against networkx and from-scratch recomputation: a store of ego-Facebook under a
layout written here holds exactly the graph networkx reads, its reported layout cost and
modelled pages are those of that layout, and the blocks a cold "list all friends" reads are
exactly the index block plus the distinct pages of the friends' records.
"""

import gzip
import json
import random

import networkx as nx


def facebook(datasets):
    g = nx.Graph()
    with gzip.open(datasets / "facebook_combined.txt.gz", "rt") as f:
        for line in f:
            u, v = line.split()
            if u != v:
                g.add_edge(int(u), int(v))
    return g


def write_layout(path, order):
    path.write_text("".join(f"{u}\n" for u in order))


def la_cost(g, pos):
    return sum(abs(pos[u] - pos[v]) for u, v in g.edges())


def mean_pages(g, pos, record, page):
    total = 0
    for u in g.nodes():
        pages = set()
        for w in [u, *g.neighbors(u)]:
            start = pos[w] * record
            pages.update(range(start // page, (start + record - 1) // page + 1))
        total += len(pages)
    return total / g.number_of_nodes()


def test_store_holds_the_graph_and_reports_its_layout(kith, datasets, tmp_path):
    g = facebook(datasets)
    order = sorted(g.nodes())
    random.Random(5).shuffle(order)
    layout = tmp_path / "random.layout"
    write_layout(layout, order)
    store = tmp_path / "store"
    kith("store", "build", datasets / "facebook_combined.txt.gz", "--dir", store,
         "--layout", layout, "--data-bytes", "40")
    status = json.loads(kith("store", "status", "--dir", store, "--json"))
    assert status["users"] == g.number_of_nodes()
    assert status["friendships"] == g.number_of_edges()
    pos = {u: i for i, u in enumerate(order)}
    assert status["layout_cost"] == la_cost(g, pos)
    record, page = status["record_bytes"], status["page_bytes"]
    assert abs(status["pages_mean"] - mean_pages(g, pos, record, page)) < 1e-9

    # Relaid out by another layout from here: the cost follows.
    order2 = sorted(g.nodes(), key=lambda u: (g.degree(u), u))
    write_layout(layout, order2)
    kith("store", "relayout", "--dir", store, "--layout", layout)
    status = json.loads(kith("store", "status", "--dir", store, "--json"))
    assert status["layout_cost"] == la_cost(g, {u: i for i, u in enumerate(order2)})
    assert status["generation"] == 2
    kith("store", "verify", "--dir", store)


def test_cold_reads_are_the_index_block_plus_the_friends_pages(kith, datasets, tmp_path):
    g = facebook(datasets)
    order = sorted(g.nodes())
    random.Random(9).shuffle(order)
    layout = tmp_path / "l.txt"
    write_layout(layout, order)
    store = tmp_path / "store"
    kith("store", "build", datasets / "facebook_combined.txt.gz", "--dir", store,
         "--layout", layout, "--data-bytes", "400")
    status = json.loads(kith("store", "status", "--dir", store, "--json"))
    per_page = status["page_bytes"] // status["record_bytes"]
    assert per_page == 9, status  # 400-byte data: 9 entries of 441 bytes in a 4 KiB block
    report = json.loads(kith("bench", "friends", "--dir", store, "--users", "300", "--repeat", "1",
                             "--cold", "--json", "--per-user"))
    pos = {u: i for i, u in enumerate(order)}
    assert len(report["runs"]) == 300
    for run in report["runs"]:
        u = run["uid"]
        assert run["friends"] == g.degree(u)
        pages = {pos[w] // per_page for w in g.neighbors(u)}
        assert run["blocks"] == 1 + len(pages), (u, run)

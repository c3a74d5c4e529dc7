"""`kith serve` against networkx on a real graph, on both engines (the embedded RocksDB
store, and the store on the 3-node Cassandra cluster the test command starts, named by
KITH_TEST_CASSANDRA): shortest paths (bidirectional BFS over HTTP) have networkx's lengths
and are real paths, neighbourhoods are networkx's balls, and the push feed of a follow graph
built here is the brute-force merge of the followees' posts.
"""

import json
import os
import random
import subprocess
import time
import urllib.error
import urllib.request

import networkx as nx
import pytest

from test_store import facebook


@pytest.fixture(params=["rocksdb", "cassandra"])
def server(request, datasets, tmp_path, kith):
    graph = datasets / "facebook_combined.txt.gz"
    if request.param == "rocksdb":
        store = tmp_path / "store"
        kith("store", "build", graph, "--dir", store, "--method", "kith", "--data-bytes", "40")
        where = ["--dir", str(store)]
    else:
        hosts = os.environ.get("KITH_TEST_CASSANDRA")
        if not hosts:
            pytest.fail("KITH_TEST_CASSANDRA is not set: run scripts/test.sh, or "
                        "`kith cluster up` and export the hosts it prints")
        keyspace = f"oracle_{os.getpid()}_{int(time.time() * 1000) % 10**9}"
        kith("store", "build", graph, "--cassandra", hosts, "--keyspace", keyspace,
             "--method", "kith", "--data-bytes", "40")
        where = ["--cassandra", hosts, "--keyspace", keyspace,
                 "--journal-dir", str(tmp_path / "journal")]
    proc = subprocess.Popen([os.environ["KITH_BIN"], "serve", *where,
                             "--addr", "127.0.0.1:0", "--feed", "push"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert "http://" in line, line
    base = "http://" + line.split("http://")[1].split()[0]
    yield base
    proc.terminate()
    assert proc.wait(timeout=30) == 0
    if request.param == "cassandra":
        kith("store", "drop", "--cassandra", hosts, "--keyspace", keyspace)


def call(base, path, body=None, method=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def test_paths_and_neighborhoods_match_networkx(server, datasets):
    g = facebook(datasets)
    rng = random.Random(11)
    nodes = sorted(g.nodes())
    for _ in range(60):
        a, b = rng.choice(nodes), rng.choice(nodes)
        want = nx.shortest_path_length(g, a, b)
        got = call(server, f"/paths/shortest?from={a}&to={b}&max_hops=6")
        if want > 6:
            assert got["path"] is None, (a, b, got)
            continue
        assert got["hops"] == want, (a, b, got)
        path = got["path"]
        assert path[0] == a and path[-1] == b
        assert all(g.has_edge(u, v) for u, v in zip(path, path[1:]))
        if want > 1:
            short = call(server, f"/paths/shortest?from={a}&to={b}&max_hops={want - 1}")
            assert short["path"] is None and short["hops"] is None
    for u in rng.sample(nodes, 15):
        for hops in (1, 2):
            want = nx.single_source_shortest_path_length(g, u, cutoff=hops)
            got = call(server, f"/users/{u}/neighborhood?hops={hops}&limit=100000")
            assert not got["truncated"]
            assert {n["uid"]: n["distance"] for n in got["users"]} == \
                {v: d for v, d in want.items() if v != u}


def test_push_feed_is_the_merge_of_followees_posts(server):
    rng = random.Random(3)
    users = list(range(0, 200))
    follows = {u: sorted(set(rng.sample(users, 8)) - {u}) for u in users}
    for u, targets in follows.items():
        call(server, f"/users/{u}/follow", {"targets": targets})
    posts = []
    for i in range(600):
        author = rng.choice(users)
        p = call(server, "/posts", {"author": author, "content": f"n{i}"})
        posts.append((p["id"], author, p["content"]))
    # Fan-out is asynchronous: wait until its queue is empty.
    for _ in range(2000):
        if call(server, "/stats")["fanout_queue_depth"] == 0:
            break
        time.sleep(0.005)
    for u in rng.sample(users, 30):
        want = [c for (_, a, c) in sorted(posts, reverse=True) if a in follows[u]]
        got, cursor = [], None
        while True:
            path = f"/users/{u}/feed?limit=7" + (f"&before={cursor}" if cursor else "")
            page = call(server, path)
            got += [p["content"] for p in page["posts"]]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        assert got == want, u
    with pytest.raises(urllib.error.HTTPError) as e:
        call(server, "/users/0/follow", {"targets": follows[0][:1]})
    assert e.value.code == 409


def test_openapi_document_is_valid_and_complete(server):
    from openapi_spec_validator import validate

    doc = call(server, "/openapi.json")
    validate(doc)
    ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
    for want in [("GET", "/users/{uid}"), ("PUT", "/users/{uid}"), ("GET", "/users/{uid}/profile"),
                 ("PUT", "/users/{uid}/profile"), ("GET", "/users/{uid}/friends"),
                 ("POST", "/users/{uid}/friends/{fid}"), ("DELETE", "/users/{uid}/friends/{fid}"),
                 ("GET", "/users"), ("GET", "/users/random"), ("GET", "/paths/shortest"),
                 ("GET", "/users/{uid}/neighborhood"), ("POST", "/users/{uid}/follow"),
                 ("DELETE", "/users/{uid}/follow/{target}"), ("GET", "/users/{uid}/follows"),
                 ("POST", "/posts"), ("GET", "/posts/{id}"), ("GET", "/users/{uid}/feed")]:
        assert want in ops, want
    # Every error response points at the one error schema.
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, resp in op["responses"].items():
                if status.startswith("4"):
                    ref = resp["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorBody"), (method, path, status)

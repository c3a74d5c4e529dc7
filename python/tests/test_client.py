"""kith.Client against a real `kith serve` over loopback: every operation of the service's
OpenAPI document has a method, reads agree with the graph, cursors page through everything,
errors arrive typed, and writes retried after a lost answer are applied once."""

import json
import os
import socket
import subprocess
import threading

import networkx as nx
import numpy as np
import pytest

import kith
from kith import client as kc

TOKEN = "s3cret-for-tests"


@pytest.fixture(scope="module")
def server(datasets, tmp_path_factory, cli):
    """A server over a RocksDB store of ego-Facebook, writes behind a token."""
    store = tmp_path_factory.mktemp("client") / "store"
    cli("store", "build", datasets / "facebook_combined.txt.gz", "--dir", store,
        "--method", "kith", "--data-bytes", "40")
    proc = subprocess.Popen([os.environ["KITH_BIN"], "serve", "--dir", str(store),
                             "--addr", "127.0.0.1:0", "--feed", "push", "--token", TOKEN],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert "http://" in line, line
    yield "http://" + line.split("http://")[1].split()[0]
    proc.terminate()
    assert proc.wait(timeout=30) == 0


@pytest.fixture(scope="module")
def client(server):
    with kith.Client(server, token=TOKEN) as c:
        yield c


@pytest.fixture(scope="module")
def graph(datasets):
    return kith.read(datasets / "facebook_combined.txt.gz").to_networkx()


def test_every_operation_has_a_method(client):
    doc = client.openapi()
    operations = {op["operationId"] for ops in doc["paths"].values() for op in ops.values()}
    assert operations == set(kc.OPERATIONS), (
        f"operations without a client method: {sorted(operations - set(kc.OPERATIONS))}; "
        f"methods without an operation: {sorted(set(kc.OPERATIONS) - operations)}")
    for name, method in kc.OPERATIONS.items():
        assert getattr(kith.Client, method.__name__) is method, name
        assert method.__doc__ or name in ("get_profile", "get_post", "unfollow"), name


def test_reads_agree_with_the_graph(client, graph):
    # NumPy integers (as g.nodes gives them) are ids too.
    assert client.get_user(np.uint64(107))["uid"] == 107
    for uid in (0, 107, 1684, 3437):
        want = sorted(graph[uid])
        assert list(client.friends(uid, page_size=37)) == want
        user = client.get_user(uid)
        assert user["friends_total"] == len(want) and user["uid"] == uid
        assert client.get_profile(uid)["name"] == user["profile"]["name"]
    users = list(client.users(page_size=500))
    assert sorted(u["uid"] for u in users) == sorted(graph.nodes)
    assert len(client.random_users(5)) == 5
    path = client.shortest_path(0, 4000)
    assert path["hops"] == nx.shortest_path_length(graph, 0, 4000)
    hood = client.neighborhood(0, 1, limit=10)
    assert hood["truncated"] and len(hood["users"]) == 10


def test_writes_and_feeds_page_through_cursors(client):
    client.put_user(100_001, {"name": "ann", "age": 30}, friends=[0], data=b"\x00\x01")
    client.put_user(100_002, {"name": "bob"})
    assert client.get_user(100_001)["data_bytes"] == 2
    assert client.put_profile(100_002, {"name": "robert", "fields": {"city": "Dhaka"}})
    assert client.get_profile(100_002)["fields"] == {"city": "Dhaka"}
    assert client.add_friend(100_001, 100_002)["changed"]
    assert not client.add_friend(100_001, 100_002)["changed"]
    assert 100_002 in set(client.friends(100_001))
    assert client.remove_friend(100_001, 100_002)["changed"]
    assert client.follow(100_001, [100_002, 0])["followees"] == 2
    assert client.follows(100_001)["followee_count"] == 2
    ids = [client.create_post(100_002, f"post {i}")["id"] for i in range(23)]
    assert client.get_post(ids[0])["content"] == "post 0"
    feed = list(client.feed(100_001, page_size=5))
    assert [p["id"] for p in feed] == sorted(ids, reverse=True)
    assert client.unfollow(100_001, 0)["followees"] == 1


def test_errors_are_typed(client, server):
    assert kith.NotFound is kc.NotFound and issubclass(kith.Unavailable, kith.ApiError)
    with pytest.raises(kc.NotFound) as e:
        client.get_user(987_654_321)
    assert e.value.code == "unknown_user" and e.value.status == 404
    with pytest.raises(kc.Unprocessable, match="self_friendship"):
        client.add_friend(0, 0)
    client.follow(1, [2])
    with pytest.raises(kc.Conflict, match="already_following"):
        client.follow(1, [2])
    with pytest.raises(kc.BadRequest):
        client.get_friends(0, limit=0)
    with pytest.raises(kc.Unauthorized):
        kith.Client(server).add_friend(1, 2)
    with pytest.raises(kc.PayloadTooLarge):
        client.create_post(5, "x" * 70_000)
    with pytest.raises(kc.PayloadTooLarge):
        client.put_profile(5, {"name": "x" * (3 << 20)})
    # Far over the limit the server may close before the body is sent: refused either way,
    # never sent four times.
    with pytest.raises((kc.PayloadTooLarge, kc.TransportError), match="413|body-limit"):
        client.put_user(5, {"name": "x"}, data=b"x" * (64 << 20))
    with pytest.raises(ValueError):
        client.get_user(-1)
    with pytest.raises(kc.TransportError):
        kith.Client("http://127.0.0.1:1", retries=1, backoff=0.001).health()


class Proxy:
    """A loopback proxy that forwards each request whole to the server and can lose the
    next answers (closing the connection after the server acted) or answer 503 itself;
    it counts the connections clients open."""

    def __init__(self, upstream):
        host, port = upstream.split("//")[1].split(":")
        self.upstream = (host, int(port))
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.drop_answers = 0
        self.answer_503 = 0
        self.retry_after = None
        self.connections = 0
        self.keys = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        up = socket.create_connection(self.upstream)
        with conn, up:
            rf, uf = conn.makefile("rb"), up.makefile("rb")
            while True:
                request = read_message(rf)
                if request is None:
                    return
                head = request.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
                for line in head.split("\r\n"):
                    if line.startswith("idempotency-key:"):
                        self.keys.append(line.split(":", 1)[1].strip())
                if self.answer_503 > 0:
                    self.answer_503 -= 1
                    body = b'{"error":"overloaded","message":"try again"}'
                    extra = b"" if self.retry_after is None else (
                        b"retry-after: %s\r\n" % self.retry_after.encode())
                    conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: "
                                 b"application/json\r\n%scontent-length: %d\r\n\r\n%s"
                                 % (extra, len(body), body))
                    continue
                up.sendall(request)
                answer = read_message(uf)
                if self.drop_answers > 0:
                    self.drop_answers -= 1
                    return
                conn.sendall(answer)

    def close(self):
        self.sock.close()


def read_message(f):
    """One HTTP/1.1 message with a content-length body, or None at end of stream."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = f.readline()
        if not line:
            return None
        head += line
    length = 0
    for line in head.decode("latin-1").split("\r\n"):
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    return head + f.read(length)


def test_lost_answers_are_retried_once_applied(client, server):
    proxy = Proxy(server)
    try:
        c = kith.Client(proxy.url, token=TOKEN, backoff=0.001)
        client.put_user(200_001, {"name": "carol"})
        client.put_user(200_002, {"name": "dave"})
        client.follow(200_001, [200_002])
        proxy.drop_answers = 1
        post = c.create_post(200_002, "said once")
        # The server created the post before its answer was lost; the retry carried the
        # same key and got the first result back instead of a second post.
        assert proxy.keys[-1] == proxy.keys[-2]
        feed = list(client.feed(200_001))
        assert [p["content"] for p in feed] == ["said once"] and feed[0]["id"] == post["id"]
        proxy.answer_503 = 2
        assert c.get_user(200_001)["uid"] == 200_001
        # A Retry-After no one can sleep (negative, NaN) falls back to backoff.
        proxy.answer_503, proxy.retry_after = 1, "nan"
        assert c.get_user(200_002)["uid"] == 200_002
        proxy.answer_503, proxy.retry_after = 1, "-1"
        assert c.get_user(200_002)["uid"] == 200_002
        proxy.retry_after = None
        proxy.drop_answers = 1
        assert c.add_friend(200_001, 200_002)["changed"]
        assert 200_002 in set(client.friends(200_001))
    finally:
        proxy.close()


def test_connections_are_reused(server):
    proxy = Proxy(server)
    try:
        c = kith.Client(proxy.url)
        for uid in range(50):
            c.get_profile(uid)
        assert proxy.connections == 1
    finally:
        proxy.close()


def test_data_blocks_by_range_exists_and_friends_data(client, graph):
    assert client.exists(0) and not client.exists(10**9)
    block = bytes(range(50))
    assert client.put_data(3, block) == {"uid": 3, "data_bytes": 50}
    assert client.get_data(3) == block
    assert client.get_data(3, 10, 20) == block[10:20]
    assert client.get_data(3, 45) == block[45:]
    assert client.get_data(3, end=5) == block[:5]
    assert client.get_data(3, 5, 5) == b""
    with pytest.raises(kith.RangeNotSatisfiable):
        client.get_data(3, 50)
    with pytest.raises(ValueError):
        client.get_data(3, -1)
    # "List all friends' data": every friend of user 0 once (as the store has them now:
    # earlier tests add friendships), each with its block's start.
    friends = client.get_friends(0, limit=1000)
    page = client.friends_data(0, fetch_bytes=3, limit=1000)
    assert page["total"] == friends["total"] >= graph.degree(0)
    assert sorted(f["uid"] for f in page["friends"]) == friends["friends"]
    for f in page["friends"][:20]:
        assert f["data"] == client.get_data(f["uid"], 0, 3)

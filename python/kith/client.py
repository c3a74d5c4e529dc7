"""kith.Client: every endpoint of ``kith serve`` (Parker's users and friendships, Twibo's
follows, posts and feeds) as a method.

One keep-alive HTTP/1.1 connection per thread is reused between calls. Listings are
iterators that follow the server's cursors. Errors are raised as :class:`ApiError`
subclasses built from the service's JSON error bodies. Reads and ``PUT``s are retried on
a lost connection or a 503 (``overloaded``, ``shutting_down``, ...), and so are ``POST``s
and ``DELETE``s, under one ``Idempotency-Key`` per call, so a retried write is applied
once. Only the standard library is used.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import numbers
import random
import socket
import threading
import time
import urllib.parse
import uuid
from typing import Any, Iterator, Mapping, Optional, Sequence

__all__ = [
    "Client", "ApiError", "BadRequest", "Unauthorized", "Forbidden", "NotFound", "Conflict",
    "PayloadTooLarge", "Unprocessable", "ServerError", "Unavailable", "TransportError",
]


class ApiError(Exception):
    """An error answer of the service: the HTTP ``status``, the stable ``code`` of its JSON
    body (``unknown_user``, ``bad_parameter``, ...), its ``message``, and on a 500 the
    ``id`` under which the server logged the details."""

    def __init__(self, status: int, code: str, message: str, id: Optional[str] = None,
                 method: str = "", path: str = "") -> None:
        super().__init__(f"{method} {path}: {status} {code}: {message}"
                         + (f" (logged as {id})" if id else ""))
        self.status, self.code, self.message, self.id = status, code, message, id
        self.method, self.path = method, path


class BadRequest(ApiError):
    """400: a malformed parameter or body."""


class Unauthorized(ApiError):
    """401: a write without the server's bearer token."""


class Forbidden(ApiError):
    """403: refused (a cross-site write)."""


class NotFound(ApiError):
    """404: an unknown user, post or route."""


class Conflict(ApiError):
    """409: already so (already following, a post id taken, a stale cursor)."""


class PayloadTooLarge(ApiError):
    """413: a body over the server's limit."""


class Unprocessable(ApiError):
    """422: well-formed but not allowed (a self-friendship, an idempotency key reused for
    another request, a request too expensive to answer)."""


class RangeNotSatisfiable(ApiError):
    """416: a byte range outside the data block."""


class ServerError(ApiError):
    """500 and other 5xx answers not worth retrying."""


class Unavailable(ApiError):
    """503 after every retry: the service is overloaded, shutting down or without its
    store."""


class TransportError(ConnectionError):
    """No answer after every retry: the connection failed or timed out."""


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
              409: Conflict, 413: PayloadTooLarge, 416: RangeNotSatisfiable,
              422: Unprocessable, 503: Unavailable}
_RETRY_STATUS = {502, 503, 504}
# A body whose sending failed is not sent again past this size: the server most likely
# refused it for its size and closed, and would do so again.
_BIG_BODY = 1 << 20


class Client:
    """A client of ``kith serve`` at ``url`` (``http://host:port``), with the bearer
    ``token`` the server's writes require, if any.

    ``timeout`` bounds each attempt in seconds; ``retries`` is how many times a failed
    attempt is retried (with exponential backoff from ``backoff`` seconds, jittered).
    """

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 30.0,
                 retries: int = 3, backoff: float = 0.05) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"url must be http://host:port, not {url!r}")
        if retries < 0 or timeout <= 0:
            raise ValueError("retries must be >= 0 and timeout > 0")
        self.url = url.rstrip("/")
        self._host, self._port = parts.hostname, parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._token = token
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"<kith.Client {self.url}>"

    def close(self) -> None:
        """Closes this thread's connection (the next call opens another)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- Parker: users ----------------------------------------------------------------------

    def get_user(self, uid: int, consistency: Optional[str] = None) -> dict:
        """The whole user: profile, first friends, friend count, data size. ``consistency``
        is ``"strong"`` (default) or ``"eventual"`` (on Cassandra, one replica answers)."""
        return self._call("GET", f"/users/{_uid(uid)}", query={"consistency": consistency})

    def put_user(self, uid: int, profile: Mapping[str, Any],
                 friends: Optional[Sequence[int]] = None, data: Optional[bytes] = None) -> dict:
        """Creates or replaces user ``uid``: its profile, its friends (each must exist) and
        its data block (left as it is when ``None``)."""
        body: dict = {"profile": dict(profile)}
        if friends is not None:
            body["friends"] = [_uid(f) for f in friends]
        if data is not None:
            body["data_base64"] = base64.b64encode(bytes(data)).decode()
        return self._call("PUT", f"/users/{_uid(uid)}", body)

    def get_profile(self, uid: int, consistency: Optional[str] = None) -> dict:
        """The profile, read at ``consistency`` as :meth:`get_user` reads."""
        return self._call("GET", f"/users/{_uid(uid)}/profile",
                          query={"consistency": consistency})

    def put_profile(self, uid: int, profile: Mapping[str, Any]) -> dict:
        """Replaces the profile (``name``, ``age``, ``fields``) of an existing user."""
        return self._call("PUT", f"/users/{_uid(uid)}/profile", dict(profile))

    def exists(self, uid: int) -> bool:
        """Whether user ``uid`` exists (Parker's ``exists``)."""
        return bool(self._call("GET", f"/users/{_uid(uid)}/exists")["exists"])

    def get_data(self, uid: int, start: Optional[int] = None, end: Optional[int] = None) -> bytes:
        """The user's data block, or its bytes ``start:end`` (as a slice: ``end`` excluded,
        either may be omitted), read with an HTTP byte range. A range past the block's end
        raises :class:`RangeNotSatisfiable`."""
        for name, v in (("start", start), ("end", end)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"{name} must be a non-negative int, not {v!r}")
        if start is None and end is None:
            return self._call("GET", f"/users/{_uid(uid)}/data", raw="bytes")
        first = start or 0
        if end is not None and end <= first:
            return b""
        spec = f"bytes={first}-" + ("" if end is None else str(end - 1))
        return self._call("GET", f"/users/{_uid(uid)}/data", raw="bytes",
                          extra_headers={"Range": spec})

    def put_data(self, uid: int, data: bytes) -> dict:
        """Replaces the user's data block (at most 4 MiB) with ``data``; durable when it
        returns. Returns ``{"uid", "data_bytes"}``."""
        return self._call("PUT", f"/users/{_uid(uid)}/data", octets=bytes(data))

    def friends_data(self, uid: int, fetch_bytes: Optional[int] = None,
                     offset: Optional[int] = None, limit: Optional[int] = None) -> dict:
        """Bondhu's "list all friends' data": a page of the user's friends in the store's
        layout order, each with the first ``fetch_bytes`` (default 4096) of its data block.
        Returns ``{"uid", "friends": [{"uid", "data": bytes}], "total", "offset",
        "fetch_bytes"}``."""
        page = self._call("GET", f"/users/{_uid(uid)}/friends/data",
                          query={"fetch_bytes": fetch_bytes, "offset": offset, "limit": limit})
        page["friends"] = [{"uid": f["uid"], "data": base64.b64decode(f["data_base64"])}
                           for f in page["friends"]]
        return page

    def list_users(self, cursor: Optional[str] = None, limit: Optional[int] = None) -> dict:
        """One page of users in layout order, with ``next_cursor`` for the next."""
        return self._call("GET", "/users", query={"cursor": cursor, "limit": limit})

    def users(self, page_size: Optional[int] = None) -> Iterator[dict]:
        """Every user (``uid`` and profile), page by page along the server's cursors."""
        cursor = None
        while True:
            page = self.list_users(cursor, page_size)
            yield from page["users"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def random_users(self, n: Optional[int] = None) -> list:
        """``n`` users drawn at random."""
        return self._call("GET", "/users/random", query={"n": n})["users"]

    # -- Parker: friendships ----------------------------------------------------------------

    def get_friends(self, uid: int, offset: int = 0, limit: Optional[int] = None,
                    consistency: Optional[str] = None) -> dict:
        """One page of ``uid``'s friends (ascending) from ``offset``, with the total.
        ``consistency`` is ``"strong"`` or ``"eventual"`` (a cached copy may be read)."""
        return self._call("GET", f"/users/{_uid(uid)}/friends",
                          query={"offset": offset or None, "limit": limit,
                                 "consistency": consistency})

    def friends(self, uid: int, page_size: Optional[int] = None,
                consistency: Optional[str] = None) -> Iterator[int]:
        """All of ``uid``'s friends, ascending, page by page."""
        offset = 0
        while True:
            page = self.get_friends(uid, offset, page_size, consistency)
            got = page["friends"]
            yield from got
            offset += len(got)
            if not got or offset >= page["total"]:
                return

    def add_friend(self, uid: int, fid: int) -> dict:
        """Makes ``uid`` and ``fid`` friends (both sides); ``changed`` is false if they
        already were."""
        return self._call("POST", f"/users/{_uid(uid)}/friends/{_uid(fid)}")

    def remove_friend(self, uid: int, fid: int) -> dict:
        """Ends the friendship of ``uid`` and ``fid`` (both sides)."""
        return self._call("DELETE", f"/users/{_uid(uid)}/friends/{_uid(fid)}")

    def shortest_path(self, source: int, target: int, max_hops: Optional[int] = None) -> dict:
        """A shortest friendship path (``path`` and ``hops`` are None beyond ``max_hops``)."""
        return self._call("GET", "/paths/shortest",
                          query={"from": _uid(source), "to": _uid(target), "max_hops": max_hops})

    def neighborhood(self, uid: int, hops: int, limit: Optional[int] = None) -> dict:
        """The users within ``hops`` of ``uid``, nearest first (``truncated`` if ``limit``
        cut the list)."""
        return self._call("GET", f"/users/{_uid(uid)}/neighborhood",
                          query={"hops": hops, "limit": limit})

    # -- Twibo: follows, posts, feeds -------------------------------------------------------

    def follow(self, uid: int, targets: Sequence[int]) -> dict:
        """``uid`` follows every one of ``targets`` (1 to 1000, none followed yet: all or
        nothing)."""
        return self._call("POST", f"/users/{_uid(uid)}/follow",
                          {"targets": [_uid(t) for t in targets]})

    def unfollow(self, uid: int, target: int) -> dict:
        return self._call("DELETE", f"/users/{_uid(uid)}/follow/{_uid(target)}")

    def follows(self, uid: int, offset: int = 0, limit: Optional[int] = None) -> dict:
        """Whom ``uid`` follows and who follows them, with both counts."""
        return self._call("GET", f"/users/{_uid(uid)}/follows",
                          query={"offset": offset or None, "limit": limit})

    def create_post(self, author: int, content: str, id: Optional[int] = None) -> dict:
        """Posts ``content`` by ``author`` (optionally under a client-chosen ``id``)."""
        body: dict = {"author": _uid(author), "content": content}
        if id is not None:
            body["id"] = _uid(id)
        return self._call("POST", "/posts", body)

    def get_post(self, id: int) -> dict:
        return self._call("GET", f"/posts/{_uid(id)}")

    def get_feed(self, uid: int, limit: Optional[int] = None,
                 before: Optional[str] = None) -> dict:
        """One page of ``uid``'s feed, newest first, with ``next_cursor`` for older posts."""
        return self._call("GET", f"/users/{_uid(uid)}/feed",
                          query={"limit": limit, "before": before})

    def feed(self, uid: int, page_size: Optional[int] = None) -> Iterator[dict]:
        """``uid``'s whole feed, newest first, page by page."""
        before = None
        while True:
            page = self.get_feed(uid, page_size, before)
            yield from page["posts"]
            before = page.get("next_cursor")
            if not before:
                return

    # -- the service ------------------------------------------------------------------------

    def health(self) -> dict:
        """Liveness and the cache's state (``degraded`` when the cache is down)."""
        return self._call("GET", "/health")

    def stats(self) -> dict:
        """Cache hit rates, fan-out and write-back backlogs."""
        return self._call("GET", "/stats")

    def metrics(self) -> str:
        """The Prometheus text of ``GET /metrics``."""
        return self._call("GET", "/metrics", raw=True)

    def openapi(self) -> dict:
        """The service's OpenAPI document."""
        return self._call("GET", "/openapi.json")

    # -- transport --------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def _call(self, method: str, path: str, body: Any = None,
              query: Optional[Mapping[str, Any]] = None, raw: Any = False,
              octets: Optional[bytes] = None,
              extra_headers: Optional[Mapping[str, str]] = None) -> Any:
        if query:
            q = {k: ("true" if v is True else "false" if v is False else v)
                 for k, v in query.items() if v is not None}
            if q:
                path = f"{path}?{urllib.parse.urlencode(q)}"
        headers = {"Accept": "application/json"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if octets is not None:
            payload = bytes(octets)
            headers["Content-Type"] = "application/octet-stream"
        if extra_headers:
            headers.update(extra_headers)
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        if method in ("POST", "DELETE"):
            # One key for every attempt of this call: the server applies it once.
            headers["Idempotency-Key"] = str(uuid.uuid4())
        last: Optional[BaseException] = None
        attempt = 0
        while True:
            if attempt:
                time.sleep(self._delay(attempt, last))
            reused = getattr(self._local, "conn", None) is not None
            sent = False
            try:
                conn = self._connection()
                conn.request(method, self._prefix + path, body=payload, headers=headers)
                sent = True
                resp = conn.getresponse()
                data = resp.read()
                status = resp.status
                retry_after = resp.getheader("Retry-After")
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
            except (OSError, http.client.HTTPException) as e:
                # A stale keep-alive connection, a reset, a refused connection or a timeout.
                self.close()
                last = e
                if reused and isinstance(e, (ConnectionError, http.client.RemoteDisconnected)):
                    # The server closed an idle kept-alive connection: a fresh one is tried
                    # at once, without spending a retry.
                    continue
                closed_mid_send = isinstance(e, (BrokenPipeError, ConnectionResetError))
                if not sent and closed_mid_send and payload is not None and len(payload) > _BIG_BODY:
                    raise TransportError(
                        f"{method} {path}: the connection closed while {len(payload)} bytes "
                        f"were being sent; the body may be over the server's --body-limit"
                    ) from e
                attempt += 1
                if attempt > self.retries:
                    break
                continue
            if status in _RETRY_STATUS and attempt < self.retries:
                last = _RetryAfter(retry_after)
                attempt += 1
                continue
            if 200 <= status < 300:
                if raw == "bytes":
                    return data
                if raw:
                    return data.decode("utf-8", "replace")
                return json.loads(data) if data else None
            raise _error(status, data, method, path)
        raise TransportError(f"{method} {path}: no answer from {self.url} after "
                             f"{self.retries + 1} attempts: {last}") from last

    def _delay(self, attempt: int, last: Optional[BaseException]) -> float:
        if isinstance(last, _RetryAfter) and last.seconds is not None:
            return min(last.seconds, 30.0)
        return self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random())


class _RetryAfter(Exception):
    """A retryable status, with the server's ``Retry-After`` in seconds if it sent one."""

    def __init__(self, header: Optional[str]) -> None:
        super().__init__(f"retryable answer (Retry-After: {header})")
        try:
            seconds: Optional[float] = float(header) if header else None
        except ValueError:
            seconds = None
        # A negative, infinite or NaN value is ignored (backoff applies).
        usable = seconds is not None and math.isfinite(seconds) and seconds >= 0
        self.seconds = seconds if usable else None


def _uid(x: Any) -> int:
    """An id as a plain int: Python's or NumPy's integers (such as ``g.nodes[i]``)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not 0 <= int(x) < 2**64:
        raise ValueError(f"ids are integers from 0 to 2**64 - 1, not {x!r}")
    return int(x)


def _error(status: int, data: bytes, method: str, path: str) -> ApiError:
    try:
        body = json.loads(data)
        code, message, id = body["error"], body["message"], body.get("id")
    except (ValueError, KeyError, TypeError):
        code, message, id = "http_error", data[:200].decode("utf-8", "replace"), None
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(status, code, message, id, method, path)


# The OpenAPI operation each method serves: a test fails when the service grows an
# operation without a method here.
OPERATIONS = {
    "get_user": Client.get_user,
    "put_user": Client.put_user,
    "get_profile": Client.get_profile,
    "put_profile": Client.put_profile,
    "exists": Client.exists,
    "get_data": Client.get_data,
    "put_data": Client.put_data,
    "friends_data": Client.friends_data,
    "list_users": Client.list_users,
    "random_users": Client.random_users,
    "get_friends": Client.get_friends,
    "add_friend": Client.add_friend,
    "delete_friend": Client.remove_friend,
    "shortest_path": Client.shortest_path,
    "neighborhood": Client.neighborhood,
    "follow": Client.follow,
    "unfollow": Client.unfollow,
    "follows": Client.follows,
    "create_post": Client.create_post,
    "get_post": Client.get_post,
    "feed": Client.get_feed,
}

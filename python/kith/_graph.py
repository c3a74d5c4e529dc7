"""kith.Graph: an immutable social graph backed by kith's native CSR, with conversions to and
from networkx and SciPy.

Users keep their own ids. Integer ids (0 to 2**64 - 1) are kept as they are; any other
hashable node labels (strings, tuples) are numbered in the order given and the labels kept,
so results and conversions speak the caller's labels again.
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Hashable, Iterable, Optional, Sequence, Union

import numpy as np

from . import _kith

PathLike = Union[str, "os.PathLike[str]"]


class Graph:
    """A social graph: users (nodes) and friendships or follows (edges).

    Built by :func:`kith.read`, the generators in :mod:`kith.generate`,
    :meth:`Graph.from_networkx` or :meth:`Graph.from_edges`. Every result array of
    kith's algorithms is aligned with :attr:`Graph.nodes`.
    """

    __slots__ = ("_g", "_labels", "_weights", "_index")

    def __init__(self, native: _kith.Graph, labels: Optional[np.ndarray] = None,
                 weights: Optional[tuple[np.ndarray, np.ndarray]] = None) -> None:
        self._g = native
        # Object array of node labels by dense id, when the nodes were not integers
        # (read-only: the graph is immutable).
        if labels is not None:
            labels.flags.writeable = False
        self._labels = labels
        # Label -> dense id, built on first lookup.
        self._index: Optional[dict] = None
        # Edge weights as (sorted keys u * n + v over dense ids, values), both directions
        # for an undirected graph, when the graph was built with weights.
        self._weights = weights

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def from_edges(cls, edges: Union[np.ndarray, Iterable[Sequence[Any]]], directed: bool = False,
                   nodes: Optional[Iterable[Hashable]] = None,
                   weights: Optional[Sequence[float]] = None) -> "Graph":
        """A graph from an ``(m, 2)`` array or an iterable of ``(u, v)`` pairs, with
        ``nodes`` naming users without edges too, and optionally one weight per edge.
        Self-loops are dropped and repeated edges merged (the first weight is kept)."""
        arr = _edge_array(edges)
        node_list = None if nodes is None else list(nodes)
        if arr.dtype != object and (node_list is None or _all_uint64(node_list)):
            extra = None if node_list is None else np.asarray(node_list, dtype=np.uint64)
            native = _kith.Graph.from_edge_ids(
                np.ascontiguousarray(arr[:, 0], dtype=np.uint64),
                np.ascontiguousarray(arr[:, 1], dtype=np.uint64), directed, extra)
            graph = cls(native)
        else:
            labels = list(dict.fromkeys(itertools.chain(node_list or [], arr.ravel().tolist())))
            index = {label: i for i, label in enumerate(labels)}
            flat = np.fromiter((index[x] for x in arr.ravel().tolist()), dtype=np.uint64,
                               count=arr.size).reshape(-1, 2)
            native = _kith.Graph.from_edge_ids(
                np.ascontiguousarray(flat[:, 0]), np.ascontiguousarray(flat[:, 1]), directed,
                np.arange(len(labels), dtype=np.uint64))
            graph = cls(native, _object_array(labels))
            arr = flat
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (len(arr),):
                raise ValueError(f"{w.size} weights for {len(arr)} edges: one per edge")
            graph._weights = graph._index_weights(arr, w)
        return graph

    @classmethod
    def from_networkx(cls, G: Any, weight: Optional[str] = None) -> "Graph":
        """A graph from a networkx ``Graph`` or ``DiGraph`` (a ``DiGraph`` stays directed).
        With ``weight``, that edge attribute (1 where absent) is kept for weighted
        shortest paths."""
        directed = bool(G.is_directed())
        m = G.number_of_edges()
        nodes = list(G.nodes)
        if weight is None:
            if _all_uint64(nodes):
                flat = np.fromiter(itertools.chain.from_iterable(G.edges()), dtype=np.uint64,
                                   count=2 * m)
                native = _kith.Graph.from_edge_ids(
                    np.ascontiguousarray(flat[0::2]), np.ascontiguousarray(flat[1::2]), directed,
                    np.asarray(nodes, dtype=np.uint64))
                return cls(native)
            return cls.from_edges(list(G.edges()), directed, nodes)
        triples = list(G.edges(data=weight, default=1.0))
        edges = [(u, v) for u, v, _ in triples] or np.empty((0, 2), dtype=np.uint64)
        return cls.from_edges(edges, directed, nodes, [float(w) for _, _, w in triples])

    # -- what it is -------------------------------------------------------------------------

    @property
    def nodes(self) -> np.ndarray:
        """The users, by dense id: their integer ids ascending (``uint64``), or their labels
        in the order first given (an object array)."""
        return self._labels if self._labels is not None else self._g.ids()

    def number_of_nodes(self) -> int:
        return self._g.number_of_nodes()

    def number_of_edges(self) -> int:
        """Edges, each friendship once in an undirected graph."""
        return self._g.number_of_edges()

    def is_directed(self) -> bool:
        return self._g.is_directed()

    @property
    def is_weighted(self) -> bool:
        return self._weights is not None

    def __len__(self) -> int:
        return self._g.number_of_nodes()

    def __contains__(self, node: Hashable) -> bool:
        try:
            self.index(node)
        except KeyError:
            return False
        return True

    def __iter__(self):
        return iter(self.nodes.tolist())

    def __repr__(self) -> str:
        kind = "directed" if self.is_directed() else "undirected"
        return f"<kith.Graph, {kind}, {len(self)} users, {self.number_of_edges()} edges>"

    def index(self, node: Hashable) -> int:
        """The dense id (position in :attr:`nodes`) of ``node``; ``KeyError`` if absent."""
        if self._labels is not None:
            if self._index is None:
                self._index = {label: i for i, label in enumerate(self._labels.tolist())}
            try:
                return self._index[node]
            except (KeyError, TypeError):
                raise KeyError(f"user {node!r} is not in the graph") from None
        if not _is_uint64(node):
            raise KeyError(f"user {node!r} is not in the graph")
        return self._g.dense_id(int(node))

    def neighbors(self, node: Hashable) -> np.ndarray:
        """Whom ``node`` links to (all friends when undirected), ascending by dense id."""
        v = self.index(node)
        if self._labels is None:
            return self._g.neighbors(int(node))
        # Labelled graphs number their users 0..n-1: ids are dense ids.
        return self._labels[self._g.neighbors(v).astype(np.intp)]

    def degree(self) -> np.ndarray:
        """Out-degree of every user (friends, when undirected), aligned with :attr:`nodes`."""
        offsets, _ = self._g.out_csr()
        return np.diff(offsets).astype(np.int64)

    def edges(self) -> np.ndarray:
        """Every edge as an ``(m, 2)`` array of dense ids (``u < v`` when undirected)."""
        offsets, targets = self._g.out_csr()
        sources = np.repeat(np.arange(len(offsets) - 1, dtype=np.uint32), np.diff(offsets).astype(np.int64))
        pairs = np.stack([sources, targets], axis=1)
        return pairs if self.is_directed() else pairs[pairs[:, 0] < pairs[:, 1]]

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """The out-adjacency (all adjacency when undirected) as ``(offsets, targets)`` over
        dense ids: ``targets[offsets[v]:offsets[v + 1]]``, ascending."""
        return self._g.out_csr()

    # -- conversions ------------------------------------------------------------------------

    def to_networkx(self) -> Any:
        """A networkx ``Graph`` (``DiGraph`` when directed) with the same nodes and edges,
        and the ``weight`` attribute when the graph has weights."""
        import networkx as nx

        G = nx.DiGraph() if self.is_directed() else nx.Graph()
        nodes = self.nodes
        G.add_nodes_from(nodes.tolist())
        pairs = self.edges()
        us, vs = nodes[pairs[:, 0]].tolist(), nodes[pairs[:, 1]].tolist()
        if self._weights is None:
            G.add_edges_from(zip(us, vs))
        else:
            w = self._edge_weights(pairs).tolist()
            G.add_weighted_edges_from(zip(us, vs, w))
        return G

    def to_scipy(self, dtype: Any = np.float64) -> Any:
        """The adjacency matrix as a SciPy ``csr_array`` (rows and columns in the order of
        :attr:`nodes`; symmetric when undirected; edge weights when the graph has them)."""
        import scipy.sparse as sp

        offsets, targets = self._g.out_csr()
        n = len(offsets) - 1
        if self._weights is None:
            data = np.ones(len(targets), dtype=dtype)
        else:
            sources = np.repeat(np.arange(n, dtype=np.uint32), np.diff(offsets).astype(np.int64))
            data = self._edge_weights(np.stack([sources, targets], axis=1)).astype(dtype)
        return sp.csr_array((data, targets.astype(np.int64), offsets.astype(np.int64)),
                            shape=(n, n))

    def to_undirected(self) -> "Graph":
        """The undirected graph: an edge wherever this one has one in either direction."""
        if not self.is_directed():
            return self
        weights = None
        if self._weights is not None:
            # An edge given in both directions keeps the smaller weight.
            keys, values = self._weights
            n = np.uint64(len(self))
            u, v = keys // n, keys % n
            lo, hi = np.minimum(u, v), np.maximum(u, v)
            order = np.lexsort((values, lo * n + hi))
            und, first = np.unique((lo * n + hi)[order], return_index=True)
            w = values[order][first]
            ulo, uhi = und // n, und % n
            keys2 = np.concatenate([und, uhi * n + ulo])
            vals2 = np.concatenate([w, w])
            srt = np.argsort(keys2, kind="stable")
            weights = (keys2[srt], vals2[srt])
        return Graph(self._g.to_undirected(), self._labels, weights)

    def save(self, path: PathLike) -> None:
        """Writes a ``.kgraph`` snapshot (node ids only: labels and weights are not kept)."""
        self._g.save(os.fspath(path))

    # -- weights ----------------------------------------------------------------------------

    def _index_weights(self, pairs_by_id: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weights keyed by dense pair, from edges given by id (labels already numbered)."""
        ids = self._g.ids()
        u = np.searchsorted(ids, pairs_by_id[:, 0].astype(np.uint64)).astype(np.uint64)
        v = np.searchsorted(ids, pairs_by_id[:, 1].astype(np.uint64)).astype(np.uint64)
        n = np.uint64(len(ids))
        if self.is_directed():
            keys, first = np.unique(u * n + v, return_index=True)
            return keys, w[first]
        # One weight per friendship, whichever way it was given (the first kept), then
        # both directions.
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        und, first = np.unique(lo * n + hi, return_index=True)
        w = w[first]
        ulo, uhi = und // n, und % n
        keys = np.concatenate([und, uhi * n + ulo])
        vals = np.concatenate([w, w])
        order = np.argsort(keys, kind="stable")
        keys, vals = keys[order], vals[order]
        keep = np.concatenate([[True], keys[1:] != keys[:-1]]) if len(keys) else np.zeros(0, bool)
        return keys[keep], vals[keep]

    def _edge_weights(self, pairs: np.ndarray) -> np.ndarray:
        """The weight of each dense pair ``(u, v)`` (1 where none was given)."""
        assert self._weights is not None
        keys, values = self._weights
        n = np.uint64(len(self))
        want = pairs[:, 0].astype(np.uint64) * n + pairs[:, 1].astype(np.uint64)
        at = np.searchsorted(keys, want)
        at = np.minimum(at, max(len(keys) - 1, 0))
        found = (len(keys) > 0) & (keys[at] == want) if len(keys) else np.zeros(len(want), bool)
        return np.where(found, values[at] if len(keys) else 1.0, 1.0)

    def _in_link_weights(self) -> np.ndarray:
        """One weight per in-link, in the native in-CSR order (for weighted SSSP)."""
        offsets, sources = self._g.in_csr()
        targets = np.repeat(np.arange(len(offsets) - 1, dtype=np.uint32), np.diff(offsets).astype(np.int64))
        return self._edge_weights(np.stack([sources, targets], axis=1))


def _is_uint64(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 <= x < 2**64


def _all_uint64(values: Sequence[Any]) -> bool:
    return all(_is_uint64(x) for x in values)


def _object_array(labels: list) -> np.ndarray:
    out = np.empty(len(labels), dtype=object)
    out[:] = labels
    return out


def _edge_array(edges: Union[np.ndarray, Iterable[Sequence[Any]]]) -> np.ndarray:
    """Edges as an ``(m, 2)`` array: unsigned integers when every endpoint is one, objects
    otherwise."""
    if isinstance(edges, np.ndarray):
        arr = edges
    else:
        listed = [tuple(e) for e in edges]
        if any(len(e) != 2 for e in listed):
            bad = next(i for i, e in enumerate(listed) if len(e) != 2)
            raise ValueError(f"edge {bad} is {listed[bad]!r}: expected a pair (u, v)")
        flat = [x for e in listed for x in e]
        if _all_uint64(flat):
            arr = np.array(flat, dtype=np.uint64).reshape(-1, 2)
        else:
            arr = _object_array(flat).reshape(-1, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"edges must be an (m, 2) array, not shape {arr.shape}")
    if arr.dtype == object and _all_uint64(arr.ravel().tolist()):
        arr = arr.astype(np.uint64)
    if arr.dtype.kind == "i":
        if len(arr) and arr.min() < 0:
            raise ValueError("negative user ids: kith's integer ids are 0 to 2**64 - 1")
        arr = arr.astype(np.uint64)
    elif arr.dtype.kind not in "uO":
        raise ValueError(f"edges of dtype {arr.dtype}: expected integer ids or objects")
    return arr


def read(path: PathLike, directed: bool = False, format: Optional[str] = None,
         member: Optional[str] = None) -> Graph:
    """Reads a graph file in any format the ``kith`` CLI reads: SNAP and KONECT edge lists,
    MatrixMarket, CSV (plain, gzip or in a zip; ``member`` picks a zip's file), SNAP
    ego-network archives and ``.kgraph`` snapshots, detected from the name and content
    unless ``format`` is one of ``snap``, ``konect``, ``mtx``, ``csv``, ``snap-ego``,
    ``kgraph``.

    Raises ``FileNotFoundError``, ``OSError``, or :class:`kith.ParseError` naming the file and
    line of a malformed input.
    """
    return Graph(_kith.read(os.fspath(path), directed, format, member))

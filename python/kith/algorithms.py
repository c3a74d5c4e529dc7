"""kith's analytics from Python, named and parametrised as networkx names them.

Every function runs natively on all cores with the GIL released and returns a NumPy array
aligned with :attr:`kith.Graph.nodes` (``as_dict=True`` gives networkx's ``{node: value}``
instead). ``verify=True`` also runs kith's sequential verifier and raises
:class:`kith.VerificationError` if the two differ.
"""

from __future__ import annotations

from typing import Any, Hashable, Optional, Union

import numpy as np

from . import _kith
from ._graph import Graph


class ConvergenceError(_kith.KithError):
    """PageRank did not converge within ``max_iter`` iterations (networkx raises
    ``PowerIterationFailedConvergence`` in the same case)."""


def _as_dict(graph: Graph, values: np.ndarray) -> dict:
    return dict(zip(graph.nodes.tolist(), values.tolist()))


def pagerank(graph: Graph, alpha: float = 0.85, max_iter: int = 100, tol: float = 1e-06,
             weight: Optional[str] = None, *, formulation: str = "normalized",
             precision: str = "f64", as_dict: bool = False,
             verify: bool = False) -> Union[np.ndarray, dict]:
    """PageRank of every user, as networkx computes it: damping ``alpha``, dangling mass
    spread evenly, stopping once a step changes the ranks by less than ``n * tol`` in L1
    (``tol=0``: exactly ``max_iter`` steps). Raises :class:`ConvergenceError` if ``tol > 0``
    and ``max_iter`` steps were not enough.

    ``formulation="lfgraph"`` runs LFGraph's unnormalised PageRank; ``precision="f32"`` holds
    contributions in 32 bits (GAPBS's choice; faster, L1 error about 1e-7). PageRank here is
    unweighted: ``weight`` may name an attribute only of a graph built without weights.
    """
    if weight is not None and graph.is_weighted:
        raise NotImplementedError("kith's PageRank is unweighted; pass weight=None")
    n = max(len(graph), 1)
    ranks, steps, delta = _kith.pagerank(graph._g, alpha, max_iter, n * tol, formulation,
                                         precision, verify)
    if tol > 0 and steps >= max_iter and delta >= n * tol:
        raise ConvergenceError(
            f"pagerank: not converged in {max_iter} iterations (L1 change {delta:.3g}, "
            f"needed below {n * tol:.3g})")
    return _as_dict(graph, ranks) if as_dict else ranks


def triangles(graph: Graph, *, as_dict: bool = False,
              verify: bool = False) -> Union[np.ndarray, dict]:
    """Triangles through every user (on the undirected graph), as ``networkx.triangles``."""
    per, _ = _kith.triangles(graph._g, verify)
    return _as_dict(graph, per) if as_dict else per


def triangle_count(graph: Graph, *, verify: bool = False) -> int:
    """The number of triangles in the graph (each once), without the per-user counts of
    :func:`triangles`."""
    return int(_kith.triangle_count(graph._g, verify))


def clustering(graph: Graph, *, as_dict: bool = False,
               verify: bool = False) -> Union[np.ndarray, dict]:
    """Local clustering coefficient of every user (on the undirected graph), as
    ``networkx.clustering``: 0 below two friends."""
    local, _ = _kith.clustering(graph._g, verify)
    return _as_dict(graph, local) if as_dict else local


def average_clustering(graph: Graph, *, verify: bool = False) -> float:
    """The mean local clustering coefficient over all users, as
    ``networkx.average_clustering``."""
    return float(_kith.clustering(graph._g, verify)[1])


def components(graph: Graph, *, method: str = "union-find", as_dict: bool = False,
               verify: bool = False) -> Union[np.ndarray, dict]:
    """The component of every user, named by its smallest member (weakly connected
    components of a directed graph). ``method="label-propagation"`` runs the vertex
    program instead of union-find."""
    labels = graph.nodes[_kith.components(graph._g, method, verify)]
    return _as_dict(graph, labels) if as_dict else labels


def connected_components(graph: Graph) -> list[set]:
    """The components as sets of users, largest first (networkx's
    ``connected_components``, sorted)."""
    dense = _kith.components(graph._g, "union-find", False)
    order = np.argsort(dense, kind="stable")
    cuts = np.flatnonzero(np.diff(dense[order])) + 1
    nodes = graph.nodes
    groups = [set(nodes[part].tolist()) for part in np.split(order, cuts) if len(part)]
    return sorted(groups, key=len, reverse=True)


def sssp(graph: Graph, source: Hashable, weight: Optional[str] = None, *,
         as_dict: bool = False, verify: bool = False) -> Union[np.ndarray, dict]:
    """Distances from ``source`` along edge direction: hops, or with ``weight`` (a graph
    built with weights) the weighted distances. Unreachable users get ``inf``; with
    ``as_dict`` only reachable users appear, as in networkx's
    ``single_source_shortest_path_length`` and ``single_source_dijkstra_path_length``."""
    s = graph.index(source)
    weights = None
    if weight is not None:
        if not graph.is_weighted:
            raise ValueError(
                "sssp(weight=...): the graph has no weights; build it with "
                "Graph.from_networkx(G, weight=...) or Graph.from_edges(..., weights=...)")
        weights = np.ascontiguousarray(graph._in_link_weights(), dtype=np.float64)
    dist = _kith.sssp(graph._g, s, weights, verify)
    if not as_dict:
        return dist
    reach = np.flatnonzero(np.isfinite(dist))
    values = dist[reach].astype(np.int64) if weight is None else dist[reach]
    return dict(zip(graph.nodes[reach].tolist(), values.tolist()))


def kcore(graph: Graph, *, as_dict: bool = False,
          verify: bool = False) -> Union[np.ndarray, dict]:
    """The core number of every user (on the undirected graph), as
    ``networkx.core_number``."""
    cores = _kith.kcore(graph._g, verify)
    return _as_dict(graph, cores) if as_dict else cores


core_number = kcore


class MutualFriends:
    """The mutual friends of every friendship: ``pairs[i]`` (two users) share
    ``common[offsets[i]:offsets[i + 1]]``."""

    __slots__ = ("pairs", "offsets", "common")

    def __init__(self, pairs: np.ndarray, offsets: np.ndarray, common: np.ndarray) -> None:
        self.pairs, self.offsets, self.common = pairs, offsets, common

    def __len__(self) -> int:
        return len(self.pairs)

    def counts(self) -> np.ndarray:
        """How many mutual friends each pair has."""
        return np.diff(self.offsets)

    def to_dict(self) -> dict:
        """``{(a, b): [common friends]}``."""
        out = {}
        for i, (a, b) in enumerate(self.pairs.tolist()):
            out[(a, b)] = self.common[self.offsets[i]:self.offsets[i + 1]].tolist()
        return out

    def __repr__(self) -> str:
        return f"<kith.MutualFriends of {len(self)} friendships, {len(self.common)} in common>"


def mutual_friends(graph: Graph, *, as_dict: bool = False,
                   verify: bool = False) -> Union[MutualFriends, dict]:
    """The common friends of every friendship ``(a, b)`` (on the undirected graph), pairs in
    ascending order of dense id."""
    pairs, offsets, common = _kith.mutual_friends(graph._g, verify)
    nodes = graph.nodes
    result = MutualFriends(nodes[pairs], offsets, nodes[common])
    return result.to_dict() if as_dict else result


def people_you_may_know(graph: Graph, user: Hashable, k: int = 10, *,
                        verify: bool = False) -> list[tuple[Any, int]]:
    """The ``k`` users who are not ``user``'s friends and share the most friends with them,
    most first (ties by smaller id), with the number shared."""
    if k < 0:
        raise ValueError(f"k must not be negative, not {k}")
    ranked = _kith.people_you_may_know(graph._g, graph.index(user), k, verify)
    nodes = graph.nodes
    return [(nodes[v].item() if hasattr(nodes[v], "item") else nodes[v], c) for v, c in ranked]

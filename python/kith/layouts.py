"""Layouts: where each user's record goes, so friends share disk pages. The same methods
and figures as ``kith layout compute`` and ``kith layout eval``."""

from __future__ import annotations

import json
from typing import Optional, Union

import numpy as np

from . import _kith
from ._graph import Graph

METHODS = ("default", "random", "degree", "organ-pipe", "bfs", "rcm", "gorder", "parcom",
           "modcom", "kith")


class Layout:
    """A layout of a graph's users.

    ``order`` lists the users in position order; ``positions`` gives each user's position,
    aligned with ``graph.nodes``; ``report`` holds what ``kith layout compute --json``
    prints (costs, pages per friend list, seconds, communities); ``communities`` is each
    user's community for ``parcom`` and ``modcom``, else ``None``.
    """

    __slots__ = ("_dense", "order", "positions", "report", "communities")

    def __init__(self, graph: Graph, dense: np.ndarray, report: dict,
                 communities: Optional[np.ndarray]) -> None:
        self._dense = dense
        self.order = graph.nodes[dense]
        positions = np.empty(len(dense), dtype=np.int64)
        positions[dense] = np.arange(len(dense))
        self.positions = positions
        self.report = report
        self.communities = communities

    def __len__(self) -> int:
        return len(self._dense)

    def __repr__(self) -> str:
        r = self.report
        return (f"<kith.Layout {r['method']} of {len(self)} users: "
                f"{r['pages']:.3f} pages per friend list at {r['record_bytes']} B>")


def layout(graph: Graph, method: str = "kith", record_bytes: int = 40,
           page_bytes: int = 4096, objective: str = "pages", communities: int = 64,
           level: Optional[int] = None, model: str = "uniform", seed: int = 1) -> Layout:
    """Lays out the users of ``graph`` (its friendships, if directed) by ``method``, one of
    :data:`METHODS`: the baselines, Bondhu's ``parcom`` (METIS, ``communities`` parts) and
    ``modcom`` (Louvain, ``level``), and kith's page-aware ``kith``, which packs records of
    ``record_bytes`` into pages of ``page_bytes`` to minimise ``objective`` (``pages``,
    ``la`` or ``requests``). ``model`` weighs edges for community detection (``uniform``,
    ``overlap``, ...)."""
    dense, report, membership = _kith.layout(graph._g, method, record_bytes, page_bytes,
                                             objective, communities, level, model, seed)
    return Layout(graph, dense, json.loads(report), membership)


def layout_eval(graph: Graph, layout: Union[Layout, np.ndarray],
                baseline: Union[str, Layout, np.ndarray] = "default",
                model: str = "uniform") -> dict:
    """What ``kith layout eval --json`` reports of ``layout`` (a :class:`Layout`, or the
    users in position order) against ``baseline`` (another, or a method's default layout):
    linear-arrangement and log-gap costs, per-user costs and improvement, and pages per
    friend list at several record sizes."""
    order = _dense_order(graph, layout)
    if isinstance(baseline, str):
        report = _kith.layout_eval(graph._g, order, None, baseline, model)
    else:
        report = _kith.layout_eval(graph._g, order, _dense_order(graph, baseline),
                                   "default", model)
    return json.loads(report)


def _dense_order(graph: Graph, layout: Union[Layout, np.ndarray]) -> np.ndarray:
    if isinstance(layout, Layout):
        return np.ascontiguousarray(layout._dense, dtype=np.uint32)
    users = list(layout)
    if len(users) != len(graph):
        raise ValueError(f"the layout places {len(users)} users and the graph has {len(graph)}")
    return np.fromiter((graph.index(u) for u in users), dtype=np.uint32, count=len(users))


__all__ = ["METHODS", "Layout", "layout", "layout_eval"]

"""Seeded generators of social-like graphs: the same arguments give the same graph on any
machine and any number of threads."""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from . import _kith
from ._graph import Graph


class Generated(NamedTuple):
    """A generated graph and the planted community of every user (aligned with
    ``graph.nodes``)."""

    graph: Graph
    communities: np.ndarray


def lfr(n: int, avg_degree: float = 20.0, max_degree: Optional[int] = None, mu: float = 0.2,
        tau1: float = 2.5, tau2: float = 1.5, min_community: Optional[int] = None,
        max_community: Optional[int] = None, seed: int = 1) -> Generated:
    """An LFR benchmark graph (Lancichinetti, Fortunato, Radicchi): power-law degrees
    (exponent ``tau1``) and community sizes (``tau2``), a fraction ``mu`` of each user's
    edges leaving their community. Returns the graph and the planted communities."""
    g, membership = _kith.generate_lfr(n, avg_degree, max_degree, mu, tau1, tau2,
                                       min_community, max_community, seed)
    return Generated(Graph(g), membership)


def rmat(n: int, avg_degree: float = 32.0,
         probabilities: tuple[float, float, float, float] = (0.57, 0.19, 0.19, 0.05),
         directed: bool = False, seed: int = 1) -> Graph:
    """An R-MAT (Kronecker) graph, Graph500's quadrant probabilities by default; self-loops
    and repeated edges are dropped."""
    return Graph(_kith.generate_rmat(n, avg_degree, tuple(probabilities), directed, seed))


def ba(n: int, avg_degree: float = 10.0, seed: int = 1) -> Graph:
    """A Barabási–Albert graph: each new user attaches to ``round(avg_degree / 2)`` earlier
    ones chosen in proportion to degree."""
    return Graph(_kith.generate_ba(n, avg_degree, seed))


__all__ = ["Generated", "lfr", "rmat", "ba"]

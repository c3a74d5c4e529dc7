"""kith for Python: social graphs, their analytics and layouts on kith's native, parallel
engine, and a client for kith's service.

>>> import kith
>>> g, communities = kith.generate.lfr(1000, avg_degree=10, seed=7)
>>> ranks = kith.pagerank(g, alpha=0.85)
>>> ranks.shape == (len(g),)
True
"""

from . import generate
from ._graph import Graph, read
from ._kith import KithError, ParseError, VerificationError, __version__
from .algorithms import (
    ConvergenceError,
    MutualFriends,
    average_clustering,
    clustering,
    components,
    connected_components,
    core_number,
    kcore,
    mutual_friends,
    pagerank,
    people_you_may_know,
    sssp,
    triangle_count,
    triangles,
)
from .client import (
    ApiError,
    BadRequest,
    Client,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    RangeNotSatisfiable,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
    Unprocessable,
)
from .layouts import METHODS, Layout, layout, layout_eval

__all__ = [
    "__version__",
    "Graph",
    "read",
    "generate",
    "KithError",
    "ParseError",
    "VerificationError",
    "ConvergenceError",
    "pagerank",
    "triangles",
    "triangle_count",
    "clustering",
    "average_clustering",
    "components",
    "connected_components",
    "sssp",
    "kcore",
    "core_number",
    "MutualFriends",
    "mutual_friends",
    "people_you_may_know",
    "METHODS",
    "Layout",
    "layout",
    "layout_eval",
    "Client",
    "ApiError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "PayloadTooLarge",
    "RangeNotSatisfiable",
    "Unprocessable",
    "ServerError",
    "Unavailable",
    "TransportError",
]

"""One library's PageRank, triangle count and connected components on an edge list, for
`kith bench analytics` (which runs kith on the same graph in the same run and reports the
ratios). Prints JSON: the library, its version, the load time and, per algorithm, seconds
and a result to cross-check (triangles, components, the ten highest-ranked vertices).

Usage: analytics_baselines.py --library networkx|igraph|networkit --edges FILE --nodes N
       [--directed-edges FILE] [--threads T] [--iterations 20] [--algorithms pagerank,triangles,cc]

Vertices are 0..N-1; FILE has one `u v` line per edge (each undirected edge once).
"""

import argparse
import json
import time


def load(library, path, nodes, directed):
    if library == "networkx":
        import networkx as nx

        g = nx.DiGraph() if directed else nx.Graph()
        g.add_nodes_from(range(nodes))
        with open(path) as f:
            g.add_edges_from((int(a), int(b)) for a, b in (line.split() for line in f))
        return g
    if library == "igraph":
        import igraph as ig

        g = ig.Graph.Read_Edgelist(path, directed=directed)
        if g.vcount() < nodes:
            g.add_vertices(nodes - g.vcount())
        return g
    import networkit as nk

    reader = nk.graphio.EdgeListReader(" ", 0, "#", True, directed)
    g = reader.read(path)
    if g.numberOfNodes() < nodes:
        g.addNodes(nodes - g.numberOfNodes())
    return g


def top10(ranks):
    order = sorted(range(len(ranks)), key=lambda v: (-ranks[v], v))
    return order[:10]


def pagerank(library, g, iterations):
    """`iterations` power iterations where the library allows it; returns (ranks, note)."""
    if library == "networkx":
        import networkx as nx

        try:
            pr = nx.pagerank(g, alpha=0.85, max_iter=iterations, tol=0.0)
        except nx.PowerIterationFailedConvergence:
            return None, f"{iterations} iterations (networkx raises when tol=0 is not reached)"
        return [pr[v] for v in range(g.number_of_nodes())], f"{iterations} iterations"
    if library == "igraph":
        return g.pagerank(damping=0.85, directed=g.is_directed()), "PRPACK: solved to convergence, not iterated"
    import networkit as nk

    pr = nk.centrality.PageRank(g, damp=0.85, tol=1e-300, normalized=True)
    pr.maxIterations = iterations
    pr.norm = nk.centrality.Norm.L1_NORM
    pr.run()
    return pr.scores(), f"{iterations} iterations"


def triangles(library, g):
    if library == "networkx":
        import networkx as nx

        return sum(nx.triangles(g).values()) // 3
    if library == "igraph":
        # Local transitivity is triangles over pairs of neighbours: recover the triangles.
        local = g.transitivity_local_undirected(mode="zero")
        degrees = g.degree()
        return round(sum(c * d * (d - 1) / 2 for c, d in zip(local, degrees)) / 3)
    import networkit as nk

    g.indexEdges()
    scores = nk.sparsification.TriangleEdgeScore(g)
    scores.run()
    return round(sum(scores.scores()) / 3)


def components(library, g):
    if library == "networkx":
        import networkx as nx

        return nx.number_connected_components(g)
    if library == "igraph":
        return len(g.connected_components(mode="weak"))
    import networkit as nk

    cc = nk.components.ConnectedComponents(g)
    cc.run()
    return cc.numberOfComponents()


def version(library):
    module = __import__(library)
    return getattr(module, "__version__", "unknown")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--library", required=True, choices=["networkx", "igraph", "networkit"])
    p.add_argument("--edges", required=True)
    p.add_argument("--directed-edges")
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--algorithms", default="pagerank,triangles,cc")
    a = p.parse_args()
    if a.library == "networkit":
        import networkit as nk

        nk.setNumberOfThreads(a.threads)
    out = {"library": a.library, "version": version(a.library), "threads": a.threads, "results": {}}
    t = time.perf_counter()
    g = load(a.library, a.edges, a.nodes, False)
    out["load_s"] = time.perf_counter() - t
    algorithms = a.algorithms.split(",")
    if "pagerank" in algorithms:
        d = load(a.library, a.directed_edges, a.nodes, True) if a.directed_edges else g
        t = time.perf_counter()
        ranks, note = pagerank(a.library, d, a.iterations)
        out["results"]["pagerank"] = {
            "seconds": time.perf_counter() - t,
            "top": top10(ranks) if ranks is not None else None,
            "note": note,
        }
        del d
    if "triangles" in algorithms:
        t = time.perf_counter()
        value = triangles(a.library, g)
        out["results"]["triangles"] = {"seconds": time.perf_counter() - t, "triangles": value}
    if "cc" in algorithms:
        t = time.perf_counter()
        value = components(a.library, g)
        out["results"]["cc"] = {"seconds": time.perf_counter() - t, "components": value}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How a graph's friendships cross its communities, per user: the figures behind the floor on
read requests of a cold "list all friends" (docs/store.md).

    scripts/community_mixing.py EDGES COMMUNITIES [--out FILE.json]

EDGES is an undirected edge list (two ids a line, `#` comments); COMMUNITIES has one
community a line (ids separated by white space), as `kith graph generate --communities-out`
writes. Prints, and writes as JSON, the mean and median degree, friends outside the user's
own community, distinct other communities among them, community sizes and the partition's
modularity.
"""

import argparse
import collections
import json
import statistics
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("edges")
    p.add_argument("communities")
    p.add_argument("--out")
    a = p.parse_args()
    community = {}
    with open(a.communities) as f:
        for i, line in enumerate(f):
            if line.startswith("#"):
                continue
            for x in line.split():
                community[int(x)] = i
    adj = collections.defaultdict(set)
    with open(a.edges) as f:
        for n, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            if len(parts) < 2:
                sys.exit(f"{a.edges}:{n}: expected two ids, got {line.strip()!r}")
            u, v = int(parts[0]), int(parts[1])
            if u != v:
                adj[u].add(v)
                adj[v].add(u)
    missing = [u for u in adj if u not in community]
    if missing:
        sys.exit(f"{a.communities}: {len(missing)} users have no community, e.g. {missing[0]}")
    degree, outside, others = [], [], []
    inside_edges, edges = 0, 0
    volume = collections.Counter()
    for u, friends in adj.items():
        c = community[u]
        foreign = [community[v] for v in friends if community[v] != c]
        degree.append(len(friends))
        outside.append(len(foreign))
        others.append(len(set(foreign)))
        volume[c] += len(friends)
        edges += len(friends)
        inside_edges += len(friends) - len(foreign)
    sizes = collections.Counter(community[u] for u in adj).values()
    report = {
        "users": len(adj),
        "communities": len(sizes),
        "community_size": {"min": min(sizes), "mean": statistics.mean(sizes),
                           "max": max(sizes)},
        "degree": {"mean": statistics.mean(degree), "median": statistics.median(degree)},
        "friends_outside_own_community": {"mean": statistics.mean(outside),
                                          "median": statistics.median(outside)},
        "other_communities_among_friends": {"mean": statistics.mean(others),
                                            "median": statistics.median(others)},
        "modularity": inside_edges / edges - sum((v / edges) ** 2 for v in volume.values()),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

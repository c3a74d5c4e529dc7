"""kith.layout and kith.layout_eval give the figures the CLI gives for the same graph and
settings, and a layout is a permutation the page counts of which can be checked by hand."""

import json

import numpy as np
import pytest

import kith


def close(a, b):
    """Equal, floats to rounding (parallel sums may add in another order), at any depth."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(close, a, b))
    if isinstance(a, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-12)
    return a == b


@pytest.mark.parametrize("method,extra", [
    ("kith", {}),
    ("kith", {"record_bytes": 400, "objective": "requests"}),
    ("parcom", {"communities": 16}),
    ("modcom", {}),
    ("rcm", {}),
])
def test_layout_is_the_cli_layout(cli, datasets, tmp_path, facebook, method, extra):
    path = datasets / "facebook_combined.txt.gz"
    lay = kith.layout(facebook, method=method, **extra)
    out = tmp_path / "layout.txt"
    args = ["layout", "compute", path, "--method", method, "-o", out, "--json"]
    for k, v in extra.items():
        args += ["--" + k.replace("_", "-"), v]
    report = json.loads(cli(*args))
    assert [int(x) for x in out.read_text().split()] == lay.order.tolist()
    for key in ("cost", "record_bytes", "method", "objective"):
        assert lay.report[key] == report[key], key
    for key in ("log_gap_cost", "pages"):
        # The parallel sums may add in another order: equal to rounding.
        assert lay.report[key] == pytest.approx(report[key], rel=1e-12), key
    if method in ("parcom", "modcom"):
        assert lay.communities is not None and len(lay.communities) == len(facebook)
        assert lay.report["communities"]["count"] == report["communities"]["count"]
        assert len(np.unique(lay.communities)) == report["communities"]["count"]
    else:
        assert lay.communities is None
    assert np.array_equal(np.sort(lay.order), facebook.nodes)
    assert np.array_equal(lay.order[lay.positions], facebook.nodes)


def test_layout_eval_is_the_cli_eval(cli, datasets, tmp_path, facebook):
    path = datasets / "facebook_combined.txt.gz"
    lay = kith.layout(facebook, method="kith")
    out = tmp_path / "layout.txt"
    out.write_text("".join(f"{u}\n" for u in lay.order.tolist()))
    want = json.loads(cli("layout", "eval", path, "--layout", out, "--baseline-method",
                          "random", "--json"))
    got = kith.layout_eval(facebook, lay, baseline="random")
    assert close(got, want)
    # A layout given as users in position order, and a baseline given as a Layout.
    again = kith.layout_eval(facebook, lay.order, baseline=kith.layout(facebook, "random"))
    assert close(again["pages"], want["pages"]) and again["baseline"] == "given"


def test_pages_per_friend_list_by_hand(facebook):
    lay = kith.layout(facebook, method="degree", record_bytes=40)
    pos = lay.positions
    offsets, targets = facebook.csr()
    pages = []
    for v in range(len(facebook)):
        # Every page holding a byte of the user's record or a friend's (records of 40 B
        # straddle page boundaries).
        members = np.append(pos[targets[offsets[v]:offsets[v + 1]]], pos[v])
        first, last = members * 40 // 4096, (members * 40 + 39) // 4096
        pages.append(len(np.unique(np.concatenate([first, last]))))
    assert abs(np.mean(pages) - lay.report["pages"]) < 1e-9


def test_bad_layout_arguments_are_named(facebook):
    with pytest.raises(ValueError, match="unknown layout method"):
        kith.layout(facebook, method="alphabetical")
    with pytest.raises(ValueError, match="objective"):
        kith.layout(facebook, objective="speed")
    with pytest.raises(ValueError, match="record_bytes"):
        kith.layout(facebook, record_bytes=0)
    with pytest.raises(ValueError):
        kith.layout(facebook, method="modcom", level=99)
    with pytest.raises(ValueError, match="places"):
        kith.layout_eval(facebook, facebook.nodes[:10])
    with pytest.raises(ValueError):
        kith.layout_eval(facebook, np.zeros(len(facebook), dtype=np.uint64))

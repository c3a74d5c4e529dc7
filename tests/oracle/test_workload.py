"""`kith workload generate` against scipy: the SONETOR model's distributions as configured
(Kolmogorov–Smirnov for the continuous gaps, CDF agreement for the discrete counts), the
publish share of the Markov chain, and determinism across seeds and thread counts.
"""

import hashlib
import json
import os
import subprocess

import numpy as np
from scipy import stats


def generate(datasets, tmp_path, name, *extra, threads=None):
    out = tmp_path / f"{name}.tsv"
    samples = tmp_path / f"{name}.json"
    env = dict(os.environ)
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    done = subprocess.run(
        [os.environ["KITH_BIN"], "workload", "generate", str(datasets / "facebook_combined.txt.gz"),
         "-o", str(out), "--samples-out", str(samples), "--json", *map(str, extra)],
        capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return out, json.loads(samples.read_text()), json.loads(done.stdout)


def test_distributions_match_the_configuration(datasets, tmp_path):
    _, s, summary = generate(datasets, tmp_path, "a", "--seed", "3")
    c = s["config"]
    for name in ("inter_session", "inter_activity"):
        d = c[name]
        x = np.array(s[name])
        assert len(x) > 5000, name
        p = stats.kstest(x, "lognorm", args=(d["s"], d["loc"], d["scale"])).pvalue
        assert p > 0.001, (name, p)
        # And a wrong shape is rejected, so the test can fail.
        assert stats.kstest(x, "lognorm", args=(d["s"] * 1.1, d["loc"], d["scale"])).pvalue < 1e-6
    for name in ("session_length", "sessions_per_user"):
        d = c[name]
        k = np.array(s[name]) - int(np.floor(d["loc"]))
        assert len(k) > 3000, name
        for v in range(1, 15):
            want = stats.zipf.cdf(v, d["a"])
            got = np.mean(k <= v)
            assert abs(got - want) < 4 * np.sqrt(want * (1 - want) / len(k)) + 1e-3, (name, v, got, want)
    raw = np.array(s["post_size_raw"])
    mean = c["post_size"]["mean"]
    assert abs(raw.mean() - mean) < 5 * mean / np.sqrt(len(raw)), raw.mean()
    assert stats.kstest(raw, stats.geom(1 / mean).cdf).pvalue > 0.001
    # Two-state chain: P(publish next) = 0.1 from either state.
    assert 0.09 < summary["publish_share"] < 0.12, summary


def test_trace_is_sorted_bounded_and_sessions_do_not_overlap(datasets, tmp_path):
    out, _, summary = generate(datasets, tmp_path, "b", "--duration-s", "7200")
    last_ts, per_user = -1.0, {}
    publish_sizes = []
    for line in out.read_text().splitlines():
        ts, act, user, attr = line.split("\t")
        ts = float(ts)
        assert last_ts <= ts < 7200
        last_ts = ts
        assert ts > per_user.get(user, -1.0), "a user's activities overlap"
        per_user[user] = ts
        if act == "Publish":
            publish_sizes.append(int(attr))
        else:
            assert act == "Retrieve" and attr == "20"
    assert summary["activities"] == sum(1 for _ in out.open())
    assert min(publish_sizes) >= 1 and max(publish_sizes) <= 400  # Twibo's reduction


def test_deterministic_across_threads_and_seeded(datasets, tmp_path):
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
    a, _, _ = generate(datasets, tmp_path, "t2", "--seed", "9", threads=2)
    b, _, _ = generate(datasets, tmp_path, "t1", "--seed", "9", threads=1)
    c, _, _ = generate(datasets, tmp_path, "s10", "--seed", "10")
    assert digest(a) == digest(b)
    assert digest(a) != digest(c)

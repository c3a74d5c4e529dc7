#!/usr/bin/env python3
"""The dashboard's cost to the server: `kith workload run` (a read-only friend-list mix) against a `kith
serve` of ego-Facebook in three states, rotated, in one run: no dashboard; the dashboard's
requests alone (`GET /ui/api/metrics` every second, what an open health view asks of the
server); and a real dashboard open (headless Chromium on the health view, polling and
redrawing its charts). Writes bench/results/dashboard-<date>.json. The browser runs on the same
2 cores as the server and the load driver, so the third state also charges the server for the
browser's own CPU: an upper bound on what a dashboard open on another machine costs.

    KITH_BIN=target/release/kith python3 scripts/bench_dashboard.py [--pairs 3] [--seconds 10]
"""

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from bench_meta import ROOT, commit, machine


def serve(binary, store):
    # No token: the mix's writes are accepted as they come.
    proc = subprocess.Popen([binary, "serve", "--dir", str(store), "--addr", "127.0.0.1:0",
                             "--feed", "push"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert "http://" in line, line
    return proc, "http://" + line.split("http://")[1].split()[0]


def cpu_seconds(pid):
    """User and system CPU seconds of a process so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metrics_route_seconds(url):
    """Seconds the server has spent answering the dashboard's metrics route, by its own
    latency histogram."""
    import urllib.request

    with urllib.request.urlopen(url + "/ui/api/metrics", timeout=10) as r:
        m = json.loads(r.read())
    return sum(x["sum_s"] for x in m["routes"] if x["route"] == "/ui/api/metrics")


def load(binary, url, clients, seconds, mix, graph):
    extra = ["--graph", str(graph)] if mix.startswith("bondhu") else []
    out = subprocess.run([binary, "workload", "run", "--mix", mix, "--target", url,
                          "--clients", str(clients), "--duration-s", str(seconds),
                          "--warmup-s", "2", "--json", *extra], capture_output=True, text=True,
                         check=True, timeout=seconds + 120).stdout
    run = json.loads(out)["runs"][0]
    ops = run["ops"]
    return {"throughput": sum(o["throughput"] for o in ops),
            "errors": sum(o["errors"] for o in ops),
            "p99_ms": max(o["p99_ms"] for o in ops)}


def browser(url):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = os.environ.get("KITH_CHROMIUM", "/usr/bin/chromium")
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1400,1100"]:
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(
        os.environ.get("KITH_CHROMEDRIVER", "/usr/bin/chromedriver")))
    driver.get(url + "/ui/#health")
    return driver


class Poller:
    """What an open health view asks of the server: its metrics, once a second."""

    def __init__(self, url):
        import threading
        import urllib.request

        self.stop = threading.Event()
        self.polls = 0

        def run():
            while not self.stop.wait(1.0):
                with urllib.request.urlopen(url + "/ui/api/metrics", timeout=10) as r:
                    r.read()
                self.polls += 1

        self.thread = threading.Thread(target=run)
        self.thread.start()

    def close(self):
        self.stop.set()
        self.thread.join()
        return self.polls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--mix", default="bondhu-uniform",
                    help="the load: a read-only friend-list mix by default (steadier than "
                         "linkbench's writes, which grow the store as it runs)")
    ap.add_argument("--out", type=pathlib.Path, default=None)
    a = ap.parse_args()
    binary = os.environ.get("KITH_BIN") or str(ROOT / "target" / "release" / "kith")
    datasets = pathlib.Path(os.environ.get("KITH_DATASETS", ROOT.parent / "shared" / "datasets"))
    with tempfile.TemporaryDirectory() as tmp:
        store = pathlib.Path(tmp) / "store"
        graph = datasets / "facebook_combined.txt.gz"
        subprocess.run([binary, "store", "build", str(graph),
                        "--dir", str(store), "--method", "kith", "--data-bytes", "40"],
                       check=True, capture_output=True)
        proc, url = serve(binary, store)
        runs = []
        try:
            for pair in range(a.pairs):
                for state in ("none", "requests", "browser"):
                    driver = browser(url) if state == "browser" else None
                    poller = Poller(url) if state == "requests" else None
                    if driver:
                        time.sleep(3)  # the page loaded and polling
                    cpu0, route0 = cpu_seconds(proc.pid), metrics_route_seconds(url)
                    r = load(binary, url, a.clients, a.seconds, a.mix, graph)
                    cpu1, route1 = cpu_seconds(proc.pid), metrics_route_seconds(url)
                    requests = r["throughput"] * a.seconds
                    r["server_cpu_s"] = cpu1 - cpu0
                    r["server_cpu_us_per_request"] = 1e6 * (cpu1 - cpu0) / max(requests, 1)
                    # Less the two reads of this script itself.
                    r["metrics_route_s"] = route1 - route0
                    samples = None
                    if driver:
                        samples = driver.execute_script("return health.history.length")
                        driver.quit()
                    if poller:
                        samples = poller.close()
                    r.update({"pair": pair, "dashboard": state, "dashboard_samples": samples})
                    print(f"round {pair} dashboard {state}: {r['throughput']:.0f} req/s, "
                          f"p99 {r['p99_ms']:.2f} ms, errors {r['errors']}", file=sys.stderr)
                    runs.append(r)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    def ratios(state):
        none = [r for r in runs if r["dashboard"] == "none"]
        other = [r for r in runs if r["dashboard"] == state]
        return [o["throughput"] / n["throughput"] for n, o in zip(none, other)]

    median = {s: statistics.median(r["throughput"] for r in runs if r["dashboard"] == s)
              for s in ("none", "requests", "browser")}
    doc = {
        "benchmark": "dashboard",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(), "machine": machine(),
        "what": f"kith workload run --mix {a.mix} against kith serve (ego-Facebook store, push "
                "feed): no dashboard; its requests alone (GET /ui/api/metrics each second); "
                "a real dashboard open on the health view in headless Chromium on the same "
                "2 cores; rotated",
        "mix": a.mix, "clients": a.clients, "seconds": a.seconds,
        "runs": runs,
        "median_throughput": median,
        "requests_over_none_by_round": ratios("requests"),
        "browser_over_none_by_round": ratios("browser"),
        "cost_percent_requests": 100 * (1 - statistics.median(ratios("requests"))),
        "cost_percent_browser_same_machine": 100 * (1 - statistics.median(ratios("browser"))),
        # The dashboard's requests by the server's own accounting: seconds in the metrics
        # route's handler over the server's CPU seconds, in the rounds with the poller (the
        # rounds' warm-up included in both).
        "cost_percent_requests_by_handler_time": 100 * statistics.median(
            r["metrics_route_s"] / r["server_cpu_s"] for r in runs
            if r["dashboard"] == "requests"),
        "server_cpu_us_per_request": {s: statistics.median(
            r["server_cpu_us_per_request"] for r in runs if r["dashboard"] == s)
            for s in ("none", "requests", "browser")},
        "goal_cost_percent": 2,
    }
    today = datetime.date.today().isoformat()
    out = a.out or ROOT / "bench" / "results" / f"dashboard-{today}.json"
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"the metrics route's handler time: {doc['cost_percent_requests_by_handler_time']:.3f} "
          f"% of the server's CPU; CPU per request {doc['server_cpu_us_per_request']}",
          file=sys.stderr)
    print(f"dashboard cost: its requests {doc['cost_percent_requests']:.1f} %, a browser on "
          f"the same machine {doc['cost_percent_browser_same_machine']:.1f} % of throughput; "
          f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()

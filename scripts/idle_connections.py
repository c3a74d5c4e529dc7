#!/usr/bin/env python3
"""Many idle, half-sent requests against `kith serve`: what the server holds, its memory,
and whether `/health` still answers, for one or more kith binaries in one run.

    scripts/idle_connections.py --kith NEW_KITH [--kith OLD_KITH ...] [--connections 20000]
        [--out bench/results/idle-connections-<date>.json]

Each binary serves a small generated store on loopback with its default settings. The
client opens the connections, from several 127.0.0.x source addresses, and sends each the
start of a request without its final blank line, then keeps them open. Every second it
counts the connections the server has closed, fetches `/health` on a fresh connection
(status and time), and reads the server's resident memory; after `--hold-s` it closes
everything and reads the memory again. This is the issue's scenario: without a header
timeout and a connection limit, a server held every such request until its descriptors ran
out, and stopped answering `/health`.
"""

import argparse
import datetime
import json
import os
import platform
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

PARTIAL = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"x" * 64 + b"\r\n"


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    kb = lambda k: int(fields[k].split()[0])
    return round(kb("VmRSS") / 1024, 1), round(kb("VmHWM") / 1024, 1)


def health(port, timeout=5.0):
    start = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as r:
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except Exception as e:  # refused, reset, timed out
        status = type(e).__name__
    return status, round((time.monotonic() - start) * 1000, 1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, proc, deadline_s=60):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"kith serve exited with {proc.returncode}")
        if health(port, timeout=1)[0] == 200:
            return
        time.sleep(0.2)
    raise SystemExit("kith serve did not answer /health within 60 s")


def trial(kith, store, connections, hold_s, sources):
    port = free_port()
    proc = subprocess.Popen([kith, "serve", "--dir", store, "--addr", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        rss_before, _ = rss_mb(proc.pid)
        sel = selectors.DefaultSelector()
        socks, refused_connect = [], 0
        opened_at = time.monotonic()
        for i in range(connections):
            s = socket.socket()
            s.setblocking(False)
            s.bind((sources[i % len(sources)], 0))
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            except OSError:
                refused_connect += 1
                s.close()
                continue
            socks.append(s)
            sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ)
        sent, closed = set(), set()
        timeline = []
        next_sample = time.monotonic()
        end = opened_at + hold_s
        while time.monotonic() < end:
            for key, events in sel.select(timeout=0.05):
                s = key.fileobj
                if events & selectors.EVENT_WRITE and s not in sent:
                    try:
                        s.send(PARTIAL)
                        sent.add(s)
                        sel.modify(s, selectors.EVENT_READ)
                    except OSError:
                        closed.add(s)
                        sel.unregister(s)
                    continue
                if events & selectors.EVENT_READ:
                    try:
                        data = s.recv(4096)
                    except OSError:
                        data = b""
                    if not data:
                        closed.add(s)
                        sel.unregister(s)
            if time.monotonic() >= next_sample:
                status, ms = health(port)
                rss, _ = rss_mb(proc.pid)
                timeline.append({"t_s": round(time.monotonic() - opened_at, 1),
                                 "open": len(socks) - len(closed), "closed_by_server": len(closed),
                                 "health": status, "health_ms": ms, "rss_mb": rss})
                print(f"  t={timeline[-1]['t_s']:5.1f}s open {timeline[-1]['open']:6d} "
                      f"health {status} in {ms} ms, rss {rss} MB", file=sys.stderr, flush=True)
                next_sample += 1.0
        for s in socks:
            s.close()
        time.sleep(3)
        rss_after, rss_peak = rss_mb(proc.pid)
        after_status, after_ms = health(port)
        return {
            "kith": kith,
            "version": subprocess.run([kith, "--version"], capture_output=True,
                                      text=True).stdout.strip(),
            "connections_attempted": connections,
            "connect_failed": refused_connect,
            "closed_by_server_within_hold": len(closed),
            "held_at_end_of_hold": len(socks) - len(closed),
            "health_statuses": sorted({str(r["health"]) for r in timeline}),
            "health_ms_max": max((r["health_ms"] for r in timeline), default=None),
            "rss_mb_before": rss_before,
            "rss_mb_peak": rss_peak,
            "rss_mb_after_close": rss_after,
            "health_after_close": after_status,
            "health_after_close_ms": after_ms,
            "timeline": timeline,
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kith", action="append", required=True, help="a kith binary (repeat)")
    p.add_argument("--connections", type=int, default=20000)
    p.add_argument("--hold-s", type=float, default=20.0, help="how long connections are held")
    p.add_argument("--sources", type=int, default=4, help="127.0.0.x source addresses")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    if not 1 <= a.connections <= 200_000:
        p.error("--connections must be 1 to 200000")
    need = a.connections + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, max(hard, need)))
        except (ValueError, OSError) as e:
            raise SystemExit(f"cannot raise the descriptor limit to {need}: {e}")
    sources = [f"127.0.0.{i + 2}" for i in range(a.sources)]
    out = a.out or f"bench/results/idle-connections-{datetime.date.today().isoformat()}.json"
    trials = []
    with tempfile.TemporaryDirectory(prefix="kith-idle.") as tmp:
        for i, kith in enumerate(a.kith):
            # Each binary builds its own store (a newer store format is refused by an older
            # kith).
            graph, store = f"{tmp}/g-{i}.txt", f"{tmp}/store-{i}"
            subprocess.run([kith, "graph", "generate", "--model", "ba", "--nodes", "1000",
                            "--output", graph], check=True, capture_output=True)
            subprocess.run([kith, "store", "build", "--dir", store, graph], check=True,
                           capture_output=True)
            print(f"{kith}: {a.connections} half-sent requests for {a.hold_s} s", file=sys.stderr)
            trials.append(trial(kith, store, a.connections, a.hold_s, sources))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    doc = {
        "benchmark": "idle-connections",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "kernel": platform.release()},
        "descriptor_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        "request_start": PARTIAL.decode(),
        "hold_s": a.hold_s,
        "trials": trials,
    }
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    for t in trials:
        print(f"{t['kith']}: held {t['held_at_end_of_hold']} of {t['connections_attempted']} "
              f"after {a.hold_s} s, health {t['health_statuses']} (max {t['health_ms_max']} ms), "
              f"RSS {t['rss_mb_before']} -> peak {t['rss_mb_peak']} -> {t['rss_mb_after_close']} MB")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

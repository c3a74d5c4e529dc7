"""CPU time of the local cluster's processes around a Cassandra node's pause and resume.

    python3 scripts/process_cpu.py sample SAMPLES.jsonl SECONDS
        every 250 ms, each process's CPU ticks (all its threads) and state, from /proc:
        the Cassandra nodes (c1..), `kith serve` (k1..), Redis nodes (r1..), the trial
    python3 scripts/process_cpu.py summarize SAMPLES.jsonl TRIAL.json OUT.json
        per resume of a paused process (state T, then not): its cores in each 250 ms of
        the first second, its mean before the pause, and the machine's total, beside the
        trial's faults (run `sample` while `kith trial cluster --nemesis pause-cassandra`
        runs)
"""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import bench_meta  # noqa: E402

PERIOD_S = 0.25


def processes():
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        line = b" ".join(args).decode(errors="replace")
        if "CassandraDaemon" in line:
            m = re.search(r"/node(\d+)/", line)
            found["c" + (m.group(1) if m else pid)] = pid
        elif " serve " in line and "kith" in args[0].decode(errors="replace"):
            m = re.search(r"_t\w+-(\d+)", line)
            found["k" + (m.group(1) if m else pid)] = pid
        elif "trial cluster" in line:
            found["trial"] = pid
        elif "redis-server" in line:
            m = re.search(r"\.(\d+):\d+", line)
            found["r" + (m.group(1) if m else pid)] = pid
    return found


def ticks(pid):
    stat = open(f"/proc/{pid}/stat").read()
    fields = stat[stat.rfind(")") + 2:].split()
    # State, then utime + stime: every thread's, not waited-for children's.
    return fields[0], int(fields[11]) + int(fields[12])


def sample(out, seconds):
    start, found, looked = time.time(), processes(), time.time()
    with open(out, "w") as o:
        while time.time() - start < seconds:
            if time.time() - looked > 5:
                found, looked = processes(), time.time()
            rec = {"t": time.time(), "procs": {}}
            for name, pid in found.items():
                try:
                    state, t = ticks(pid)
                except OSError:
                    continue
                rec["procs"][name] = {"state": state, "ticks": t}
            o.write(json.dumps(rec) + "\n")
            o.flush()
            time.sleep(max(0.0, PERIOD_S - (time.time() - rec["t"])))


def total(p):
    # Samples of an older form counted ticks per thread group.
    return p["ticks"] if "ticks" in p else sum(p["threads"].values())


def cores(recs, j, name):
    a, b = recs[j - 1]["procs"].get(name), recs[j]["procs"].get(name)
    if a is None or b is None:
        return None
    return (total(b) - total(a)) / 100 / (recs[j]["t"] - recs[j - 1]["t"])


def summarize(samples, trial, out):
    recs = [json.loads(line) for line in open(samples)]
    resumes = []
    for i in range(1, len(recs)):
        for name, p in recs[i]["procs"].items():
            q = recs[i - 1]["procs"].get(name)
            if not (q and q["state"] == "T" and p["state"] != "T"):
                continue
            paused = max(j for j in range(i)
                         if recs[j]["procs"].get(name, {}).get("state", "T") != "T")
            before = [cores(recs, j, name) for j in range(max(1, paused - 8), paused)]
            after = range(i, min(len(recs), i + 4))
            machine = [sum(filter(None, (cores(recs, j, n) for n in recs[j]["procs"])))
                       for j in after]
            resumes.append({
                "process": name,
                "cores_before_pause_mean": round(sum(before) / len(before), 2),
                "cores_first_second_per_250ms": [round(cores(recs, j, name), 2) for j in after],
                "machine_cores_first_second_per_250ms": [round(c, 2) for c in machine],
            })
    runs = json.load(open(trial))
    doc = {
        "benchmark": "resume-cpu",
        "date": runs["date"],
        "commit": runs["commit"],
        "machine": runs["machine"],
        "method": "CPU ticks of every process from /proc every 250 ms during one "
                  "`kith trial cluster --nemesis pause-cassandra` run "
                  "(scripts/process_cpu.py); cores = ticks / 100 / interval",
        "summarized_by": bench_meta.commit(),
        "note": ("samples summed the ticks of the threads alive at each sample: a thread "
                 "that ended between two samples makes the second low (even negative)")
        if any("threads" in p for r in recs for p in r["procs"].values()) else "",
        "faults": [{k: f[k] for k in ("what", "at_s", "heal_began_s", "below_half_s")}
                   for r in runs["runs"] for f in r["faults"]],
        "resumes": resumes,
    }
    with open(out, "w") as o:
        json.dump(doc, o, indent=2)
        o.write("\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "sample":
        sample(sys.argv[2], float(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "summarize":
        summarize(*sys.argv[2:])
    else:
        sys.exit(__doc__)

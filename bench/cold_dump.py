#!/usr/bin/env python3
"""cold_dump.py - whole-command wall time of a dump as a person runs it:
the first-ever `stacksnap PID` (empty cache directory: every table compiled
or lazily filled, every debug file found anew; files in the page cache),
a warm-cache dump (the cache a first run left), eu-stack and gdb, side by
side and interleaved, on clangd-14 idling on stdin, python3 idling on
stdin, and the stall target with 1, 8 and 64 sleeping threads. Prints
medians, ratios to eu-stack, and stacksnap's own --stats phases.

usage: O=build bench/cold_dump.py [--reps N] [--targets clangd,python3,stall1,stall8,stall64]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import O, Target, run_tool, med, fmt, table, load  # noqa: E402

STACKSNAP = os.path.join(O, "stacksnap")
PHASES = re.compile(r"cold path: check ([\d.]+) us, maps and modules ([\d.]+) us "
                    r"\((\d+) modules\), tables ([\d.]+) us, debug files ([\d.]+) us, "
                    r"symbol tables ([\d.]+) us; total ([\d.]+) us")
UNWIND = re.compile(r"unwind ([\d.]+) us \((\d+) frames\), symbolize ([\d.]+) us")


class Idle:
    """A program idling on a pipe for stdin (clangd-14, python3)."""

    def __init__(self, argv, settle=1.5):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.pid = self.proc.pid
        time.sleep(settle)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def start(name):
    if name == "clangd":
        exe = shutil.which("clangd-14")
        return Idle([exe]) if exe else None
    if name == "python3":
        return Idle(["/usr/bin/python3", "-c", "import sys; sys.stdin.read()"])
    return Target(int(name[len("stall"):]), "sleep", depth=40, cpu=None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--targets", default="clangd,python3,stall1,stall8,stall64")
    a = ap.parse_args()
    print("== cold and warm dumps, whole command wall time (ms), median of %d "
          "interleaved runs; load average %s" % (a.reps, " ".join(load())))
    rows = []
    phases = []
    for name in a.targets.split(","):
        t = start(name)
        if t is None:
            print("(%s: not installed; skipped)" % name)
            continue
        pid = str(t.pid)
        warm_dir = tempfile.mkdtemp(prefix="stacksnap-bench-warm-")
        env_warm = dict(os.environ, STACKSNAP_CACHE_DIR=warm_dir)
        # The warm cache: what a first run leaves, written by its detached
        # child after it exits: wait until the files stop changing.
        subprocess.run([STACKSNAP, pid], env=env_warm, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        settled, last = 0, None
        for _ in range(600):
            now = sorted((f, os.path.getsize(os.path.join(d, f)))
                         for d, _, fs in os.walk(warm_dir) for f in fs)
            settled = settled + 1 if now == last and now else 0
            last = now
            if settled >= 10:
                break
            time.sleep(0.1)
        res = {k: [] for k in ("cold", "warm", "eu-stack", "gdb")}
        st = {"cold": [], "warm": []}
        fails = {}
        for _ in range(a.reps):
            cold_dir = tempfile.mkdtemp(prefix="stacksnap-bench-cold-")
            tools = [
                ("cold", [STACKSNAP, "--stats", pid], dict(os.environ, STACKSNAP_CACHE_DIR=cold_dir)),
                ("warm", [STACKSNAP, "--stats", pid], env_warm),
                ("eu-stack", ["eu-stack", "-p", pid], None),
                ("gdb", ["gdb", "-p", pid, "-batch", "-nx", "-ex", "thread apply all bt"], None),
            ]
            for key, argv, env in tools:
                old = os.environ.copy()
                if env:
                    os.environ.clear()
                    os.environ.update(env)
                try:
                    rc, out, err, wall, cpu, rss = run_tool(argv, cpu=None, timeout=120)
                finally:
                    os.environ.clear()
                    os.environ.update(old)
                if rc != 0:
                    fails[key] = fails.get(key, 0) + 1
                res[key].append(wall * 1e3)
                if key in st:
                    m, u = PHASES.search(err.decode()), UNWIND.search(err.decode())
                    if m and u:
                        st[key].append([float(x) / (1 if i == 2 else 1e3)
                                        for i, x in enumerate(m.groups())] +
                                       [float(u.group(1)) / 1e3, float(u.group(3)) / 1e3])
            shutil.rmtree(cold_dir, True)
        shutil.rmtree(warm_dir, True)
        t.stop()
        m = {k: med(v) for k, v in res.items()}
        eu = m["eu-stack"]
        rows.append([name, fmt(m["cold"], 1), fmt(m["warm"], 1), fmt(eu, 1), fmt(m["gdb"], 0),
                     fmt(m["cold"] / eu, 2), fmt(m["warm"] / eu, 2),
                     ", ".join("%s %d" % kv for kv in fails.items()) or "-"])
        for key in ("cold", "warm"):
            if st[key]:
                cols = list(zip(*st[key]))
                v = [med(c) for c in cols]
                phases.append([name + " " + key, fmt(v[0], 1), fmt(v[1], 1), "%d" % v[2],
                               fmt(v[3], 1), fmt(v[4], 1), fmt(v[5], 1), fmt(v[7], 1),
                               fmt(v[8], 1), fmt(v[6], 1)])
    table(["target", "stacksnap cold", "stacksnap warm", "eu-stack", "gdb",
           "cold / eu-stack", "warm / eu-stack", "non-zero exits"], rows)
    print()
    print("stacksnap --stats phases (ms, medians): unwind includes lazy table fills")
    table(["run", "check", "maps+modules", "modules", "tables", "debug files",
           "symbol tables", "unwind", "symbolize", "total"], phases)
    print("load average now %s" % " ".join(load()))


if __name__ == "__main__":
    main()

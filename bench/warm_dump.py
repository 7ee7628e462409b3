#!/usr/bin/env python3
"""warm_dump.py - the warm dump alone, before/after: whole-command wall time
and --stats' own total of `stacksnap --freeze-all PID` with a warm cache
(the cache each binary's own first run left), two binaries interleaved run
by run, medians. For changes to what a warm dump checks (issue 41: cache
entries bound to their files). Targets: clangd-14 idling on stdin (70
executable mappings), python3 idling on stdin, the stall target with one
sleeping thread.

usage: O=build bench/warm_dump.py --baseline OLD_STACKSNAP [--reps N] [--targets clangd,python3,stall1]
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
from common import O, med, fmt, table, load, settle_dir  # noqa: E402
from cold_dump import start  # noqa: E402

TOTAL = re.compile(r"cold path: .*; total ([\d.]+) us")


def run(exe, pid, cache):
    env = dict(os.environ, STACKSNAP_CACHE_DIR=cache)
    t0 = time.perf_counter()
    p = subprocess.run([exe, "--freeze-all", "--stats", pid], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = (time.perf_counter() - t0) * 1e3
    err = p.stderr.decode()
    m = TOTAL.search(err)
    inside = float(m.group(1)) / 1e3 if m else float("nan")
    return p.returncode, wall, inside


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, metavar="STACKSNAP")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--targets", default="clangd,python3,stall1")
    a = ap.parse_args()
    new = os.path.join(O, "stacksnap")
    print("== warm dumps (--freeze-all), ms, median of %d interleaved runs; "
          "load average %s" % (a.reps, " ".join(load())))
    rows = []
    for name in a.targets.split(","):
        t = start(name)
        if t is None:
            print("(%s: not installed; skipped)" % name)
            continue
        pid = str(t.pid)
        bins = [("before", a.baseline), ("after", new)]
        dirs = {}
        for label, exe in bins:
            dirs[label] = tempfile.mkdtemp(prefix="stacksnap-warm-")
            run(exe, pid, dirs[label])
            settle_dir(dirs[label])
            run(exe, pid, dirs[label])  # page cache and cache files warm
        wall = {label: [] for label, _ in bins}
        inside = {label: [] for label, _ in bins}
        fails = 0
        for i in range(a.reps):
            order = bins if i % 2 == 0 else bins[::-1]
            for label, exe in order:
                rc, w, s = run(exe, pid, dirs[label])
                fails += rc != 0
                wall[label].append(w)
                inside[label].append(s)
        t.stop()
        for d in dirs.values():
            shutil.rmtree(d, True)
        b, n = med(wall["before"]), med(wall["after"])
        bi, ni = med(inside["before"]), med(inside["after"])
        rows.append([name, fmt(b, 1), fmt(n, 1), fmt(n / b, 3), fmt(bi, 2),
                     fmt(ni, 2), fmt(ni / bi, 3), str(fails)])
    table(["target", "before wall", "after wall", "after / before",
           "before --stats", "after --stats", "after / before", "non-zero exits"],
          rows)
    print("load average now %s" % " ".join(load()))


if __name__ == "__main__":
    main()

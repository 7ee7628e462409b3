#!/usr/bin/env python3
"""warm_dump.py - the warm dump alone, before/after: whole-command wall time
CPU (perf stat's task-clock) and --stats' own total of `stacksnap --freeze-all PID` with a warm cache
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

TOTAL = re.compile(r"cold path: .*\((\d+) modules\).*; total ([\d.]+) us")


def run(exe, pid, cache):
    env = dict(os.environ, STACKSNAP_CACHE_DIR=cache)
    # CPU from perf's task-clock (exact, where getrusage counts ticks);
    # on a loaded machine the steadier number.
    t0 = time.perf_counter()
    p = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", exe,
                        "--freeze-all", "--stats", pid], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = (time.perf_counter() - t0) * 1e3
    err = p.stderr.decode()
    c = re.search(r"^([\d.]+),msec,task-clock", err, re.M)
    cpu = float(c.group(1)) if c else float("nan")
    m = TOTAL.search(err)
    inside = float(m.group(2)) / 1e3 if m else float("nan")
    mods = int(m.group(1)) if m else 0
    return p.returncode, wall, cpu, inside, mods


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
    # Every target started first (they idle), then measured in turn.
    for name, t in [(n, start(n)) for n in a.targets.split(",")]:
        if not t:
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
        cpu = {label: [] for label, _ in bins}
        inside = {label: [] for label, _ in bins}
        fails = mods = 0
        for i in range(a.reps):
            order = bins if i % 2 == 0 else bins[::-1]
            for label, exe in order:
                rc, w, c, s, mods = run(exe, pid, dirs[label])
                fails += rc != 0
                wall[label].append(w)
                cpu[label].append(c)
                inside[label].append(s)
        t.stop()
        for d in dirs.values():
            shutil.rmtree(d, True)
        row = ["%s (%d modules)" % (name, mods)]
        for v in (wall, cpu, inside):
            b, n = med(v["before"]), med(v["after"])
            row += [fmt(b, 2), fmt(n, 2), fmt(n / b, 3)]
        rows.append(row + [str(fails)])
    table(["target", "wall before", "wall after", "after / before",
           "CPU before", "CPU after", "after / before",
           "--stats total before", "after", "after / before", "non-zero exits"],
          rows)
    print("load average now %s" % " ".join(load()))


if __name__ == "__main__":
    main()

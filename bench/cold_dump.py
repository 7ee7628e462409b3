#!/usr/bin/env python3
"""cold_dump.py - whole-command wall time of a dump as a person runs it:
the first-ever `stacksnap PID` (empty cache directory: every table compiled
or lazily filled, every debug file found anew; files in the page cache),
a warm-cache dump (the cache a first run left), eu-stack and gdb, side by
side and interleaved, on clangd-14 idling on stdin, python3 idling on
stdin, and the stall target with 1, 8 and 64 sleeping threads. Prints
medians, ratios to eu-stack, and stacksnap's own --stats phases.

Each stacksnap run is made twice: as a person runs it (the default
non-stop capture, which loads a BPF program) and with --freeze-all (no
BPF), each cold and warm. CPU is the command's own user+system time (on
a loaded machine the steadier number). --baseline runs another binary
interleaved, for before/after numbers under one load.

usage: O=build bench/cold_dump.py [--reps N] [--targets clangd,python3,stall1,stall8,stall64]
                                  [--baseline OLD_STACKSNAP] [--no-gdb]
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
from common import O, Target, run_tool, med, fmt, table, load, settle_dir  # noqa: E402

STACKSNAP = os.path.join(O, "stacksnap")
PHASES = re.compile(r"cold path: check ([\d.]+) us, maps and modules ([\d.]+) us "
                    r"\((\d+) modules\), tables ([\d.]+) us, debug files ([\d.]+) us, "
                    r"symbol tables ([\d.]+) us, DWARF ([\d.]+) us; total ([\d.]+) us")
UNWIND = re.compile(r"unwind ([\d.]+) us \((\d+) frames\), symbolize ([\d.]+) us")
OTHER = re.compile(r"other cold costs: /proc: process header ([\d.]+) us, waits ([\d.]+) us; "
                   r"BPF task iterator load ([\d.]+) us")


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


def settle_cache(argv, env, cache_dir):
    """The warm cache: what a first run leaves, written by its detached
    child after it exits: wait until the files stop changing."""
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    settle_dir(cache_dir)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--targets", default="clangd,python3,stall1,stall8,stall64")
    ap.add_argument("--baseline", metavar="STACKSNAP",
                    help="another stacksnap binary (e.g. an older build) run "
                    "interleaved with --freeze-all, for before/after under one load")
    ap.add_argument("--no-gdb", action="store_true", help="leave gdb out (slow)")
    a = ap.parse_args()
    print("== cold and warm dumps, whole command wall time and CPU (ms), median "
          "of %d interleaved runs; load average %s" % (a.reps, " ".join(load())))
    print("(stacksnap: the default capture; --freeze-all: every thread stopped, "
          "no BPF program loaded)")
    # (label, binary, extra args): each gets a cold and a warm run.
    variants = [("stacksnap", STACKSNAP, []),
                ("stacksnap --freeze-all", STACKSNAP, ["--freeze-all"])]
    if a.baseline:
        variants.append(("baseline --freeze-all", a.baseline, ["--freeze-all"]))
    rows = []
    phases = []
    for name in a.targets.split(","):
        t = start(name)
        if t is None:
            print("(%s: not installed; skipped)" % name)
            continue
        pid = str(t.pid)
        warm = {}
        for label, exe, extra in variants:
            warm[label] = tempfile.mkdtemp(prefix="stacksnap-bench-warm-")
            settle_cache([exe] + extra + [pid], dict(os.environ, STACKSNAP_CACHE_DIR=warm[label]),
                         warm[label])
        keys = [(label, kind) for label, _, _ in variants for kind in ("cold", "warm")]
        res = {k: [] for k in keys + ["eu-stack", "gdb"]}
        cpu = {k: [] for k in res}
        st = {k: [] for k in keys}
        fails = {}
        for _ in range(a.reps):
            tools = []
            cold_dirs = []
            for label, exe, extra in variants:
                cold_dirs.append(tempfile.mkdtemp(prefix="stacksnap-bench-cold-"))
                tools.append(((label, "cold"), [exe] + extra + ["--stats", pid],
                              dict(os.environ, STACKSNAP_CACHE_DIR=cold_dirs[-1])))
                tools.append(((label, "warm"), [exe] + extra + ["--stats", pid],
                              dict(os.environ, STACKSNAP_CACHE_DIR=warm[label])))
            tools.append(("eu-stack", ["eu-stack", "-p", pid], None))
            if not a.no_gdb:
                tools.append(("gdb", ["gdb", "-p", pid, "-batch", "-nx", "-ex",
                                      "thread apply all bt"], None))
            for key, argv, env in tools:
                old = os.environ.copy()
                if env:
                    os.environ.clear()
                    os.environ.update(env)
                try:
                    rc, out, err, wall, c, rss = run_tool(argv, cpu=None, timeout=120)
                finally:
                    os.environ.clear()
                    os.environ.update(old)
                if isinstance(key, tuple) and key[1] == "cold":
                    settle_dir(env["STACKSNAP_CACHE_DIR"])
                if rc != 0:
                    fails[key] = fails.get(key, 0) + 1
                res[key].append(wall * 1e3)
                cpu[key].append(c * 1e3)
                if key in st:
                    m, u = PHASES.search(err.decode()), UNWIND.search(err.decode())
                    o = OTHER.search(err.decode())
                    if m and u:
                        st[key].append([float(x) / (1 if i == 2 else 1e3)
                                        for i, x in enumerate(m.groups())] +
                                       [float(u.group(1)) / 1e3, float(u.group(3)) / 1e3] +
                                       ([float(x) / 1e3 for x in o.groups()] if o
                                        else [float("nan")] * 3))
            for d in cold_dirs:
                shutil.rmtree(d, True)
        for d in warm.values():
            shutil.rmtree(d, True)
        t.stop()
        eu = med(res["eu-stack"])
        for key in keys + ["eu-stack", "gdb"]:
            if not res[key]:
                continue
            label = " ".join(key) if isinstance(key, tuple) else key
            w = med(res[key])
            rows.append([name, label, fmt(w, 1), fmt(med(cpu[key]), 1), fmt(w / eu, 2),
                         str(fails.get(key, "-"))])
        for key in keys:
            if st[key]:
                cols = list(zip(*st[key]))
                v = [med(c) for c in cols]
                phases.append([name + " " + " ".join(key), fmt(v[0], 1), fmt(v[1], 1),
                               "%d" % v[2], fmt(v[3], 1), fmt(v[4], 1), fmt(v[5], 1),
                               fmt(v[6], 1), fmt(v[8], 1), fmt(v[9], 1), fmt(v[11], 1),
                               fmt(v[12], 1), fmt(v[7], 1)])
    table(["target", "run", "wall ms", "CPU ms", "wall / eu-stack", "non-zero exits"], rows)
    print()
    print("stacksnap --stats phases (ms, medians): tables include lazy fills (inside "
          "unwind); debug files, symbol tables and DWARF (opening it: inflating a "
          "compressed debug file) are inside symbolize; /proc waits (who holds a "
          "pipe's other end: every process's fds) after it; BPF load: the non-stop "
          "path's iterator, loaded and run once (- : an older binary)")
    table(["run", "check", "maps+modules", "modules", "tables", "debug files",
           "symbol tables", "DWARF", "unwind", "symbolize", "/proc waits",
           "BPF load", "total"], phases)
    print("load average now %s" % " ".join(load()))


if __name__ == "__main__":
    main()

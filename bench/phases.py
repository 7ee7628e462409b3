#!/usr/bin/python3
"""phases.py - where the freeze goes: `stacksnap --stats` on the stall
target at 1, 8, 64 and 512 threads, sleeping or spinning, by the all-threads
freeze (--freeze-all), by the non-stop path (--nonstop) and by the default
(which of the two the thread states pick), quiet or with a CPU
hog on every core (--hog). Prints the medians of each phase the library
reports (stop = interrupt + wait for the stops, registers, copy, detach
(after the witness checks), the whole freeze) and, for the non-stop path,
how many threads were read without stopping them.

usage: O=build bench/phases.py [--reps N] [--threads 1,8,64,512]
                               [--modes sleep,spin] [--hog]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import O, Target, run_tool, med, fmt, table, load, hogs, stop_hogs, bench_args  # noqa: E402

FREEZE = re.compile(r"freeze ([\d.]+) us, (\d+) threads, (\d+) bytes copied")
PHASES = re.compile(r"stop ([\d.]+) us, registers ([\d.]+) us, copy ([\d.]+) us, "
                    r"detach ([\d.]+) us")
NONSTOP = re.compile(r"(\d+) threads read without stopping them, (\d+) interrupted "
                     r"\((\d+) found to have run.*iterator ([\d.]+) us, checks ([\d.]+) us")


def main():
    a = bench_args("1,8,64,512")
    tool = os.path.join(O, "stacksnap")
    hog = hogs() if a.hog else []
    print("== freeze phases (us, medians of %d), %s; load average %s" % (
        a.reps, "a CPU hog on every core" if a.hog else "no hog", " ".join(load())))
    rows = []
    try:
        for mode in a.modes.split(","):
            for n in [int(x) for x in a.threads.split(",")]:
                t = Target(n, mode, depth=40)
                try:
                    for path, extra in (("freeze-all", ["--freeze-all"]),
                                        ("non-stop", ["--nonstop"]),
                                        ("default", [])):
                        v = {k: [] for k in ("freeze", "stop", "regs", "copy", "detach",
                                             "bytes", "ns", "intr", "moved", "iter", "check")}
                        for _ in range(a.reps):
                            rc, out, err, wall, cpu, rss = run_tool(
                                [tool, "--stats", "--raw"] + extra + [str(t.pid)],
                                cpu=None, keep_output=False)
                            err = err.decode(errors="replace")
                            m, p = FREEZE.search(err), PHASES.search(err)
                            if rc != 0 or not m or not p:
                                continue
                            v["freeze"].append(float(m.group(1)))
                            v["bytes"].append(int(m.group(3)))
                            for k, x in zip(("stop", "regs", "copy", "detach"), p.groups()):
                                v[k].append(float(x))
                            q = NONSTOP.search(err)
                            if q:
                                for k, x in zip(("ns", "intr", "moved", "iter", "check"),
                                                q.groups()):
                                    v[k].append(float(x))
                        rows.append([mode, n + 1, path, fmt(med(v["freeze"])),
                                     fmt(med(v["stop"])), fmt(med(v["regs"]), 1),
                                     fmt(med(v["copy"])), fmt(med(v["detach"])),
                                     fmt(med(v["bytes"]) / 1024, 0),
                                     "%s/%s/%s" % (fmt(med(v["ns"])), fmt(med(v["intr"])),
                                                   fmt(med(v["moved"]))) if v["ns"] else "-",
                                     fmt(med(v["iter"])) if v["iter"] else "-",
                                     fmt(med(v["check"])) if v["check"] else "-",
                                     len(v["freeze"])])
                        print("  " + " | ".join(str(x) for x in rows[-1]), flush=True)
                finally:
                    t.stop()
    finally:
        stop_hogs(hog)
    table(["mode", "threads", "path", "freeze", "stop", "regs", "copy", "detach",
           "KiB copied", "non-stop/intr/ran", "iterator", "checks", "runs"], rows)
    print("load average after: %s" % " ".join(load()))


if __name__ == "__main__":
    main()

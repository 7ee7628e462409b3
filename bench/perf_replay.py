#!/usr/bin/python3
"""perf_replay.py - `stacksnap perf-script` against `perf script` on the same
perf.data recordings (made here, with --call-graph dwarf on the stall
target): CPU time, samples per CPU-second, wall time and peak RSS.

usage: O=build bench/perf_replay.py [--reps N] [--seconds S]
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import O, Target, run_tool, med, fmt, table, load  # noqa: E402

CASES = [
    # label, threads, mode, depth, hop libraries
    ("deep stacks", 4, "spin", 40, 0),
    ("many libraries", 4, "spin", 10, 40),
]


def record(path, target, seconds):
    code, _, err, _, _, _ = run_tool(
        ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "--call-graph", "dwarf,16384",
         "-o", path, "-p", str(target.pid), "--", "sleep", str(seconds)], cpu=None)
    if code != 0:
        print("perf record failed (exit %d): %s" % (code, err.decode(errors="replace").strip()[-300:]))
        return False
    return True


def count_samples(path):
    code, out, _, _, _, _ = run_tool(["perf", "script", "-i", path, "-G", "-F", "tid"], cpu=None)
    return len(out.splitlines()) if code == 0 else 0


def stacksnap_available(path):
    code, _, err, _, _, _ = run_tool([os.path.join(O, "stacksnap"), "perf-script", path],
                                     keep_output=False, cpu=None)
    return code == 0, err.decode(errors="replace").strip()[-200:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3)
    a = ap.parse_args()
    print("== perf replay: stacksnap perf-script vs perf script, same perf.data "
          "(perf record -e cpu-clock -F 999 --call-graph dwarf,16384, %gs of the stall target); "
          "median of %d runs, output to /dev/null; load average: %s"
          % (a.seconds, a.reps, " ".join(load())))
    if not shutil.which("perf"):
        print("perf not installed: skipped")
        return
    tmp = tempfile.mkdtemp(prefix="stacksnap-perf-")
    try:
        for label, n, mode, depth, nhops in CASES:
            path = os.path.join(tmp, "perf.data")
            target = Target(n, mode, depth=depth, nhops=nhops)
            try:
                ok = record(path, target, a.seconds)
                # perf script needs the target's files, not the process;
                # keep it alive anyway (the hop copies are removed with it).
                samples = count_samples(path) if ok else 0
                size = os.path.getsize(path) if ok else 0
                print("\n### %s: %d samples, perf.data %.1f MB\n" % (label, samples, size / 1e6))
                if not ok:
                    continue
                avail, why = stacksnap_available(path)
                tools = [("perf script", ["perf", "script", "-i", path])]
                if avail:
                    tools.append(("stacksnap perf-script",
                                  [os.path.join(O, "stacksnap"), "perf-script", path]))
                res = {}
                for rep in range(a.reps):
                    for name, argv in tools:
                        code, _, err, wall, cpu, rss = run_tool(argv, keep_output=False, cpu=None)
                        r = res.setdefault(name, {"cpu": [], "wall": [], "rss": [], "fail": []})
                        r["cpu"].append(cpu)
                        r["wall"].append(wall)
                        r["rss"].append(rss)
                        if code != 0:
                            r["fail"].append("exit %d" % code)
                base = res.get("stacksnap perf-script")
                rows = []
                for name, _ in tools:
                    r = res[name]
                    c = med(r["cpu"])
                    ratio = "-"
                    if base and name != "stacksnap perf-script" and med(base["cpu"]) > 0:
                        ratio = "%.1fx" % (c / med(base["cpu"]))
                    rows.append([name, fmt(c, 3), "%s-%s" % (fmt(min(r["cpu"]), 3), fmt(max(r["cpu"]), 3)),
                                 fmt(samples / c) if c > 0 else "-", fmt(med(r["wall"]), 3),
                                 fmt(max(r["rss"]) / 1024, 1),
                                 "failed: " + r["fail"][0] if r["fail"] else "ok", ratio])
                table(["tool", "CPU s med", "CPU s min-max", "samples / CPU s", "wall s med",
                       "peak RSS MB", "status", "CPU vs stacksnap"], rows)
                if not avail:
                    print("  stacksnap perf-script: not available (%s)" % why)
            finally:
                target.stop()
                try:
                    os.unlink(path)
                except OSError:
                    pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

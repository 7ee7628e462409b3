#!/usr/bin/env python3
"""perf_script_cold.py - `stacksnap perf-script` on recordings of large
programs, cold (an empty cache directory: every table and symbol table made
anew, libc6-dbg's libc read from its compressed debug file) against warm
(the cache a first replay's detached writer left), interleaved with
`perf script` on the same file. Issue 16 asks that cold be no slower than
warm by more than the table compiles of the modules the samples hit: the
cold runs' --stats phases are printed beside the difference.

Workloads, each recorded once (perf record -e cpu-clock -F 999
--call-graph dwarf,8192):
  clangd   clangd-14 --check=src/table/unwind_table.c: clangd parsing a
           file, 70 modules (libclang-cpp, libLLVM: ~5 MB of .eh_frame each)
  cc1      gcc -O2 -c src/table/unwind_table.c

CPU is the command's own user+system time (the detached cache writer is
not counted: it runs after the output, at nice 19).

usage: O=build bench/perf_script_cold.py [--reps N] [--workloads clangd,cc1]
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
from common import O, run_tool, med, fmt, table, load, settle_dir  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "src", "table", "unwind_table.c")
STACKSNAP = os.path.join(O, "stacksnap")
COLD = re.compile(r"cold path: modules [\d.]+ ms \((\d+)\), tables ([\d.]+) ms, "
                  r"debug files ([\d.]+) ms, symbol tables ([\d.]+) ms, DWARF ([\d.]+) ms")
SAMPLES = re.compile(r"(\d+) samples, (\d+) user frames")


def workloads(tmp):
    cc1 = ["gcc", "-O2", "-std=gnu11", "-I" + os.path.join(ROOT, "include"),
           "-I" + os.path.join(ROOT, "src"), "-c", SOURCE, "-o", os.path.join(tmp, "x.o")]
    out = []
    if shutil.which("clangd-14"):
        out.append(("clangd", ["clangd-14", "--check=" + SOURCE]))
    out.append(("cc1", cc1))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workloads", default="clangd,cc1")
    a = ap.parse_args()
    print("== perf-script cold vs warm: medians of %d interleaved runs, CPU s of the "
          "command; load average: %s" % (a.reps, " ".join(load())))
    if not shutil.which("perf"):
        print("perf not installed: skipped")
        return
    tmp = tempfile.mkdtemp(prefix="stacksnap-pscold-")
    rows, phases = [], []
    try:
        for label, argv in workloads(tmp):
            if label not in a.workloads.split(","):
                continue
            data = os.path.join(tmp, label + ".data")
            code, _, err, _, _, _ = run_tool(
                ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "--call-graph",
                 "dwarf,8192", "-o", data, "--"] + argv, cpu=None, timeout=300)
            # perf record exits with the workload's status: clangd --check
            # reports the file's errors (no compile flags) and exits 1.
            if not os.path.exists(data) or os.path.getsize(data) < 4096:
                print("%s: perf record failed (exit %d): %s"
                      % (label, code, err.decode(errors="replace")[-300:]))
                continue
            warm = os.path.join(tmp, label + "-warm")
            env_warm = dict(os.environ, STACKSNAP_CACHE_DIR=warm)
            cmd = [STACKSNAP, "perf-script", "--stats", "-i", data]
            run_tool(cmd, cpu=None, keep_output=False, timeout=600, env=env_warm)
            settle_dir(warm, 1200)
            cpu = {"cold": [], "warm": [], "perf script": []}
            wall = {k: [] for k in cpu}
            cold_ph, info = [], ""
            for r in range(a.reps):
                cold = os.path.join(tmp, "%s-cold-%d" % (label, r))
                for kind, argv2, env in (
                        ("cold", cmd, dict(os.environ, STACKSNAP_CACHE_DIR=cold)),
                        ("warm", cmd, env_warm),
                        ("perf script", ["perf", "script", "-i", data], None)):
                    code, out, err, w, c, _ = run_tool(argv2, cpu=None, keep_output=False,
                                                       timeout=900, env=env)
                    if code != 0:
                        print("%s %s: exit %d: %s" % (label, kind, code,
                                                      err.decode(errors="replace")[-200:]))
                        continue
                    cpu[kind].append(c)
                    wall[kind].append(w)
                    e = err.decode(errors="replace")
                    if kind == "cold" and COLD.search(e):
                        cold_ph.append([float(x) for x in COLD.search(e).groups()])
                    if kind == "warm" and SAMPLES.search(e):
                        info = "%s samples, %s user frames" % SAMPLES.search(e).groups()
                settle_dir(cold, 1200)
                shutil.rmtree(cold, True)
            c, w = med(cpu["cold"]), med(cpu["warm"])
            rows.append([label, info, fmt(c, 3), fmt(w, 3), fmt(c - w, 3),
                         fmt(c / w if w else float("nan"), 2), fmt(med(cpu["perf script"]), 2)])
            if cold_ph:
                col = list(zip(*cold_ph))
                phases.append([label, fmt(col[0][0]), fmt(med(col[1]), 1), fmt(med(col[2]), 1),
                               fmt(med(col[3]), 1), fmt(med(col[4]), 1)])
    finally:
        shutil.rmtree(tmp, True)
    table(["workload", "recording", "cold CPU s", "warm CPU s", "cold - warm",
           "cold/warm", "perf script CPU s"], rows)
    print()
    print("cold runs' --stats (ms, medians): tables = compiles, lazy fills and the "
          "completion after 256 fills, cache loads; DWARF = opening it (inflating "
          "libc6-dbg's compressed sections)")
    table(["workload", "modules", "tables ms", "debug files ms", "symbol tables ms",
           "DWARF ms"], phases)


if __name__ == "__main__":
    main()

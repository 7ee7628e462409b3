#!/usr/bin/python3
"""snapshot_size.py - bytes per thread stack of a snapshot file (`stacksnap
PID --save`): the full copy vs the pointer-preserving and the exact
encodings vs perf's 8 KiB user-stack sample, on the stall target (1, 8 and
64 threads in 40-deep chains) and on real programs (python3, perl, clangd
idle). bench/snapsize captures each target, encodes every thread's stack
both ways, decodes it and unwinds it again: "same" is the share of threads
whose frames (pcs, sps, end) equal the full copy's. Medians over threads
and over --reps captures. Sizes are the stack streams only (registers add
140 bytes a thread under every encoding; the file adds mappings and the
vDSO image once)."""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

PERF_SAMPLE = 8192  # perf record --call-graph dwarf's default stack dump


def start_program(argv):
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(1.5)  # past start-up, idle
    return p


def measure(pid, reps):
    rows = []
    for _ in range(reps):
        rc, out, err, *_ = common.run_tool([os.path.join(common.BENCH, "snapsize"),
                                            str(pid)], cpu=None)
        if rc != 0:
            raise RuntimeError("snapsize failed: %s" % err.decode()[-300:])
        for line in out.decode().splitlines():
            f = line.split()
            rows.append({f[i]: int(f[i + 1]) for i in range(2, len(f), 2)})
    return rows


def summarize(name, rows, reps):
    nthreads = len(rows) // reps
    m = lambda k: statistics.median(r[k] for r in rows)
    same = lambda k: 100.0 * sum(r[k] for r in rows) / len(rows)
    fits = 100.0 * sum(r["needed"] <= PERF_SAMPLE for r in rows) / len(rows)
    return [name, nthreads, common.fmt(m("frames")), common.fmt(m("full")),
            common.fmt(m("pointers")), common.fmt(m("exact")), common.fmt(PERF_SAMPLE),
            common.fmt(m("full") / m("pointers"), 1) + "x",
            common.fmt(m("full") / m("exact"), 1) + "x",
            "%.0f%% / %.0f%%" % (same("same_pointers"), same("same_exact")),
            "%.0f%%" % fits]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    print("== snapshot file sizes: bytes per thread stack (medians over threads "
          "and %d captures; load %s)" % (a.reps, " ".join(common.load())))
    rows = []
    for n in (1, 8, 64):
        t = common.Target(n, "sleep", depth=40, cpu=None)
        try:
            rows.append(summarize("stall_target %d threads" % n,
                                  measure(t.pid, a.reps), a.reps))
        finally:
            t.stop()
    programs = [("python3 (idle)", ["python3", "-c", "import sys; sys.stdin.read()"]),
                ("perl (idle)", ["perl", "-e", "<STDIN>"]),
                ("clangd (idle, ~68 DSOs)", ["clangd", "--log=error"])]
    for name, argv in programs:
        try:
            p = start_program(argv)
        except OSError as e:
            print("(%s: %s)" % (name, e))
            continue
        try:
            rows.append(summarize(name, measure(p.pid, a.reps), a.reps))
        except RuntimeError as e:
            print("(%s: %s)" % (name, e))
        finally:
            p.kill()
            p.wait()
    common.table(["target", "threads", "frames", "full copy", "pointers", "exact",
                  "perf sample", "full/ptr", "full/exact", "same as full (ptr/exact)",
                  "8 KiB enough"], rows)


if __name__ == "__main__":
    main()

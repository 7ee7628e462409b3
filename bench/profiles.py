#!/usr/bin/python3
"""profiles.py - profiles of real programs (xz, python3, gcc's cc1, sort),
side by side in one run:

1. replay: `perf script` vs `stacksnap perf-script` (perf's text layout)
   vs `stacksnap perf-script --format pprof|svg` on the same recording
   (perf record -e cpu-clock -F 999 --call-graph dwarf,16384): CPU s;
2. capture: the CPU the profiler itself spends on the same workload,
   `perf record --call-graph dwarf,16384` (+ `perf script` to get stacks)
   vs `stacksnap profile` (which unwinds as samples arrive).

usage: O=build bench/profiles.py [--reps N]
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import O, run_tool, med, fmt, table, load  # noqa: E402

SS = os.path.join(O, "stacksnap")


def workloads(tmp):
    data = os.path.join(tmp, "input.bin")
    with open(data, "wb") as f:  # compressible but not trivial
        for i in range(200000):
            f.write(b"%08d %s\n" % (i * 7919 % 1000003, b"abcdefghij"[: i % 11]))
    src = os.path.join(tmp, "prog.c")
    with open(src, "w") as f:
        for i in range(300):
            f.write("int f%d(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) "
                    "s += a[i] * %d + (a[i] >> %d); return s; }\n" % (i, i, i % 7))
    tree = os.path.join(tmp, "tree")  # a small tree for make -j2
    os.makedirs(tree, exist_ok=True)
    for k in range(8):
        with open(os.path.join(tree, "m%d.c" % k), "w") as f:
            for i in range(60):
                f.write("int g%d_%d(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) "
                        "s += a[i] * %d; return s; }\n" % (k, i, i))
    with open(os.path.join(tree, "Makefile"), "w") as f:
        f.write("lib.a: %s\n\tar rcs $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n"
                % " ".join("m%d.o" % k for k in range(8)))
    return [
        ("xz -9", ["xz", "-9", "-k", "-f", "-T1", data]),
        ("python3", ["python3", "-c", "import json\nfor i in range(40):\n"
                     " json.loads(json.dumps({str(k): list(range(k % 50)) for k in range(3000)}))"]),
        ("gcc -O2 (cc1)", ["gcc", "-O2", "-c", "-o", os.path.join(tmp, "prog.o"), src]),
        ("sort", ["sort", "-o", os.path.join(tmp, "sorted"), data]),
        ("make -j2 (gcc, as, ld: fork and exec)", ["make", "-s", "-j2", "-B", "-C", tree]),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    print("== profiles of real programs: replay and capture CPU, median of %d runs; "
          "load average: %s" % (a.reps, " ".join(load())))
    if not shutil.which("perf"):
        print("perf not installed: skipped")
        return
    tmp = tempfile.mkdtemp(prefix="stacksnap-prof-")
    env_cache = tempfile.mkdtemp(prefix="stacksnap-prof-cache-")
    os.environ["STACKSNAP_CACHE_DIR"] = env_cache
    try:
        for label, argv in workloads(tmp):
            data = os.path.join(tmp, "perf.data")
            code, _, err, wall, rec_cpu, _ = run_tool(
                ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "--call-graph",
                 "dwarf,16384", "-o", data, "--"] + argv, cpu=None, timeout=300)
            if code != 0:
                print("\n### %s: perf record failed: %s" % (label, err.decode()[-200:]))
                continue
            code, out, _, _, _, _ = run_tool(["perf", "script", "-i", data, "-G", "-F", "tid"],
                                             cpu=None, timeout=300)
            samples = len(out.splitlines())
            print("\n### %s: %d samples, perf.data %.1f MB\n"
                  % (label, samples, os.path.getsize(data) / 1e6))
            tools = [
                ("perf script", ["perf", "script", "-i", data]),
                ("stacksnap perf-script", [SS, "perf-script", data]),
                # Without inline frames (no DWARF read by either tool).
                ("perf script --no-inline", ["perf", "script", "--no-inline", "-i", data]),
                ("stacksnap perf-script --no-inline", [SS, "perf-script", "--no-inline", data]),
                ("stacksnap perf-script --format pprof",
                 [SS, "perf-script", "--format", "pprof", "-o", os.devnull, data]),
                ("stacksnap perf-script --format svg",
                 [SS, "perf-script", "--format", "svg", "-o", os.devnull, data]),
            ]
            res = {}
            for _ in range(a.reps):
                for name, t in tools:
                    code, _, _, _, cpu, rss = run_tool(t, keep_output=False, cpu=None,
                                                       timeout=300)
                    r = res.setdefault(name, {"cpu": [], "rss": [], "fail": None})
                    r["cpu"].append(cpu)
                    r["rss"].append(rss)
                    if code:
                        r["fail"] = "exit %d" % code
            base = med(res["perf script"]["cpu"])
            base_ni = med(res["perf script --no-inline"]["cpu"])
            table(["replay", "CPU s med", "peak RSS MB", "perf script CPU / this",
                   "perf script --no-inline CPU / this", "status"],
                  [[n, fmt(med(res[n]["cpu"]), 3), fmt(max(res[n]["rss"]) / 1024, 1),
                    "%.1fx" % (base / med(res[n]["cpu"])) if med(res[n]["cpu"]) > 0 else "-",
                    "%.1fx" % (base_ni / med(res[n]["cpu"])) if med(res[n]["cpu"]) > 0 else "-",
                    res[n]["fail"] or "ok"] for n, _ in tools])
            cap = {}
            for _ in range(a.reps):
                c, _, _, _, cpu_rec, _ = run_tool(
                    ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "--call-graph",
                     "dwarf,16384", "-o", data, "--"] + argv, keep_output=False, cpu=None,
                    timeout=300)
                c2, _, _, _, cpu_scr, _ = run_tool(["perf", "script", "-i", data],
                                                   keep_output=False, cpu=None, timeout=300)
                c3, _, e3, _, cpu_prof, _ = run_tool(
                    [SS, "profile", "-F", "999", "--format", "pprof", "-o", os.devnull,
                     "--"] + argv, keep_output=False, cpu=None, timeout=300)
                cap.setdefault("perf record + perf script", []).append(cpu_rec + cpu_scr)
                cap.setdefault("perf record", []).append(cpu_rec)
                cap.setdefault("stacksnap profile", []).append(cpu_prof)
            # The workload's own CPU is inside each number (the tools run
            # it as their child): the difference is the profiler's.
            table(["capture (workload included)", "CPU s med", "CPU s min-max"],
                  [[n, fmt(med(v), 3), "%s-%s" % (fmt(min(v), 3), fmt(max(v), 3))]
                   for n, v in cap.items()])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(env_cache, ignore_errors=True)


if __name__ == "__main__":
    main()

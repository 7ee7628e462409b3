#!/usr/bin/python3
"""kunwind.py - cost per event of unwinding the user stack inside the kernel
(src/bpf/kunwind_walk.bpf.h over tables in BPF maps) against copying the
stack out (copy mode, unwound in user space) and perf record --call-graph
dwarf, side by side in one run, on tests/targets/kunwind_target.c built
-O2 without frame pointers: `bench D N` makes N getppid() calls from the
bottom of a D-deep recursion (10-, 40- and 200-frame stacks).

Per mode (median of BENCH_KUNWIND_REPS runs, default 3): the target's
time per call and the time added per event against plain; the BPF
program's own run time per event (kernel.bpf_stats_enabled, switched on
for the run and restored); bytes per event; events lost. Then the table
memory and load time for the target and for a large program (clangd-14,
when installed). BENCH_KUNWIND_N sets N (default 100,000); BENCH_KUNWIND_MODES a comma list
of the modes to run (default plain,kernel,copy,both,perf), BENCH_KUNWIND_DEPTHS
of the frame counts (default 10,40,200); BENCH_KUNWIND_CLANGD=0 skips
the large program's tables; BENCH_KUNWIND_BASE another build directory,
whose driver's kernel walk runs as "before". Modes are interleaved: each
round runs every mode once."""
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import json

O = os.environ.get("O", "build")
N = int(os.environ.get("BENCH_KUNWIND_N", "100000"))
REPS = int(os.environ.get("BENCH_KUNWIND_REPS", "3"))
DRIVER = os.path.join(O, "tests", "ss_kunwind")
TMP = tempfile.mkdtemp(prefix="stacksnap-kunwind-bench-")
TARGET = os.path.join(TMP, "kunwind_target")
TP = "syscalls:sys_enter_getppid"
DEPTHS = [(10, 3), (40, 33), (200, 193)]  # (frames, recursion depth)
DEPTHS = [d for d in DEPTHS if str(d[0]) in
          os.environ.get("BENCH_KUNWIND_DEPTHS", "10,40,200").split(",")]
MODES = os.environ.get("BENCH_KUNWIND_MODES", "plain,kernel,copy,both,perf").split(",")
# BENCH_KUNWIND_BASE: another build directory, whose driver runs the kernel
# walk as mode "before" in the same rounds.
if os.environ.get("BENCH_KUNWIND_BASE") and "before" not in MODES:
    MODES.insert(MODES.index("kernel") + 1 if "kernel" in MODES else 1, "before")


def start_target(depth):
    p = subprocess.Popen([TARGET, "bench", str(depth), str(N)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        raise RuntimeError("target did not start")
    return p


def go(p):
    """One timed round; the target's ns per call."""
    p.stdin.write("go\n")
    p.stdin.flush()
    line = p.stdout.readline().split()
    p.stdin.close()
    p.wait(600)
    return int(line[1]) / N


def plain(depth):
    return go(start_target(depth)), None


def driver(depth, mode, drv=None):
    p = start_target(depth)
    d = subprocess.Popen([drv or DRIVER, "--mode", mode, "--quiet", "--tp", TP,
                          "-p", str(p.pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    buf = ""
    deadline = time.monotonic() + 120
    while "ready" not in buf and time.monotonic() < deadline and d.poll() is None:
        r, _, _ = select.select([d.stderr], [], [], 1)
        if r:
            buf += os.read(d.stderr.fileno(), 4096).decode(errors="replace")
    if "ready" not in buf:
        p.kill()
        d.kill()
        raise RuntimeError("driver did not start: %s" % buf[-300:])
    ns = go(p)
    out, err = d.communicate(timeout=600)
    stats = [json.loads(l)["stats"] for l in out.splitlines() if '"stats"' in l]
    return ns, stats[0] if stats else None


def perf(depth):
    """perf record of the same tracepoint with DWARF stacks (8 KiB copies),
    started with the target (attaching to a pid fails on this perf/kernel
    pair: ESRCH), 16 MiB of ring buffer like the BPF programs."""
    data = os.path.join(TMP, "perf.data")
    p = subprocess.Popen(["perf", "record", "-e", "raw_syscalls:sys_enter",
                          "--filter", "id == 110", "--call-graph", "dwarf",
                          "-m", "4096", "-o", data, "--", TARGET, "bench",
                          str(depth), str(N)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        raise RuntimeError("target under perf did not start")
    ns = go(p)
    err = p.stderr.read()
    m = re.search(r"\((\d+) samples\)", err)
    got = int(m.group(1)) if m else 0
    size = os.path.getsize(data) if os.path.exists(data) else 0
    return ns, {"bytes": size, "events": max(1, got), "lost": N - got}


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    if os.geteuid() != 0:
        print("kunwind bench: needs root (BPF programs); skipped")
        return 0
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                       "targets", "kunwind_target.c")
    subprocess.check_call(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-rdynamic",
                           "-pthread", "-o", TARGET, src, "-ldl"])
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        old_stats = f.read().strip()
    print("== kunwind: %d getppid() per run, %d runs, median; load average %s" %
          (N, REPS, open("/proc/loadavg").read().split()[:3]))
    print("%-7s %-8s %10s %10s %10s %12s %8s %9s" %
          ("frames", "mode", "ns/call", "added ns", "bpf ns/ev", "bytes/event",
           "lost", "complete"))
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        mem = None
        for frames, depth in DEPTHS:
            runs = {m: [] for m in MODES}
            for _ in range(REPS):  # interleaved: every mode once a round
                for mode in MODES:
                    try:
                        if mode == "plain":
                            runs[mode].append(plain(depth))
                        elif mode == "perf":
                            runs[mode].append(perf(depth))
                        elif mode == "before":
                            runs[mode].append(driver(depth, "kernel", os.path.join(
                                os.environ["BENCH_KUNWIND_BASE"], "tests", "ss_kunwind")))
                        else:
                            runs[mode].append(driver(depth, mode))
                    except Exception as e:  # noqa: BLE001 - report and go on
                        print("(%s at %d frames failed: %s)" % (mode, frames, e))
            base = median([r[0] for r in runs.get("plain", [])]) or 0
            for mode, res in runs.items():
                if not res:
                    continue
                ns = median([r[0] for r in res])
                st = [r[1] for r in res if r[1]]
                bpf = median([s["run_time_ns"] / s["run_cnt"] for s in st
                              if s.get("run_cnt")])
                per = median([s["bytes"] / max(1, s["events"]) for s in st])
                lost = median([s.get("lost") for s in st])
                complete = median([s.get("kernel_complete", 0) / max(1, s["events"])
                                   for s in st]) if mode in ("kernel", "both", "before") \
                    else None
                print("%-7d %-8s %10.0f %10s %10s %12s %8s %9s" % (
                    frames, mode, ns, "-" if mode == "plain" else "%.0f" % (ns - base),
                    "-" if bpf is None else "%.0f" % bpf,
                    "-" if per is None else "%.0f" % per,
                    "-" if lost is None else "%d" % lost,
                    "-" if complete is None else "%.0f%%" % (100 * complete)))
                if mode == "kernel" and st and mem is None:
                    mem = st[0]
        if mem:
            print("\ntables for the target: %d modules, %d rows, %d KiB in the "
                  "per-module maps + %d KiB shared maps, compiled in %.1f ms, "
                  "loaded into maps in %.1f ms; program: %d instructions verified, "
                  "%d after verification" %
                  (mem["modules"], mem["rows"], mem["table_bytes"] // 1024,
                   mem["fixed_bytes"] // 1024, mem["compile_ns"] / 1e6,
                   mem["load_ns"] / 1e6, mem["verified_insns"], mem["xlated_insns"]))
        clangd = (shutil.which("clangd-14") or shutil.which("clangd")) \
            if os.environ.get("BENCH_KUNWIND_CLANGD", "1") != "0" else None
        if clangd:
            c = subprocess.Popen([clangd], stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            t0 = time.monotonic()
            d = subprocess.Popen([DRIVER, "--mode", "kernel", "--quiet", "--tp", TP,
                                  "-p", str(c.pid)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            buf = ""
            while "ready" not in buf and d.poll() is None:
                r, _, _ = select.select([d.stderr], [], [], 1)
                if r:
                    buf += os.read(d.stderr.fileno(), 4096).decode(errors="replace")
            ready = time.monotonic() - t0
            c.kill()
            c.wait()
            out, _ = d.communicate(timeout=120)
            st = [json.loads(l)["stats"] for l in out.splitlines() if '"stats"' in l]
            if st:
                s = st[0]
                print("tables for %s: %d modules, %d rows, %d KiB in the per-module "
                      "maps + %d KiB shared maps; compiled in %.0f ms, loaded into "
                      "maps in %.0f ms; tracer ready %.2f s after start (BPF load "
                      "and verification included)" %
                      (clangd, s["modules"], s["rows"], s["table_bytes"] // 1024,
                       s["fixed_bytes"] // 1024, s["compile_ns"] / 1e6,
                       s["load_ns"] / 1e6, ready))
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(old_stats)
        shutil.rmtree(TMP, True)
    print("load average after: %s" % open("/proc/loadavg").read().split()[:3])
    return 0


if __name__ == "__main__":
    sys.exit(main())

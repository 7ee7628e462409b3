#!/usr/bin/python3
"""trace.py - cost per event of tracing write() with its user call stack:
bench/trace_target (N write()s of one byte to /dev/null from the bottom of
a 30-deep chain, -O2 without frame pointers), run side by side

  plain      the target alone
  stacksnap  stacksnap trace -e syscalls:sys_enter_write --count -- TARGET
             (capture in the kernel, unwinding + symbolizing + counting in
             the tracer, while the target runs); again with --compact
  perf       perf record -e syscalls:sys_enter_write --call-graph dwarf,
             then perf script (its unwinding happens there, afterwards)
  bpftrace   bpftrace, @[ustack] = count() (frame pointers only)

Reported per tool (median of BENCH_TRACE_REPS runs, default 3): the
target's loop time, added time per event against plain, the tracer's CPU
(and perf script's), bytes per event, events lost, and whether the stacks
are right (all 30 chain functions, main and _start in the most frequent
stack). BENCH_TRACE_N sets N (default 1,000,000)."""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

O = os.environ.get("O", "build")
N = int(os.environ.get("BENCH_TRACE_N", "1000000"))
REPS = int(os.environ.get("BENCH_TRACE_REPS", "3"))
TMP = tempfile.mkdtemp(prefix="stacksnap-trace-bench-")
TARGET = os.path.join(TMP, "trace_target")
STACKSNAP = os.path.join(O, "stacksnap")
CHAIN = ["leaf"] + ["d%d" % i for i in range(29, 0, -1)] + ["main"]


def run(argv, **kw):
    """Runs argv; returns (wall s, exit status, stdout, stderr)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    out, err = p.communicate()
    wall = time.monotonic() - t0
    return wall, p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def cpu_of(argv):
    """(wall, CPU of the whole process tree, rc, out, err) of argv."""
    before = os.times()
    wall, rc, out, err = run(argv)
    after = os.times()
    cpu = (after.children_user - before.children_user) + \
        (after.children_system - before.children_system)
    return wall, cpu, rc, out, err


def loop_time(err):
    m = re.search(r"loop ([\d.]+) s cpu ([\d.]+) s", err)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def chain_ok(names):
    """The 30 chain functions and main, innermost first, in one stack."""
    names = [re.sub(r"\(.*$", "", n) for n in names]
    try:
        i = names.index("leaf")
    except ValueError:
        return False
    return names[i:i + len(CHAIN)] == CHAIN and "_start" in names[i + len(CHAIN):]


def bench_plain():
    _, _, _, _, err = cpu_of([TARGET, str(N)])
    loop, _ = loop_time(err)
    return dict(loop=loop, tracer_cpu=0.0, bytes=0, lost=0, right="-")


def bench_stacksnap(extra=()):
    _, cpu, rc, out, err = cpu_of([STACKSNAP, "trace", "--count"] + list(extra) +
                                  ["-e", "syscalls:sys_enter_write", "--", TARGET, str(N)])
    loop, tcpu = loop_time(err)
    m = re.search(r"(\d+) events captured.*?(\d+) lost.*?([\d.]+) bytes per event", err)
    top = []
    for line in out.splitlines()[1:]:
        if not line.strip():
            break
        top.append(line.strip())
    return dict(loop=loop, tracer_cpu=cpu - (tcpu or 0),
                bytes=float(m.group(3)) if m else None,
                lost=int(m.group(2)) if m else None,
                right="yes" if chain_ok(top) else "no", rc=rc, err=err[-300:])


def bench_perf():
    data = os.path.join(TMP, "perf.data")
    _, cpu, rc, out, err = cpu_of(["perf", "record", "-q", "-o", data, "-e",
                                  "syscalls:sys_enter_write", "--call-graph",
                                  "dwarf", "--", TARGET, str(N)])
    loop, tcpu = loop_time(err)
    size = os.path.getsize(data) if os.path.exists(data) else 0
    lost = re.search(r"Lost (\d+)", err)
    t0 = os.times()
    w, rc2, sout, serr = run(["perf", "script", "-i", data, "-F", "event,ip,sym"])
    t1 = os.times()
    script_cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    events = sout.count("sys_enter_write")
    first = []
    for block in sout.split("\n\n"):
        if "sys_enter_write" in block:
            first = [ln.split()[1] for ln in block.splitlines()[1:] if len(ln.split()) > 1]
            break
    return dict(loop=loop, tracer_cpu=cpu - (tcpu or 0), script_cpu=script_cpu,
                bytes=size / events if events else None,
                lost=(N - events) if events else (int(lost.group(1)) if lost else None),
                right="yes" if chain_ok(first) else "no", rc=rc, err=err[-300:])


def bench_bpftrace():
    if not shutil.which("bpftrace"):
        return None
    prog = ("tracepoint:syscalls:sys_enter_write /pid == cpid/ "
            "{ @[ustack(perf, 64)] = count(); }")
    _, cpu, rc, out, err = cpu_of(["bpftrace", "-e", prog, "-c", "%s %d" % (TARGET, N)])
    loop, tcpu = loop_time(out + err)
    stacks = re.findall(r"@\[\n(.*?)\]: (\d+)", out, re.S)
    stacks.sort(key=lambda s: -int(s[1]))
    top = [ln.split()[1] if len(ln.split()) > 1 else "" for ln in
           (stacks[0][0].splitlines() if stacks else [])]
    top = [re.sub(r"\+\d+$", "", t) for t in top]
    return dict(loop=loop, tracer_cpu=cpu - (tcpu or 0), bytes=None, lost=None,
                right=("yes" if chain_ok(top) else "no (%d distinct stacks; top: %s)"
                       % (len(stacks), ";".join(top[:4]))), rc=rc, err=err[-300:])


def main():
    subprocess.check_call(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-o",
                           TARGET, "bench/trace_target.c"])
    print("== trace: %d write()s from a 30-deep chain; median of %d runs; load %s"
          % (N, REPS, open("/proc/loadavg").read().split()[:3]))
    tools = [("plain", bench_plain), ("stacksnap trace", bench_stacksnap),
             ("stacksnap --compact", lambda: bench_stacksnap(["--compact"])),
             ("perf record+script", bench_perf), ("bpftrace ustack", bench_bpftrace)]
    res = {}
    for rep in range(REPS):
        for name, fn in tools:
            r = fn()
            if r is None:
                continue
            res.setdefault(name, []).append(r)
    base = statistics.median(r["loop"] for r in res["plain"] if r["loop"])
    print("%-20s %9s %12s %11s %11s %10s %8s  %s" % (
        "tool", "loop s", "added us/ev", "tracer CPU", "script CPU", "bytes/ev",
        "lost", "stacks right"))
    for name, _ in tools:
        rs = res.get(name)
        if not rs:
            print("%-20s (not installed)" % name)
            continue
        med = lambda k: statistics.median(r[k] for r in rs if r.get(k) is not None) \
            if any(r.get(k) is not None for r in rs) else None
        loop = med("loop")
        fmt = lambda v, f: (f % v) if v is not None else "-"
        print("%-20s %9s %12s %11s %11s %10s %8s  %s" % (
            name, fmt(loop, "%.3f"),
            fmt((loop - base) / N * 1e6 if loop else None, "%.2f"),
            fmt(med("tracer_cpu"), "%.2f s"), fmt(med("script_cpu"), "%.2f s"),
            fmt(med("bytes"), "%.0f"), fmt(med("lost"), "%d"), rs[-1]["right"]))
        for r in rs:
            if r.get("rc"):
                print("   (%s exited %s: %s)" % (name, r["rc"], r.get("err", "")))
                break
    shutil.rmtree(TMP, True)


if __name__ == "__main__":
    sys.exit(main())

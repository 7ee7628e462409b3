#!/usr/bin/python3
"""trace.py - cost per event of tracing write() with its user call stack:
bench/trace_target (N write()s of one byte to /dev/null from the bottom of
a 30-deep chain, -O2 without frame pointers), run side by side, every
tool once per round, rounds interleaved:

  plain         the target alone
  stacksnap     stacksnap trace -e syscalls:sys_enter_write --count -- TARGET
                (capture in the kernel, unwinding + symbolizing + counting in
                the tracer, while the target runs); again with --compact and
                with --unwind kernel
  breakdown     the same trace with the BPF program cut short (SS_TRACE_EXP,
                measurements only): 1 returns after the pid filter, 2 sends
                the record without the stack copy, 3 builds the whole record
                but sends nothing, 4 wakes the reader at every record (the
                ring buffer's own rule, before batching)
  perf          perf record -e syscalls:sys_enter_write --call-graph dwarf,
                then perf script (its unwinding happens there, afterwards)
  bpftrace      bpftrace, @[ustack] = count() (frame pointers only)

Reported per tool (medians of BENCH_TRACE_REPS rounds, default 3): the
target's loop time (wall) and its CPU time, the time added per event by
each against plain, the rate of events, the tracer's CPU per event (and
perf script's), bytes per event, events lost, and whether the stacks are
right (all 30 chain functions, main and _start in the most frequent
stack). The target's CPU is the steadier figure on a loaded machine: it
holds the BPF program and the wakeup's interrupt, not the waits for a
CPU. BENCH_TRACE_N sets N (default 1,000,000); BENCH_TRACE_TOOLS a comma
list of the tools' names (default: all); BENCH_TRACE_BASE another build
directory, whose stacksnap runs as "before" in the same rounds."""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import json

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


class BpfRunTime:
    """The run time per run of our tracepoint program (trace_tp) while a
    trace runs: bpftool polled every 50 ms (kernel.bpf_stats_enabled on),
    the last sight of the program kept (it is gone when the trace ends;
    the target's last 200 ms are idle). Programs loaded before start are
    other sessions', and so are those loaded since with fewer runs: ours
    is the one that ran the most (once per write of the target)."""

    def __init__(self):
        self.before = set(p["id"] for p in self.progs())
        self.seen = {}
        self.done = threading.Event()
        self.t = threading.Thread(target=self.poll, daemon=True)
        self.t.start()

    @staticmethod
    def progs():
        try:
            out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True,
                                 timeout=10).stdout
            return [p for p in json.loads(out or b"[]") if p.get("name") == "trace_tp"]
        except (OSError, ValueError, subprocess.SubprocessError):
            return []

    def poll(self):
        while not self.done.wait(0.05):
            for p in self.progs():
                if p["id"] not in self.before and p.get("run_cnt"):
                    self.seen[p["id"]] = p

    def ns(self):
        self.done.set()
        self.t.join()
        if not self.seen:
            return None
        p = max(self.seen.values(), key=lambda q: q["run_cnt"])
        return p["run_time_ns"] / p["run_cnt"]


def loop_time(err):
    m = re.search(r"loop ([\d.]+) s cpu ([\d.]+) s", err)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def with_env(env, fn):
    """fn() with os.environ updated by env for its children."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
    loop, tcpu = loop_time(err)
    return dict(loop=loop, tcpu=tcpu, tracer_cpu=0.0, bytes=0, lost=0, right="-")


def bench_stacksnap(extra=(), exe=None):
    rt = BpfRunTime()
    _, cpu, rc, out, err = cpu_of([exe or STACKSNAP, "trace", "--count"] + list(extra) +
                                  ["-e", "syscalls:sys_enter_write", "--", TARGET, str(N)])
    bpf_ns = rt.ns()
    loop, tcpu = loop_time(err)
    m = re.search(r"(\d+) events captured.*?(\d+) lost.*?([\d.]+) bytes per event", err)
    top = []
    for line in out.splitlines()[1:]:
        if not line.strip():
            break
        top.append(line.strip())
    return dict(loop=loop, tcpu=tcpu, tracer_cpu=cpu - (tcpu or 0), bpf_ns=bpf_ns,
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
    return dict(loop=loop, tcpu=tcpu, tracer_cpu=cpu - (tcpu or 0), script_cpu=script_cpu,
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
    return dict(loop=loop, tcpu=tcpu, tracer_cpu=cpu - (tcpu or 0), bytes=None, lost=None,
                right=("yes" if chain_ok(top) else "no (%d distinct stacks; top: %s)"
                       % (len(stacks), ";".join(top[:4]))), rc=rc, err=err[-300:])


def main():
    subprocess.check_call(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-o",
                           TARGET, "bench/trace_target.c"])
    print("== trace: %d write()s from a 30-deep chain; median of %d runs; load %s"
          % (N, REPS, open("/proc/loadavg").read().split()[:3]))
    exp = lambda e: (lambda: with_env({"SS_TRACE_EXP": str(e)}, bench_stacksnap))
    tools = [("plain", bench_plain),
             ("exp1: filter only", exp(1)),
             ("exp2: no stack copy", exp(2)),
             ("exp3: no output", exp(3)),
             ("exp4: wake per record", exp(4)),
             ("stacksnap trace", bench_stacksnap),
             ("stacksnap --unwind kernel", lambda: bench_stacksnap(["--unwind", "kernel"])),
             ("stacksnap --compact", lambda: bench_stacksnap(["--compact"])),
             ("perf record+script", bench_perf), ("bpftrace ustack", bench_bpftrace)]
    base = os.environ.get("BENCH_TRACE_BASE")
    if base:
        tools.insert(6, ("before: stacksnap trace", lambda: bench_stacksnap(
            exe=os.path.join(base, "stacksnap"))))
    want = os.environ.get("BENCH_TRACE_TOOLS")
    if want:
        names = want.split(",")
        tools = [t for t in tools if t[0] == "plain" or any(n in t[0] for n in names)]
    stats_path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(stats_path) as f:
        old_stats = f.read().strip()
    with open(stats_path, "w") as f:
        f.write("1")
    res = {}
    try:
        rounds(tools, res)
    finally:
        with open(stats_path, "w") as f:
            f.write(old_stats)
    report(tools, res)


def rounds(tools, res):
    """REPS rounds, each running every tool once."""
    for rep in range(REPS):
        for name, fn in tools:
            r = fn()
            if r is None:
                continue
            res.setdefault(name, []).append(r)


def report(tools, res):
    """The table: medians per tool, added times against plain."""
    base_loop = statistics.median(r["loop"] for r in res["plain"] if r["loop"])
    base_cpu = statistics.median(r["tcpu"] for r in res["plain"] if r["tcpu"])
    print("%-26s %8s %8s %9s %9s %8s %8s %9s %9s %8s %8s  %s" % (
        "tool", "loop s", "cpu s", "+us/ev", "+cpu us", "bpf us", "kev/s", "tracer us",
        "script s", "bytes", "lost", "stacks right"))
    for name, _ in tools:
        rs = res.get(name)
        if not rs:
            print("%-26s (not installed)" % name)
            continue
        med = lambda k: statistics.median(r[k] for r in rs if r.get(k) is not None) \
            if any(r.get(k) is not None for r in rs) else None
        loop, tcpu, tr = med("loop"), med("tcpu"), med("tracer_cpu")
        fmt = lambda v, f: (f % v) if v is not None else "-"
        bpf = med("bpf_ns")
        print("%-26s %8s %8s %9s %9s %8s %8s %9s %9s %8s %8s  %s" % (
            name, fmt(loop, "%.3f"), fmt(tcpu, "%.3f"),
            fmt((loop - base_loop) / N * 1e6 if loop else None, "%.2f"),
            fmt((tcpu - base_cpu) / N * 1e6 if tcpu else None, "%.2f"),
            fmt(bpf / 1e3 if bpf else None, "%.2f"),
            fmt(N / loop / 1e3 if loop else None, "%.0f"),
            fmt(tr / N * 1e6 if tr is not None else None, "%.2f"),
            fmt(med("script_cpu"), "%.2f"),
            fmt(med("bytes"), "%.0f"), fmt(med("lost"), "%d"), rs[-1]["right"]))
        for r in rs:
            if r.get("rc"):
                print("   (%s exited %s: %s)" % (name, r["rc"], r.get("err", "")))
                break
    print("load after: %s" % open("/proc/loadavg").read().split()[:3])
    shutil.rmtree(TMP, True)


if __name__ == "__main__":
    sys.exit(main())

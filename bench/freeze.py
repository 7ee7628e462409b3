#!/usr/bin/python3
"""freeze.py - the freeze benchmark: one full dump of the stall target by
each tool (stacksnap, eu-stack, gdb, and the two libunwind baselines of
lu_dump), repeated and interleaved with idle windows of the same length,
reporting the stall the target measured, the whole command's wall time and
whether every stack came out complete.

usage: O=build bench/freeze.py [--reps N] [--threads 1,8,64,512] [--modes sleep,spin]
                               [--hog] [--tools all|NAME,NAME...]
                               [--quick] [--timeout S] [--slow-reps N]
                               [--baseline OLD_STACKSNAP]

stacksnap runs three times: by default (the non-stop path from 16 threads
asleep, else every thread stopped: the "path" column says which was
taken), with --nonstop (threads asleep in the kernel read without being
stopped, whatever their number) and with --freeze-all (every thread
stopped). --hog runs everything with a CPU hog on every core. --tools
picks the rows (default: all but "libunwind ptrace", which takes ~1 s a
run at 64 threads; `--tools all` adds it); `--threads 1,8,64` with the
default tools takes ~3 minutes on a quiet 2-core machine.

--baseline runs another stacksnap binary (e.g. main's build) too, by
default, with --nonstop and with --freeze-all ("baseline" rows), interleaved with the
others: before/after figures under one load. With --tools, name them
"baseline", "baseline --nonstop" and "baseline --freeze-all".

Bounded time (512 threads, --hog): every tool run has a timeout (--timeout,
default 60 s; a run that times out counts as failed, and the tool's other
runs in that configuration are skipped: "timed out" in the notes); gdb and
the libunwind ptrace baseline run --slow-reps times (default 2) from 256
threads on; the target must be ready within 120 s. --quick is --reps 3
--slow-reps 1 --timeout 30 and no unmeasured warm-up run of the slow tools:
`--threads 512 --quick` and `--hog --quick` are the runs that show the
512-thread and loaded tables in minutes rather than hours.
"""
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import O, BENCH, TOOL_CPU, Target, run_tool, med, fmt, table, load, hogs, stop_hogs, bench_args  # noqa: E402

DEPTH = 40  # chain_a/b/c frames per worker thread (plus ~10 more)

TOOLS = [
    ("stacksnap", lambda pid: [os.path.join(O, "stacksnap"), "--json", str(pid)]),
    ("stacksnap --nonstop", lambda pid: [os.path.join(O, "stacksnap"), "--json",
                                         "--nonstop", str(pid)]),
    ("stacksnap --freeze-all", lambda pid: [os.path.join(O, "stacksnap"), "--json",
                                            "--freeze-all", str(pid)]),
    ("eu-stack", lambda pid: ["eu-stack", "-p", str(pid)]),
    ("gdb", lambda pid: ["gdb", "-batch", "-nx", "-ex", "thread apply all bt", "-p", str(pid)]),
    ("libunwind ptrace", lambda pid: [os.path.join(BENCH, "lu_dump"), "--ptrace", str(pid)]),
    ("libunwind copy", lambda pid: [os.path.join(BENCH, "lu_dump"), "--copy", str(pid)]),
]

# After a tool exits, wait this long before reading the stats (so every
# thread has woken and recorded); the idle window waits the same.
SETTLE = 0.02
IDLE_CAP = 2.0


SLOW_TOOLS = {"libunwind ptrace"}
# Tools whose dump of hundreds of threads takes seconds to minutes: fewer
# repetitions from SLOW_FROM threads on.
SLOW_AT_SCALE = {"gdb", "libunwind ptrace"}
SLOW_FROM = 256


def parse_stacksnap(out):
    d = json.loads(out)
    return ({t["tid"]: ([f.get("function") or "??" for f in t["frames"]], t["complete"])
             for t in d["threads"]}, d.get("freeze_us"),
            (d.get("path", "?"), d.get("read_nonstop", 0), len(d["threads"])))


def parse_blocks(out, start_re, frame_re, bottom):
    """Threads of eu-stack, gdb or lu_dump output: {tid: (function names,
    whether the walk reached the bottom of the stack)}; bottom(header line,
    names) says the latter."""
    threads, cur, head = {}, None, ""
    for line in out.splitlines() + ["TID 0:"]:
        m = start_re.search(line)
        if m or line == "TID 0:":
            if cur is not None:
                threads[cur[0]] = (cur[1], bottom(head, cur[1]))
            cur, head = ((int(m.group(1)), []), line) if m else (None, "")
            continue
        m = frame_re.match(line)
        if m and cur is not None:
            cur[1].append(m.group(1))
    return threads


EU_START = re.compile(r"^TID (\d+):")
EU_FRAME = re.compile(r"^#\d+\s+0x[0-9a-f]+\s*(\S*)")
GDB_START = re.compile(r"^Thread \d+ .*\(LWP (\d+)\)")
GDB_FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(")
LU_FRAME = re.compile(r"^#\d+\s+0x[0-9a-f]+ (\S+?)\+0x")
CHAIN = re.compile(r"^chain_[abc]$")


def bottom_by_name(head, names):
    # gdb stops at main by design (backtrace past-main is off).
    return bool(names) and ("clone" in names[-1] or names[-1] == "_start"
                            or (names[-1] == "main" and "thread_main" not in names))


def parse(tool, out, err):
    text = out.decode(errors="replace")
    if tool.startswith("stacksnap") or tool.startswith("baseline"):
        return parse_stacksnap(text)
    return parse_other(tool, text, err) + (None,)


def parse_other(tool, text, err):
    freeze = None
    m = re.search(r"freeze_us=([\d.]+)", err.decode(errors="replace"))
    if m:
        freeze = float(m.group(1))
    if tool == "eu-stack":
        return parse_blocks(text, EU_START, EU_FRAME, bottom_by_name), freeze
    if tool == "gdb":
        return parse_blocks(text, GDB_START, GDB_FRAME, bottom_by_name), freeze
    # libunwind names libc's frames by its dynamic symbols only (nearest
    # exported name), so the bottom is what unw_step said.
    return parse_blocks(text, EU_START, LU_FRAME,
                        lambda head, names: "end of stack" in head), freeze


def thread_complete(names, bottom, target):
    """The same test for every tool: the walk reached the bottom of the
    stack and has every frame of the target's own code that the thread is
    known to have (a frame missed in the middle counts as incomplete)."""
    if not names or not bottom:
        return False
    if "thread_main" not in names:  # the main thread: pause, main, ..., _start
        return "main" in names
    return ("compare_then_work" in names and "enter_libc" in names
            and any("qsort" in n for n in names)
            and sum(1 for n in names if CHAIN.match(n)) == target.depth
            and names.count("hop_enter") == target.nhops)


def dump_complete(threads, target):
    good = sum(1 for names, bottom in threads.values()
               if thread_complete(names, bottom, target))
    return good, target.threads + 1


def run_config(mode, nthreads, reps, results, tools, bound):
    try:
        target = Target(nthreads, mode, depth=DEPTH, ready_timeout=120)
    except RuntimeError as e:
        print("  (%s %d: %s)" % (mode, nthreads, e))
        return
    timed_out = set()
    try:
        # One unmeasured run per tool: page cache and any on-disk caches
        # warm for everyone alike (not of the slow ones in --quick).
        for name, argv in tools:
            if bound.quick and name in SLOW_AT_SCALE and nthreads >= SLOW_FROM:
                continue
            code = run_tool(argv(target.pid), keep_output=False, timeout=bound.timeout)[0]
            if code < 0:
                os.kill(target.pid, signal.SIGCONT)
        for rep in range(reps):
            # Rotate the order so no tool always follows the same one.
            order = tools[rep % len(tools):] + tools[:rep % len(tools)]
            for name, argv in order:
                r = results.setdefault((mode, nthreads, name), {
                    "stall": [], "thread": [], "idle": [], "idle_thread": [],
                    "wall": [], "complete": 0, "runs": 0, "freeze": [],
                    "incomplete": [], "failed": [], "paths": []})
                if name in timed_out or (name in SLOW_AT_SCALE and nthreads >= SLOW_FROM
                                         and r["runs"] >= bound.slow_reps):
                    continue
                target.reset()
                code, out, err, wall, _, _ = run_tool(argv(target.pid),
                                                      timeout=bound.timeout)
                if wall >= bound.timeout - 0.1:
                    timed_out.add(name)
                    r["failed"].append("timed out after %d s (its other runs skipped)"
                                       % bound.timeout)
                if code < 0:
                    # A tool killed (timeout) or crashed while attached
                    # with PTRACE_ATTACH leaves the target in a group stop
                    # (its SIGSTOP delivered after the detach): every
                    # later row would dump a stopped process (seen: lu_dump
                    # --copy crashing at 512 spinners, then "stall 0" and
                    # every spinner "read non-stop" in all rows).
                    os.kill(target.pid, signal.SIGCONT)
                time.sleep(SETTLE)
                stall, per_thread = target.read()
                # Idle window of the same length (capped, so that a tool
                # taking seconds does not double the run): the noise floor.
                target.reset()
                time.sleep(min(wall, IDLE_CAP) + SETTLE)
                idle, idle_thread = target.read()
                r["stall"].append(stall)
                r["thread"].append(per_thread)
                r["idle"].append(idle)
                r["idle_thread"].append(idle_thread)
                r["wall"].append(wall * 1e3)
                r["runs"] += 1
                if code != 0:
                    r["failed"].append("exit %d: %s" % (code, err.decode(errors="replace").strip()[-200:]))
                try:
                    threads, freeze, path = parse(name, out, err)
                except (ValueError, KeyError) as e:
                    threads, freeze, path = {}, None, None
                    r["failed"].append("unparsable output: %s" % e)
                if path:
                    r["paths"].append(path)
                if freeze is not None:
                    r["freeze"].append(freeze)
                good, want = dump_complete(threads, target)
                if good == want and len(threads) == want:
                    r["complete"] += 1
                else:
                    r["incomplete"].append("%d/%d threads complete" % (good, want))
    finally:
        target.stop()


def report(mode, nthreads, results):
    what = ("process-wide gap (no thread read the clock)" if mode == "spin"
            else "largest wake-up lateness of any thread")
    print("\n### %d %s thread%s (+ main): stall = %s, us\n"
          % (nthreads, "spinning" if mode == "spin" else "sleeping",
             "s" if nthreads > 1 else "", what))
    base = results.get((mode, nthreads, "stacksnap"))
    rows = []
    for name, _ in TOOLS:
        r = results.get((mode, nthreads, name))
        if not r:
            continue
        st, wall = med(r["stall"]), med(r["wall"])
        ratio_s = ratio_w = "-"
        if base and name != "stacksnap":
            ratio_s = "%.1fx" % (st / med(base["stall"])) if med(base["stall"]) else "-"
            ratio_w = "%.1fx" % (wall / med(base["wall"])) if med(base["wall"]) else "-"
        path = "-"
        if r["paths"]:
            kinds = sorted(set(p[0] for p in r["paths"]))
            path = "/".join(kinds)
            if "non-stop" in kinds:
                path += " %s/%d" % (fmt(med([p[1] for p in r["paths"]])), r["paths"][0][2])
        rows.append([name, path,
                     fmt(st), fmt(max(r["stall"]) if r["stall"] else None),
                     "%s / %s" % (fmt(med(r["idle"])), fmt(max(r["idle"]) if r["idle"] else None)),
                     fmt(med(r["freeze"])) if r["freeze"] else "-",
                     "%s (%s-%s)" % (fmt(wall, 1), fmt(min(r["wall"]) if r["wall"] else None, 1),
                                     fmt(max(r["wall"]) if r["wall"] else None, 1)),
                     "%d/%d" % (r["complete"], r["runs"]),
                     ratio_s, ratio_w])
    table(["tool", "path (read non-stop / threads)", "stall med", "stall max", "idle med / max", "own freeze med",
           "wall ms med (min-max)", "complete", "stall vs stacksnap", "wall vs stacksnap"], rows)
    summary(mode, nthreads, results)
    for name, _ in TOOLS:
        r = results.get((mode, nthreads, name))
        if r and (r["failed"] or r["incomplete"]):
            notes = sorted(set(r["failed"] + r["incomplete"]))
            print("  %s: %s" % (name, "; ".join(notes[:3])))


def summary(mode, nthreads, results):
    """The question of the non-stop capture, in one line: does it pay
    against --freeze-all and where does it stand against eu-stack, beside
    the idle noise of the same run."""
    def get(name):
        r = results.get((mode, nthreads, name))
        return (med(r["stall"]), med(r["wall"]), med(r["idle"])) if r else None
    ns, fa, eu = get("stacksnap --nonstop"), get("stacksnap --freeze-all"), get("eu-stack")
    parts = []
    if ns and fa:
        parts.append("--nonstop / --freeze-all: stall %.2fx, wall %.2fx"
                     % (ns[0] / fa[0] if fa[0] else 0, ns[1] / fa[1] if fa[1] else 0))
    for label, x in (("--nonstop", ns), ("--freeze-all", fa)):
        if x and eu:
            parts.append("%s / eu-stack: stall %.2fx" % (label, x[0] / eu[0] if eu[0] else 0))
    df, bl = get("stacksnap"), get("baseline")
    if df and bl:
        parts.append("stacksnap / baseline: stall %.2fx, wall %.2fx"
                     % (df[0] / bl[0] if bl[0] else 0, df[1] / bl[1] if bl[1] else 0))
    nb = get("baseline --nonstop")
    if ns and nb:
        parts.append("--nonstop / baseline's: wall %.2fx" % (ns[1] / nb[1] if nb[1] else 0))
    fb = get("baseline --freeze-all")
    if fa and fb:
        parts.append("--freeze-all / baseline's: stall %.2fx"
                     % (fa[0] / fb[0] if fb[0] else 0))
    idle = [x[2] for x in (ns, fa, eu) if x]
    if idle:
        parts.append("idle noise med %s us" % fmt(med(idle)))
    if parts:
        print("  summary: " + "; ".join(parts))


def add_baseline(argv):
    """--baseline PATH out of argv: rows for that binary, by default, with
    --nonstop and with --freeze-all, after the stacksnap rows."""
    if "--baseline" not in argv:
        return
    i = argv.index("--baseline")
    if i + 1 >= len(argv):
        sys.exit("freeze.py: --baseline needs a stacksnap binary")
    exe = os.path.abspath(argv[i + 1])
    del argv[i:i + 2]
    TOOLS[3:3] = [
        ("baseline", lambda pid: [exe, "--json", str(pid)]),
        ("baseline --nonstop", lambda pid: [exe, "--json", "--nonstop", str(pid)]),
        ("baseline --freeze-all", lambda pid: [exe, "--json", "--freeze-all", str(pid)]),
    ]


def pick_tools(argv):
    """--tools all|NAME,... out of argv (bench_args knows only the shared
    options)."""
    want = None
    if "--tools" in argv:
        i = argv.index("--tools")
        want = argv[i + 1] if i + 1 < len(argv) else ""
        del argv[i:i + 2]
    if want == "all":
        return list(TOOLS)
    if want:
        names = set(want.split(","))
        unknown = names - {n for n, _ in TOOLS}
        if unknown:
            sys.exit("freeze.py: unknown tools %s (known: %s)"
                     % (", ".join(sorted(unknown)), ", ".join(n for n, _ in TOOLS)))
        return [t for t in TOOLS if t[0] in names]
    return [t for t in TOOLS if t[0] not in SLOW_TOOLS]


class Bound:
    """--quick, --timeout S, --slow-reps N out of argv (bench_args knows
    only the shared options); --quick also sets --reps 3 unless given."""

    def __init__(self, argv):
        def take(flag, has_value=True):
            if flag not in argv:
                return None
            i = argv.index(flag)
            v = argv[i + 1] if has_value and i + 1 < len(argv) else True
            del argv[i:i + (2 if has_value else 1)]
            return v
        self.quick = bool(take("--quick", False))
        t, sr = take("--timeout"), take("--slow-reps")
        self.timeout = float(t) if t else (30.0 if self.quick else 60.0)
        self.slow_reps = int(sr) if sr else (1 if self.quick else 2)
        if self.quick and "--reps" not in argv:
            argv += ["--reps", "3"]


def main():
    add_baseline(sys.argv)
    tools = pick_tools(sys.argv)
    bound = Bound(sys.argv)
    t_start = time.monotonic()
    a = bench_args("1,8,64")
    # This orchestrator polls for the tool's exit while it runs: kept off
    # the target's CPU, it cannot be what makes the target's threads late.
    os.sched_setaffinity(0, {TOOL_CPU})
    print("== freeze: one full dump per tool, %d reps interleaved with equal idle windows" % a.reps)
    print("target pinned to CPU %d, tools to CPU %d; %d-deep chains (-O2, no frame pointers), "
          "through qsort in libc; load average before: %s"
          % (1, 0, DEPTH, " ".join(load())))
    print("own freeze = what the tool reports (stacksnap --json freeze_us, lu_dump's "
          "stop..detach); complete = runs where every thread's stack reached the bottom "
          "with every expected frame")
    print("load: %s" % ("a CPU hog (busy loop) pinned to every core, normal priority"
                        if a.hog else "no hog"))
    print("bounds: timeout %d s a run; %s at %d+ threads: %d reps%s"
          % (bound.timeout, "/".join(sorted(SLOW_AT_SCALE)), SLOW_FROM, bound.slow_reps,
             "; --quick" if bound.quick else ""))
    results = {}
    hog = hogs() if a.hog else []
    try:
        for mode in a.modes.split(","):
            for n in [int(x) for x in a.threads.split(",")]:
                run_config(mode, n, a.reps, results, tools, bound)
                report(mode, n, results)
    finally:
        stop_hogs(hog)
    print("load average after: %s; %.0f s" % (" ".join(load()), time.monotonic() - t_start))


if __name__ == "__main__":
    main()

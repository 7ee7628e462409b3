"""common.py - helpers shared by the benchmark drivers: starting the stall
target, running a tool with its wall time, CPU time and peak RSS, medians
and table printing."""
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import mmap

O = os.environ.get("O", "build")
BENCH = os.path.join(O, "bench")
TARGET_CPU = 1  # the target's CPU in the pinned runs
TOOL_CPU = 0    # the tool's CPU

STATS_MAGIC = 0x6c6c617473626e73
# struct stall_stats: magic, nthreads/mode, proc_gap_ns, last_progress_ns,
# pad[4], then 64-byte slots {max_gap_ns, loops, pad[6]}.
HDR = 64
SLOT = 64


def pin(cpu):
    """preexec_fn pinning the child to one CPU (no taskset exec in the
    timed path)."""
    return lambda: os.sched_setaffinity(0, {cpu})


class Target:
    """A running stall_target and its shared stats file."""

    def __init__(self, threads, mode, depth=40, nhops=0, cpu=TARGET_CPU,
                 ready_timeout=None):
        self.dir = tempfile.mkdtemp(prefix="stacksnap-bench-")
        self.stats_path = os.path.join(self.dir, "stats")
        self.threads, self.mode, self.depth, self.nhops = threads, mode, depth, nhops
        argv = [os.path.join(BENCH, "stall_target"), "--threads", str(threads),
                "--mode", mode, "--depth", str(depth), "--stats", self.stats_path]
        if nhops:
            argv += ["--hops", os.path.join(BENCH, "libhop.so"), "--nhops", str(nhops)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     preexec_fn=pin(cpu) if cpu is not None else None)
        if ready_timeout is not None:
            import select
            if not select.select([self.proc.stdout], [], [], ready_timeout)[0]:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("stall_target not ready after %d s" % ready_timeout)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("ready"):
            raise RuntimeError("stall_target did not start: %r" % line)
        self.pid = self.proc.pid
        f = open(self.stats_path, "r+b")
        self.map = mmap.mmap(f.fileno(), 0)
        f.close()
        magic, = struct.unpack_from("<Q", self.map, 0)
        assert magic == STATS_MAGIC
        time.sleep(0.2)  # let every thread settle into its loop

    def reset(self):
        # proc_gap_ns at 16; every slot's max_gap_ns. The target keeps
        # running; see record_max() in stall_target.c for the race.
        struct.pack_into("<Q", self.map, 16, 0)
        for i in range(self.threads):
            struct.pack_into("<Q", self.map, HDR + i * SLOT, 0)

    def read(self):
        """(process-wide gap or lateness, largest per-thread value), in us."""
        proc, = struct.unpack_from("<Q", self.map, 16)
        per = max(struct.unpack_from("<Q", self.map, HDR + i * SLOT)[0]
                  for i in range(self.threads))
        return proc / 1e3, per / 1e3

    def stop(self):
        self.proc.terminate()  # SIGTERM: the target removes its hop copies
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.map.close()
        try:
            os.unlink(self.stats_path)
            os.rmdir(self.dir)
        except OSError:
            pass


def run_tool(argv, cpu=TOOL_CPU, keep_output=True, timeout=60, env=None):
    """Runs argv; returns (exit code, stdout bytes, stderr bytes, wall s,
    CPU s, peak RSS KiB), with the child's own rusage from wait4. Output
    goes to unlinked temporary files, so the tool never blocks on a pipe
    and the parent does no work while the tool runs."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out if keep_output else subprocess.DEVNULL,
                             stderr=err, env=env,
                             preexec_fn=pin(cpu) if cpu is not None else None)
        # Popen.wait() would reap the child and lose its rusage: wait4
        # blocks in the common case, polls only once the tool is slow.
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            # Killed before the blocking wait, whatever the sleeps
            # overshot: a sleep that jumped past the deadline used to
            # skip the kill and wait forever (eu-stack stuck in wait4 at
            # 512 spinners under a hog, load 500).
            if time.perf_counter() >= deadline:
                p.kill()  # reported as a failure (exit -9) by the caller
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.001 if time.perf_counter() - t0 < 1 else 0.05)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (p.returncode, out.read(), err.read(), wall,
                ru.ru_utime + ru.ru_stime, ru.ru_maxrss)


def med(v):
    return statistics.median(v) if v else float("nan")


def fmt(x, digits=0):
    if x is None or x != x:
        return "-"
    if digits == 0:
        return "{:,.0f}".format(x)
    return "{:,.{}f}".format(x, digits)


def table(header, rows):
    """Prints a Markdown table (readable as text too)."""
    w = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i])
                                       for i, c in enumerate(r)) + " |"
    print(line(header))
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for r in rows:
        print(line(r))
    sys.stdout.flush()


def bench_args(threads):
    """The options the freeze benchmarks share: --reps, --threads (default
    `threads`), --modes, --hog."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", default=threads)
    ap.add_argument("--modes", default="sleep,spin")
    ap.add_argument("--hog", action="store_true")
    return ap.parse_args()


def hogs():
    """A CPU hog on every core: one busy shell loop pinned to each CPU, at
    normal priority (the loaded-machine runs). Kill them when done."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], preexec_fn=pin(c))
            for c in range(os.cpu_count())]


def stop_hogs(procs):
    for p in procs:
        p.kill()
        p.wait()


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def _sizes(cache_dir):
    """(name, size) of every file under cache_dir. The writer makes each
    file under a temporary name and renames it into place: a name listed
    by os.walk may be gone by the time its size is asked (then it is left
    out, and the listing differs from the next one)."""
    for d, _, fs in os.walk(cache_dir):
        for f in fs:
            try:
                yield f, os.path.getsize(os.path.join(d, f))
            except FileNotFoundError:
                pass


def settle_dir(cache_dir, tries=600):
    """Waits (up to tries/10 s) until a stacksnap run's detached cache
    writer is done with cache_dir (its files unchanged for a second): a
    writer still inflating and compiling on one of the two CPUs would
    slow whatever runs next."""
    settled, last = 0, None
    for _ in range(tries):
        now = sorted(_sizes(cache_dir))
        # A file still under its temporary name (".tmp.PID.N") is being
        # written: not settled, whatever its size.
        busy = any(".tmp." in f for f, _ in now)
        settled = settled + 1 if now == last and now and not busy else 0
        last = now
        if settled >= 10:
            break
        time.sleep(0.1)

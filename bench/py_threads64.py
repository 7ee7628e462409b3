"""py_threads64.py - 64 Python threads asleep 9 calls deep, for
BENCHMARKS.md's runtime-frames cost: compare
`stacksnap --stats --freeze-all PID` with `... --runtime=off PID`.

    python3.X bench/py_threads64.py          the target (sleeps 1000 s)
    python3 bench/py_threads64.py --measure [--runs N] PYTHON...

--measure starts the target under every PYTHON given (all at once, so
they share the machine's load), then runs, N times (21 by default) and
in turn for each target, `stacksnap --stats --freeze-all PID` and the
same with --runtime=off (alternating which goes first), and prints per
interpreter the median freeze of each, what the frames added, the median
of the `runtime:` line (the frame chains' own time and system calls), and
the freeze without its stop phase (registers, copies, frame chains,
detach: the stop phase, the wait for 64 threads to reach their
interrupt, varies by milliseconds on a loaded machine and hides the
rest), with the load average before and after. The stacksnap binary is
$O/stacksnap (O=build by default)."""
import os
import re
import statistics
import subprocess
import sys
import threading
import time

THREADS = 64


def f(n):
    if n:
        return f(n - 1)
    time.sleep(1000)


def target():
    for _ in range(THREADS - 1):
        threading.Thread(target=f, args=(8,), daemon=True).start()
    time.sleep(1000)


FREEZE = re.compile(r"^stacksnap: freeze ([0-9.]+) us")
STOP = re.compile(r"^stacksnap: freeze phases: stop ([0-9.]+) us")
RUNTIME = re.compile(r"^stacksnap: runtime: .*: ([0-9.]+) us, ([0-9]+) reads")


def dump(tool, pid, off):
    argv = [tool, "--stats", "--freeze-all"] + (["--runtime=off"] if off else []) + [str(pid)]
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, check=True)
    freeze = stop = chain = reads = None
    for line in r.stderr.splitlines():
        m = FREEZE.match(line)
        if m:
            freeze = float(m.group(1))
        m = STOP.match(line)
        if m:
            stop = float(m.group(1))
        m = RUNTIME.match(line)
        if m:
            chain, reads = float(m.group(1)), int(m.group(2))
    if freeze is None or stop is None:
        raise SystemExit("py_threads64: no freeze lines from %s" % " ".join(argv))
    return freeze, freeze - stop, chain, reads


def start(python):
    p = subprocess.Popen([python, os.path.abspath(__file__)])
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if len(os.listdir("/proc/%d/task" % p.pid)) >= THREADS:
                break
        except FileNotFoundError:
            raise SystemExit("py_threads64: %s exited" % python)
        time.sleep(0.1)
    else:
        p.kill()
        raise SystemExit("py_threads64: %s did not start %d threads" % (python, THREADS))
    time.sleep(1)   # every thread asleep in f(0)
    return p


def measure(argv):
    runs = 21
    if argv[:1] == ["--runs"]:
        runs, argv = int(argv[1]), argv[2:]
    if not argv:
        raise SystemExit(__doc__)
    tool = os.path.join(os.environ.get("O", "build"), "stacksnap")
    procs = []
    try:
        for py in argv:
            procs.append(start(py))
        load0 = os.getloadavg()
        res = {py: {"on": [], "off": [], "on_rest": [], "off_rest": [],
                    "chain": [], "reads": []} for py in argv}
        for i in range(runs):
            for py, p in zip(argv, procs):
                for off in ((False, True) if i % 2 == 0 else (True, False)):
                    freeze, rest, chain, reads = dump(tool, p.pid, off)
                    res[py]["off" if off else "on"].append(freeze)
                    res[py]["off_rest" if off else "on_rest"].append(rest)
                    if not off and chain is not None:
                        res[py]["chain"].append(chain)
                        res[py]["reads"].append(reads)
        load1 = os.getloadavg()
    finally:
        for p in procs:
            p.kill()
            p.wait()
    print("load %.1f %.1f %.1f before, %.1f %.1f %.1f after; %d runs each, medians"
          % (load0 + load1 + (runs,)))
    print("| interpreter | freeze, merged | freeze, `--runtime=off` | added "
          "| frame chains (`runtime:` line) | system calls "
          "| freeze without its stop, merged | `--runtime=off` |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    us = lambda v: format(round(v), ",") + " µs"
    for py in argv:
        r = res[py]
        on, off = statistics.median(r["on"]), statistics.median(r["off"])
        chain = statistics.median(r["chain"]) if r["chain"] else float("nan")
        reads = statistics.median(r["reads"]) if r["reads"] else 0
        print("| %s | %s | %s | %+.0f%% | %s | %g | %s | %s |"
              % (py, us(on), us(off), 100 * (on - off) / off, us(chain), reads,
                 us(statistics.median(r["on_rest"])),
                 us(statistics.median(r["off_rest"]))))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        measure(sys.argv[2:])
    else:
        target()

#!/usr/bin/python3
"""perf_script_xz.py - `stacksnap perf-script` against `perf script
--no-inline` on the same recordings of xz (issue 37's perf-script row):
CPU and wall of each, medians of interleaved runs, output to /dev/null,
the cache warm (a first replay filled it).

Recordings (made once, kept with --keep DIR): `perf record -e cpu-clock
-F 999 --call-graph dwarf,16384 -- xz -9 -k -f -T1 INPUT`, INPUT text lines
as bench/profiles.py writes them: 1,200,000 lines (18 MB; ~29,000 samples,
~500 MB) for "xz", 20,000 lines (~150 samples) for "xz small".

usage: O=build bench/perf_script_xz.py [--reps N] [--keep DIR] [--small-only]
                                         [--base OTHER_STACKSNAP]
--base: a second stacksnap binary (an older build) run interleaved with
this one, for before/after in the same run.
"""
import argparse
import hashlib
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import O, run_tool, med, fmt, table, load  # noqa: E402

SS = os.path.join(O, "stacksnap")
RECORDINGS = [("xz small", "xz-small", 20000), ("xz", "xz", 1200000)]


def make_input(path, lines):
    with open(path, "wb") as f:  # compressible but not trivial (profiles.py's)
        for i in range(lines):
            f.write(b"%08d %s\n" % (i * 7919 % 1000003, b"abcdefghij"[: i % 11]))


def record(d, name, lines):
    data = os.path.join(d, name + ".data")
    if os.path.exists(data):
        return data
    inp = os.path.join(d, name + ".in")
    make_input(inp, lines)
    # -B: no build-id pass at the end (perf 6.1 aborted there once on the
    # 500 MB recording); both replays find the files by their paths.
    code, _, err, _, _, _ = run_tool(
        ["perf", "record", "-q", "-B", "-e", "cpu-clock", "-F", "999", "--call-graph",
         "dwarf,16384", "-o", data + ".tmp", "--", "xz", "-9", "-k", "-f", "-T1", inp],
        cpu=None, timeout=3600)
    for f in (inp, inp + ".xz"):
        if os.path.exists(f):
            os.unlink(f)
    if code != 0:
        print("perf record failed (exit %d): %s" % (code, err.decode(errors="replace")[-300:]))
        return None
    os.rename(data + ".tmp", data)
    return data


def samples_of(data):
    code, out, _, _, _, _ = run_tool(["perf", "script", "-i", data, "-G", "-F", "tid"],
                                     cpu=None, timeout=600)
    return len(out.splitlines()) if code == 0 else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--keep", help="directory for the recordings (reused when there)")
    ap.add_argument("--small-only", action="store_true")
    ap.add_argument("--base", help="another stacksnap binary, run interleaved")
    a = ap.parse_args()
    if not shutil.which("perf") or not shutil.which("xz"):
        print("perf or xz not installed: skipped")
        return
    d = a.keep or tempfile.mkdtemp(prefix="stacksnap-psxz-")
    os.makedirs(d, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="stacksnap-psxz-cache-")
    env = dict(os.environ, STACKSNAP_CACHE_DIR=cache)
    print("== perf-script vs perf script --no-inline on recordings of xz -9: CPU s, "
          "medians of %d interleaved runs, output to /dev/null, stacksnap's cache warm; "
          "load average at start: %s" % (a.reps, " ".join(load())))
    try:
        for label, name, lines in RECORDINGS:
            if a.small_only and name != "xz-small":
                continue
            data = record(d, name, lines)
            if not data:
                continue
            n = samples_of(data)
            print("\n### %s: %d samples, perf.data %.1f MB\n"
                  % (label, n, os.path.getsize(data) / 1e6))
            tools = [("perf script --no-inline", ["perf", "script", "--no-inline", "-i", data]),
                     ("stacksnap perf-script --no-inline", [SS, "perf-script", "--no-inline", data]),
                     ("stacksnap perf-script", [SS, "perf-script", data])]
            if a.base:
                tools += [("base: stacksnap perf-script --no-inline",
                           [a.base, "perf-script", "--no-inline", data]),
                          ("base: stacksnap perf-script", [a.base, "perf-script", data])]
            outs = {}
            for tname, argv in tools[1:]:  # fill the cache; keep the text
                _, out, _, _, _, _ = run_tool(argv, cpu=None, timeout=600, env=env)
                outs[tname] = hashlib.sha256(out).hexdigest()
            if a.base:
                for mode in ("stacksnap perf-script --no-inline", "stacksnap perf-script"):
                    print("output of `%s`, this build and base: %s" % (
                        mode[10:], "byte-identical" if outs[mode] == outs["base: " + mode]
                        else "DIFFERENT"))
            res = {}
            for _ in range(a.reps):
                for tname, argv in tools:
                    code, _, err, wall, cpu, rss = run_tool(argv, keep_output=False, cpu=None,
                                                            timeout=600, env=env)
                    r = res.setdefault(tname, {"cpu": [], "wall": [], "rss": [], "fail": None})
                    r["cpu"].append(cpu)
                    r["wall"].append(wall)
                    r["rss"].append(rss)
                    if code:
                        r["fail"] = "exit %d: %s" % (code, err.decode(errors="replace")[-100:])
            base = med(res["perf script --no-inline"]["cpu"])
            rows = []
            for tname, _ in tools:
                r = res[tname]
                c = med(r["cpu"])
                rows.append([tname, fmt(c, 3), "%s-%s" % (fmt(min(r["cpu"]), 3), fmt(max(r["cpu"]), 3)),
                             fmt(med(r["wall"]), 3), fmt(c / n * 1e6, 1) if n else "-",
                             fmt(max(r["rss"]) / 1024, 1),
                             "%.1fx" % (base / c) if c > 0 else "-", r["fail"] or "ok"])
            table(["replay", "CPU s med", "CPU s min-max", "wall s med", "CPU us / sample",
                   "peak RSS MB", "perf script --no-inline CPU / this", "status"], rows)
        print("\nload average at end: %s" % " ".join(load()))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

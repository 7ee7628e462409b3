#!/usr/bin/python3
"""watch_stopped - the share of a `stacksnap watch` run its target spends
stopped, on a C, a Python and a Go program, at the default 10 ms
interval for 3 s: with the default bound (--max-stopped 1%), without one
(--max-stopped 100), and with an earlier build given as BEFORE=PATH
(which had neither the bound nor the tracer's SCHED_FIFO window).
Medians of RUNS runs (default 3), with the range; the share is the
watch's own stopped_ns.total / elapsed_ns (the time from each sample's
first interrupt to its last resume).

  bench/watch_stopped.py            BEFORE=/work/main/build/stacksnap bench/watch_stopped.py

Targets: tests/targets/walker_target.c spin 4 (5 threads, gcc -O2),
tests/targets/py_watch.py (5 threads, python3), tests/targets/go_profile.go
(go build; ~10 threads, 25 goroutines)."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

O = os.environ.get('O', 'build')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SS = os.path.join(ROOT, O, 'stacksnap')
RUNS = int(os.environ.get('RUNS', '3'))
tmp = tempfile.mkdtemp(prefix='watch-stopped-')
env = dict(os.environ, STACKSNAP_CACHE_DIR=os.path.join(tmp, 'cache'))


def build():
    c = os.path.join(tmp, 'walker_target')
    subprocess.check_call(['gcc', '-O2', '-g', '-fomit-frame-pointer', '-o', c,
                           os.path.join(ROOT, 'tests/targets/walker_target.c'),
                           '-lpthread', '-ldl'])
    targets = [('C (5 threads)', [c, 'spin', '4'], 'ready')]
    targets.append(('Python (5 threads)', ['python3', os.path.join(
        ROOT, 'tests/targets/py_watch.py'), tmp], 'ready'))
    go = shutil.which('go')
    if go:
        g = os.path.join(tmp, 'go_profile')
        genv = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, 'gocache'),
                    GOTOOLCHAIN='local', GO111MODULE='off')
        subprocess.check_call([go, 'build', '-o', g, os.path.join(
            ROOT, 'tests/targets/go_profile.go')], env=genv)
        targets.append(('Go (goroutines)', [g], 'ready'))
    return targets


def start(argv, word):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith(word):
            break
    return p


def share(ss, pid, extra):
    r = subprocess.run([ss, 'watch', '-i', '10ms', '-d', '3s', '--json'] + extra +
                       [str(pid)], capture_output=True, text=True, env=env)
    d = json.loads(r.stdout)
    return d['stopped_ns']['total'] / d['elapsed_ns'], d['samples']


def main():
    configs = []
    if os.environ.get('BEFORE'):
        configs.append(('before (%s)' % os.environ['BEFORE'], os.environ['BEFORE'], []))
    configs += [('no bound (--max-stopped 100)', SS, ['--max-stopped', '100']),
                ('default (bound 1%)', SS, [])]
    print('== watch_stopped: share of a 3 s watch -i 10ms the target spends stopped, '
          'median of %d (load average %s)' % (RUNS, open('/proc/loadavg').read().split()[0]))
    print('%-20s %-30s %22s %10s' % ('target', 'watch', 'stopped share (range)', 'samples'))
    for label, argv, word in build():
        p = start(argv, word)
        try:
            for name, ss, extra in configs:
                got = [share(ss, p.pid, extra) for _ in range(RUNS)]
                sh = [g[0] * 100 for g in got]
                print('%-20s %-30s %8.2f%% (%.2f-%.2f) %10d' % (
                    label, name, statistics.median(sh), min(sh), max(sh),
                    statistics.median(g[1] for g in got)), flush=True)
        finally:
            p.kill()
            p.wait()
    shutil.rmtree(tmp, True)


if __name__ == '__main__':
    sys.exit(main())

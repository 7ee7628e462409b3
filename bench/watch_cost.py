#!/usr/bin/python3
"""watch_cost - what repeated sampling costs the target, side by side:
`stacksnap watch` (the walker: attached once, each sample stops every
thread only for the ptrace round trips and one stack copy) against taking
a fresh snapshot each time (`stacksnap PID`: attach, freeze, detach), and
against eu-stack and gdb, which stop the process for their whole run (so
their wall time per sample bounds the stop). Target: walker_target spin 4
(5 threads). Medians of several runs; ratios to the walker."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

O = os.environ.get('O', 'build')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SS = os.path.join(ROOT, O, 'stacksnap')
tmp = tempfile.mkdtemp(prefix='watch-cost-')
target = os.path.join(tmp, 'walker_target')
subprocess.check_call(['gcc', '-O2', '-g', '-fomit-frame-pointer', '-o', target,
                       os.path.join(ROOT, 'tests/targets/walker_target.c'),
                       '-lpthread', '-ldl'])
env = dict(os.environ, STACKSNAP_CACHE_DIR=os.path.join(tmp, 'cache'))
t = subprocess.Popen([target, 'spin', '4'], stdout=subprocess.PIPE, text=True)
t.stdout.readline()
pid = str(t.pid)
print('== watch_cost: time the target is stopped per sample, 5 threads '
      '(load average %s)' % open('/proc/loadavg').read().split()[0])
rows = []
try:
    med = []
    for _ in range(3):
        r = subprocess.run([SS, 'watch', '-i', '20ms', '-d', '2s', '--json', pid],
                           capture_output=True, text=True, env=env)
        med.append(json.loads(r.stdout)['stopped_ns']['median'] / 1e3)
    rows.append(('stacksnap watch (walker)', statistics.median(med)))
    fr = []
    for _ in range(10):
        r = subprocess.run([SS, '--json', pid], capture_output=True, text=True, env=env)
        fr.append(json.loads(r.stdout)['freeze_us'])
    rows.append(('stacksnap PID (snapshot each time)', statistics.median(fr)))
    for name, cmd, n in (('eu-stack -p (whole run)', ['eu-stack', '-p', pid], 5),
                         ('gdb -batch bt (whole run)',
                          ['gdb', '-batch', '-nx', '-p', pid, '-ex',
                           'thread apply all bt'], 3)):
        ts = []
        for _ in range(n):
            s = time.monotonic()
            subprocess.run(cmd, capture_output=True, env=env)
            ts.append((time.monotonic() - s) * 1e6)
        rows.append((name, statistics.median(ts)))
finally:
    t.kill()
    t.wait()
base = rows[0][1]
for name, us in rows:
    print('%-38s %10.1f us per sample  (x%.1f)' % (name, us, us / base))

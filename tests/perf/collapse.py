#!/usr/bin/env python3
"""collapse.py - folds `perf script` text the way FlameGraph's
stackcollapse-perf.pl parses it (its header, frame and module regexes, offset
stripping, [module] for unknown functions, parameter lists cut, ';' -> ':'),
so the test can check that our text output is accepted by those rules and
that `perf-script --folded` gives the same counts. Usage: collapse.py FILE"""
import collections
import re
import sys

counts = collections.Counter()
stack, pname = [], None
for line in open(sys.argv[1], errors='replace'):
    line = line.rstrip('\n')
    if not line:
        if pname is not None:
            counts[';'.join([pname] + stack[::-1])] += 1
        stack, pname = [], None
        continue
    m = re.match(r'^(\S.+?)\s+(\d+)/*(\d+)*\s+', line)
    if m and pname is None:
        pname = m.group(1)
        continue
    m = re.match(r'^\s*(\w+)\s*(.+) \((\S*)\)', line)
    if m:
        func, mod = m.group(2), m.group(3)
        func = re.sub(r'\+0x[\da-f]+$', '', func)
        if func == '[unknown]' and mod != '[unknown]':
            func = '[' + mod.split('/')[-1] + ']'
        func = func.replace(';', ':')
        if not re.search(r'\.\(.*\)\.', func):
            func = re.sub(r'\((?!anonymous namespace\)).*', '', func)
        stack.append(func)
for k in sorted(counts):
    print('%s %d' % (k, counts[k]))

#!/usr/bin/env python3
"""collapse.py - folds `perf script` text the way FlameGraph's
stackcollapse-perf.pl parses it (its header, frame and module regexes, offset
stripping, [module] for unknown functions, parameter lists cut, ';' -> ':'),
so the test can check that our text output is accepted by those rules and
that `perf-script --folded` gives the same counts. One rule is ours, not
stackcollapse-perf's: it cuts a name at its first '(', which merges distinct
template instantiations (`_Iter_comp_iter<sorter(std::vector<int>&)::
{lambda(int, int)#1}>` and every other comparator) into one frame; we cut
only the parameter list outside template brackets (issue 39).
Usage: collapse.py FILE"""
import collections
import re
import sys


def cut_params(func):
    """func without its parameter list: the first '(' outside <...>, {...}
    and [...] (an operator's own '<' or '(' not counted), not the
    "(anonymous namespace)" scope, and not a part after a space that the
    dump prints whole ("StubRoutines (1)")."""
    depth, i, n = 0, 0, len(func)
    while i < n:
        if func.startswith('operator', i) and (i == 0 or func[i - 1] in ': ') \
                and not (i + 8 < n and (func[i + 8].isalnum() or func[i + 8] == '_')):
            i += 8
            while i < n and func[i] == ' ':
                i += 1
            if func.startswith('()', i) or func.startswith('[]', i):
                i += 2
            else:
                while i < n and func[i] in '<>=!+-*/%^&|~,':
                    i += 1
            continue
        c = func[i]
        if c in '<{[':
            depth += 1
        elif c in '>}]' and depth:
            depth -= 1
        elif c == '(' and depth == 0:
            if func.startswith('(anonymous namespace)', i) or (i and func[i - 1] == ' '):
                d, j = 1, i + 1
                while j < n and d:
                    d += {'(': 1, ')': -1}.get(func[j], 0)
                    j += 1
                i = j
                continue
            return func[:i]
        i += 1
    return func


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
            func = cut_params(func)
        stack.append(func)
for k in sorted(counts):
    print('%s %d' % (k, counts[k]))

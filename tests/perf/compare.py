#!/usr/bin/env python3
"""compare.py - compares, sample by sample, the user-space frames of
`perf script --no-inline` and `stacksnap perf-script` on one perf.data.

Usage: compare.py PERF_OUT STACKSNAP_OUT [LABEL]
Prints a summary line per kind of disagreement and closes with
"LABEL: N samples, M identical (P%)"; exit status 0 when P >= 99.5.

Normalisations (each one a difference of presentation, not of unwinding):
 - frames are identified by (module path, function start) where the start
   is the printed address minus the printed offset: perf names functions
   from the ELF symbol tables with its own alias choices
   (__libc_start_main@@GLIBC_2.34, __GI___qsort_r, msort_with_tmp.part.0),
   we with ours (__libc_start_main, qsort_r, msort_with_tmp.part); the
   address of the function they name is the same;
 - the printed addresses themselves are compared too (both print the
   module-relative address of the call instruction's last byte, ret - 1);
 - kernel frames ([kernel.kallsyms]) are left out: both take them from the
   sample's callchain as recorded; only user frames are unwound;
 - samples are matched by (tid, time, occurrence), not by position;
 - PLT stubs: perf synthesizes names for PLT entries (rand_r@plt, and
   "@plt" for libc's own IRELATIVE slots) from the relocations, and gives
   the rest of .plt to _init (the symbol of .init, just before, read past
   its size); our symbol tables have no entry there and print [unknown]. A sample whose only
   difference is such a frame, at the same address, counts as identical
   (and is counted separately in the summary);
 - perf ends a walk that ran out of copied stack with a frame at address
   ffffffffffffffff, [unknown]; stacksnap perf-script prints the same
   marker, so it is compared like any frame.

Kinds of disagreement, each explained in the summary:
 - perf-stopped-early: perf's frames are a strict prefix of ours. libunwind
   (perf's unwinder here) gives up at frames it cannot step through where
   the compiled CFI still can, e.g. when the stack copy ends inside the
   outermost frame; checked: our extra frames are real callers;
 - perf-skipped-frames: perf's frames are ours with some left out in the
   middle (same first and last frame, the rest in order). Seen in ld.so's
   startup code (a forked child's exec): perf has __x86_cacheinfo_ifunc
   called by dl_main, and _dl_sysdep_start by _start; we have the real
   callers in between, _dl_relocate_object (which runs ifunc resolvers
   while relocating) and _dl_start (which calls _dl_sysdep_start);
 - perf-astray: perf's walk ends at an [unknown] frame of its own (an
   address in no symbol, or not even a canonical address) after leaving out
   frames that we have (or, when that last address is below 64 KiB or not
   canonical, after a wrong frame of its own), while ours reaches the bottom of the stack or the
   end of the copy: e.g. perf has memmove called by sort_some, then garbage;
   we have memmove called by qsort_r, called by sort_some;
 - perf-skipped-then-stopped: perf's frames (but a last [unknown] or
   end-of-copy frame) are ours with some left out, and end sooner, while
   ours reach the bottom of the stack (below). Seen on real programs
   (gcc, make): perf goes from a syscall wrapper or a leaf string function
   (mmap64, readlink, strcmp, memmove, fopen) straight to its caller's
   caller, leaving out the real caller (_dl_map_object_from_fd calls mmap,
   realpath calls readlink, _dl_sort_maps calls memmove), then gives up;
 - ours-stopped-early: the reverse of perf-stopped-early;
 - perf-unknown: perf's walk goes on past an address it cannot map (its
   [unknown] frames, read from the stack after its unwinding went wrong);
 - perf-stale-after-exec: the sample's process was sampled before an
   execve() and again after it (a forked child that execs: w_forkexec), and
   perf's frames stop early or go to garbage where ours reach the thread's
   start. perf keeps libunwind's cached unwind information across the exec
   when the new program maps code where the old one was; our table follows
   the COMM exec record. Needs the PIDMAP argument (perf script -F
   comm,pid,tid) to know the pids; such samples do not count as identical;
 - perf-none-in-execve: the sample was taken inside execve() (our frame 0
   is libc's execve, with the old image's registers); perf prints no user
   frame at all for it, having switched the thread to the new image's maps.
   Also when the sample comes after the exec's COMM and MMAP records but
   the registers are still the old image's (the kernel sets them last):
   our frame 0 is then in no mapping ([unknown], seen at libc's execve
   offset), which perf does not print; neither walk can say more;
 - different: anything else (a real disagreement; details printed).

Pass: no "different" sample, and identical samples are at least 99.5% of
the samples minus those where perf's own walk is explained as wrong
(perf-stale-after-exec, perf-none-in-execve, perf-unknown, perf-astray, and
perf-skipped-then-stopped, perf-stopped-early or perf-skipped-frames when
our walk reached the bottom of the stack: _start or a thread's
clone3/clone, or a stripped program's _start (its [unknown] frame called
by nobody after __libc_start_main), so our extra frames are not a walk
gone astray; for perf-stopped-early and perf-skipped-frames also the end
of the copied stack, after a frame in a known module).

Usage with the pid map: compare.py PERF_OUT OURS LABEL PIDMAP

With --inline first (compare.py --inline PERF_OUT OURS ...), the outputs
are perf script's default and ours (inline frames: "NAME+OFF (inlined)"
lines at the address of the frame they are inlined in). A sample is
 - identical: same lines (address, name, inlined or module), normalised as
   above (function start for real frames, PLT names);
 - identical but for inline naming (counted as identical, shown apart):
   same addresses, and the names equal once reduced to the bare function
   name (no scope, template or parameter list): perf names inline frames
   through binutils' addr2line (unqualified DW_AT_name for the callers,
   "__unguarded_partition<...>"; a lambda it cannot name gets the ELF
   symbol's name instead), we through libdw with gdb's qualified names
   ("std::__unguarded_partition<...>", "(anonymous namespace)::operator()");
   whether the containing function prints "(inlined)" follows from the
   same names (perf: its DWARF name differs from the symbol's);
   a frame whose chain one side has and the other not (debug information
   found by one only) is not;
 - perf-inline-unnamed (perf wrong): same walk, and at each address perf's
   chain is ours without some innermost entries: binutils' addr2line
   cannot name some inlined functions (clang's lambdas, whose DWARF name
   is reached through DW_AT_specification) and perf drops them;
 - otherwise, each run of lines at one address reduced to one frame, the
   kinds above apply to the walks; a sample whose walks agree but whose
   inline chains differ beyond naming is "inline-chain-differs".
"""
import collections
import os
import re
import sys

HDR = re.compile(r'^(\S.*?)\s+(\d+)\s+(?:\[\d+\]\s+)?(\d+\.\d+):')
FRAME = re.compile(r"^\s+([0-9a-f]+) (.*) \(([^()]*)\)$")


def parse(path):
    samples = collections.OrderedDict()
    seen = collections.Counter()
    cur = None
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                cur = None
                continue
            if cur is None:
                m = HDR.match(line)
                if not m:
                    continue
                key = (m.group(2), m.group(3))
                seen[key] += 1
                cur = []
                samples[key + (seen[key],)] = cur
                continue
            m = FRAME.match(line)
            if not m:
                continue
            addr, sym, dso = m.groups()
            if dso == '[kernel.kallsyms]' or \
                    int(addr, 16) >= 0xffff800000000000 and addr != 'f' * 16:
                continue  # kernel (BPF programs: perf names their own dso)
            addr = int(addr, 16)
            mo = re.match(r'^(.*)\+0x([0-9a-f]+)$', sym)
            if mo and sym != '[unknown]':
                func = (dso, addr - int(mo.group(2), 16))
                name = mo.group(1)
                if dso == 'inlined':  # a chain shares the start: name it
                    func += (name,)
            else:
                func = (dso, '?', addr)
                name = '[unknown]'
            cur.append((func, addr, name))
    return samples


def same_frame(a, b):
    """Frames equal, or equal but for perf's name of a PLT stub (see
    plt_only)."""
    return a[1] == b[1] and (a[0] == b[0] or
                             ((a[2].endswith('@plt') or a[2] == '_init') and
                              b[2] == '[unknown]'))


def is_subsequence_frames(short, long):
    """Every frame of short appears in long, in order (same_frame)."""
    it = iter(long)
    return all(any(same_frame(x, y) for y in it) for x in short)


def plt_only(pf, of):
    """Same addresses; every differing frame is a PLT stub perf names from
    the relocations (foo@plt) and our symbol tables leave [unknown]. perf
    also gives .plt addresses without a relocation name to _init, the
    symbol of .init just before .plt, reading it past its size."""
    if [a for _, a, _ in pf] != [a for _, a, _ in of]:
        return False
    for (f1, _, n1), (f2, _, n2) in zip(pf, of):
        if f1 != f2 and not ((n1.endswith('@plt') or n1 == '_init') and
                             n2 == '[unknown]'):
            return False
    return True


# Where a complete walk ends: the program's entry or a thread's start.
# (_dl_start_user: ld.so's entry code after _dl_start, which runs the
# libraries' initialisers before jumping to the program's _start.)
BOTTOM = ('_start', 'clone3', 'clone', '__clone', '__clone3', '_dl_start_user')


MARKER = 0xffffffffffffffff  # the "stack copy ended" frame, perf's and ours


def at_bottom(of, end_of_copy=False):
    """Our walk reached the bottom of the stack: _start or a thread's
    start, or a stripped program's _start (an [unknown] frame of the
    program called by nothing, right after __libc_start_main); with
    end_of_copy, also the end of the copied stack (our marker frame after
    a frame in a known module: each step found its caller where perf's
    gave up)."""
    if not of:
        return False
    if of[-1][2] in BOTTOM:
        return True
    if end_of_copy and of[-1][1] == MARKER and len(of) >= 2 and \
            of[-2][0][0] != '[unknown]':
        return True
    return len(of) >= 2 and of[-1][2] == '[unknown]' and of[-1][1] != MARKER and \
        of[-2][2].startswith('__libc_start_main')


def perf_skipped_stopped(pf, of):
    """perf's walk (without its trailing end-of-copy marker or garbage
    [unknown] frame) is ours with frames left out, and ends before ours,
    which reaches the bottom: perf stepped past a caller (typically frame
    1, the caller of a syscall wrapper or of a leaf string function) and
    soon gave up."""
    body = pf
    if body and body[-1][2] == '[unknown]' and \
            (body[-1][1] == MARKER or body[-1][1] >= 0x0000800000000000 or
             body[-1][0][0] == '[unknown]'):
        body = body[:-1]
    return bool(body) and len(body) < len(of) and same_frame(body[0], of[0]) and \
        is_subsequence_frames(body, of) and at_bottom(of)


def perf_astray(pf, of):
    """perf's walk ends at an [unknown] frame of its own (not the marker),
    and what it has before is ours with frames left out: perf took a wrong
    step where ours went on, to the bottom of the stack, or to the end of
    the copy when perf's last address is not even a canonical one."""
    if not pf or pf[-1][2] != '[unknown]' or pf[-1][1] == MARKER:
        return False
    body = pf[:-1]
    if body and same_frame(body[0], of[0]) and at_bottom(of) and \
            (pf[-1][1] < 0x10000 or pf[-1][1] >= 0x0000800000000000):
        return True  # perf's last step read garbage: not even an address
    if not body or not same_frame(body[0], of[0]) or \
            not is_subsequence_frames(body, of):
        return False
    if len(of) > len(pf) - 1 and at_bottom(of):
        return True
    return of[-1][1] == MARKER and pf[-1][1] >= 0x0000800000000000


def base_name(name):
    """The bare function name: no scope, template arguments or parameter
    list (operator names kept whole)."""
    depth, out = 0, []
    i = 0
    while i < len(name):
        c = name[i]
        if name.startswith('operator', i) and depth == 0:
            m = re.match(r'operator(\(\)|\[\]|[^(<]*)', name[i:])
            out.append(m.group(0))
            i += len(m.group(0))
            continue
        if c in '<(':
            depth += 1
        elif c in '>)':
            depth -= 1
        elif depth == 0:
            if c == ':' and name.startswith('::', i):
                out = []
                i += 2
                continue
            out.append(c)
        i += 1
    return ''.join(out).strip()


def runs(frames):
    """One frame per run of lines at one address (an inline chain and its
    frame): (('pc', addr), addr, name of the real line or the last)."""
    out = []
    for f in frames:
        if out and out[-1][1] == f[1] and out[-1][3]:
            # Still in a chain: an inline line was last.
            real = f[0][0] != 'inlined'
            out[-1] = (out[-1][0], f[1], f[2] if real else out[-1][2], not real)
            continue
        out.append((('pc', f[1]), f[1], f[2], f[0][0] == 'inlined'))
    return [(a, b, c) for a, b, c, _ in out]


def chains(frames):
    """The bare names of each run of lines at one address."""
    out = []
    for f in frames:
        if out and out[-1][0] == f[1] and out[-1][2]:
            out[-1][1].append(base_name(f[2]))
            out[-1][2] = f[0][0] == 'inlined'
            continue
        out.append([f[1], [base_name(f[2])], f[0][0] == 'inlined'])
    return [(a, n) for a, n, _ in out]


def perf_inline_unnamed(pf, of):
    """Same addresses, and at each one perf's chain is ours with inner
    entries left out (binutils' addr2line does not name some inlined
    functions, clang's lambdas among them, and perf drops them), perf's
    first line sometimes the symbol's name."""
    pc, oc = chains(pf), chains(of)
    if [a for a, _ in pc] != [a for a, _ in oc]:
        return False
    short = False
    for (_, p), (_, o) in zip(pc, oc):
        if p == o:
            continue
        if len(p) < len(o) and (p == o[len(o) - len(p):] or
                                p[1:] == o[len(o) - len(p) + 1:]):
            short = True
            continue
        return False
    return short


def inline_equal(pf, of):
    """Same addresses and bare names (see the module's doc); perf's first
    line of a chain may be the symbol's name (a lambda addr2line cannot
    name): then the bare names may differ there."""
    if [a for _, a, _ in pf] != [a for _, a, _ in of]:
        return False
    for i, (a, b) in enumerate(zip(pf, of)):
        if base_name(a[2]) == base_name(b[2]):
            continue
        nxt = i + 1 < len(pf) and pf[i + 1][1] == a[1]
        if a[0][0] != 'inlined' and nxt and b[0][0] == 'inlined':
            continue  # perf's symbol name for an unnamed innermost entry
        return False
    return True


def main():
    inline = len(sys.argv) > 1 and sys.argv[1] == '--inline'
    if inline:
        del sys.argv[1]
    perf, ours = parse(sys.argv[1]), parse(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else 'perf_compare'
    # tid -> pid, and the pids sampled under more than one comm (exec'd).
    tid_pid, comms = {}, collections.defaultdict(set)
    if len(sys.argv) > 4:
        for line in open(sys.argv[4], errors='replace'):
            m = re.match(r'^\s*(.*?)\s+(\d+)/(\d+)\s', line)
            if m:
                tid_pid[m.group(3)] = m.group(2)
                comms[m.group(2)].add(m.group(1))
    execd = {p for p, c in comms.items() if len(c) > 1}
    kinds = collections.Counter()
    examples = {}
    same = plt = perf_short = inl_naming = 0
    inl_examples = []
    for key, pf in perf.items():
        of = ours.get(key)
        if of is None:
            kinds['missing-in-ours'] += 1
            continue
        pfun = [f for f, _, _ in pf]
        ofun = [f for f, _, _ in of]
        if pfun == ofun and [a for _, a, _ in pf] == [a for _, a, _ in of]:
            same += 1
            continue
        if plt_only(pf, of):
            same += 1
            plt += 1
            continue
        if inline:
            if inline_equal(pf, of):
                same += 1
                inl_naming += 1
                if len(inl_examples) < 2:
                    inl_examples.append((key, pf, of))
                continue
            unnamed = perf_inline_unnamed(pf, of)
            pf, of = runs(pf), runs(of)
            pfun = [f for f, _, _ in pf]
            ofun = [f for f, _, _ in of]
        if inline and pfun == ofun:
            kind = 'perf-inline-unnamed' if unnamed else 'inline-chain-differs'
        elif not pf and of and (of[0][2] == 'execve' or of[0][0][0] == '[unknown]'):
            kind = 'perf-none-in-execve'
        elif tid_pid.get(key[0]) in execd and len(pf) <= len(of) and \
                all(same_frame(a, b) for a, b in zip(pf[:-1], of)):
            kind = 'perf-stale-after-exec'
        elif len(pf) < len(of) and pfun == ofun[:len(pf)]:
            kind = 'perf-stopped-early'
        elif len(pf) < len(of) and pf and same_frame(pf[0], of[0]) and \
                same_frame(pf[-1], of[-1]) and is_subsequence_frames(pf, of):
            kind = 'perf-skipped-frames'
        elif perf_astray(pf, of):
            kind = 'perf-astray'
        elif perf_skipped_stopped(pf, of):
            kind = 'perf-skipped-then-stopped'
        elif len(of) < len(pf) and ofun == pfun[:len(of)]:
            kind = 'ours-stopped-early'
            # perf's extra frames all [unknown]: it read on past the end.
            if all(n == '[unknown]' for _, _, n in pf[len(of):]):
                kind = 'perf-unknown'
        else:
            kind = 'different'
        if kind in ('perf-stopped-early', 'perf-skipped-frames') and \
                at_bottom(of, end_of_copy=True):
            perf_short += 1
        kinds[kind] += 1
        examples.setdefault(kind, []).append((key, pf, of))
    extra = len(set(ours) - set(perf))
    if extra:
        kinds['missing-in-perf'] += extra
    total = len(perf)
    pct = 100.0 * same / total if total else 0.0
    for kind, n in sorted(kinds.items()):
        print('  %s: %d sample(s)' % (kind, n))
        nshow = int(os.environ.get('COMPARE_EXAMPLES', '2'))
        for key, pf, of in examples.get(kind, [])[:nshow]:
            print('    sample tid %s time %s:' % key[:2])
            for i in range(max(len(pf), len(of))):
                a = '%x %s' % (pf[i][1], pf[i][2]) if i < len(pf) else ''
                b = '%x %s' % (of[i][1], of[i][2]) if i < len(of) else ''
                if os.environ.get('COMPARE_EXAMPLES'):  # with modules
                    a += ' ' + os.path.basename(str(pf[i][0][0])) if i < len(pf) else ''
                    b += ' ' + os.path.basename(str(of[i][0][0])) if i < len(of) else ''
                print('      %-3d %-45s | %s%s' % (i, a[:45], b[:45],
                                                  '' if a == b else '   <-'))
    if plt:
        print('  (%d of the identical samples have a PLT stub frame: perf '
              'names it foo@plt, we print [unknown] at the same address)' % plt)
    if inl_naming:
        print('  (%d of the identical samples differ in inline frame names only: '
              'bare names equal, see compare.py)' % inl_naming)
        for key, pf, of in inl_examples[:1]:
            print('    sample tid %s time %s:' % key[:2])
            for i in range(len(pf)):
                print('      %-3d %-45s | %s' % (i, ('%x %s' % (pf[i][1], pf[i][2]))[:45],
                                             ('%x %s' % (of[i][1], of[i][2]))[:45]))
    perf_wrong = perf_short + sum(kinds[k] for k in (
        'perf-stale-after-exec', 'perf-none-in-execve', 'perf-unknown',
        'perf-astray', 'perf-inline-unnamed', 'perf-skipped-then-stopped'))
    judged = total - perf_wrong
    jpct = 100.0 * same / judged if judged else 0.0
    print('%s: %d samples, %d identical (%.2f%%); %d where perf is wrong; '
          '%.2f%% of the rest identical' % (label, total, same, pct,
                                            perf_wrong, jpct))
    return 0 if judged and jpct >= 99.5 and not kinds['different'] else 1


if __name__ == '__main__':
    sys.exit(main())

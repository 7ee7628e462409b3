"""cli_common - shared helpers of the stacksnap CLI tests (cli_*): building
their targets, starting them and waiting until they are blocked, reading
thread states, and turning `stacksnap --json` into gdb_compare's frame
objects. gdb_compare itself is imported, not copied: its gdb reader and
its documented normalisations are the ones every comparison uses."""

import atexit
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ among the test executables

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
O = os.environ.get('O', 'build')
BUILD = O if os.path.isabs(O) else os.path.join(ROOT, O)
SRC = os.path.join(ROOT, 'tests', 'targets')
# `perf record` taken again when perf itself aborts (tests/perf/perf-record).
PERF_RECORD = os.path.join(ROOT, 'tests', 'perf', 'perf-record')
OUT = os.path.join(BUILD, 'targets', 'cli')
BUILT_STACKSNAP = os.path.join(BUILD, 'stacksnap')


def shared_dir(prefix):
    """A fresh directory under /tmp that every user may enter and read
    (0755), removed at exit. The build tree may sit in a private home
    directory (0700, as Debian creates them), so what a test runs as
    another user (setpriv) is staged here, not run from the tree."""
    d = tempfile.mkdtemp(prefix=prefix, dir='/tmp')
    os.chmod(d, 0o755)
    atexit.register(shutil.rmtree, d, True)
    return d


def stage(paths, d=None):
    """Copies files (binaries, libraries) into d (by default a fresh
    shared_dir), each readable and executable by everyone; returns their
    copies' paths in the same order (same base names: a target's comm
    stays the same)."""
    d = d or shared_dir('cli-stage-')
    out = []
    for path in paths:
        dst = os.path.join(d, os.path.basename(path))
        shutil.copy2(path, dst)
        os.chmod(dst, 0o755)
        out.append(dst)
    return out


def _private_stacksnap():
    """A private copy of the CLI: a rebuild in the same tree while the tests
    run (make relinks in place) must not swap or hide it mid-run. It sits
    in a shared_dir: some tests run it as user nobody."""
    d = shared_dir('cli-tests-')
    dst = os.path.join(d, 'stacksnap')
    for _ in range(50):
        try:
            shutil.copy2(BUILT_STACKSNAP, dst)
            return dst
        except OSError:
            time.sleep(0.1)
    return BUILT_STACKSNAP


STACKSNAP = _private_stacksnap()

_loader = importlib.machinery.SourceFileLoader(
    'gdb_compare', os.path.join(HERE, 'gdb_compare'))
_spec = importlib.util.spec_from_loader('gdb_compare', _loader)
gdbc = importlib.util.module_from_spec(_spec)
_loader.exec_module(gdbc)

CaseError = gdbc.CaseError
spawn, reap, run_tool = gdbc.spawn, gdbc.reap, gdbc.run_tool


class Results:
    """`ok   NAME` / `FAIL NAME: why` lines and the closing count."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, cond, why=''):
        if cond:
            self.passed += 1
            print('ok   %s' % name, flush=True)
        else:
            self.failed += 1
            print('FAIL %s: %s' % (name, why), flush=True)
        return cond

    def finish(self):
        print('%d passed, %d failed' % (self.passed, self.failed))
        return 1 if self.failed else 0


# Compilers and flags of the target variants: (name, compiler, language).
VARIANTS = {
    'gcc-O2-nofp': ('gcc', 'c', ['-O2', '-fomit-frame-pointer']),
    'clang-O2-nofp': ('clang', 'c', ['-O2', '-fomit-frame-pointer']),
    'gxx-O2-nofp': ('g++', 'c++', ['-O2', '-fomit-frame-pointer']),
    'clangxx-O0-fp': ('clang++', 'c++', ['-O0', '-fno-omit-frame-pointer']),
    'gcc-O3-nofp': ('gcc', 'c', ['-O3', '-fomit-frame-pointer']),
}


def build(variant, prog='cli_mt'):
    """Builds tests/targets/PROG.c in a variant (and cli_mt's library);
    returns the binary's path. Rebuilt only when a source is newer."""
    cc, lang, flags = VARIANTS[variant]
    d = os.path.join(OUT, variant)
    os.makedirs(d, exist_ok=True)
    common = [cc, '-x', lang, '-g', '-Wall', '-pthread', '-I', SRC] + flags
    out = os.path.join(d, prog)
    steps = [(out, common + ['-o', out, os.path.join(SRC, prog + '.c'),
                             '-x', 'none', '-ldl'])]
    if prog == 'cli_mt':
        lib = os.path.join(d, 'libcli_dl.so')
        steps.insert(0, (lib, common + ['-fPIC', '-shared', '-o', lib,
                                        os.path.join(SRC, 'cli_dl_lib.c')]))
    newest = max(os.path.getmtime(os.path.join(SRC, f))
                 for f in os.listdir(SRC))
    for path, cmd in steps:
        if os.path.exists(path) and os.path.getmtime(path) >= newest:
            continue
        rc, o, e = run_tool(cmd, 180)
        if rc != 0:
            raise CaseError('build: %s: %s' % (' '.join(cmd), (o + e)[-500:]))
    return out


def start(argv, settle=True):
    """Starts a target, waits for `ready N` and, when settle, until every
    non-spinning thread sleeps in the kernel. Returns (Popen, N)."""
    p = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
              stderr=subprocess.PIPE)
    try:
        n = gdbc.read_ready(p, 20)
        if settle:
            wait_settled(p.pid, n)
    except Exception:
        reap(p)
        raise
    return p, n


def wait_settled(pid, n, timeout=15):
    """gdb_compare's wait, but a thread whose name says it spins or ticks
    is not waited for."""
    deadline = time.monotonic() + timeout
    prev = None
    while time.monotonic() < deadline:
        tids = gdbc.list_tids(pid)
        snap, ok = {}, len(tids) == n
        for t in tids if ok else ():
            if comm(pid, t) in ('spin', 'ticker'):
                continue
            try:
                with open('/proc/%d/task/%d/syscall' % (pid, t)) as f:
                    sc = f.read().strip()
            except OSError:
                sc = 'running'
            if sc.startswith('running') or sc.startswith('-1'):
                ok = False
                break
            snap[t] = sc
        if ok and snap == prev:
            return
        prev = snap if ok else None
        time.sleep(0.1)
    raise CaseError('target threads did not settle')


def comm(pid, tid):
    return gdbc.thread_comm(pid, tid)


def thread_states(pid):
    """{tid: state letter} from /proc/PID/task/*/stat."""
    out = {}
    for t in gdbc.list_tids(pid):
        try:
            with open('/proc/%d/task/%d/stat' % (pid, t)) as f:
                s = f.read()
            out[t] = s[s.rindex(')') + 2]
        except (OSError, ValueError, IndexError):
            pass
    return out


def stopped_threads(pid):
    """Threads in a ptrace or group stop ('t', 'T')."""
    return sorted(t for t, s in thread_states(pid).items() if s in 'tT')


def wait_for(cond, timeout=2.0):
    """Polls cond() until it is true or timeout seconds pass; returns its
    last value. A state the kernel reaches a moment after its cause (a
    tracee leaving its stop once the tracer detached or died, a thread
    entering a wait) is waited for, not sampled once: a sample races it."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(0.01)


def wait_attached(pid, timeout=60):
    """Waits until process pid (a stacksnap trace) holds a perf event:
    its tracepoint attached. A loaded machine can take longer to load the
    programs than any fixed delay. Returns whether it did."""
    def has():
        try:
            return any('perf_event' in os.readlink('/proc/%d/fd/%s' % (pid, fd))
                       for fd in os.listdir('/proc/%d/fd' % pid))
        except OSError:
            return False
    ok = wait_for(has, timeout)
    time.sleep(0.1)
    return ok


def left_stopped(pid, timeout=2.0):
    """The threads of pid still in a ptrace or group stop after waiting up
    to timeout seconds for none to be: a thread let go leaves its stop a
    moment later, one left stopped stays stopped."""
    wait_for(lambda: not stopped_threads(pid), timeout)
    return stopped_threads(pid)


def strip_show_header(text):
    """`show EVENTS_FILE`'s output without what comes before the events
    (as the live trace prints them): the text's two lines and a blank one
    ("Events of ..."), or --json's first line {"snapshot": {...}}."""
    if text.startswith('Events of ') and '\n\n' in text:
        return text.split('\n\n', 1)[1]
    if text.startswith('{"snapshot":'):
        return text.split('\n', 1)[1] if '\n' in text else ''
    return text


def live_body(text):
    """A live dump's text as `show` prints a snapshot's body: without the
    header saying what the process is ("Process PID: ..." and its line,
    up to the blank line) and without each thread's wait channel, read
    from /proc, which no snapshot keeps ("state S (futex_do_wait):")."""
    if text.startswith('Process ') and '\n\n' in text:
        text = text.split('\n\n', 1)[1]
    return re.sub(r'^((?:Thread \d+ \(.*?\)|\d+ threads: .*?) state [\w,?]+)'
                  r' \([^()]*\):', r'\1:', text, flags=re.M)


def stacksnap(args, timeout=60):
    return run_tool([STACKSNAP] + [str(a) for a in args], timeout)


def json_to_threads(doc):
    """stacksnap --json as gdb_compare Thread objects. The signal
    trampoline frame becomes glibc's __restore_rt followed by a frame
    flagged as interrupted: the form gdb_compare matches against gdb's
    `<signal handler called>`."""
    threads = {}
    for th in doc['threads']:
        t = gdbc.Thread(th['tid'])
        t.end = 'complete' if th['complete'] else th['end']
        for fr in th['frames']:
            name = fr['function'] or '??'
            if fr['sigreturn']:
                name = '__restore_rt'
            f = gdbc.Frame('inline' if fr['inlined'] else 'normal',
                           int(fr['pc'], 16), name, module=fr['module'],
                           signal=fr['signal'])
            if fr['function'] and not fr['inlined']:
                f.start = f.pc - fr['offset']
            t.frames.append(f)
        t.nframes = len(t.physical())
        threads[t.tid] = t
    return threads


def parse_json(out):
    return json.loads(out)


def kill_quiet(p, sig=signal.SIGKILL):
    try:
        p.send_signal(sig)
    except OSError:
        pass


def without_waits(text):
    """A dump's text without what a live dump reads of who waits for whom
    (the "    waits for:" and "    [kernel]" lines under a thread's
    header, the "Deadlock" blocks after the stacks): they differ between a
    live dump (system calls, fds, kernel stacks) and `show` of its
    snapshot file (locks only, and their memory was not saved)."""
    out, in_deadlock = [], False
    for line in text.split('\n'):
        if line.startswith('Deadlock '):
            in_deadlock = True
            if out and out[-1] == '':
                out.pop()
            continue
        if in_deadlock and (line.startswith('  ') or line == ''):
            continue
        in_deadlock = False
        if line.startswith('    waits for: ') or line.startswith('    [kernel] '):
            continue
        out.append(line)
    return '\n'.join(out)

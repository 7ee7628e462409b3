"""py_blocked.py OUTDIR - a Python process whose threads block in known
places, each recording its own stack just before it blocks, for
tests/integration/python_frames. Threads: sleep (time.sleep), lock (a
held threading.Lock), queue (queue.Queue.get), socket (recv at the bottom
of a 50-deep recursion), gen (time.sleep inside a generator), and the main
thread (time.sleep), which writes OUTDIR/ready once every other thread is
blocked.

Each record is OUTDIR/<kind>.json: {"tid": native tid, "stack": [[co_name,
co_qualname, file, line], ...]} outermost first, taken on the very line
that blocks (so the line is the blocked frame's line too): file/line/name
from traceback.extract_stack, co_qualname from the same frames
(co_name before 3.11, which has no co_qualname). The queue
thread blocks inside Python (Queue.get -> Condition.wait), below its own
record: OUTDIR/current.json holds every thread's stack as the main thread
sees it through sys._current_frames() once all are blocked."""

import json
import os
import queue
import socket
import sys
import threading
import time
import traceback

OUT = sys.argv[1]
BLOCK = 1e6


def native_id():
    """The kernel tid: threading.get_native_id() (3.8+), else gettid(2)."""
    if hasattr(threading, 'get_native_id'):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None, use_errno=True).syscall(186)  # x86_64 gettid


NATIVE = {}  # threading.get_ident() -> tid, as each thread records


def qualname(code):
    """co_qualname (3.11+); before, co_name is all a code object says."""
    return getattr(code, 'co_qualname', code.co_name)


def frames_of(f):
    """[co_name, co_qualname, file, line] outermost first, from frame f."""
    summary = traceback.extract_stack(f)
    chain = []
    while f is not None:
        chain.append(f)
        f = f.f_back
    chain.reverse()
    assert len(chain) == len(summary)
    return [[s.name, qualname(c.f_code), s.filename, s.lineno]
            for s, c in zip(summary, chain)]


def record(kind):
    """Writes the caller's stack, as of the line that calls record()."""
    NATIVE[threading.get_ident()] = native_id()
    rec = {'tid': NATIVE[threading.get_ident()],
           'stack': frames_of(sys._getframe(1))}
    tmp = os.path.join(OUT, kind + '.json.tmp')
    with open(tmp, 'w') as f:
        json.dump(rec, f)
    os.rename(tmp, os.path.join(OUT, kind + '.json'))


def sleeper():
    record('sleep'); time.sleep(BLOCK)


held = threading.Lock()
held.acquire()


def locker():
    record('lock'); held.acquire()


q = queue.Queue()


def queuer():
    record('queue'); q.get()


a, b = socket.socketpair()


def recv_deep(n):
    if n:
        return recv_deep(n - 1)
    record('socket'); return a.recv(1)


def gen():
    record('gen'); x = time.sleep(BLOCK); yield x


class Consumer:
    def run(self):
        for _ in gen():
            pass


def stacks_now():
    frames = sys._current_frames()
    return {str(NATIVE[t.ident]): frames_of(frames[t.ident])
            for t in threading.enumerate()
            if t is not threading.main_thread() and t.ident in frames and
            t.ident in NATIVE}


def main():
    kinds = ['sleep', 'lock', 'queue', 'socket', 'gen']
    targets = [sleeper, locker, queuer, lambda: recv_deep(50),
               Consumer().run]
    for kind, target in zip(kinds, targets):
        threading.Thread(target=target, name='py-' + kind,
                         daemon=True).start()
    while not all(os.path.exists(os.path.join(OUT, k + '.json'))
                  for k in kinds):
        time.sleep(0.01)
    # Blocked = the same stacks twice, 100 ms apart.
    prev = None
    while True:
        now = stacks_now()
        if now == prev:
            break
        prev = now
        time.sleep(0.1)
    with open(os.path.join(OUT, 'current.json'), 'w') as f:
        json.dump(now, f)
    record('main'); open(os.path.join(OUT, 'ready'), 'w').close(); time.sleep(BLOCK)


main()

"""py_subinterp.py OUTDIR - a thread that enters a sub-interpreter
(_xxsubinterpreters, 3.8-3.12) and blocks there, for
tests/integration/python_frames: the thread has one thread state per
interpreter, and its Python stack is the sub-interpreter's frames inside
the main one's. Records, outermost first ([qualname, file, line]; co_name before
3.11):
OUTDIR/outer.json (the thread's frames in the main interpreter, on the
line that enters the sub-interpreter), OUTDIR/inner.json (the frames in
the sub-interpreter, on the line that blocks); OUTDIR/tid holds the
thread's native id. Exits 3 when the interpreter has no
_xxsubinterpreters."""

import json
import os
import sys
import threading
import time

try:
    import _xxsubinterpreters as si
except ImportError:
    sys.exit(3)

OUT = sys.argv[1]
SUB = '''
import json, sys, time
def save(st, path):
    with open(path, 'w') as f:
        json.dump(st, f)
def stack_of(f):
    st = []
    while f is not None:
        st.append([getattr(f.f_code, 'co_qualname', f.f_code.co_name),
                   f.f_code.co_filename, f.f_lineno])
        f = f.f_back
    return st[::-1]
def block():
    save(stack_of(sys._getframe()), %r); time.sleep(1e6)
block()
''' % os.path.join(OUT, 'inner.json')


def outer():
    f, st = sys._getframe(1), []
    while f is not None:
        st.append([getattr(f.f_code, 'co_qualname', f.f_code.co_name),
                   f.f_code.co_filename, f.f_lineno])
        f = f.f_back
    return st[::-1]


def save(st, path):
    with open(path, 'w') as f:
        json.dump(st, f)


def in_sub():
    with open(os.path.join(OUT, 'tid'), 'w') as f:
        if hasattr(threading, 'get_native_id'):
            f.write(str(threading.get_native_id()))
        else:
            import ctypes
            f.write(str(ctypes.CDLL(None).syscall(186)))  # gettid
    sid = si.create()
    save(outer(), os.path.join(OUT, 'outer.json')); si.run_string(sid, SUB)


threading.Thread(target=in_sub, daemon=True).start()
time.sleep(1e6)

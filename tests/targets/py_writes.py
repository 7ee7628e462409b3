"""py_writes.py OUT - writes to a file from a known chain of Python
functions (a method, a recursion, a closure), recording before each write
its own stack (traceback.extract_stack, with each frame's co_qualname) on
the same line as the write; the records go to OUT/records.json at the
end (no write of the test's own before that), with the file's fd. Used
by tests/integration/python_profile."""
import json
import os
import sys
import time
import traceback

out = sys.argv[1]
fd = os.open(os.path.join(out, 'data'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
records = []


def own_stack():
    """This frame's caller's stack, outermost first: [qualname, file, line]."""
    summary = traceback.extract_stack(sys._getframe(1))
    f, quals = sys._getframe(1), []
    while f:
        quals.append(getattr(f.f_code, 'co_qualname', f.f_code.co_name))
        f = f.f_back
    quals.reverse()
    return [[q, s.filename, s.lineno] for q, s in zip(quals, summary)]


class Writer:
    def emit(self, i):
        rec = own_stack(); os.write(fd, b'line %d\n' % i)
        records.append(rec)


def deep(n, i):
    if n == 0:
        Writer().emit(i)
    else:
        deep(n - 1, i)


def make_closure():
    def inner(i):
        rec = own_stack(); os.write(fd, b'closure %d\n' % i)
        records.append(rec)
    return inner


def main():
    # A tracer started with the command finds an interpreter in a
    # libpython once ld.so mapped it: events before that have no Python
    # frames (docs/python.md, "trace").
    time.sleep(0.3)
    closure = make_closure()
    for i in range(5):
        deep(i * 3, i)
        closure(i)


main()
with open(os.path.join(out, 'records.json'), 'w') as f:
    json.dump({'fd': fd, 'records': records}, f)
# Alive a while: the trace names the code objects from the live process.
time.sleep(1.0)

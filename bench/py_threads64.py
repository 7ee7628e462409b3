"""py_threads64.py - 64 Python threads asleep 9 calls deep, for
BENCHMARKS.md's runtime-frames cost: compare
`stacksnap --stats --freeze-all PID` with `... --runtime=off PID`."""
import threading
import time


def f(n):
    if n:
        return f(n - 1)
    time.sleep(1000)


for _ in range(63):
    threading.Thread(target=f, args=(8,), daemon=True).start()
time.sleep(1000)
